"""Ranked full-text search over titles and texts, on Postgres and SQLite alike.

Postgres matches the generated `search_vector` column with `websearch_to_tsquery` and ranks with
`ts_rank_cd` (title weighted above text). Each row's vector was built with its language's text
search configuration, so each row is matched with the query parsed by that same configuration:
an English row matches the English stem, a Korean row (`simple`) the bare word. The parses under
every configuration, OR-ed, form a superset the GIN index can answer; the per-row match then
keeps exact semantics (a `-word` exclusion included).

SQLite matches the FTS5 table `articles_fts` and ranks with `bm25()`. Both dialects read the same
small language, parsed once here (`parse_query`) and handed to each as quoted terms, so a stray
quote or operator cannot raise a syntax error and both find the same rows: words (all must
match), "quoted phrases", `OR` between alternatives (binding looser than the words around it),
and `-word` to exclude. A query needs a word to look for on each side of OR.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

USABLE_STATUSES = ("success", "truncated")

# ISO 639-1 code -> text search configuration, as migration 0002 builds `search_vector` with
# (a test keeps them in step); any other language, or none, uses `simple`.
LANGUAGE_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "nn": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
PG_CONFIGS = tuple(sorted({*LANGUAGE_CONFIGS.values(), "simple"}))
# Title matches count more than text matches: Postgres's default weights give A 1.0 and B 0.4.
BM25_WEIGHTS = (2.5, 1.0)
SNIPPET_WORDS = 16

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class SearchHit:
    url: str
    title: str | None
    status: str
    language: str | None
    rank: float
    snippet: str | None


def search(conn: sa.Connection, query: str, limit: int = 20,
           statuses: Sequence[str] = USABLE_STATUSES) -> list[SearchHit]:
    """The best `limit` rows for `query` among rows in `statuses`, best first."""
    if conn.dialect.name == "postgresql":
        return _search_postgres(conn, query, limit, statuses)
    return _search_sqlite(conn, query, limit, statuses)


def _pg_any_config_query() -> str:
    """The query parsed with every configuration, OR-ed: what the GIN index can answer."""
    return " || ".join(f"websearch_to_tsquery(CAST(:config_{i} AS regconfig), :query)"
                       for i in range(len(PG_CONFIGS)))


def _pg_row_config() -> str:
    """The row's configuration, the same CASE the generated column uses."""
    whens = " ".join(f"WHEN :language_{i} THEN CAST(:language_config_{i} AS regconfig)"
                     for i in range(len(LANGUAGE_CONFIGS)))
    return f"CASE a.language {whens} ELSE CAST('simple' AS regconfig) END"


_PG_SEARCH = f"""
WITH q AS (SELECT {_pg_any_config_query()} AS any_tsq),
matched AS (
    SELECT a.url, a.title, CAST(a.status AS TEXT) AS status, a.language, a.text,
           a.search_vector, {_pg_row_config()} AS config
    FROM articles AS a, q
    WHERE a.search_vector @@ q.any_tsq AND CAST(a.status AS TEXT) IN :statuses
),
hits AS (
    SELECT matched.*, websearch_to_tsquery(config, :query) AS tsq
    FROM matched
),
ranked AS (
    SELECT url, title, status, language, text, config, tsq,
           ts_rank_cd(search_vector, tsq) AS rank
    FROM hits
    WHERE search_vector @@ tsq
    ORDER BY rank DESC, url
    LIMIT :limit
)
SELECT url, title, status, language, rank,
       ts_headline(config, left(coalesce(text, ''), 100000), tsq,
                   'StartSel=[, StopSel=], MaxWords={SNIPPET_WORDS}, MinWords=5, MaxFragments=1')
FROM ranked
ORDER BY rank DESC, url
"""


def _search_postgres(conn: sa.Connection, query: str, limit: int,
                     statuses: Sequence[str]) -> list[SearchHit]:
    statement = sa.text(_PG_SEARCH).bindparams(sa.bindparam("statuses", expanding=True))
    params: dict[str, object] = {f"config_{i}": name for i, name in enumerate(PG_CONFIGS)}
    for i, (language, config) in enumerate(LANGUAGE_CONFIGS.items()):
        params.update({f"language_{i}": language, f"language_config_{i}": config})
    params.update(query=websearch_query(query), statuses=list(statuses), limit=limit)
    return [SearchHit(url, title, status, language, float(rank), snippet)
            for url, title, status, language, rank, snippet in conn.execute(statement, params)]


_SQLITE_SEARCH = f"""
SELECT a.url, a.title, a.status, a.language,
       -bm25(articles_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS rank,
       snippet(articles_fts, 1, '[', ']', '…', {SNIPPET_WORDS}) AS snippet
FROM articles_fts JOIN articles AS a ON a.rowid = articles_fts.rowid
WHERE articles_fts MATCH :match AND a.status IN :statuses
ORDER BY rank DESC, a.url
LIMIT :limit
"""


def _search_sqlite(conn: sa.Connection, query: str, limit: int,
                   statuses: Sequence[str]) -> list[SearchHit]:
    match = fts5_query(query)
    statement = sa.text(_SQLITE_SEARCH).bindparams(sa.bindparam("statuses", expanding=True))
    rows = conn.execute(statement, {"match": match, "statuses": list(statuses), "limit": limit})
    return [SearchHit(url, title, status, language, float(rank), snippet)
            for url, title, status, language, rank, snippet in rows]


class QueryWithoutWords(ValueError):
    """A query, or one side of an OR in it, with no word or phrase to look for."""


@dataclass(frozen=True, slots=True)
class Alternative:
    """One side of an OR: terms that must all match (a phrase is one term), terms that must not."""

    wanted: tuple[str, ...]
    excluded: tuple[str, ...]


def parse_query(text: str) -> tuple[Alternative, ...]:
    """The query as alternatives joined by OR, each a conjunction, as Postgres's
    websearch_to_tsquery reads it: AND binds tighter than OR (`a OR b c` is a, or b and c).
    Terms without a letter or digit are dropped. Every alternative needs a term to look for:
    an exclusion alone would match nearly every row with nothing to rank them by, so a query
    without one raises QueryWithoutWords rather than returning all rows or none."""
    parts: list[tuple[list[str], list[str]]] = [([], [])]
    for negated, phrase, word in _TOKEN.findall(text):
        if word.upper() == "OR":
            if parts[-1] != ([], []):
                parts.append(([], []))
            continue
        if word.startswith("-") and len(word) > 1:
            negated, word = "-", word[1:]
        term = phrase or word
        if _HAS_WORD.search(term):
            parts[-1][1 if negated else 0].append(term)
    alternatives = [Alternative(tuple(wanted), tuple(excluded))
                    for wanted, excluded in parts if wanted or excluded]
    if not alternatives or not all(alternative.wanted for alternative in alternatives):
        raise QueryWithoutWords(
            f'nothing to look for in {text!r}: give at least one word or "phrase" (on each side '
            "of any OR); an exclusion such as -river only narrows what the words find")
    return tuple(alternatives)


def websearch_query(text: str) -> str:
    """The query as `parse_query` reads it, with every term quoted, for websearch_to_tsquery:
    Postgres then reads exactly what SQLite does."""
    return " or ".join(
        " ".join([*map(_websearch_term, alternative.wanted),
                  *("-" + _websearch_term(term) for term in alternative.excluded)])
        for alternative in parse_query(text))


def _websearch_term(term: str) -> str:
    return '"' + term.replace('"', " ") + '"'


def fts5_query(text: str) -> str:
    """The query as `parse_query` reads it, in FTS5 syntax with every term quoted.

    `a b` -> `"a" AND "b"`; `a OR b c` -> `("a") OR ("b" AND "c")`; `a -b` -> `("a") NOT ("b")`.
    """
    alternatives = [_fts5_alternative(alternative) for alternative in parse_query(text)]
    if len(alternatives) == 1:
        return alternatives[0]
    return " OR ".join(f"({alternative})" for alternative in alternatives)


def _fts5_alternative(alternative: Alternative) -> str:
    wanted = " AND ".join(map(_fts5_term, alternative.wanted))
    if not alternative.excluded:
        return wanted
    return f"({wanted}) NOT ({' OR '.join(map(_fts5_term, alternative.excluded))})"


def _fts5_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
