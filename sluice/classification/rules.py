"""Tier 1: rules that are almost never wrong.

Each rule looks at the extracted text, the raw HTML and the URL, and either names a page type
with a reason a person understands, or stays silent. Only pages no rule claims go on to the
model. Thresholds are deliberately conservative: a rule that fires wrongly cannot be overruled.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sluice.classification.text_stats import (
    line_lengths,
    mojibake_share,
    short_line_share,
    word_equivalents,
)
from sluice.records import Extraction

# Below this many word equivalents there is nothing worth reading, whatever the page is.
MIN_WORDS = 25
# Mis-decoded pairs per 100 characters above which the text is unreadable.
MAX_MOJIBAKE = 1.0

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_PASSWORD_INPUT = re.compile(r"<input[^>]+type\s*=\s*[\"']?password", re.I)
_ERROR_TITLE = re.compile(
    r"\b(404|410|500|503)\b.{0,40}\b(not found|error|gone|unavailable)\b"
    r"|\b(page|file|article|content)\s+(was\s+)?not\s+found\b|\bpage (does not|doesn't) exist"
    r"|^\s*(error|not found)\s*$|페이지를\s*찾을\s*수\s*없|존재하지\s*않는\s*페이지",
    re.I,
)
# A bare "404" is an error title only in a short title or on a page with little text: a
# story titled "Highway 404 reopens after overnight crash" is news.
_BARE_404 = re.compile(r"(?<!\d)404(?!\d)")
_SHORT_TITLE_WORDS = 4
_ERROR_TEXT = re.compile(
    r"\b(page|url|file)[^.]{0,40}(could not be found|cannot be found|was not found|"
    r"doesn't exist|does not exist|no longer exists?)\b|\b404\b|페이지를\s*찾을\s*수\s*없|"
    r"요청하신\s*페이지",
    re.I,
)
_LOGIN_WORDS = re.compile(
    r"\b(log\s?in|sign\s?in|password|forgot|username|e-?mail address|remember me|"
    r"create (an )?account|register)\b|로그인|비밀번호|아이디|회원가입",
    re.I,
)
_LOGIN_URL = re.compile(r"/(login|log-in|signin|sign-in|sign_in|account/login|auth)\b", re.I)
_COOKIE_WORDS = re.compile(
    r"\b(cookies?|consent|privacy|accept all|reject all|manage (your )?preferences|"
    r"partners|personali[sz]ed|tracking)\b|쿠키|개인정보|동의",
    re.I,
)


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A rule's decision: the page type, a reason code, a sentence, and whether the text is
    unusable whatever the suitability policy says about the type."""

    page_type: str
    code: str
    reason: str
    unusable: bool = False


@dataclass(frozen=True, slots=True)
class RulePage:
    """What the rules look at: the extraction, the page title, the HTML and the URL."""

    extraction: Extraction
    title: str
    html: str
    url: str
    words: float


def html_title(html: str) -> str:
    """The text of the HTML <title> element, or an empty string."""
    match = _TITLE.search(html[:200_000])
    return re.sub(r"\s+", " ", match.group(1)).strip() if match else ""


def _empty(page: RulePage) -> RuleHit | None:
    if page.words >= MIN_WORDS:
        return None
    return RuleHit(
        "other",
        "too_short",
        f"The page has almost no main text (about {page.words:.0f} words).",
        unusable=True,
    )


def _mojibake(page: RulePage) -> RuleHit | None:
    if mojibake_share(page.extraction.text) <= MAX_MOJIBAKE:
        return None
    return RuleHit(
        "other", "mojibake", "The text is garbled by a wrong character encoding.", unusable=True
    )


def _error(page: RulePage) -> RuleHit | None:
    if page.words > 250:
        return None
    bare_404 = _BARE_404.search(page.title) and (
        page.words < 120 or len(page.title.split()) <= _SHORT_TITLE_WORDS)
    if _ERROR_TITLE.search(page.title) or bare_404 or (
        page.words < 120 and _ERROR_TEXT.search(page.extraction.text[:1000])
    ):
        return RuleHit("error", "error_page", "The page says it could not be found or failed.")
    return None


def _login(page: RulePage) -> RuleHit | None:
    if page.words > 150 or not _PASSWORD_INPUT.search(page.html):
        return None
    hits = len(_LOGIN_WORDS.findall(page.extraction.text))
    if hits >= 2 or _LOGIN_URL.search(page.url) or _LOGIN_WORDS.search(page.title):
        return RuleHit("login", "login_form", "The page is a login or password form.")
    return None


def _cookie_wall(page: RulePage) -> RuleHit | None:
    if page.words > 200:
        return None
    hits = len(_COOKIE_WORDS.findall(page.extraction.text))
    # At least a few consent words, and a large share of the little text there is.
    if hits < 3 or hits * 12 < page.words:
        return None
    return RuleHit("other", "cookie_wall", "The page shows only a cookie or consent notice.")


def _menu_like(page: RulePage) -> RuleHit | None:
    lengths = line_lengths(page.extraction.text)
    text_chars = max(1, len(page.extraction.text))
    link_share = page.extraction.link_chars / text_chars
    if len(lengths) >= 15 and short_line_share(page.extraction.text) > 0.9 and link_share > 0.6:
        return RuleHit("listing", "menu_like", "The main text is a list of short links.")
    return None


RULES: tuple[Callable[[RulePage], RuleHit | None], ...] = (
    _error,
    _login,
    _cookie_wall,
    _empty,
    _mojibake,
    _menu_like,
)


def apply_rules(html: str, url: str | None, extraction: Extraction) -> RuleHit | None:
    """The first rule that claims the page, or None when the page needs a closer look."""
    title = extraction.title or html_title(html)
    page = RulePage(extraction, title, html, url or "", word_equivalents(extraction.text))
    for rule in RULES:
        hit = rule(page)
        if hit is not None:
            return hit
    return None
