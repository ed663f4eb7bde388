"""Shared fixtures: real databases, a real Redis, real Celery workers, real local sites."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import make_engine
from sluice.db.migrate import upgrade
from sluice.demo.server import SiteServer

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get(
    "SLUICE_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_TEST_URL = os.environ.get("SLUICE_TEST_REDIS", "redis://127.0.0.1:6379/9")

# Started in the background (`make test &`, a CI job), the tests inherit Ctrl-C's SIGINT
# ignored, and so would every command they start: the Ctrl-C tests' signals would be lost and
# their runs end on their own. Handled here, it is back at its default in every child, as in
# a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def create_pg_database() -> str:
    """A fresh Postgres database, migrated to head; returns its URL."""
    name = f"sluice_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def drop_pg_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = create_pg_database()
    upgrade(url)
    yield url
    drop_pg_database(url)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sluice.db'}"
    upgrade(url)
    return url


@pytest.fixture
def redis_url() -> Iterator[str]:
    import redis

    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.flushdb()
    yield REDIS_TEST_URL
    client.flushdb()
    client.close()


@pytest.fixture(scope="session")
def demo_site() -> Iterator[SiteServer]:
    with SiteServer() as site:
        yield site


def sluice_env(database_url: str, redis_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment for a Sluice process under test."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLUICE_")}
    env.update({"SLUICE_DATABASE_URL": database_url, "SLUICE_ALLOW_PRIVATE_NETWORKS": "true",
                "SLUICE_EXTRACT_WORKERS": "2", **extra})
    if redis_url:
        env["SLUICE_REDIS_URL"] = redis_url
    return env


def run_sluice(
    *args: str, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the `sluice` command line as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "sluice.cli", *args],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class WorkerProcess:
    """A real Celery worker process over the real Redis; its log goes to a file (a pipe that
    nobody reads would fill up and stall the worker)."""

    def __init__(self, env: dict[str, str], concurrency: int = 1) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--loglevel=INFO",
             f"--concurrency={concurrency}", "--pool=prefork", "-Q", "sluice",
             "--without-gossip", "--without-mingle", "-n", f"test-{uuid.uuid4().hex[:6]}@%h"],
            env=env, cwd=PROJECT_ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool), as when its machine dies."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # A pool child that outlived its main process would go on taking the next test's
        # tasks from the shared queue: nothing of the worker's group may survive it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.seek(0)
        output = self.log.read()[-5000:]
        self.log.close()
        os.unlink(self.log.name)
        return output


@pytest.fixture
def start_worker() -> Iterator[type[WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(env: dict[str, str], concurrency: int = 1) -> WorkerProcess:
        worker = WorkerProcess(env, concurrency)
        started.append(worker)
        return worker

    yield start  # type: ignore[misc]
    for worker in started:
        worker.stop()


def wait_until(predicate: object, timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(interval)
    return False


def rows_by_path(database_url: str, base_url: str) -> dict[str, tuple[str, str | None]]:
    """{path: (status, reason)} for every row under `base_url`."""
    from sluice.db import articles

    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(articles.c.url, articles.c.status, articles.c.reason).where(
                articles.c.url.startswith(base_url)
            )
        ).all()
    engine.dispose()
    return {
        url[len(base_url) :]: (getattr(status, "value", status), reason)
        for url, status, reason in rows
    }
