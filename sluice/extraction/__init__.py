"""Main-content extraction: `extract(html, url)` gives an `Extraction` for any page.

Everything in the product extracts through `extract`; the rest of this package is its parts.
"""

from __future__ import annotations

from sluice.extraction.core import extract
from sluice.records import Extraction

__all__ = ["Extraction", "extract"]
