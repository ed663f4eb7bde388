"""The length gate: too short is `under_limit`; too long is kept whole but `content` is cut."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sluice.records import GateResult, Status, Verdict


@dataclass(frozen=True, slots=True)
class GateOptions:
    min_chars: int = 1000
    max_chars: int = 5000


# Western sentence ends need a following space ("3.5" is no boundary); CJK ones do not.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*\s|[。！？][」』”)]*")


def gate_length(text: str, options: GateOptions) -> GateResult:
    """Decide on length alone. Passing pages are `pending` (classification comes next)."""
    n_chars = len(text)
    if n_chars == 0:
        return GateResult(Status.UNDER_LIMIT, "no_text", 0, "")
    if n_chars < options.min_chars:
        return GateResult(Status.UNDER_LIMIT, "too_short", n_chars, text)
    return GateResult(Status.PENDING, None, n_chars, cut_text(text, options.max_chars))


def cut_text(text: str, max_chars: int) -> str:
    """Cut `text` to at most `max_chars`, at the last sentence end, else the last word break.

    A boundary is accepted only in the last half of the allowed length, so a page with one
    enormous sentence is still cut near the limit rather than to a stub.
    """
    if len(text) <= max_chars:
        return text
    window = text[: max_chars + 1]
    floor = max_chars // 2
    sentence_ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= max_chars]
    if sentence_ends and sentence_ends[-1] >= floor:
        return window[: sentence_ends[-1]].rstrip()
    space = window.rfind(" ", 0, max_chars + 1)
    if space >= floor:
        return window[:space].rstrip()
    return text[:max_chars]


def settle_status(
    n_chars: int, verdict: Verdict, options: GateOptions
) -> tuple[Status, str | None]:
    """The terminal status of a page that passed the gate, once it has been classified."""
    if not verdict.suitable:
        return Status.UNSUITABLE_CONTENT, _reason_code(verdict.page_type)
    if n_chars > options.max_chars:
        return Status.TRUNCATED, "over_max_chars"
    return Status.SUCCESS, None


def _reason_code(page_type: str) -> str:
    return f"{page_type}_page" if page_type else "unsuitable"
