"""Streaming export of `articles` rows as JSON lines, CSV or Parquet.

Rows come through a server-side cursor on Postgres (`stream_results`) and a lazily stepped cursor
on SQLite, `BATCH_ROWS` at a time, and are written as they arrive: memory stays flat however many
rows match. Parquet is written one row group at a time (`ROW_GROUP_ROWS` rows).
"""

from __future__ import annotations

import csv
import enum
import json
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import IO, Any, BinaryIO, TextIO

import sqlalchemy as sa

from sluice.db.models import articles

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "csv", "parquet")
BATCH_ROWS = 1_000
ROW_GROUP_ROWS = 5_000
# Columns whose values are nearly all distinct: a dictionary would only cost memory.
UNDICTIONARIED = frozenset({"url", "final_url", "title", "text", "content", "content_hash",
                            "suitability_reason"})
# In-flight bookkeeping, not article data.
INTERNAL_COLUMNS = frozenset({"attempts", "lease_until"})
EXPORT_COLUMNS = tuple(column.name for column in articles.columns
                       if column.name not in INTERNAL_COLUMNS)

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ExportQuery:
    """Which rows and columns to export. `since` compares with `updated_at` (UTC)."""

    statuses: tuple[str, ...] = ()
    since: datetime | None = None
    columns: tuple[str, ...] = field(default=EXPORT_COLUMNS)
    limit: int | None = None

    def __post_init__(self) -> None:
        # Checked here, before any output is opened: a misspelt column must not cost a file.
        unknown = set(self.columns) - set(articles.c.keys())
        if unknown:
            raise ValueError(f"unknown columns: {', '.join(sorted(unknown))}")


def select_rows(query: ExportQuery) -> sa.Select[Any]:
    statement = sa.select(*(articles.c[name] for name in query.columns)).order_by(articles.c.url)
    if query.statuses:
        statement = statement.where(articles.c.status.in_(query.statuses))
    if query.since is not None:
        statement = statement.where(articles.c.updated_at >= query.since.astimezone(UTC))
    if query.limit is not None:
        statement = statement.limit(query.limit)
    return statement


def iter_batches(conn: sa.Connection, query: ExportQuery,
                 batch_rows: int = BATCH_ROWS) -> Iterator[list[Row]]:
    """Matching rows, `batch_rows` at a time, with plain values (see `plain_value`)."""
    streaming = conn.execution_options(stream_results=True, yield_per=batch_rows)
    result = streaming.execute(select_rows(query)).mappings()
    for partition in result.partitions():
        yield [{key: plain_value(value) for key, value in row.items()} for row in partition]


def plain_value(value: Any) -> Any:
    """Enums as their values and naive timestamps (SQLite stores UTC) as aware UTC ones."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


# Floats strict JSON has no number for, written as Postgres's own to_json writes them.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
# The values json.dumps writes as they are.
JSON_NATIVE = (str, int, float, bool, type(None), dict, list, tuple)


def json_ready(value: Any) -> Any:
    """A value json.dumps can write: timestamps as ISO 8601 in UTC (Postgres gives them in the
    session's time zone), decimals as floats, any other type JSON lacks as its text."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).isoformat()
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return finite(float(value))
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, JSON_NATIVE):
        return value
    # An interval, a time of day, a UUID, an address, a range: as CSV and tables show them
    # (json.dumps, given one back, fails with "Circular reference detected").
    return str(value)


def finite(value: Any) -> Any:
    """`value` with every NaN or infinite float (an array's too) as a string: json.dumps
    would write them as NaN and Infinity, which are not JSON, and strict readers refuse."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE[str(value)]
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    return value


def json_text(value: Any) -> str:
    """`value` as strict JSON, every type JSON lacks as `json_ready` makes it."""
    return json.dumps(finite(value), ensure_ascii=False, allow_nan=False, default=json_ready)


def csv_ready(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json_text(value)
    return json_ready(value)


def write_jsonl(batches: Iterable[list[Row]], out: TextIO) -> int:
    count = 0
    for batch in batches:
        out.writelines(json_text(row) + "\n" for row in batch)
        count += len(batch)
    return count


def write_csv(batches: Iterable[list[Row]], out: TextIO, columns: Sequence[str]) -> int:
    writer = csv.writer(out)
    writer.writerow(columns)
    count = 0
    for batch in batches:
        writer.writerows([csv_ready(row[name]) for name in columns] for row in batch)
        count += len(batch)
    return count


def write_parquet(batches: Iterable[list[Row]], out: str | BinaryIO,
                  columns: Sequence[str], row_group_rows: int = ROW_GROUP_ROWS) -> int:
    """Each cursor batch becomes a compact Arrow record batch at once; a row group is written
    whenever `row_group_rows` rows have gathered, so at most one row group is held in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(columns)
    pending: list[Any] = []
    pending_rows = count = 0
    dictionary = [name for name in columns if name not in UNDICTIONARIED]
    with pq.ParquetWriter(out, schema, compression="zstd", use_dictionary=dictionary) as writer:
        for batch in batches:
            rows = [{name: _parquet_value(row[name]) for name in columns} for row in batch]
            pending.append(pa.RecordBatch.from_pylist(rows, schema=schema))
            pending_rows += len(batch)
            if pending_rows >= row_group_rows:
                count += _write_row_group(writer, pending, schema)
                pending, pending_rows = [], 0
        if pending:
            count += _write_row_group(writer, pending, schema)
    return count


def _write_row_group(writer: Any, record_batches: list[Any], schema: Any) -> int:
    import pyarrow as pa

    table = pa.Table.from_batches(record_batches, schema=schema)
    writer.write_table(table, row_group_size=table.num_rows)
    return int(table.num_rows)


def _parquet_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


def parquet_schema(columns: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(articles.c[name].type), nullable=True)
                      for name in columns])


def _arrow_type(column_type: sa.types.TypeEngine[Any]) -> Any:
    import pyarrow as pa

    if isinstance(column_type, sa.TypeDecorator):  # UTCDateTime
        column_type = column_type.impl_instance
    if isinstance(column_type, sa.DateTime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(column_type, sa.Boolean):
        return pa.bool_()
    if isinstance(column_type, sa.Integer):
        return pa.int64()
    if isinstance(column_type, sa.Float):
        return pa.float64()
    if isinstance(column_type, sa.LargeBinary):
        return pa.binary()
    # Text, the status enum, and JSON (written as JSON text).
    return pa.string()


def export_rows(conn: sa.Connection, query: ExportQuery, fmt: str,
                out: IO[str] | IO[bytes] | str) -> int:
    """Write the matching rows to `out` (a text stream for jsonl/csv; a path or binary stream
    for parquet). Returns how many rows were written."""
    batches = iter_batches(conn, query)
    if fmt == "jsonl":
        count = write_jsonl(batches, out)  # type: ignore[arg-type]
    elif fmt == "csv":
        count = write_csv(batches, out, query.columns)  # type: ignore[arg-type]
    elif fmt == "parquet":
        count = write_parquet(batches, out, query.columns)  # type: ignore[arg-type]
    else:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    logger.info("exported %s rows as %s", count, fmt)
    return count
