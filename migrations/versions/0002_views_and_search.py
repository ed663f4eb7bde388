"""views and full-text search

Adds the three views users query (`usable_articles`, `crawl_failures`, `site_health`) and
full-text search over `title` and `text`:

- Postgres: a generated `search_vector` tsvector column (title weighted A, text B) with a GIN
  index. The text search configuration follows the row's `language` (a CASE over literal
  configurations, because a generated column needs an immutable expression); unknown languages,
  Korean among them, use `simple`.
- SQLite: an external-content FTS5 table `articles_fts` over `articles.rowid`, kept in sync by
  triggers. A later migration that rebuilds `articles` on SQLite (batch mode) drops these
  triggers and renumbers rowids: it must recreate the triggers and run
  `INSERT INTO articles_fts(articles_fts) VALUES ('rebuild')`.

The views name their columns, so a migration that changes those columns must drop and recreate
them. SQL here is frozen with this revision on purpose: it does not import application code.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# ISO 639-1 code (as `extract()` stores it) -> Postgres text search configuration.
LANGUAGE_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "nn": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
# A tsvector is limited to 1 MB; indexing the first 250,000 characters keeps any text under it.
PG_INDEXED_CHARS = 250_000

TERMINAL = "'success', 'truncated', 'under_limit', 'unsuitable_content', 'fetch_failed'"
VIEWS = ("site_health", "crawl_failures", "usable_articles")

# The site of a URL: its host (and port), between "://" and the next "/".
SITE = {
    "postgresql": "split_part(split_part(url, '://', 2), '/', 1)",
    "sqlite": "substr(substr(url, instr(url, '://') + 3), 1,"
              " instr(substr(url, instr(url, '://') + 3) || '/', '/') - 1)",
}
# Timestamps on SQLite are stored as UTC text, 'YYYY-MM-DD HH:MM:SS.ffffff', which compares
# correctly with datetime()'s output.
DAYS_AGO = {
    "postgresql": "now() - interval '{days} days'",
    "sqlite": "datetime('now', '-{days} days')",
}

USABLE_ARTICLES = """
CREATE VIEW usable_articles AS
SELECT url, status, title, author, published_at, language, sitename, text, content,
       char_count, content_hash, page_type, suitability_score, classified_by, final_url,
       rendered, source, discovered_at, fetched_at, updated_at
FROM articles
WHERE status IN ('success', 'truncated')
"""

CRAWL_FAILURES = """
CREATE VIEW crawl_failures AS
SELECT url, {site} AS site, reason, http_status, final_url, attempts, source, discovered_at,
       COALESCE(fetched_at, updated_at) AS last_attempt_at
FROM articles
WHERE status = 'fetch_failed'
"""

SITE_HEALTH = """
CREATE VIEW site_health AS
WITH recent AS (
    SELECT {site} AS site, CAST(status AS TEXT) AS status,
           CASE WHEN fetched_at >= {day_1} THEN 1 ELSE 0 END AS in_1d,
           CASE WHEN fetched_at >= {day_7} THEN 1 ELSE 0 END AS in_7d
    FROM articles
    WHERE status IN ({terminal}) AND fetched_at >= {day_30}
), counted AS (
    SELECT site, status, SUM(in_1d) AS rows_1d, SUM(in_7d) AS rows_7d, COUNT(*) AS rows_30d
    FROM recent
    GROUP BY site, status
)
SELECT site, status,
       rows_1d, ROUND(1.0 * rows_1d / NULLIF(SUM(rows_1d) OVER (PARTITION BY site), 0), 3)
           AS share_1d,
       rows_7d, ROUND(1.0 * rows_7d / NULLIF(SUM(rows_7d) OVER (PARTITION BY site), 0), 3)
           AS share_7d,
       rows_30d, ROUND(1.0 * rows_30d / SUM(rows_30d) OVER (PARTITION BY site), 3) AS share_30d
FROM counted
"""

SQLITE_FTS = [
    """CREATE VIRTUAL TABLE articles_fts USING fts5(
        title, text, content='articles', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER articles_fts_insert AFTER INSERT ON articles BEGIN
        INSERT INTO articles_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    """CREATE TRIGGER articles_fts_delete AFTER DELETE ON articles BEGIN
        INSERT INTO articles_fts(articles_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
    END""",
    """CREATE TRIGGER articles_fts_update AFTER UPDATE OF title, text ON articles BEGIN
        INSERT INTO articles_fts(articles_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
        INSERT INTO articles_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    "INSERT INTO articles_fts(articles_fts) VALUES ('rebuild')",
]


def _pg_config() -> str:
    """The row's text search configuration: a CASE over literals, so it is immutable."""
    whens = " ".join(f"WHEN '{code}' THEN '{config}'::regconfig"
                     for code, config in LANGUAGE_CONFIGS.items())
    return f"CASE language {whens} ELSE 'simple'::regconfig END"


def _pg_search_column() -> str:
    config = _pg_config()
    return (
        "ALTER TABLE articles ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
        f"setweight(to_tsvector({config}, coalesce(title, '')), 'A') || "
        f"setweight(to_tsvector({config}, left(coalesce(\"text\", ''), {PG_INDEXED_CHARS})), 'B')"
        ") STORED"
    )


def _view_statements(dialect: str) -> list[str]:
    days = {f"day_{n}": DAYS_AGO[dialect].format(days=n) for n in (1, 7, 30)}
    return [
        USABLE_ARTICLES,
        CRAWL_FAILURES.format(site=SITE[dialect]),
        SITE_HEALTH.format(site=SITE[dialect], terminal=TERMINAL, **days),
    ]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(_pg_search_column())
        op.execute("CREATE INDEX ix_articles_search_vector ON articles USING gin (search_vector)")
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)
    for statement in _view_statements(dialect):
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for view in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
    if dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_articles_search_vector")
        op.execute("ALTER TABLE articles DROP COLUMN IF EXISTS search_vector")
    else:
        for name in ("update", "delete", "insert"):
            op.execute(f"DROP TRIGGER IF EXISTS articles_fts_{name}")
        op.execute("DROP TABLE IF EXISTS articles_fts")
