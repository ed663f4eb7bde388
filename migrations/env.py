"""Alembic environment: the URL comes from Sluice's settings unless a caller set one."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from sluice.config import get_settings
from sluice.db import make_engine, metadata
from sluice.db.models import include_object

config = context.config

# Concurrent upgrades on Postgres (crawlers starting together) wait on this lock, then find
# nothing to do, instead of creating the same tables at once. Any constant: it names the lock.
MIGRATION_LOCK_KEY = 5_117_001


def database_url() -> str:
    return config.attributes.get("database_url") or get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(
        url=database_url(), target_metadata=metadata, literal_binds=True, render_as_batch=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(database_url())
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            include_object=include_object,
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                # Held until this transaction, which runs every migration, commits.
                connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": MIGRATION_LOCK_KEY})
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
