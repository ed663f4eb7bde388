"""Listing pages with no feed: find the article links by the shape of their paths, no site code.

Every same-site link gets a *shape*: its path with numbers, dates, hashes and slugs collapsed to
wildcards (`/blog/my-first-post` -> `/blog/*`, `/2024/05/12/a-b` -> `/{num}/{num}/{num}/*`,
`/view.php?id=12` -> `/view.php?id={num}`). A shape shared by at least 3 distinct URLs is a
candidate; candidates are scored by count, share of the page's links, path depth and how much of
them sits in the main content rather than in navigation or a sidebar. The best one is used only if
it proves itself: at least 3 URLs match, and at least half of the distinct links in the region
holding its links match too. A proven pattern is meant to be stored per site and passed back as
`known_pattern` on the next visit, where it is re-validated the same way and discarded if it fails.

Tokens: `{num}` digits, `{date}` a dashed date, `{hash}` a hex/uuid/alphanumeric id, `*` a slug,
`*{num}` a slug carrying a long number, `{any}` (patterns only) any literal or slug segment, so that
`/world/2024/05/a-b` and `/sport/2024/05/c-d` share `/{any}/{num}/{num}/*`.
"""

from __future__ import annotations

import enum
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

import lxml.html

from sluice.discovery.autodiscover import base_url_of, parse_html
from sluice.urls import join_url

logger = logging.getLogger(__name__)

MIN_LINKS = 3
MIN_REGION_SHARE = 0.5
NUM, DATE, HASH, SLUG, SLUG_ID, ANY = "{num}", "{date}", "{hash}", "*", "*{num}", "{any}"
_WILDCARDS = frozenset({NUM, DATE, HASH, SLUG, SLUG_ID})
_STRONG = frozenset({NUM, DATE, HASH, SLUG_ID})

_EXT = re.compile(r"^(?P<stem>.+?)(?P<ext>\.(?:s?html?|php\d?|aspx?|jsp|cms|do))$", re.I)
_MEDIA = re.compile(
    r"\.(?:jpe?g|png|gif|webp|avif|svg|ico|pdf|zip|gz|mp[34]|webm|css|js|json|xml|rss|atom"
    r"|woff2?|ttf|txt)$",
    re.I,
)
_DIGITS = re.compile(r"^[0-9]+$")
_DASHED_DATE = re.compile(
    r"^(?:19|20)[0-9]{2}[-_.](?:0[1-9]|1[0-2])[-_.](?:0[1-9]|[12][0-9]|3[01])$"
)
_UUID = re.compile(r"^[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$", re.I)
_ALNUM = re.compile(r"^[A-Za-z0-9]{6,}$")
_SEPARATORS = re.compile(r"[-_+.,~\s]+")
_LONG_NUMBER = re.compile(r"[0-9]{5,}")
_TRACKING = re.compile(r"^(?:utm_\w+|fbclid|gclid|mc_[ce]id|ref|ref_src|from|share)$", re.I)

# Words that mark taxonomy, account, action and utility pages in any site's paths: such a link is
# never an article, and it neither supports nor refutes a pattern in the region check.
NON_ARTICLE_WORDS = frozenset(
    "tag tags category categories cat author authors by user users profile profiles member "
    "members people topic topics section sections label labels search login logout signin "
    "signup register account subscribe newsletter page paged archive archives feed rss about "
    "contact privacy terms help faq cart shop comments reply share print wp-admin wp-login.php "
    "hide flag vote edit delete".split()
)
# Single-word segments naming a list (`list.php`, `articleList.html`, `newslist`) are listing pages.
_LISTING_STEM = re.compile(r"^[a-z]*list(?:\.[a-z0-9]+)?$")
_NON_ARTICLE_KEYS = frozenset("page paged pg tag cat category author s q search sort order".split())
# Query keys that carry an article id (`view.php?id=12&cat=3` is an article in category 3).
_ID_KEYS = frozenset(
    "id no idx idxno aid nid article articleid article_id newsid news_id p post postid story "
    "storyid seq wr_id document_srl uid".split()
)


class Zone(enum.IntEnum):
    """Where a link sits on the page, by its nearest meaningful ancestor."""

    BOILERPLATE = 0
    SIDEBAR = 1
    NEUTRAL = 2
    MAIN = 3


_ZONE_WEIGHT = {Zone.BOILERPLATE: 0.0, Zone.SIDEBAR: 0.15, Zone.NEUTRAL: 0.6, Zone.MAIN: 1.0}
_NAV_TOKENS = frozenset(
    "nav navbar navigation menu menubar gnb lnb snb breadcrumb breadcrumbs pagination pager "
    "skip".split()
)
_CHROME_TOKENS = frozenset("header footer masthead topbar banner copyright".split())
_SIDE_TOKENS = frozenset(
    "sidebar aside side widget widgets popular trending related most mostread ranking rank "
    "promo sponsor ads ad".split()
)
_MAIN_TOKENS = frozenset(
    "main content primary posts articles stories feed river list listing".split()
)
_ITEM_TOKENS = frozenset("post entry card article story teaser hentry".split())
_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class ListingResult:
    """The article links found on a listing page, the pattern behind them and the next page.

    `links` is empty unless `proven`. `pattern` is the best candidate even when unproven (for
    logs); store it for the site only when `proven`. `reason`: `known_pattern`, `learned`,
    `relearned` (the known pattern failed and a new one proved itself), `not_proven`,
    `no_candidate`, `empty_page`.
    """

    links: tuple[str, ...]
    pattern: str | None
    proven: bool
    next_page: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class _Link:
    url: str
    shape: str
    zone: Zone
    element: lxml.html.HtmlElement
    taxonomy: bool
    titled: bool


# --- shapes -------------------------------------------------------------------------------


def path_shape(url: str) -> str:
    """The shape of a URL's path and query, with variable parts collapsed to wildcard tokens."""
    parts = urlsplit(url)
    tokens = [segment_token(s) for s in parts.path.split("/") if s]
    query = _query_shape(parts.query)
    return "/" + "/".join(tokens) + (f"?{query}" if query else "")


def segment_token(segment: str) -> str:
    """The token of one path segment; a file extension is kept (`{num}.html`)."""
    text = unquote(segment).strip()
    match = _EXT.match(text)
    stem, ext = (match["stem"], match["ext"].lower()) if match else (text, "")
    return _stem_token(stem) + ext


def _stem_token(stem: str) -> str:
    if _DIGITS.match(stem):
        return NUM
    if _DASHED_DATE.match(stem):
        return DATE
    if _UUID.match(stem) or _looks_like_id(stem):
        return HASH
    words = [w for w in _SEPARATORS.split(stem) if w]
    if len(words) >= 2 or len(stem) > 40 or (not stem.isascii() and len(stem) >= 8):
        return SLUG_ID if _LONG_NUMBER.search(stem) else SLUG
    return stem.lower()


def _looks_like_id(stem: str) -> bool:
    """Hex digests and base62 ids: long runs of letters mixed with at least two digits."""
    if not _ALNUM.match(stem):
        return False
    digits = sum(c.isdigit() for c in stem)
    return digits >= 2 and digits < len(stem)


def _query_shape(query: str) -> str:
    pairs = sorted(
        (key.lower(), _stem_token(value) if value else "")
        for key, value in parse_qsl(query, keep_blank_values=True)
        if not _TRACKING.match(key)
    )
    return "&".join(f"{key}={value}" for key, value in pairs)


def pattern_matches(shape: str, pattern: str) -> bool:
    """Whether a shape fits a pattern: equal, except that `{any}` fits a literal or slug segment."""
    if shape == pattern:
        return True
    if ANY not in pattern:
        return False
    shape_path, _, shape_query = shape.partition("?")
    pattern_path, _, pattern_query = pattern.partition("?")
    shape_tokens, pattern_tokens = shape_path.split("/"), pattern_path.split("/")
    if shape_query != pattern_query or len(shape_tokens) != len(pattern_tokens):
        return False
    return all(
        p == s or (p == ANY and _is_section(s))
        for s, p in zip(shape_tokens, pattern_tokens, strict=True)
    )


def _is_section(token: str) -> bool:
    """A token that can name a section (`world`, `tech-science`), as opposed to an id or date."""
    return token == SLUG or not token.startswith(("{", "*"))


def _patterns_for(shape: str) -> list[str]:
    """The shape itself plus variants with a section segment opened to `{any}`: news sites put
    the section before the date or id (`/world/2024/05/12/a-b`) or before the slug (`/sport/a-b`).

    With an id or date in the shape, any one section-like segment may open; with only a slug,
    just the first, so that `/world/*` and `/sport/*` meet but little else does.
    """
    path, sep, query = shape.partition("?")
    tokens = path.split("/")
    strong = any(_token_core(t) in _STRONG for t in tokens)
    slugged = len(tokens) >= 3 and _token_core(tokens[-1]) in (SLUG, SLUG_ID)
    openable = range(1, len(tokens)) if strong else range(1, 2) if slugged else range(0)
    variants = [shape]
    for index in openable:
        token = tokens[index]
        if index < len(tokens) - 1 and _is_section(token) and "." not in token:
            opened = [*tokens[:index], ANY, *tokens[index + 1 :]]
            variants.append("/".join(opened) + sep + query)
    return variants


def _token_core(token: str) -> str:
    match = _EXT.match(token)
    return match["stem"] if match else token


def _is_taxonomy(url: str) -> bool:
    """Whether a URL is recognisably not an article: a tag, author, account or listing page."""
    parts = urlsplit(url)
    segments = [unquote(s).lower() for s in parts.path.split("/") if s]
    keys = {k.lower() for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
    if keys & _NON_ARTICLE_KEYS and not keys & _ID_KEYS:
        return True
    if segments and segments[-1].startswith("@"):  # a profile handle: /@ana, /@ana.reyes
        return True
    return any(s in NON_ARTICLE_WORDS or _LISTING_STEM.match(s) for s in segments)


def _path_depth(shape: str) -> int:
    path, _, query = shape.partition("?")
    return len([t for t in path.split("/") if t]) + (1 if query else 0)


# --- links and zones ----------------------------------------------------------------------


def _site_of(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    return host.removeprefix("www.")


def _collect_links(root: lxml.html.HtmlElement, base: str, page_url: str) -> list[_Link]:
    site, here = _site_of(page_url), page_url.split("#", 1)[0]
    links: list[_Link] = []
    for anchor in root.iter("a", "area"):
        url = _resolve(anchor.get("href"), base)
        if url is None or url == here or _site_of(url) != site:
            continue
        parts = urlsplit(url)
        if parts.path in ("", "/") and not parts.query or _MEDIA.search(parts.path):
            continue
        shape = path_shape(url)
        titled = _is_title(anchor.text_content())
        links.append(_Link(url, shape, _zone_of(anchor), anchor, _is_taxonomy(url), titled))
    return links


def _is_title(text: str) -> bool:
    """Anchor text that reads like a headline: three words, or 15 characters in scripts that do
    not separate words with spaces. Action and taxonomy links ("hide", "vegan") are shorter."""
    words = text.split()
    return len(words) >= 3 or sum(len(w) for w in words) >= 15


def _resolve(href: str | None, base: str) -> str | None:
    href = (href or "").strip()
    if not href or href.startswith("#"):
        return None
    url = join_url(base, href)
    if url is None:
        return None
    try:
        scheme = urlsplit(url).scheme
    except ValueError:  # e.g. an invalid IPv6 host in a hand-written href
        return None
    return url.split("#", 1)[0] if scheme in ("http", "https") else None


def _markers(element: lxml.html.HtmlElement) -> set[str]:
    """What an element says about its content: `nav`, `chrome`, `side`, `main`, `item`."""
    tag = element.tag if isinstance(element.tag, str) else ""
    role = (element.get("role") or "").lower()
    words = set(_TOKEN_SPLIT.split(f"{element.get('class', '')} {element.get('id', '')}".lower()))
    found = set()
    if tag == "nav" or role in ("navigation", "menu", "menubar") or words & _NAV_TOKENS:
        found.add("nav")
    if tag in ("header", "footer") or role in ("banner", "contentinfo") or words & _CHROME_TOKENS:
        found.add("chrome")
    if tag == "aside" or role == "complementary" or words & _SIDE_TOKENS:
        found.add("side")
    if tag == "main" or role == "main" or words & _MAIN_TOKENS:
        found.add("main")
    if tag == "article" or words & _ITEM_TOKENS:
        found.add("item")
    return found


def _zone_of(anchor: lxml.html.HtmlElement) -> Zone:
    """The zone of the nearest ancestors that say. Navigation wins over a sidebar around it (a
    side menu is navigation); a main-content marker ends the search. Headers and footers inside
    an article card (`<article><header>`, WordPress `entry-header`) belong to the card."""
    chain = [_markers(el) for el in anchor.iterancestors()]
    in_item = any("item" in markers for markers in chain)
    in_side = False
    for markers in chain:
        if "nav" in markers or ("chrome" in markers and not in_item):
            return Zone.BOILERPLATE
        in_side = in_side or "side" in markers
        if "main" in markers:
            break
    if in_side:
        return Zone.SIDEBAR
    return Zone.MAIN if any("main" in markers for markers in chain) else Zone.NEUTRAL


# --- candidates and proof -----------------------------------------------------------------


def _candidates(links: list[_Link]) -> list[tuple[float, str]]:
    """Patterns shared by at least MIN_LINKS distinct eligible URLs, best score first."""
    groups: dict[str, dict[str, tuple[Zone, bool]]] = {}
    for link in links:
        if link.taxonomy or link.zone is Zone.BOILERPLATE:
            continue
        for pattern in _patterns_for(link.shape):
            urls = groups.setdefault(pattern, {})
            zone, titled = urls.get(link.url, (link.zone, link.titled))
            urls[link.url] = (max(zone, link.zone), titled or link.titled)
    total = len({link.url for link in links}) or 1
    scored = [
        (_score(pattern, list(urls.values()), total), pattern)
        for pattern, urls in groups.items()
        if len(urls) >= MIN_LINKS
    ]
    return sorted(scored, key=lambda item: (-item[0], item[1]))


def _score(pattern: str, urls: list[tuple[Zone, bool]], total: int) -> float:
    """Count, weighted by where the links sit, their share of the page, their depth, and how
    many carry a headline-like text; a pattern with an opened section pays a little."""
    count = len(urls)
    content = sum(_ZONE_WEIGHT[zone] for zone, _ in urls) / count
    titled = sum(1 for _, has_title in urls if has_title) / count
    depth = min(_path_depth(pattern), 4)
    generality = 0.85 if ANY in pattern else 1.0
    return count * content * (1 + count / total) * (1 + 0.2 * depth) * (0.5 + titled) * generality


def _matching(links: list[_Link], pattern: str) -> list[_Link]:
    return [
        link
        for link in links
        if not link.taxonomy
        and link.zone is not Zone.BOILERPLATE
        and pattern_matches(link.shape, pattern)
    ]


def _region(matched: list[_Link]) -> lxml.html.HtmlElement | None:
    """The content area around the deepest element holding at least half of the matching links.

    Widening to the enclosing content area (a `main`, `section`, `aside` or a block named like
    one) keeps three links in a tight list from proving themselves in a region made of only them.
    """
    counts: Counter[lxml.html.HtmlElement] = Counter()
    depth: dict[lxml.html.HtmlElement, int] = {}
    for link in matched:
        ancestors = list(link.element.iterancestors())
        for level, ancestor in enumerate(reversed(ancestors)):
            counts[ancestor] += 1
            depth[ancestor] = level
    needed = max(MIN_LINKS, math.ceil(len(matched) / 2))
    holding = [el for el, count in counts.items() if count >= needed]
    return _content_area(max(holding, key=lambda el: depth[el])) if holding else None


def _content_area(element: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    for candidate in (element, *element.iterancestors()):
        if candidate.tag in ("main", "section", "aside") or _markers(candidate) & {"main", "side"}:
            return candidate
    return element


def _proves(links: list[_Link], pattern: str) -> bool:
    matched = _matching(links, pattern)
    if len({link.url for link in matched}) < MIN_LINKS:
        return False
    region = _region(matched)
    if region is None:
        return False
    inside = {id(el) for el in region.iter("a", "area")}
    # Anchors, not distinct URLs: a listing links each article two or three times (image, title,
    # comments), which is part of what makes it the region's subject. Taxonomy links (tags,
    # authors, categories) are known not to be articles, so they neither support nor refute it.
    counted = [
        link
        for link in links
        if id(link.element) in inside and not link.taxonomy and link.zone is not Zone.BOILERPLATE
    ]
    matched_ids = {id(link.element) for link in matched}
    in_pattern = [link for link in counted if id(link.element) in matched_ids]
    matched_urls = {link.url for link in in_pattern}
    share = len(in_pattern) / len(counted) if counted else 0.0
    logger.debug("pattern %s: %s of %s region anchors", pattern, len(in_pattern), len(counted))
    return len(matched_urls) >= MIN_LINKS and share >= MIN_REGION_SHARE


def _unique_urls(links: list[_Link], exclude: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(link.url for link in links if link.url != exclude))


# --- the entry point ----------------------------------------------------------------------


def find_article_links(
    html: str | bytes, page_url: str, known_pattern: str | None = None
) -> ListingResult:
    """The article links of a listing page, by a known pattern if it still holds, else learned."""
    root = parse_html(html)
    if root is None:
        return ListingResult((), None, False, None, "empty_page")
    base = base_url_of(root, page_url)
    links = _collect_links(root, base, page_url)
    next_page = find_next_page(root, page_url, base)
    if known_pattern and _proves(links, known_pattern):
        return _result(links, known_pattern, next_page, "known_pattern")
    if known_pattern:
        logger.info("stored listing pattern %s no longer holds on %s", known_pattern, page_url)
    candidates = _candidates(links)
    if not candidates:
        return ListingResult((), None, False, next_page, "no_candidate")
    best = candidates[0][1]
    if not _proves(links, best):
        logger.debug("best pattern %s not proven on %s", best, page_url)
        return ListingResult((), best, False, next_page, "not_proven")
    return _result(links, best, next_page, "relearned" if known_pattern else "learned")


def _result(links: list[_Link], pattern: str, next_page: str | None, reason: str) -> ListingResult:
    found = _unique_urls(_matching(links, pattern), exclude=next_page)
    return ListingResult(found, pattern, True, next_page, reason)


def walk_listing(
    start_url: str,
    fetch: Callable[[str], str | bytes],
    *,
    max_pages: int = 3,
    known_pattern: str | None = None,
) -> Iterator[tuple[str, ListingResult]]:
    """Follow "next page" links from `start_url` for up to `max_pages` pages.

    `fetch(url)` returns the page body. The pattern proven on one page is re-validated on the
    next, the way a stored pattern is on a later visit.
    """
    url: str | None = start_url
    seen: set[str] = set()
    pattern = known_pattern
    while url is not None and url not in seen and len(seen) < max_pages:
        seen.add(url)
        result = find_article_links(fetch(url), url, known_pattern=pattern)
        pattern = result.pattern if result.proven else None
        yield url, result
        url = result.next_page


# --- next page ----------------------------------------------------------------------------

_NEXT_WORDS = frozenset(
    {
        "next",
        "next page",
        "older",
        "older posts",
        "older entries",
        "older articles",
        "more",
        "more articles",
        "more stories",
        "more posts",
        "다음",
        "다음 페이지",
        "다음페이지",
        "suivant",
        "page suivante",
        "weiter",
        "nächste",
        "nächste seite",
        "siguiente",
        "successivo",
        "volgende",
        "próxima",
        "次へ",
        "次のページ",
        "下一页",
    }
)
_ARROWS = "›»→>▶"
_PAGE_KEYS = frozenset("page paged pg pageno page_no pageindex pagenum cpage currentpage".split())
_PAGE_IN_PATH = re.compile(r"/(?:page|p)/([0-9]{1,5})/?$", re.I)


def find_next_page(root: lxml.html.HtmlElement, page_url: str, base: str) -> str | None:
    """The next page of a listing: `rel=next`, a "Next"/"Older posts"/"›" link, or page n+1."""
    site, here = _site_of(page_url), page_url.split("#", 1)[0]
    for finder in (_next_by_rel, _next_by_text, _next_by_number):
        for href in finder(root, page_url, base):
            url = _resolve(href, base)
            if url and url != here and _site_of(url) == site:
                return url
    return None


def _next_by_rel(root: lxml.html.HtmlElement, page_url: str, base: str) -> Iterator[str | None]:
    for element in root.iter("link", "a"):
        if "next" in (element.get("rel") or "").lower().split():
            yield element.get("href")


def _next_by_text(root: lxml.html.HtmlElement, page_url: str, base: str) -> Iterator[str | None]:
    for anchor in root.iter("a"):
        text = f"{anchor.text_content()} {anchor.get('aria-label', '')} {anchor.get('title', '')}"
        label = " ".join(text.lower().split())
        words = set(_TOKEN_SPLIT.split((anchor.get("class") or "").lower()))
        if _is_next_label(label) or any(w.startswith("next") for w in words):
            yield anchor.get("href")


def _is_next_label(label: str) -> bool:
    bare = label.strip(_ARROWS + " ").strip()
    if not bare:
        return bool(label) and label.strip() in (*_ARROWS, ">>")
    return bare in _NEXT_WORDS


def _next_by_number(root: lxml.html.HtmlElement, page_url: str, base: str) -> Iterator[str | None]:
    current, stem = _page_number(page_url)
    for anchor in root.iter("a"):
        href = _resolve(anchor.get("href"), base)
        if href is None:
            continue
        number, other_stem = _page_number(href)
        if number == current + 1 and other_stem == stem:
            yield anchor.get("href")


def _page_number(url: str) -> tuple[int, str]:
    """A URL's page number (1 when it has none) and the URL without it, to compare pages."""
    parts = urlsplit(url)
    number, path = 1, parts.path
    match = _PAGE_IN_PATH.search(path)
    if match:
        number, path = int(match[1]), path[: match.start()]
    kept = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in _PAGE_KEYS and value.isdigit():
            number = int(value)
        else:
            kept.append(f"{key}={value}")
    return number, f"{parts.netloc}{path.rstrip('/')}?{'&'.join(sorted(kept))}"
