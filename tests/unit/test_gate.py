"""The length gate and the cut at a sentence or word boundary."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sluice.gate import GateOptions, cut_text, gate_length, settle_status
from sluice.records import Status, Verdict

OPTIONS = GateOptions(min_chars=1000, max_chars=5000)
SENTENCE = "The council approved the footbridge after a long debate. "


def test_short_text_is_under_limit() -> None:
    result = gate_length("x" * 999, OPTIONS)
    assert (result.status, result.reason, result.n_chars) == (Status.UNDER_LIMIT, "too_short", 999)
    assert gate_length("", OPTIONS).reason == "no_text"


def test_text_at_the_limits_passes() -> None:
    assert gate_length("x" * 1000, OPTIONS).status is Status.PENDING
    result = gate_length("x" * 5000, OPTIONS)
    assert result.content == "x" * 5000


def test_long_text_is_cut_at_a_sentence_end_and_kept_whole() -> None:
    text = SENTENCE * 200
    result = gate_length(text, OPTIONS)
    assert result.status is Status.PENDING and result.n_chars == len(text)
    assert len(result.content) <= 5000
    assert result.content.endswith("debate.")
    assert len(result.content) > 4900


def test_cut_falls_back_to_a_word_break() -> None:
    text = "word " * 2000
    cut = cut_text(text, 5000)
    assert len(cut) <= 5000 and cut.endswith("word")


def test_cut_of_one_enormous_word_is_hard() -> None:
    assert cut_text("x" * 6000, 5000) == "x" * 5000


def test_cjk_sentence_ends_count() -> None:
    text = "서울시는 새로운 다리를 열었다。" * 800
    cut = cut_text(text, 5000)
    assert cut.endswith("。") and len(cut) <= 5000


@given(st.text(max_size=7000), st.integers(min_value=10, max_value=6000))
def test_cut_is_a_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = cut_text(text, limit)
    assert len(cut) <= limit
    assert text.startswith(cut.rstrip()) or text.startswith(cut)


def test_settle_status() -> None:
    good = Verdict(True, "article", "reads like an article", "rules", 0.9)
    bad = Verdict(False, "listing", "a list of teasers", "model", 0.1)
    assert settle_status(6000, good, OPTIONS) == (Status.TRUNCATED, "over_max_chars")
    assert settle_status(3000, good, OPTIONS) == (Status.SUCCESS, None)
    assert settle_status(6000, bad, OPTIONS) == (Status.UNSUITABLE_CONTENT, "listing_page")
