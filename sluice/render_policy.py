"""When to render a page in a browser: one decision, in one place.

Rendering costs 10-50x a plain fetch, so `auto` fetches statically first and renders only a page
that failed the length gate *and* looks like a JavaScript application shell. Per site, Sluice
learns which way works and goes straight there next time, re-checking now and then.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sluice.records import Extraction, GateResult, Status

FetchMode = Literal["static", "browser"]

# Roots that client-side frameworks mount into.
_APP_ROOT = re.compile(
    rb"<(div|main|body)[^>]+id=[\"'](root|app|__next|__nuxt|___gatsby|svelte|application|"
    rb"main-app|react-root|ember-app)[\"'][^>]*>\s*(<!--.*?-->\s*)*</\1>",
    re.IGNORECASE | re.DOTALL,
)
_NOSCRIPT_JS = re.compile(rb"<noscript[^>]*>[^<]{0,300}(enable|turn on|requires?|need)\b[^<]{0,80}"
                          rb"javascript", re.IGNORECASE)
_BOOTSTRAP_DATA = re.compile(rb"__NEXT_DATA__|__NUXT__|window\.__INITIAL_STATE__|"
                             rb"window\.__APOLLO_STATE__|window\.__PRELOADED_STATE__|ng-version=|"
                             rb"data-reactroot|data-server-rendered", re.IGNORECASE)
_FRAMEWORK_BUNDLE = re.compile(rb"<script[^>]+src=[\"'][^\"']*(/_next/static/|/_nuxt/|"
                               rb"/static/js/main\.|bundle\.js|/assets/index-[\w-]+\.js|runtime\.[0-9a-f]+\.js|"
                               rb"chunk-vendors|polyfills\.[0-9a-f]+\.js)", re.IGNORECASE)
_SCRIPT = re.compile(rb"<script\b[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(rb"<script\b.*?</script>|<style\b.*?</style>|<[^>]+>", re.IGNORECASE | re.DOTALL)

# A shell shows almost no text of its own without JavaScript.
MAX_SHELL_VISIBLE_CHARS = 600
NEARLY_EMPTY_CHARS = 200
RECHECK_AFTER = timedelta(days=7)
RECHECK_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class ShellSigns:
    """What in a static page says "JavaScript builds this page"."""

    empty_app_root: bool
    noscript_asks_for_js: bool
    bootstrap_data: bool
    framework_bundle: bool
    script_share: float
    visible_chars: int

    @property
    def count(self) -> int:
        """How many signs; a page with next to no visible text at all counts twice."""
        return (self.empty_app_root + self.noscript_asks_for_js + self.bootstrap_data
                + self.framework_bundle + (self.script_share > 0.5)
                + (self.visible_chars < MAX_SHELL_VISIBLE_CHARS)
                + (self.visible_chars < NEARLY_EMPTY_CHARS))


@dataclass(frozen=True, slots=True)
class RenderDecision:
    render: bool
    reason: str


def shell_signs(html: bytes) -> ShellSigns:
    scripts = sum(len(match.group(1)) for match in _SCRIPT.finditer(html))
    visible = re.sub(rb"\s+", b" ", _TAGS.sub(b" ", html)).strip()
    return ShellSigns(
        empty_app_root=bool(_APP_ROOT.search(html)),
        noscript_asks_for_js=bool(_NOSCRIPT_JS.search(html)),
        bootstrap_data=bool(_BOOTSTRAP_DATA.search(html)),
        framework_bundle=bool(_FRAMEWORK_BUNDLE.search(html)),
        script_share=scripts / max(len(html), 1),
        visible_chars=len(visible),
    )


def needs_render(html: bytes, extraction: Extraction, gate: GateResult) -> RenderDecision:
    """Should a statically fetched page be fetched again through the browser?

    Only when the static page failed the gate (or gave no text) and shows at least two signs of
    a JavaScript shell: one sign alone (a big inline script, a short page) is too common on
    ordinary pages to be worth a render.
    """
    if gate.status is not Status.UNDER_LIMIT:
        return RenderDecision(False, "static_page_passed_gate")
    signs = shell_signs(html)
    if signs.count < 2:
        return RenderDecision(False, "no_javascript_shell")
    return RenderDecision(True, _strongest_sign(signs))


def _strongest_sign(signs: ShellSigns) -> str:
    if signs.empty_app_root:
        return "empty_app_root"
    if signs.noscript_asks_for_js:
        return "noscript_asks_for_javascript"
    if signs.bootstrap_data or signs.framework_bundle:
        return "framework_bootstrap_data"
    if signs.script_share > 0.5:
        return "mostly_script"
    return "little_visible_text"


def choose_fetch_mode(policy: str, learned: str | None, learned_at: datetime | None,
                      now: datetime, rng: random.Random | None = None) -> FetchMode:
    """How to fetch the next page of a site: its policy first, then what was learned.

    A site learned as needing the browser is still fetched statically now and then (after a
    week, and for a small share of pages), so a site that drops its shell is not stuck.
    """
    if policy == "always":
        return "browser"
    if policy == "never" or learned != "browser":
        return "static"
    if learned_at is not None and now - learned_at > RECHECK_AFTER:
        return "static"
    if (rng or random).random() < RECHECK_SHARE:
        return "static"
    return "browser"


# Site learning: a moving share of the site's recent good pages that needed the browser. A
# site's first rendered page puts it over the threshold at once (a JavaScript-only site skips
# the static fetch from its next page on); on a mixed site, static successes keep it static.
FIRST_JS_SHARE = 0.75
JS_SHARE_WEIGHT = 0.25
BROWSER_THRESHOLD = 0.7


def update_js_share(previous: float | None, needed_browser: bool) -> float:
    """Fold one page that passed the gate into its site's moving share of rendered pages."""
    if previous is None:
        return FIRST_JS_SHARE if needed_browser else 0.0
    return (1 - JS_SHARE_WEIGHT) * previous + JS_SHARE_WEIGHT * float(needed_browser)


def mode_for_share(js_share: float) -> FetchMode:
    return "browser" if js_share > BROWSER_THRESHOLD else "static"
