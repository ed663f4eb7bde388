"""Alembic migrations for both SQLite (embedded) and Postgres."""
