"""Language-aware text measures shared by the rules and the model features.

CJK scripts carry more meaning per character than Latin ones, so length is measured in
"word equivalents": Latin-script words count one each, Hangul syllables a third of a word
(a Korean word averages about three syllables) and Han or Kana characters half a word.
"""

from __future__ import annotations

import functools
import re

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_HAN_KANA = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[^\W\d_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]{2,}")
# Byte sequences of UTF-8 decoded as Latin-1/cp1252 ("Ã©", "â€™", "ì\x9d"...) and U+FFFD.
_MOJIBAKE = re.compile(r"[ÃÂâ][\x80-\xbf\u2018-\u203a\u0152-\u0178€™œ]|[ìíëê][\x80-\xbf]|\ufffd")


def count_hangul(text: str) -> int:
    return len(_HANGUL.findall(text))


def count_han_kana(text: str) -> int:
    return len(_HAN_KANA.findall(text))


@functools.lru_cache(maxsize=32)
def word_equivalents(text: str) -> float:
    """The length of `text` in words, with CJK characters weighted by their density.

    Cached: the rules, the text features and the structure features all ask for one page's.
    """
    latin = len(_LATIN_WORD.findall(text))
    return latin + count_hangul(text) / 3.0 + count_han_kana(text) / 2.0


def cjk_share(text: str) -> float:
    """The share of non-space characters that are Hangul, Han or Kana."""
    letters = len(text) - sum(text.count(space) for space in " \n\t\r\u00a0\u3000")
    if not letters:
        return 0.0
    return (count_hangul(text) + count_han_kana(text)) / letters


def mojibake_share(text: str) -> float:
    """Mis-decoded character pairs per 100 characters (0 for clean text)."""
    if not text:
        return 0.0
    return 100.0 * len(_MOJIBAKE.findall(text)) / len(text)


def line_lengths(text: str) -> list[int]:
    """Lengths of the non-empty lines of `text`."""
    return [len(line.strip()) for line in text.splitlines() if line.strip()]


def short_line_share(text: str, limit: int = 30) -> float:
    """The share of non-empty lines shorter than `limit` characters (menus, tag clouds)."""
    lengths = line_lengths(text)
    if not lengths:
        return 1.0
    return sum(1 for n in lengths if n < limit) / len(lengths)
