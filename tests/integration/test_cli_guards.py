"""What the reading commands guard against, through the real `sluice` command line on SQLite
and Postgres: a question that would change the table, crawled text that would drive the
terminal, a mistaken export that would wipe the previous one, a database that is missing or
newer than this Sluice."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice.db import articles, make_engine
from tests.conftest import run_sluice, sluice_env

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite_url", "pg_url"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database of each kind (the tests write to it)."""
    return str(request.getfixturevalue(request.param))


def insert_article(database_url: str, **values: Any) -> None:
    now = datetime.now(UTC)
    row = {"url": "https://news.example/a", "status": "success", "discovered_at": now,
           "fetched_at": now, "updated_at": now, "attempts": 1, **values}
    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(articles.insert(), [row])
    engine.dispose()


def article_count(database_url: str) -> int:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(articles)).scalar_one()
    engine.dispose()
    return int(count)


@pytest.mark.parametrize("statements", [
    "COMMIT; DELETE FROM articles",
    "SET TRANSACTION READ WRITE; DELETE FROM articles",
    "SELECT 1; SELECT 2",
])
def test_sql_runs_one_statement_only(database_url: str, statements: str) -> None:
    insert_article(database_url)
    result = run_sluice("sql", statements, env=sluice_env(database_url))
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert article_count(database_url) == 1
    # Placeholder-like literals still reach the database as written.
    result = run_sluice("sql", "SELECT '%s' AS a, ':x' AS b, '%(y)s' AS c", "--format", "json",
                        env=sluice_env(database_url))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"a": "%s", "b": ":x", "c": "%(y)s"}]


# Text a hostile page may carry: colours, a bell, an OSC 8 hyperlink, a C1 "clear screen",
# rich markup and an emoji code.
HOSTILE = ("[red]x[/red] :smile: \x1b[31mred\x1b[0m \x07bell "
           "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b2J river")
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("command", [("sql", "SELECT title, text FROM articles"),
                                     ("search", "river")])
def test_tables_show_crawled_text_inert(database_url: str, command: tuple[str, ...]) -> None:
    insert_article(database_url, title=HOSTILE, text=HOSTILE)
    result = run_sluice(*command, env=sluice_env(database_url))
    assert result.returncode == 0, result.stderr
    assert not CONTROLS.search(result.stdout), repr(result.stdout)
    assert "[red]x[/red] :smile:" in result.stdout and "\U0001f604" not in result.stdout
    assert "https://evil.example" in result.stdout  # shown as text, not a link


def test_sql_json_is_the_same_from_both_databases(database_url: str) -> None:
    """Each column's JSON type and value as Postgres gives them, from SQLite too (which gave
    timestamps as "2026-01-09 08:00:00.000000", booleans as 1 and JSON columns as strings),
    and timestamps in UTC from a Postgres session in another time zone."""
    seoul = timezone(timedelta(hours=9))
    insert_article(database_url, rendered=True, suitable=False, suitability_score=0.875,
                   char_count=1300, structure={"paragraphs": 3, "headings": [1, 2]},
                   published_at=datetime(2026, 1, 9, 17, 0, tzinfo=seoul),
                   fetched_at=datetime(2026, 1, 9, 8, 0, 0, 250000, tzinfo=UTC))
    result = run_sluice("sql", "SELECT url, rendered, suitable, suitability_score, char_count, "
                        "structure, published_at, fetched_at, lease_until FROM articles",
                        "--format", "json", env=sluice_env(database_url, PGTZ="Asia/Seoul"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{
        "url": "https://news.example/a", "rendered": True, "suitable": False,
        "suitability_score": 0.875, "char_count": 1300,
        "structure": {"paragraphs": 3, "headings": [1, 2]},
        "published_at": "2026-01-09T08:00:00+00:00",
        "fetched_at": "2026-01-09T08:00:00.250000+00:00", "lease_until": None}]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_export_mistake_keeps_the_previous_file(database_url: str, tmp_path: Path,
                                               fmt: str) -> None:
    insert_article(database_url, title="Kept")
    env = sluice_env(database_url)
    (tmp_path / "out").mkdir()
    output = tmp_path / "out" / f"articles.{fmt}"
    result = run_sluice("export", "--format", fmt, "-o", str(output), env=env)
    assert result.returncode == 0, result.stderr
    previous = output.read_bytes()
    result = run_sluice("export", "--format", fmt, "-o", str(output), "--columns", "url,titel",
                        env=env)
    assert result.returncode == 2
    assert result.stderr == "error: unknown columns: titel\n"
    assert output.read_bytes() == previous
    # A good export replaces the file whole, and leaves nothing else beside it.
    result = run_sluice("export", "--format", fmt, "-o", str(output), "--columns", "url",
                        env=env)
    assert result.returncode == 0, result.stderr
    assert output.read_bytes() != previous
    assert [path.name for path in output.parent.iterdir()] == [output.name]


@pytest.mark.parametrize("command", [("status",), ("status", "--watch"), ("sql", "SELECT 1"),
                                     ("search", "river"), ("export",), ("sites",),
                                     ("feeds", "list")])
def test_reading_commands_create_no_database(tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = tmp_path / "elsewhere" / "sluice.db"
    missing.parent.mkdir()
    result = run_sluice(*command, env=sluice_env(f"sqlite:///{missing}"), timeout=60)
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith(f"no database at {missing}:")
    assert len(result.stderr.splitlines()) == 1
    assert list(missing.parent.iterdir()) == []



@pytest.mark.parametrize("command", [("status",), ("status", "--watch"), ("sql", "SELECT 1"),
                                     ("search", "river"), ("export",), ("sites",),
                                     ("feeds", "list"), ("feeds", "add", "https://a.example/f"),
                                     ("db", "upgrade")])
def test_a_file_that_is_not_a_database_is_a_one_line_error(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    """SLUICE_DATABASE_URL naming a feed list, say, by mistake: every command failed with a
    traceback ending in `file is not a database`."""
    named = tmp_path / "feeds.txt"
    named.write_text("https://news.example/feed.xml\n" * 100)
    result = run_sluice(*command, env=sluice_env(f"sqlite:///{named}"), timeout=60)
    assert result.returncode == 2, result.stdout
    assert result.stderr == (f"cannot read the database at {named}: file is not a database; "
                             "check SLUICE_DATABASE_URL\n")
    assert named.read_text() == "https://news.example/feed.xml\n" * 100

def set_revision(database_url: str, revision: str) -> None:
    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :revision"),
                     {"revision": revision})
    engine.dispose()


@pytest.mark.parametrize("command", [("status",), ("sql", "SELECT 1"), ("export",),
                                     ("feeds", "add", "https://news.example/feed.xml"),
                                     ("db", "upgrade")])
def test_a_newer_database_is_a_one_line_error(database_url: str,
                                              command: tuple[str, ...]) -> None:
    set_revision(database_url, "9999")
    result = run_sluice(*command, env=sluice_env(database_url), timeout=60)
    assert result.returncode == 2, result.stdout
    assert "'9999'" in result.stderr and "created by a newer Sluice" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_reading_commands_still_migrate_an_older_database(database_url: str) -> None:
    from sluice.db.migrate import downgrade

    downgrade(database_url, "0001")
    result = run_sluice("sql", "SELECT count(*) AS n FROM usable_articles", "--format", "json",
                        env=sluice_env(database_url), timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 0}]


def assert_printed(database_url: str, fmt: str, columns: dict[str, str],
                   expected: dict[str, Any]) -> None:
    """`sluice sql "SELECT <each column's SQL> AS <its name>"` prints `expected` in `fmt`."""
    statement = "SELECT " + ", ".join(f"{sql} AS {name}" for name, sql in columns.items())
    result = run_sluice("sql", statement, "--format", fmt, env=sluice_env(database_url))
    assert result.returncode == 0, result.stderr
    if fmt == "json":
        assert json.loads(result.stdout) == [expected]
    elif fmt == "csv":
        assert list(csv.DictReader(io.StringIO(result.stdout))) == [
            {name: json.dumps(value) if isinstance(value, list) else value
             for name, value in expected.items()}]
    else:
        printed = [json.dumps(value) if isinstance(value, list) else value
                   for value in expected.values()]
        assert all(value in result.stdout for value in printed), result.stdout


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_postgres_values_python_cannot_hold_print_as_postgres_wrote_them(
        pg_url: str, fmt: str) -> None:
    """'infinity', dates past 9999 or before year 1, 24:00 and huge intervals were a
    psycopg DataError traceback halfway through the output."""
    assert_printed(pg_url, fmt, {
        "a": "'infinity'::timestamptz", "b": "'-infinity'::timestamp", "c": "'10000-01-01'::date",
        "d": "'0044-03-15 BC'::date", "e": "'24:00:00'::time", "f": "'24:00:00+02'::timetz",
        "g": "interval '1000000000 days'", "ok": "'2026-01-09 17:00+09'::timestamptz",
    }, {"a": "infinity", "b": "-infinity", "c": "10000-01-01", "d": "0044-03-15 BC",
        "e": "24:00:00", "f": "24:00:00+02", "g": "1000000000 days",
        "ok": "2026-01-09T08:00:00+00:00"})


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_postgres_types_json_lacks_print_as_text(pg_url: str, fmt: str) -> None:
    """An interval, a time of day, a UUID, an address or a range (json), or an array of
    intervals or dates (json, csv and table) was a traceback: "Circular reference detected",
    "Object of type timedelta is not JSON serializable"."""
    assert_printed(pg_url, fmt, {
        "a": "interval '1 day'", "b": "'08:00'::time",
        "c": "'00000000-0000-0000-0000-000000000001'::uuid", "d": "'10.0.0.1'::inet",
        "e": "int4range(1, 5)", "f": "ARRAY[interval '90 minutes']",
        "g": "ARRAY['2026-01-09'::date]",
    }, {"a": "1 day, 0:00:00", "b": "08:00:00", "c": "00000000-0000-0000-0000-000000000001",
        "d": "10.0.0.1", "e": "[1, 5)", "f": ["1:30:00"], "g": ["2026-01-09"]})


def strict_json(text: str) -> Any:
    """JSON as a strict reader takes it: NaN and Infinity are not JSON numbers."""
    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_floats_json_has_no_number_for_print_as_strict_json(database_url: str) -> None:
    """NaN and infinities (a Postgres float, numeric or array of them; a SQLite overflow) were
    written as the bare words NaN and Infinity, which strict JSON readers refuse; they are
    strings now, as Postgres's own to_json writes them, and so in a CSV cell holding an array."""
    if database_url.startswith("sqlite"):
        columns = {"a": "9e999", "b": "-9e999"}
        expected: dict[str, Any] = {"a": "Infinity", "b": "-Infinity"}
    else:
        columns = {"a": "'NaN'::float8", "b": "'-Infinity'::float8", "c": "'NaN'::numeric",
                   "d": "ARRAY[1.5, 'Infinity'::float8]"}
        expected = {"a": "NaN", "b": "-Infinity", "c": "NaN", "d": [1.5, "Infinity"]}
    statement = "SELECT " + ", ".join(f"{sql} AS {name}" for name, sql in columns.items())
    env = sluice_env(database_url)
    result = run_sluice("sql", statement, "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout) == [expected]
    if "d" in columns:
        result = run_sluice("sql", statement, "--format", "csv", env=env)
        (row,) = csv.DictReader(io.StringIO(result.stdout))
        assert strict_json(row["d"]) == expected["d"]


def test_sql_read_only_attaches_no_new_database_file(sqlite_url: str, tmp_path: Path) -> None:
    """SQLite's query_only would still let ATTACH create a file: read-only refuses it too."""
    other = tmp_path / "other.db"
    result = run_sluice("sql", f"ATTACH '{other}' AS other", env=sluice_env(sqlite_url))
    assert result.returncode == 1, result.stderr
    assert "add --write" in result.stderr and "Traceback" not in result.stderr
    assert not other.exists()
    # The connection is writable again afterwards, and --write may attach.
    assert run_sluice("sql", "--write", f"ATTACH '{other}' AS other",
                      env=sluice_env(sqlite_url)).returncode == 0
    assert other.exists()
