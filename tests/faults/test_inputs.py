"""Bad lines in feed lists and ingest files: each is reported with its line number and reason,
and every good line of the batch is still used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sluice.config import SettingsSourceError, get_settings
from sluice.inputs import read_url_list
from tests.conftest import run_sluice, sluice_env
from tests.faults.conftest import all_rows

pytestmark = pytest.mark.integration

GOOD = ["http://127.0.0.1:9/a", "https://127.0.0.1:9/b?x=1", "http://127.0.0.1:9/caf%C3%A9"]
# (raw line, the reason it must be reported with; None for lines silently skipped)
LINES: list[tuple[bytes, str | None]] = [
    (b"# a comment", None),
    (b"", None),
    (b"   \t", None),
    (GOOD[0].encode(), "ok"),
    (b"file:///etc/passwd", "unsupported_scheme"),
    (b"ftp://127.0.0.1/pub/file", "unsupported_scheme"),
    (b"javascript:alert(1)", "unsupported_scheme"),
    (b"data:text/html,<h1>hi</h1>", "unsupported_scheme"),
    (b"http://", "invalid_url"),
    (b"http://[::1", "invalid_url"),
    (b"http://127.0.0.1:99999/x", "invalid_url"),
    (b"not a url", "invalid_url"),
    (("http://127.0.0.1:9/" + "a" * 5000).encode(), "url_too_long"),
    (GOOD[1].encode(), "ok"),
    (GOOD[0].encode() + b"#fragment", "duplicate"),
    (b'{"url": "http://127.0.0.1:9/c", ', "invalid_json"),
    (b'{"link": "http://127.0.0.1:9/d"}', "invalid_json"),
    (b"http://127.0.0.1:9/caf\xc3\xa9", "ok"),  # UTF-8
    (b"http://127.0.0.1:9/caf\xe9", "duplicate"),  # the same URL in Latin-1
    (b"\xff\xfe\x00\x00garbage", "unsupported_scheme"),
    (b"http://exa\x00mple.com/", "invalid_url"),
]


def expected_problems() -> dict[int, str]:
    return {number: reason for number, (_, reason) in enumerate(LINES, start=1)
            if reason not in (None, "ok")}


def test_url_list_reports_each_bad_line() -> None:
    listed = read_url_list(line for line, _ in LINES)
    assert [item.url for item in listed.urls] == GOOD
    assert {problem.line: problem.reason for problem in listed.problems} == expected_problems()


def test_ingest_file_with_bad_lines_queues_the_rest(pg_url: str, redis_url: str,
                                                   tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(b"\n".join(line for line, _ in LINES) + b"\n")
    result = run_sluice("ingest", str(path), env=sluice_env(pg_url, redis_url))
    assert result.returncode == 0, result.stderr
    assert f"queued {len(GOOD)} URLs" in result.stdout
    reported = {int(number): reason for number, reason in
                re.findall(r"line (\d+): (\w+):", result.stderr)}
    assert reported == expected_problems()
    assert sorted(all_rows(pg_url)) == sorted(GOOD)


def test_a_feed_list_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    env = sluice_env(f"sqlite:///{tmp_path / 'sluice.db'}")
    for source in (str(tmp_path / "no-such-feeds.txt"), str(tmp_path), "example.org/feed"):
        result = run_sluice("crawl", "https://127.0.0.1:9/feed.xml", source, env=env)
        assert result.returncode == 2, result.stderr
        assert f"cannot read {source}: " in result.stderr
        assert "Traceback" not in result.stderr


def test_bad_settings_and_an_unreachable_database_are_one_line_errors(tmp_path: Path) -> None:
    cases = [
        ({"SLUICE_GATE__MIN_CHARS": "many"}, 2, "invalid setting SLUICE_GATE__MIN_CHARS:"),
        ({"SLUICE_DATABASE_URL": "mysql://reader:s3cret@db.example.org/x"}, 2,
         "invalid setting SLUICE_DATABASE_URL: "),
        ({"SLUICE_DATABASE_URL": "sqlite://"}, 2, "an in-memory SQLite database lasts one "),
        ({"SLUICE_DATABASE_URL": "sqlite:///:memory:"}, 2, "name a file, such as sqlite:///"),
        ({"SLUICE_DATABASE_URL": "postgresql://reader:s3cret@127.0.0.1:9/x"}, 1,
         "database error: "),
        ({"SLUICE_GATE": "many"}, 2, "invalid setting SLUICE_GATE: "),
        ({"SLUICE_LLM": '{"api_key": "s3cret"'}, 2, "invalid setting SLUICE_LLM: "),
    ]
    for extra, code, message in cases:
        env = {**sluice_env(f"sqlite:///{tmp_path / 'sluice.db'}"), **extra}
        result = run_sluice("status", env=env)
        assert result.returncode == code, result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr and "s3cret" not in result.stderr


def test_a_settings_file_that_is_not_utf8_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_bytes(b"SLUICE_LLM__API_KEY=s3cr\xe9t\n")
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsSourceError, match=r"^invalid settings file \.env: "):
            get_settings()
    finally:
        get_settings.cache_clear()


def test_problems_name_their_file_or_argument(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("# first list\nftp://a.example/feed\n")
    (tmp_path / "two.txt").write_text("javascript:alert(1)\nftp://a.example/feed\n")
    env = sluice_env(f"sqlite:///{tmp_path / 'sluice.db'}")
    result = run_sluice("crawl", str(tmp_path / "one.txt"), str(tmp_path / "two.txt"),
                        "http://[::1", env=env)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert re.findall(r"^(.*?): (\w+):", result.stderr, re.MULTILINE) == [
        (f"{tmp_path / 'one.txt'}, line 2", "unsupported_scheme"),
        (f"{tmp_path / 'two.txt'}, line 1", "unsupported_scheme"),
        (f"{tmp_path / 'two.txt'}, line 2", "unsupported_scheme"),
        ("argument 3", "invalid_url"),
    ]
    assert "no valid feed URLs to crawl" in result.stderr


def test_ingest_with_redis_unreachable_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text(GOOD[0] + "\n")
    database = f"sqlite:///{tmp_path / 'sluice.db'}"
    result = run_sluice("ingest", str(path),
                        env=sluice_env(database, "redis://:s3cret@127.0.0.1:9/0"))
    assert result.returncode == 1, result.stderr
    assert "queue error: " in result.stderr
    assert "Traceback" not in result.stderr and "s3cret" not in result.stderr
    # The URL is not lost: its row waits as `queued` for the sweep to push it again.
    assert [row.status for row in all_rows(database).values()] == ["queued"]


def test_crawler_options_are_checked_before_it_starts(tmp_path: Path) -> None:
    env = sluice_env(f"sqlite:///{tmp_path / 'sluice.db'}", "redis://127.0.0.1:9/0")
    for option, value, message in [("--log-level", "verbose", "invalid choice: 'VERBOSE'"),
                                   ("--idle-exit", "-1", "must be at least 0: -1"),
                                   ("--idle-exit", "soon", "not a whole number: 'soon'")]:
        result = run_sluice("crawler", option, value, env=env)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr


def test_an_unknown_option_shows_the_usage_of_its_command(tmp_path: Path) -> None:
    env = sluice_env(f"sqlite:///{tmp_path / 'sluice.db'}")
    for command in (("status", "--bogus"), ("feeds", "list", "--bogus")):
        result = run_sluice(*command, env=env)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"usage: sluice {' '.join(command[:-1])} ")
        assert result.stderr.rstrip().endswith("error: unrecognized arguments: --bogus")
