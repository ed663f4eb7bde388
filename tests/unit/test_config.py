"""Settings read from the environment: renamed settings still read under their former name."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from sluice.config import Settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No SLUICE_ variable from the caller, and no `.env` file in reach."""
    for name in list(os.environ):
        if name.startswith("SLUICE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_max_entries_caps_sitemaps_and_feeds(clean_env: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    assert Settings().discovery.max_entries == 50_000
    clean_env.setenv("SLUICE_DISCOVERY__MAX_ENTRIES", "3")
    assert Settings().discovery.max_entries == 3
    assert not caplog.records


def test_the_former_name_is_read_with_a_deprecation_warning(
        clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    clean_env.setenv("SLUICE_DISCOVERY__SITEMAP_MAX_ENTRIES", "7")
    with caplog.at_level(logging.WARNING, logger="sluice.config"):
        assert Settings().discovery.max_entries == 7
    assert [record.getMessage() for record in caplog.records] == [
        "SLUICE_DISCOVERY__SITEMAP_MAX_ENTRIES is deprecated and will be removed in the next "
        "release: use SLUICE_DISCOVERY__MAX_ENTRIES (it caps feeds as well as sitemaps)"]


def test_the_new_name_wins_over_the_former_one(
        clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    clean_env.setenv("SLUICE_DISCOVERY__SITEMAP_MAX_ENTRIES", "7")
    clean_env.setenv("SLUICE_DISCOVERY__MAX_ENTRIES", "5")
    with caplog.at_level(logging.WARNING, logger="sluice.config"):
        assert Settings().discovery.max_entries == 5
    assert "SLUICE_DISCOVERY__SITEMAP_MAX_ENTRIES is ignored" in caplog.text
