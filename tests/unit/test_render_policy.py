"""The render decision: only JavaScript shells that failed the gate go to the browser."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from sluice.gate import GateOptions, gate_length
from sluice.records import Extraction
from sluice.render_policy import (
    choose_fetch_mode,
    mode_for_share,
    needs_render,
    shell_signs,
    update_js_share,
)
from tests.sites import article_html, js_only_html

GATE = GateOptions(1000, 5000)
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def decide(html: str, text: str = "") -> bool:
    return needs_render(html.encode(), Extraction(text=text), gate_length(text, GATE)).render


def test_javascript_shell_that_failed_the_gate_is_rendered() -> None:
    decision = needs_render(js_only_html("x").encode(), Extraction(text=""),
                            gate_length("", GATE))
    assert decision.render and decision.reason == "empty_app_root"


def test_plain_short_page_is_not_rendered() -> None:
    short = "<html><body><article><p>" + "A short note about the weather today. " * 10 + \
            "</p></article><footer>" + "links " * 100 + "</footer></body></html>"
    assert not decide(short, "A short note about the weather today.")


def test_page_that_passed_the_gate_is_never_rendered() -> None:
    text = "word " * 400
    assert not decide(js_only_html("x"), text)


def test_next_data_and_bundles_are_signs() -> None:
    shell = ("<html><head><script src='/_next/static/chunks/main-abc.js'></script></head>"
             "<body><div id='__next'></div><script id='__NEXT_DATA__'>{}</script></body></html>")
    signs = shell_signs(shell.encode())
    assert signs.empty_app_root and signs.bootstrap_data and signs.framework_bundle
    assert decide(shell)


def test_ordinary_article_shows_no_signs() -> None:
    signs = shell_signs(article_html("Plain").encode())
    assert signs.count == 0


def test_fetch_mode_follows_policy_then_learning() -> None:
    rng = random.Random(1)
    assert choose_fetch_mode("always", None, None, NOW) == "browser"
    assert choose_fetch_mode("never", "browser", NOW, NOW) == "static"
    assert choose_fetch_mode("auto", None, None, NOW) == "static"
    assert choose_fetch_mode("auto", "static", NOW, NOW) == "static"
    modes = [choose_fetch_mode("auto", "browser", NOW, NOW, rng) for _ in range(1000)]
    assert 900 < modes.count("browser") < 1000  # re-checked statically now and then
    assert choose_fetch_mode("auto", "browser", NOW - timedelta(days=8), NOW) == "static"


def test_site_learning() -> None:
    share = update_js_share(None, True)
    assert mode_for_share(share) == "browser"  # a JS-only site: the next page skips static
    mixed = update_js_share(update_js_share(None, True), False)
    assert mode_for_share(mixed) == "static"
    share = 0.0
    for _ in range(6):
        share = update_js_share(share, True)
    assert mode_for_share(share) == "browser"  # a site that changed to a shell is relearned
