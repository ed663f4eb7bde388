"""The LLM tier against a real local chat-completions server: sane verdicts in every case."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from sluice.classification import classify_page
from sluice.classification.llm import LLMClassifier, RateLimiter, parse_answer
from sluice.classification.policy import DEFAULT_POLICY, PAGE_TYPES
from sluice.config import LLMSettings
from sluice.records import Extraction, Verdict

API_KEY = "sk-test-never-log-me"
PAGE = Extraction(
    text="Our team builds tools. " * 40 + "Read the guide to get started with the product.",
    title="About the product",
)


class ChatServer(ThreadingHTTPServer):
    """Answers chat completions with whatever `reply` says; records requests."""

    daemon_threads = True
    mode = "good"
    requests: list[dict[str, Any]]
    headers_seen: list[str]


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Keep the test output quiet."""

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.headers_seen.append(self.headers.get("Authorization", ""))
        mode = self.server.mode
        if mode == "timeout":
            time.sleep(1.5)
        if mode == "not_http":
            self.wfile.write(b"HELLO I AM NOT HTTP\r\n\r\n")
            return
        if mode == "trickle":  # each byte well within the socket timeout, the whole far beyond
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for _ in range(15):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
                self.wfile.write(json.dumps(_completion(_content("good"))).encode())
            return
        if mode == "error":
            self._send(500, b'{"error": "boom"}')
            return
        self._send(200, json.dumps(_completion(_content(mode))).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _content(mode: str) -> str:
    answers = {
        "good": json.dumps({"isSuitable": False, "pageType": "service", "reason": "A sales page."}),
        "fenced": '```json\n{"isSuitable": true, "pageType": "article", "reason": "A guide."}\n```',
        "malformed": '{"isSuitable": true, "pageType": "article", "reason": ',
        "unknown_type": json.dumps({"isSuitable": True, "pageType": "poem", "reason": "Nice."}),
        "wrong_types": json.dumps({"isSuitable": "yes", "pageType": "article", "reason": "x"}),
        "prose": "I think this page is an article.",
        "leaks_key": json.dumps(
            {"isSuitable": False, "pageType": "other", "reason": f"key {API_KEY}"}
        ),
        "timeout": json.dumps({"isSuitable": True, "pageType": "article", "reason": "Late."}),
        "nested": "[" * 100_000,
        "control_chars": json.dumps(
            {"isSuitable": True, "pageType": "article", "reason": "A news\x00 story.\x1b"}),
    }
    return answers[mode]


def _completion(content: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    httpd = ChatServer(("127.0.0.1", 0), ChatHandler)
    httpd.requests, httpd.headers_seen = [], []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _settings(server: ChatServer, **overrides: Any) -> LLMSettings:
    host, port = server.server_address[:2]
    values: dict[str, Any] = {
        "url": f"http://{host!s}:{port}/v1",
        "model": "test-model",
        "api_key": SecretStr(API_KEY),
        "timeout": 0.5,
        "requests_per_minute": 1000,
        "failure_pause": 0.0,
        "uncertain_low": 0.0,
        "uncertain_high": 1.0,
    }
    return LLMSettings(**(values | overrides))


def _ask(server: ChatServer, mode: str) -> Any:
    server.mode = mode
    client = LLMClassifier(_settings(server))
    return client.classify(PAGE, "https://example.org/about", DEFAULT_POLICY)


def _assert_sane(verdict: Verdict) -> None:
    assert verdict.page_type in PAGE_TYPES
    assert 0.0 <= verdict.score <= 1.0
    assert verdict.reason and API_KEY not in verdict.reason
    assert verdict.classified_by in ("rules", "model", "llm")


def test_good_answer_is_used(server: ChatServer) -> None:
    server.mode = "good"
    verdict = classify_page(
        "<html></html>", "https://example.org/about", PAGE, llm=_settings(server)
    )
    assert (verdict.classified_by, verdict.page_type, verdict.suitable) == ("llm", "service", False)
    assert verdict.reason == "A sales page."
    assert server.headers_seen[-1] == f"Bearer {API_KEY}"
    assert server.requests[-1]["model"] == "test-model"


def test_fenced_json_is_accepted(server: ChatServer) -> None:
    answer = _ask(server, "fenced")
    assert answer is not None and answer.page_type == "article" and answer.suitable


@pytest.mark.parametrize(
    "mode", ["malformed", "unknown_type", "wrong_types", "prose", "leaks_key", "error", "timeout",
             "not_http", "nested", "trickle"]
)
def test_bad_answers_fall_back_to_the_model(server: ChatServer, mode: str) -> None:
    assert _ask(server, mode) is None
    server.mode = mode
    verdict = classify_page("<html></html>", "https://example.org/x", PAGE, llm=_settings(server))
    _assert_sane(verdict)
    assert verdict.classified_by != "llm"


def test_a_trickling_reply_is_given_up_at_the_timeout_and_pauses_the_tier(
    server: ChatServer,
) -> None:
    server.mode = "trickle"
    client = LLMClassifier(_settings(server, failure_pause=60.0))
    started = time.monotonic()
    assert client.classify(PAGE, "https://example.org/slow", DEFAULT_POLICY) is None
    assert time.monotonic() - started < 0.5 + 0.5  # the 0.5 s timeout, not the 3 s trickle
    requests = len(server.requests)
    assert client.classify(PAGE, "https://example.org/slow-2", DEFAULT_POLICY) is None
    assert len(server.requests) == requests  # paused: not asked again


def test_a_reason_is_one_line_of_printable_text(server: ChatServer) -> None:
    answer = _ask(server, "control_chars")
    assert answer is not None and answer.reason == "A news story."


def test_api_key_is_never_logged(server: ChatServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    for mode in ("error", "malformed", "leaks_key"):
        _ask(server, mode)
    assert API_KEY not in caplog.text


def test_a_failing_endpoint_is_paused_not_asked_about_every_page(server: ChatServer) -> None:
    server.mode = "timeout"
    server.requests.clear()
    client = LLMClassifier(_settings(server, failure_pause=60.0))
    started = time.monotonic()
    answers = [client.classify(PAGE, f"https://example.org/{n}", DEFAULT_POLICY)
               for n in range(5)]
    assert answers == [None] * 5
    assert len(server.requests) == 1  # one timeout, then the model's verdicts at once
    assert time.monotonic() - started < 3 * 0.5 + 1


def test_unreachable_endpoint_falls_back() -> None:
    settings = LLMSettings(
        url="http://127.0.0.1:9/v1", model="m", timeout=0.5, uncertain_low=0.0, uncertain_high=1.0
    )
    verdict = classify_page("<html></html>", None, PAGE, llm=settings)
    _assert_sane(verdict)
    assert verdict.classified_by != "llm"


def test_answers_are_cached_by_content(server: ChatServer) -> None:
    server.mode = "good"
    client = LLMClassifier(_settings(server))
    before = len(server.requests)
    first = client.classify(PAGE, "https://example.org/a", DEFAULT_POLICY)
    second = client.classify(PAGE, "https://example.org/a", DEFAULT_POLICY)
    assert first == second and len(server.requests) == before + 1


def test_rate_limit_skips_instead_of_waiting(server: ChatServer) -> None:
    server.mode = "good"
    client = LLMClassifier(_settings(server, requests_per_minute=1))
    assert client.classify(PAGE, "https://example.org/1", DEFAULT_POLICY) is not None
    started = time.monotonic()
    assert client.classify(PAGE, "https://example.org/2", DEFAULT_POLICY) is None
    assert time.monotonic() - started < 0.2


def test_confident_pages_never_reach_the_llm(server: ChatServer) -> None:
    before = len(server.requests)
    settings = _settings(server, uncertain_low=0.49, uncertain_high=0.51)
    html = "<html><head><title>404 Not Found</title></head></html>"
    verdict = classify_page(html, None, Extraction(text="Page not found."), llm=settings)
    assert verdict.classified_by == "rules" and len(server.requests) == before


def test_rate_limiter_window() -> None:
    limiter = RateLimiter(2)
    assert limiter.try_acquire() and limiter.try_acquire() and not limiter.try_acquire()


def test_parse_answer_is_strict() -> None:
    assert parse_answer('{"isSuitable": true, "pageType": "article", "reason": "ok"}')
    assert parse_answer('[{"isSuitable": true}]') is None
    assert parse_answer('{"isSuitable": 1, "pageType": "article", "reason": "ok"}') is None
    assert parse_answer('{"isSuitable": true, "pageType": "article", "reason": "  "}') is None


def test_full_settings_object_is_accepted(server: ChatServer) -> None:
    from sluice.config import Settings

    server.mode = "good"
    settings = Settings(llm=_settings(server))
    verdict = classify_page("<html></html>", "https://example.org/s", PAGE, settings=settings)
    assert verdict.classified_by == "llm"
