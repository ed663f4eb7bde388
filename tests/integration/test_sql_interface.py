"""The SQL interface on Postgres and SQLite: views, search, `sluice sql`, `sluice export`, and
every example query of the README, each against known rows with known answers."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice import search as search_module
from sluice.db import articles, crawl_runs, make_engine
from sluice.db.store import as_utc
from sluice.export import EXPORT_COLUMNS, ExportQuery, export_rows
from sluice.search import QueryWithoutWords, fts5_query, search, websearch_query
from sluice.sql import run_statement, shell_command
from tests.conftest import (
    PROJECT_ROOT,
    create_pg_database,
    drop_pg_database,
    run_sluice,
    sluice_env,
)

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
NEWS = "https://news.example"
LONG_TEXT = "The council met again. " * 60


def article(url: str, status: str, hours_ago: float | None, **values: Any) -> dict[str, Any]:
    fetched = None if hours_ago is None else NOW - timedelta(hours=hours_ago)
    row = {"url": url, "status": status, "discovered_at": NOW - timedelta(days=60),
           "fetched_at": fetched, "updated_at": fetched or NOW, "attempts": 1}
    for name in ("reason", "http_status", "title", "text", "language", "published_at",
                 "char_count", "page_type", "suitability_reason", "source"):
        row[name] = values.get(name)
    return row


def published(day: int) -> datetime:
    return datetime(2026, 1, day, 8, 0, tzinfo=UTC)


ROWS = [
    # news.example: a steady month of articles, then a day of short and non-article pages.
    article(f"{NEWS}/a1", "success", 20 * 24, title="Council approves the park", text=LONG_TEXT,
            language="en", published_at=published(1), char_count=1380),
    article(f"{NEWS}/a2", "success", 15 * 24, title="New library hours", text=LONG_TEXT,
            language="en", published_at=published(2), char_count=1380),
    article(f"{NEWS}/a3", "success", 10 * 24, title="Tram line extended", text=LONG_TEXT,
            language="en", published_at=published(3), char_count=1380),
    article(f"{NEWS}/budget", "truncated", 3 * 24, title="Budget in depth",
            text="The budget sets aside money for bridges. " * 100 + "One crosses the river.",
            language="en", published_at=published(4), char_count=5600),
    article(f"{NEWS}/river-cleanup", "success", 2, title="Volunteers clean the river",
            text="Hundreds of volunteers cleaned the river banks after the floods. " * 20,
            language="en", published_at=published(9), char_count=1300, source="feeds.txt"),
    article(f"{NEWS}/short-1", "under_limit", 2, reason="too_short", title="Brief", text="Brief."),
    article(f"{NEWS}/short-2", "under_limit", 1, reason="too_short", title="Brief", text="Brief."),
    article(f"{NEWS}/about", "unsuitable_content", 2, reason="about_page", page_type="about",
            suitability_reason="An about page describing the river newsroom, not an article.",
            title="About the river newsroom", text="We write about the river. " * 50),
    article(f"{NEWS}/missing", "fetch_failed", 1, reason="http_404", http_status=404),
    # ko.example: Korean, stored with language `ko` (the `simple` configuration on Postgres).
    article("https://ko.example/seoul-festival", "success", 10 * 24, title="서울 봄 축제",
            text="서울에서 열린 봄 축제에 시민들이 모였다. " * 60, language="ko",
            published_at=published(7), char_count=1500),
    # blog.example: a failure last week, an article from two months ago (no language, no date),
    # a queued URL.
    article("https://blog.example/post", "fetch_failed", 5 * 24, reason="timeout"),
    article("https://blog.example/gardening", "success", 40 * 24, title="Gardening notes",
            text="Tomatoes need sun and patience. " * 50, language=None, char_count=1600),
    article("https://blog.example/next", "queued", None),
]


def seed(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(articles.insert(), ROWS)
        conn.execute(crawl_runs.insert(), [
            {"source": "older.txt", "started_at": NOW - timedelta(days=2),
             "finished_at": NOW - timedelta(days=2), "counts": {"success": 3}},
            {"source": "feeds.txt", "started_at": NOW - timedelta(hours=2),
             "finished_at": NOW - timedelta(hours=1), "counts": {"success": 1, "under_limit": 2}},
        ])
    engine.dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One migrated, seeded database per dialect for the whole module (the tests only read)."""
    from sluice.db.migrate import upgrade

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('sql') / 'sluice.db'}"
    else:
        url = create_pg_database()
    upgrade(url)
    seed(url)
    yield url
    if request.param == "postgresql":
        drop_pg_database(url)


@pytest.fixture
def engine(database: str) -> Iterator[sa.Engine]:
    engine = make_engine(database)
    yield engine
    engine.dispose()


@pytest.fixture
def conn(engine: sa.Engine) -> Iterator[sa.Connection]:
    with engine.connect() as connection:
        yield connection


def plain(value: Any) -> Any:
    """Values compared across dialects: decimals as floats, enums and timestamps as text."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")
    return getattr(value, "value", value)


def query(conn: sa.Connection, statement: str) -> list[tuple[Any, ...]]:
    result = conn.execution_options(no_parameters=True).exec_driver_sql(statement)
    return [tuple(plain(value) for value in row) for row in result]


def dialect_of(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


# --- views -------------------------------------------------------------------------------------

def test_usable_articles_are_success_and_truncated(conn: sa.Connection) -> None:
    rows = query(conn, "SELECT url, status FROM usable_articles ORDER BY url")
    assert rows == [
        ("https://blog.example/gardening", "success"),
        ("https://ko.example/seoul-festival", "success"),
        (f"{NEWS}/a1", "success"), (f"{NEWS}/a2", "success"), (f"{NEWS}/a3", "success"),
        (f"{NEWS}/budget", "truncated"), (f"{NEWS}/river-cleanup", "success"),
    ]


def test_crawl_failures_have_site_reason_and_last_attempt(conn: sa.Connection) -> None:
    rows = query(conn, "SELECT url, site, reason, http_status, attempts, last_attempt_at "
                       "FROM crawl_failures ORDER BY url")
    assert [row[:5] for row in rows] == [
        ("https://blog.example/post", "blog.example", "timeout", None, 1),
        (f"{NEWS}/missing", "news.example", "http_404", 404, 1),
    ]
    last_attempt = datetime.fromisoformat(str(rows[1][5])).replace(tzinfo=UTC)
    assert abs(last_attempt - (NOW - timedelta(hours=1))) < timedelta(seconds=1)


def test_site_health_shares_per_window(conn: sa.Connection) -> None:
    rows = query(conn, "SELECT site, status, rows_1d, share_1d, rows_7d, share_7d, rows_30d, "
                       "share_30d FROM site_health ORDER BY site, status")
    assert rows == [
        ("blog.example", "fetch_failed", 0, None, 1, 1.0, 1, 1.0),
        ("ko.example", "success", 0, None, 0, None, 1, 1.0),
        ("news.example", "fetch_failed", 1, 0.2, 1, 0.167, 1, 0.111),
        ("news.example", "success", 1, 0.2, 1, 0.167, 4, 0.444),
        ("news.example", "truncated", 0, 0.0, 1, 0.167, 1, 0.111),
        ("news.example", "under_limit", 2, 0.4, 2, 0.333, 2, 0.222),
        ("news.example", "unsuitable_content", 1, 0.2, 1, 0.167, 1, 0.111),
    ]


# --- search ------------------------------------------------------------------------------------

def urls(hits: list[search_module.SearchHit]) -> list[str]:
    return [hit.url for hit in hits]


def test_search_ranks_title_matches_first(conn: sa.Connection) -> None:
    hits = search(conn, "river")
    assert urls(hits) == [f"{NEWS}/river-cleanup", f"{NEWS}/budget"]
    assert hits[0].rank > hits[1].rank > 0
    assert hits[0].snippet and "[river]" in hits[0].snippet.lower()


def test_search_stems_english_and_matches_korean_and_simple(conn: sa.Connection) -> None:
    assert urls(search(conn, "flood")) == [f"{NEWS}/river-cleanup"]
    assert urls(search(conn, "서울")) == ["https://ko.example/seoul-festival"]
    assert urls(search(conn, "축제")) == ["https://ko.example/seoul-festival"]
    # No language: the `simple` configuration on Postgres.
    assert urls(search(conn, "tomatoes")) == ["https://blog.example/gardening"]


def test_search_operators(conn: sa.Connection) -> None:
    assert urls(search(conn, "river -volunteers")) == [f"{NEWS}/budget"]
    assert sorted(urls(search(conn, "tomatoes OR 축제"))) == [
        "https://blog.example/gardening", "https://ko.example/seoul-festival"]
    assert urls(search(conn, '"river banks"')) == [f"{NEWS}/river-cleanup"]
    assert urls(search(conn, "river tomatoes")) == []


def test_search_statuses_and_limit(conn: sa.Connection) -> None:
    assert urls(search(conn, "newsroom")) == []
    assert urls(search(conn, "newsroom", statuses=["unsuitable_content"])) == [f"{NEWS}/about"]
    assert len(search(conn, "river", limit=1)) == 1


def test_search_or_binds_looser_than_the_words_around_it(conn: sa.Connection) -> None:
    """`a OR b c` is a, or b and c, on both databases (SQLite read it as (a or b) and c)."""
    assert sorted(urls(search(conn, "river OR tomatoes sun"))) == [
        "https://blog.example/gardening", f"{NEWS}/budget", f"{NEWS}/river-cleanup"]
    assert urls(search(conn, "tomatoes sun OR budget -river")) == [
        "https://blog.example/gardening"]


@pytest.mark.parametrize("nasty", ['"unbalanced', "river AND", "NEAR(", "river '; --",
                                   "title:river", "^river", 'river ""', "river OR OR",
                                   "OR river", "- river", 'river -"', 'a"b river'])
def test_search_never_fails_on_user_syntax(conn: sa.Connection, nasty: str) -> None:
    search(conn, nasty)


@pytest.mark.parametrize("wordless", ["-river", "-river -tomatoes", '-"river banks"',
                                      "tomatoes OR -river", "", "   ", "OR", "-", "*", '""',
                                      "- OR ...", "?!", "'; --"])
def test_search_needs_a_word_to_look_for(conn: sa.Connection, wordless: str) -> None:
    """Only exclusions (or nothing at all) is refused on both databases: Postgres returned
    every row without the word, SQLite none."""
    with pytest.raises(QueryWithoutWords, match="nothing to look for"):
        search(conn, wordless)


def test_fts5_query_quotes_every_term() -> None:
    assert fts5_query("a b") == '"a" AND "b"'
    assert fts5_query("a OR b c") == '("a") OR ("b" AND "c")'
    assert fts5_query('-x "two words" y') == '("two words" AND "y") NOT ("x")'
    assert fts5_query('say "hi') == '"say" AND "hi"'
    assert fts5_query('a"b') == '"a""b"'
    assert websearch_query('a"b OR c -"d e"') == '"a b" or "c" -"d e"'


def test_search_configs_match_the_migration() -> None:
    path = PROJECT_ROOT / "migrations" / "versions" / "0002_views_and_search.py"
    spec = importlib.util.spec_from_file_location("migration_0002", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert search_module.LANGUAGE_CONFIGS == migration.LANGUAGE_CONFIGS


def test_search_index_follows_updates(engine: sa.Engine) -> None:
    """Triggers (SQLite) and the generated column (Postgres) track later writes."""
    url = "https://news.example/later"
    with engine.begin() as conn:
        conn.execute(articles.insert(), [article(url, "success", 1, title="Orchard",
                                                 text="Apples.")])
        assert urls(search(conn, "orchard")) == [url]
        conn.execute(articles.update().where(articles.c.url == url).values(title="Vineyard"))
        assert urls(search(conn, "orchard")) == []
        assert urls(search(conn, "vineyard")) == [url]
        conn.execute(articles.delete().where(articles.c.url == url))
        assert urls(search(conn, "vineyard")) == []


def test_a_timestamp_with_an_offset_is_stored_as_the_same_instant(engine: sa.Engine) -> None:
    """A sitemap's `2024-05-12T10:00:00+02:00` is 08:00 UTC on both databases (SQLite, which
    keeps no zone, stored 10:00 and read it back as 10:00 UTC)."""
    url = "https://news.example/offset"
    summer = datetime(2024, 5, 12, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    with engine.begin() as conn:
        conn.execute(articles.insert(), [article(url, "success", 1, published_at=summer)])
        stored = conn.execute(sa.select(articles.c.published_at)
                              .where(articles.c.url == url)).scalar_one()
        conn.execute(articles.delete().where(articles.c.url == url))
    assert as_utc(stored) == summer


# --- sluice sql ----------------------------------------------------------------------------------

STATEMENT = ("SELECT url, status, char_count, published_at FROM usable_articles "
             "WHERE url LIKE '%river%' OR title = 'a:b'")


def test_sql_formats(engine: sa.Engine) -> None:
    out = io.StringIO()
    run_statement(engine, STATEMENT, "csv", out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == ["url", "status", "char_count", "published_at"]
    assert rows[1][:3] == [f"{NEWS}/river-cleanup", "success", "1300"]
    assert rows[1][3].startswith("2026-01-09")

    out = io.StringIO()
    outcome = run_statement(engine, STATEMENT, "json", out)
    assert outcome.returned_rows and outcome.count == 1
    [row] = json.loads(out.getvalue())
    assert (row["url"], row["char_count"]) == (f"{NEWS}/river-cleanup", 1300)

    out = io.StringIO()
    run_statement(engine, STATEMENT, "table", out)
    assert "river-cleanup" in out.getvalue() and "(1 row)" in out.getvalue()

    out = io.StringIO()
    run_statement(engine, "SELECT url FROM articles WHERE 1 = 0", "json", out)
    assert json.loads(out.getvalue()) == []


def test_sql_command_line(database: str) -> None:
    result = run_sluice("sql", "SELECT count(*) AS n FROM crawl_failures", "--format", "json",
                        env=sluice_env(database))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 2}]
    result = run_sluice("sql", "SELECT nonsense FROM nowhere", env=sluice_env(database))
    assert result.returncode == 1 and "nowhere" in result.stderr
    assert "Traceback" not in result.stderr



@pytest.mark.parametrize("statement", ["", "   ", ";", " ; ;\n", "-- a note", "/* x */ ;"])
def test_sql_without_a_statement_is_an_error(database: str, statement: str) -> None:
    """Both databases ran nothing and `sluice sql` said "0 rows affected", exit status 0."""
    result = run_sluice("sql", statement, env=sluice_env(database))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: no SQL statement in {statement!r}: give one")
    assert result.stdout == "" and "Traceback" not in result.stderr
    result = run_sluice("sql", "/* x */ SELECT ';' AS a -- b", "--format", "json",
                        env=sluice_env(database))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"a": ";"}]

def test_sql_output_cut_short_by_its_reader_ends_quietly(database: str) -> None:
    many = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) "
            "SELECT x FROM c")
    # As `sluice sql ... | head -2`: the reader takes two lines and goes away.
    with subprocess.Popen([*_sluice_cli(), "sql", many, "--format", "csv"],
                          env=sluice_env(database), cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        assert [process.stdout.readline(), process.stdout.readline()] == ["x\n", "1\n"]
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=60) == 1
    assert "Traceback" not in stderr and "Broken pipe" not in stderr, stderr


def test_sql_changes_nothing_unless_asked_to_write(database: str, engine: sa.Engine) -> None:
    env = sluice_env(database)
    result = run_sluice("sql", "DROP TABLE articles", env=env)
    assert result.returncode == 1 and "add --write" in result.stderr
    assert "Traceback" not in result.stderr
    assert run_statement(engine, "SELECT count(*) FROM articles", "csv", io.StringIO()).count == 1
    # With --write the statement runs and commits (a scratch table keeps the seeded rows as
    # they are for the other tests).
    for statement in ("CREATE TABLE scratch_notes (note text)",
                      "INSERT INTO scratch_notes VALUES ('kept')"):
        result = run_sluice("sql", "--write", statement, env=env)
        assert result.returncode == 0, result.stderr
    assert "1 rows affected" in result.stderr
    out = io.StringIO()
    run_statement(engine, "SELECT note FROM scratch_notes", "json", out)
    assert json.loads(out.getvalue()) == [{"note": "kept"}]
    # A read-only statement leaves the pooled connection writable for the program's own use.
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE scratch_notes")


def test_sql_shell_is_the_databases_own(database: str) -> None:
    command, _ = shell_command(database)
    assert command[0] == ("sqlite3" if dialect_of(database) == "sqlite" else "psql")
    statement = "SELECT count(*) FROM usable_articles;\n"
    result = subprocess.run([*_sluice_cli(), "sql"], input=statement, env=sluice_env(database),
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert "7" in result.stdout.split()


def test_sql_shell_keeps_the_password_off_the_command_line() -> None:
    command, env = shell_command("postgresql://reader:s3cret@db.example.org:5432/articles")
    assert command == ["psql", "postgresql://reader@db.example.org:5432/articles"]
    assert env == {"PGPASSWORD": "s3cret"}


def test_sql_shell_missing_is_a_clear_error(database: str, tmp_path: Path) -> None:
    env = {**sluice_env(database), "PATH": str(tmp_path)}
    result = subprocess.run([*_sluice_cli(), "sql"], env=env, cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 127
    assert "is not installed" in result.stderr and "Traceback" not in result.stderr


def _sluice_cli() -> list[str]:
    return [sys.executable, "-m", "sluice.cli"]


# --- sluice export -------------------------------------------------------------------------------

def test_export_jsonl_filters_by_status_and_since(conn: sa.Connection) -> None:
    out = io.StringIO()
    since = NOW - timedelta(days=4)
    count = export_rows(conn, ExportQuery(statuses=("success", "truncated"), since=since),
                        "jsonl", out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert count == len(rows) == 2
    assert [row["url"] for row in rows] == [f"{NEWS}/budget", f"{NEWS}/river-cleanup"]
    assert set(rows[0]) == set(EXPORT_COLUMNS)
    assert rows[1]["published_at"] == "2026-01-09T08:00:00+00:00"


def test_export_csv_columns_and_limit(conn: sa.Connection) -> None:
    out = io.StringIO()
    export_rows(conn, ExportQuery(statuses=("fetch_failed",), columns=("url", "reason"),
                                  limit=1), "csv", out)
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["url", "reason"], ["https://blog.example/post", "timeout"]]


def test_export_parquet_reads_back(conn: sa.Connection, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "articles.parquet"
    count = export_rows(conn, ExportQuery(statuses=("success",)), "parquet", str(path))
    table = pq.read_table(path)
    assert count == table.num_rows == 6
    assert table.column_names == list(EXPORT_COLUMNS)
    rows = {row["url"]: row for row in table.to_pylist()}
    korean = rows["https://ko.example/seoul-festival"]
    assert korean["title"] == "서울 봄 축제" and korean["char_count"] == 1500
    assert korean["published_at"] == published(7)
    assert str(table.schema.field("published_at").type) == "timestamp[us, tz=UTC]"


def test_status_watch_piped_appends_a_snapshot_per_interval(database: str) -> None:
    """Piped into a file or a log, `status --watch` prints each snapshot as it is taken (a
    live display would show nothing until it stopped), and Ctrl-C ends it cleanly."""
    lines: list[str] = []
    with subprocess.Popen([sys.executable, "-m", "sluice.cli", "status", "--watch"],
                          env=sluice_env(database), cwd=PROJECT_ROOT, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as watch:
        assert watch.stdout is not None and watch.stderr is not None
        reader = threading.Thread(target=lambda: lines.extend(map(str.rstrip, watch.stdout)))
        reader.start()
        deadline = time.monotonic() + 60
        while sum(line.endswith(" UTC") for line in lines) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=60) == 0, watch.stderr.read()
        reader.join()
    success = [line for line in lines if re.match(r"^│ success +│ +6 │", line)]
    assert len(success) >= 2, "\n".join(lines)
    assert re.match(r"^│ success +│ +6 │ +0\.0 │", success[1]), success[1]


def test_parquet_export_is_not_written_to_a_terminal(database: str) -> None:
    controller, terminal = pty.openpty()
    written = b""
    try:
        with subprocess.Popen([sys.executable, "-m", "sluice.cli", "export", "--format",
                               "parquet"], env=sluice_env(database), cwd=PROJECT_ROOT,
                              stdout=terminal, stderr=subprocess.PIPE, text=True) as export:
            os.close(terminal)
            with contextlib.suppress(OSError):  # the terminal's other end closed: all is read
                while chunk := os.read(controller, 65536):
                    written += chunk
            assert export.stderr is not None
            stderr = export.stderr.read()
            assert export.wait(timeout=120) == 2, stderr
    finally:
        os.close(controller)
    assert "parquet is binary" in stderr and "--output" in stderr
    assert b"PAR1" not in written


def test_export_command_line(database: str, tmp_path: Path) -> None:
    output = tmp_path / "out.parquet"
    result = run_sluice("export", "--status", "success,truncated", "--since", "2000-01-01",
                        "--format", "parquet", "--output", str(output), env=sluice_env(database))
    assert result.returncode == 0, result.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(output).num_rows == 7
    result = run_sluice("export", "--status", "fetch_failed", "--columns", "url,reason",
                        "--format", "csv", env=sluice_env(database))
    assert result.stdout.splitlines()[0] == "url,reason" and len(result.stdout.splitlines()) == 3
    result = run_sluice("export", "--status", "nonsense", env=sluice_env(database))
    assert result.returncode == 2 and "unknown status" in result.stderr
    result = run_sluice("export", "--limit", "-5", env=sluice_env(database))
    assert result.returncode == 2 and "must be at least 1" in result.stderr
    for fmt in ("jsonl", "parquet"):
        missing = tmp_path / "no-such-folder" / f"out.{fmt}"
        result = run_sluice("export", "--format", fmt, "--output", str(missing),
                            env=sluice_env(database))
        assert result.returncode == 2 and f"cannot write {missing}" in result.stderr
        assert "Traceback" not in result.stderr


def test_search_command_line(database: str) -> None:
    result = run_sluice("search", "river", "--format", "json", env=sluice_env(database))
    assert result.returncode == 0, result.stderr
    assert [hit["url"] for hit in json.loads(result.stdout)] == [
        f"{NEWS}/river-cleanup", f"{NEWS}/budget"]


@pytest.mark.parametrize("words", [("-volunteers", "river"), ("river", "-volunteers"),
                                   ("river", "--limit", "5", "-volunteers"),
                                   ("--", "-volunteers", "river"), ("river -volunteers",)])
def test_search_command_line_reads_an_exclusion_as_part_of_the_query(
        database: str, words: tuple[str, ...]) -> None:
    """An exclusion first (`sluice search -volunteers river`) or among the words is a term of
    the query, not an unknown option."""
    result = run_sluice("search", "--format", "json", *words, env=sluice_env(database))
    assert result.returncode == 0, result.stderr
    assert [hit["url"] for hit in json.loads(result.stdout)] == [f"{NEWS}/budget"]


@pytest.mark.parametrize("words", [("-river",), ("-river", "-tomatoes"), ("--", "-river"),
                                   ("",), ("...",), ("-river", "--limit", "3")])
def test_search_command_line_refuses_a_query_without_a_word(
        database: str, words: tuple[str, ...]) -> None:
    result = run_sluice("search", *words, env=sluice_env(database))
    assert result.returncode == 2, result.stdout
    assert "error: nothing to look for" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""



@pytest.mark.parametrize("command", [("search", "river"), ("export",)])
def test_a_limit_past_64_bits_is_refused_and_the_largest_one_works(
        database: str, command: tuple[str, ...]) -> None:
    """Both databases refused a LIMIT past 64 bits with a traceback."""
    env = sluice_env(database)
    result = run_sluice(*command, "--format", "csv", "--limit", str(2**63), env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"argument --limit: must be at most {2**63 - 1}" in result.stderr
    result = run_sluice(*command, "--format", "csv", "--limit", str(2**63 - 1), env=env)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == (3 if command[0] == "search" else 14)

# --- the README's example queries ---------------------------------------------------------------

README_EXPECTED: dict[str, list[tuple[Any, ...]]] = {}  # filled below, keyed by comment line


def readme_queries() -> list[tuple[str, str | None, str]]:
    """(title, dialect or None for both, statement) for each query under "### Example SQL"."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Example SQL", 1)[1]
    section = re.split(r"\n#{1,3} ", section, maxsplit=1)[0]
    queries = []
    for block in re.findall(r"```sql\n(.*?)```", section, flags=re.S):
        for chunk in re.split(r";\s*\n", block):
            if chunk.strip():
                queries.append(_parse_query(chunk))
    return queries


def _parse_query(chunk: str) -> tuple[str, str | None, str]:
    comments = [line[2:].strip() for line in chunk.splitlines() if line.startswith("--")]
    statement = "\n".join(line for line in chunk.splitlines() if not line.startswith("--"))
    title = comments[0] if comments else statement.strip()
    dialect = ("postgresql" if title.startswith("Postgres:") else
               "sqlite" if title.startswith("SQLite:") else None)
    return title, dialect, statement.strip()


def test_every_readme_query_has_an_expected_result() -> None:
    titles = [title for title, _, _ in readme_queries()]
    assert titles and len(titles) == len(set(titles))
    assert set(titles) == set(README_EXPECTED)


def test_readme_queries(conn: sa.Connection, database: str) -> None:
    ran = 0
    for title, dialect, statement in readme_queries():
        if dialect not in (None, dialect_of(database)):
            continue
        rows = query(conn, statement)
        expected = README_EXPECTED[title]
        width = len(expected[0]) if expected else 0
        assert [row[:width] for row in rows] == expected, title
        ran += 1
    assert ran >= 6


README_EXPECTED.update({
    "What is worth reading?": [
        ("Volunteers clean the river", f"{NEWS}/river-cleanup", 1300),
        ("서울 봄 축제", "https://ko.example/seoul-festival", 1500),
        ("Budget in depth", f"{NEWS}/budget", 5600),
        ("Tram line extended", f"{NEWS}/a3", 1380),
        ("New library hours", f"{NEWS}/a2", 1380),
        ("Council approves the park", f"{NEWS}/a1", 1380),
        ("Gardening notes", "https://blog.example/gardening", 1600),  # undated: last
    ],
    "Which URLs failed, and why?": [("http_404", 1), ("timeout", 1)],
    "Failures on one site, latest first.": [(f"{NEWS}/missing", "http_404", 404)],
    "Did a site change its layout? Short or non-article pages today against the month.": [
        ("news.example", "under_limit", 0.4, 0.222),
        ("news.example", "unsuitable_content", 0.2, 0.111),
    ],
    "Usable articles by language.": [("en", 5), ("?", 1), ("ko", 1)],
    "What did the last crawl do?": [("feeds.txt",)],
    "Pages judged not to be articles, with the reason in a sentence.": [
        (f"{NEWS}/about", "about",
         "An about page describing the river newsroom, not an article."),
    ],
    "Postgres: full-text search, best first (title matches weigh more than text).": [
        (f"{NEWS}/river-cleanup", "Volunteers clean the river"),
        (f"{NEWS}/budget", "Budget in depth"),
    ],
    "SQLite: the same with FTS5 (bm25() is lower for better matches).": [
        (f"{NEWS}/river-cleanup", "Volunteers clean the river"),
        (f"{NEWS}/budget", "Budget in depth"),
    ],
    "Postgres: Korean and other languages without a stemmer use the `simple` configuration.": [
        ("https://ko.example/seoul-festival",),
    ],
    "SQLite: FTS5 tokenises Korean on spaces and punctuation.": [
        ("https://ko.example/seoul-festival",),
    ],
})
