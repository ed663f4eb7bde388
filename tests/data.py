"""Where the development data lives: `../shared/data` beside the project root, when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SLUICE_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))


def shared_data(relative: str) -> Path:
    """The path of a file or folder in the shared data, or skip the test with a clear message."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"development data not found at ../shared/data/{relative}; see the README")
    return path
