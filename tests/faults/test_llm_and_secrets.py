"""The LLM tier under fault in a real crawl, and secrets kept out of everything a user can read.

The LLM endpoint is a real local chat-completions server: one that hangs past the configured
timeout, and one that answers errors echoing the API key back. Pages come from the hostile
server, crawls run in real crawler processes, and in the distributed runs a real Celery worker
classifies over the real Redis and Postgres.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import WorkerProcess, run_sluice, wait_until
from tests.faults.conftest import all_rows, crawl_urls, every_value, fault_env, status_of
from tests.faults.hostile import HostileServer
from tests.integration.test_bulk_ingest import status_counts
from tests.unit.test_llm_tier import ChatHandler, ChatServer

pytestmark = pytest.mark.integration

API_KEY = "sk-test-SECRET-5f3a9c1e7b2d4086"
DB_PASSWORD = "SECRETPW-8e41d7c2"
TIMEOUT = 1.0  # SLUICE_LLM__TIMEOUT for these crawls
HANG = 120.0  # how long the hanging endpoint holds a request: far past TIMEOUT
PAGES = 8
CLASSIFIED = {"success", "truncated", "unsuitable_content"}
_URL_LINE = re.compile(r"^URL: (\S+)$", re.M)


class HostileChat(ChatServer):
    """A chat-completions endpoint that hangs (`hang`) or answers every request with an error
    or an answer that repeats the caller's Authorization header (`echo_key`)."""

    release: threading.Event

    def asked_urls(self) -> list[str]:
        """The page URL of every request received, from the prompt's `URL:` line."""
        return [match.group(1) for body in list(self.requests)
                for match in _URL_LINE.finditer(body["messages"][-1]["content"])]


class HostileChatHandler(ChatHandler):
    server: HostileChat

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        authorization = self.headers.get("Authorization", "")
        self.server.requests.append(body)
        self.server.headers_seen.append(authorization)
        if self.server.mode == "hang":
            self.server.release.wait(HANG)
            self._send(200, _completion({"isSuitable": True, "pageType": "article",
                                         "reason": "Far too late."}))
            return
        echoed = f"Incorrect API key provided: {authorization}"
        replies = [
            (401, {"error": {"message": echoed, "type": "invalid_request_error"}}),
            (500, {"error": f"upstream failed; request headers: Authorization: {authorization}"}),
            (200, _content({"isSuitable": False, "pageType": "other", "reason": echoed})),
            (200, _content(f"Your key {authorization} is over quota.")),
        ]
        status, payload = replies[len(self.server.requests) % len(replies)]
        self._send(status, json.dumps(payload).encode())


def _content(answer: object) -> dict[str, object]:
    content = answer if isinstance(answer, str) else json.dumps(answer)
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def _completion(answer: dict[str, object]) -> bytes:
    return json.dumps(_content(answer)).encode()


@contextmanager
def chat_endpoint(mode: str) -> Iterator[HostileChat]:
    server = HostileChat(("127.0.0.1", 0), HostileChatHandler)
    server.mode, server.requests, server.headers_seen = mode, [], []
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()  # hung requests end now, not after HANG seconds
        server.shutdown()
        server.server_close()


def llm_env(chat: HostileChat) -> dict[str, str]:
    """The LLM tier on, asked about every page the model classifies (the band is everything)."""
    host, port = chat.server_address[:2]
    return {"SLUICE_LLM__URL": f"http://{host!s}:{port}/v1", "SLUICE_LLM__MODEL": "test-model",
            "SLUICE_LLM__API_KEY": API_KEY, "SLUICE_LLM__TIMEOUT": str(TIMEOUT),
            "SLUICE_LLM__UNCERTAIN_LOW": "0", "SLUICE_LLM__UNCERTAIN_HIGH": "1",
            # Every page asks, even after a failure (the hang test sets a pause of its own).
            "SLUICE_LLM__FAILURE_PAUSE": "0"}


def page_urls(server: HostileServer) -> list[str]:
    return [server.url(f"/html/llm-{number}") for number in range(PAGES)]


def settled(database_url: str, total: int) -> bool:
    counts = status_counts(database_url)
    return sum(counts.values()) == total and not {"queued", "pending"} & set(counts)


def task_lines(worker: WorkerProcess) -> list[str]:
    """The tasks a worker received and finished (for a failure message)."""
    log = Path(worker.log.name).read_text(encoding="utf-8", errors="replace")
    return [line for line in log.splitlines() if "Task " in line]


def stopped_log(worker: WorkerProcess) -> str:
    """The worker's whole log, once it has shut down (the fixture then only cleans up)."""
    worker.process.terminate()
    worker.process.wait(timeout=60)
    return Path(worker.log.name).read_text(encoding="utf-8", errors="replace")


@pytest.mark.timeout(600)
def test_llm_endpoint_hanging_past_its_timeout_keeps_the_models_verdict(
    pg_url: str, redis_url: str, start_worker: type[WorkerProcess], tmp_path: Path
) -> None:
    with chat_endpoint("hang") as chat, HostileServer() as server:
        urls = page_urls(server)
        env = fault_env(pg_url, redis_url, **{**llm_env(chat), "SLUICE_LLM__FAILURE_PAUSE": "60"})
        worker = start_worker(env)
        started = time.monotonic()
        stats = crawl_urls(urls, env, tmp_path)
        # Under HANG: a client that waited out the endpoint even once would not get here.
        assert wait_until(lambda: settled(pg_url, PAGES), timeout=HANG - 20, interval=0.5), \
            (status_counts(pg_url), task_lines(worker))
        elapsed = time.monotonic() - started
        asked = chat.asked_urls()
        log = stopped_log(worker)
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    # The endpoint really was asked, each request was given up on after the timeout (waiting
    # out the hang for even one page would take HANG seconds), and after the first failure the
    # tier paused instead of spending a timeout on every page.
    assert asked and set(asked) <= set(urls)
    assert len(asked) < PAGES, asked
    assert elapsed < HANG, elapsed
    assert "LLM request failed" in log and "pausing the LLM tier" in log
    rows = all_rows(pg_url)
    assert sorted(rows) == sorted(urls)  # one row each, none lost
    for url, row in rows.items():
        assert status_of(row)[0] in CLASSIFIED, (url, status_of(row))
        assert row.classified_by == "model", (url, row.classified_by)
        assert row.page_type and row.suitability_reason, url


def secret_problems(label: str, text: str) -> list[str]:
    return [f"{secret!r} in {label}" for secret in (API_KEY, DB_PASSWORD) if secret in text]


def assert_no_secrets(outputs: dict[str, str]) -> None:
    assert outputs, "nothing was checked"
    leaks = [leak for label, text in outputs.items() for leak in secret_problems(label, text)]
    assert not leaks, leaks


def failing_urls(server: HostileServer) -> list[str]:
    """A server error, a missing page and a refused connection: the fetch error paths."""
    return [server.url("/server-error"), server.url("/not-here"), "http://127.0.0.1:9/html/gone"]


def cli_outputs(env: dict[str, str]) -> dict[str, str]:
    """What `sluice status` and `sluice sql` print, their error paths included."""
    outputs = {}
    for args in (("status",), ("sql", "select * from articles"),
                 ("sql", "--format", "json", "select * from articles"),
                 ("sql", "select * from no_such_table")):
        result = run_sluice(*args, env=env, timeout=120)
        outputs[f"sluice {' '.join(args)}"] = result.stdout + result.stderr
    return outputs


def assert_crawled_with_llm_errors(database_url: str, urls: list[str], failing: list[str],
                                   chat: HostileChat) -> None:
    rows = all_rows(database_url)
    assert sorted(rows) == sorted(urls + failing)
    assert sorted(set(chat.asked_urls())) == sorted(urls)
    assert set(chat.headers_seen) == {f"Bearer {API_KEY}"}  # the key was really sent
    for url in failing:
        assert status_of(rows[url])[0] == "fetch_failed", (url, status_of(rows[url]))
    for url in urls:
        # No answer is usable (each is an error or repeats the key): the model's verdict stays.
        assert rows[url].classified_by == "model", (url, rows[url].classified_by)


@pytest.mark.timeout(600)
def test_secrets_never_reach_logs_rows_or_errors_embedded(sqlite_url: str,
                                                          tmp_path: Path) -> None:
    with chat_endpoint("echo_key") as chat, HostileServer() as server:
        urls, failing = page_urls(server), failing_urls(server)
        env = fault_env(sqlite_url, **llm_env(chat))
        stats = crawl_urls(urls + failing, env, tmp_path, log_level="DEBUG")
        assert_crawled_with_llm_errors(sqlite_url, urls, failing, chat)
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    assert "LLM request failed" in stats["_stderr"]  # the error path ran, and was logged
    assert_no_secrets({"crawler stderr": stats["_stderr"], "crawler stdout": stats["_stdout"],
                       "rows": every_value(sqlite_url), **cli_outputs(env)})


@pytest.mark.timeout(600)
def test_secrets_never_reach_logs_rows_or_errors_distributed(
    pg_url: str, redis_url: str, start_worker: type[WorkerProcess], tmp_path: Path
) -> None:
    secret_url = sa.make_url(pg_url).set(password=DB_PASSWORD).render_as_string(
        hide_password=False)
    with chat_endpoint("echo_key") as chat, HostileServer() as server:
        urls, failing = page_urls(server), failing_urls(server)
        env = fault_env(secret_url, redis_url, **llm_env(chat))
        worker = start_worker(env)
        stats = crawl_urls(urls + failing, env, tmp_path, log_level="DEBUG")
        assert wait_until(lambda: settled(pg_url, len(urls + failing)), timeout=240,
                          interval=0.5), (status_counts(pg_url), task_lines(worker))
        log = stopped_log(worker)
        assert_crawled_with_llm_errors(pg_url, urls, failing, chat)
        # The demo says where it stores its rows; run embedded, it asks the LLM itself.
        demo = run_sluice("demo", env={name: value for name, value in env.items()
                                       if name != "SLUICE_REDIS_URL"})
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    assert "LLM request failed" in log
    # The same password on a server that refuses the connection: the error names no secret.
    unreachable = fault_env(sa.make_url(secret_url).set(port=9).render_as_string(
        hide_password=False))
    refused = run_sluice("status", env=unreachable, timeout=120)
    assert refused.returncode != 0
    assert_no_secrets({"crawler stderr": stats["_stderr"], "crawler stdout": stats["_stdout"],
                       "worker log": log, "rows": every_value(pg_url), **cli_outputs(env),
                       "sluice demo": demo.stdout + demo.stderr,
                       "sluice status (refused)": refused.stdout + refused.stderr})
