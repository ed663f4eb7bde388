"""The training and evaluation corpora: WCXB's typed pages and the labelled suitability texts.

Both are read from the shared development data (`../shared/data` beside the project, or
`SLUICE_SHARED_DATA`). WCXB pages are extracted with `sluice.extraction.extract`, once: the
extractions are cached as JSON lines in a cache folder, since extraction costs far more than
everything else in training.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sluice.records import Extraction

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
WCXB = "wcxb-dev"
LABELED = "suitability/labeled-pages.jsonl.gz"

# Labelled texts carry a suitability label and a subtype, not a page type: map them.
_SUBTYPE_TYPES = {
    "login-form": "login",
    "homepage": "listing",
    "paginated-listing": "listing",
    "shop-order": "product",
    "product-landing": "product",
    "default-server-page": "error",
}


@dataclass(frozen=True, slots=True)
class Sample:
    """One page of a corpus: where it is from, its truth, and what the classifier sees."""

    id: str
    corpus: str
    group: str
    page_type: str
    suitable: bool | None
    url: str | None
    extraction: Extraction
    html_path: Path | None = None

    def html(self) -> str | None:
        """The raw HTML as text, or None for corpora without HTML."""
        if self.html_path is None:
            return None
        return gzip.decompress(self.html_path.read_bytes()).decode("utf-8", errors="replace")


def shared_data_root() -> Path:
    """The shared development data folder (it may not exist on a fresh clone)."""
    default = PROJECT_ROOT.parent / "shared" / "data"
    return Path(os.environ.get("SLUICE_SHARED_DATA", default))


def site_of(url: str | None) -> str:
    """The site a URL belongs to, for grouped cross-validation (host without `www.`)."""
    host = urlsplit(url or "").hostname or ""
    return host.removeprefix("www.")


def _extraction_to_json(extraction: Extraction) -> dict[str, Any]:
    record = dataclasses.asdict(extraction)
    record["published"] = extraction.published.isoformat() if extraction.published else None
    return record


def _extraction_from_json(record: dict[str, Any]) -> Extraction:
    published = record.get("published")
    record = record | {"published": datetime.fromisoformat(published) if published else None}
    return Extraction(**record)


def _load_cache(path: Path) -> dict[str, Extraction]:
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as handle:
        rows = (json.loads(line) for line in handle if line.strip())
        return {row["id"]: _extraction_from_json(row["ex"]) for row in rows}


def wcxb_extractions(root: Path, cache_dir: Path) -> dict[str, Extraction]:
    """Extractions of every WCXB page, computed once and cached in `cache_dir`."""
    from sluice.extraction import extract

    cache_path = cache_dir / "wcxb_extractions.jsonl"
    cached = _load_cache(cache_path)
    files = json.loads((root / WCXB / "metadata.json").read_text())["files"]
    missing = sorted(set(files) - set(cached))
    if missing:
        logger.info("extracting %s WCXB pages (cached: %s)", len(missing), len(cached))
        cache_dir.mkdir(parents=True, exist_ok=True)
        with cache_path.open("a", encoding="utf-8") as handle:
            for file_id in missing:
                html_path = root / WCXB / "dev/html" / f"{file_id}.html.gz"
                html = gzip.decompress(html_path.read_bytes())
                cached[file_id] = extract(html, files[file_id]["url"])
                row = {"id": file_id, "ex": _extraction_to_json(cached[file_id])}
                handle.write(json.dumps(row) + "\n")
    return cached


def wcxb_samples(root: Path, cache_dir: Path) -> list[Sample]:
    """The WCXB development pages with their human-reviewed page types."""
    files = json.loads((root / WCXB / "metadata.json").read_text())["files"]
    extractions = wcxb_extractions(root, cache_dir)
    return [
        Sample(
            id=f"wcxb/{file_id}",
            corpus="wcxb",
            group=site_of(meta["url"]),
            page_type=meta["page_type"],
            suitable=None,
            url=meta["url"],
            extraction=extractions[file_id],
            html_path=root / WCXB / "dev/html" / f"{file_id}.html.gz",
        )
        for file_id, meta in sorted(files.items())
    ]


def _labeled_type(row: dict[str, Any]) -> str:
    if row["label"] == "suitable":
        return "article"
    if row["label"] == "ambiguous":
        return "forum" if row["subtype"] == "forum-thread" else "other"
    return _SUBTYPE_TYPES.get(row["subtype"], "other")


def _labeled_extraction(row: dict[str, Any]) -> Extraction:
    stats = row.get("xml_stats") or {}
    return Extraction(
        text=row["text"] or "",
        n_paragraphs=stats.get("n_p", 0),
        n_list_items=stats.get("n_item", 0),
        n_headings=stats.get("n_head", 0),
        n_links=stats.get("n_ref", 0),
        link_chars=stats.get("ref_chars", 0),
        n_table_cells=stats.get("n_cell", 0),
    )


def _read_labeled(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def labeled_samples(root: Path) -> list[Sample]:
    """The labelled suitability texts (no HTML); `suitable` is None for ambiguous ones."""
    samples = []
    for row in _read_labeled(root / LABELED):
        url = None if row.get("url") in (None, "None") else row["url"]
        label = row["label"]
        samples.append(
            Sample(
                id=f"labeled/{row['id']}",
                corpus="labeled",
                group=f"labeled:{row['group']}",
                page_type=_labeled_type(row),
                suitable=None if label == "ambiguous" else label == "suitable",
                url=url,
                extraction=_labeled_extraction(row),
            )
        )
    return samples
