"""Tier 3: an optional LLM behind any OpenAI-compatible chat-completions endpoint.

Asked only about pages the model is unsure of. The answer must be a JSON object
`{isSuitable, pageType, reason}`, parsed strictly; anything else (a timeout, an HTTP error,
malformed JSON, an unknown page type) returns None and the caller keeps the model's verdict.
Calls are rate-limited per process without ever blocking a worker: over the limit, the LLM is
simply not asked. Answers are cached by a hash of the content. The API key is sent in the
Authorization header only; it is never logged and never copied into a reason.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import re
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from sluice.classification.policy import PAGE_TYPES, SuitabilityPolicy
from sluice.config import LLMSettings
from sluice.records import Extraction

logger = logging.getLogger(__name__)

PROMPT_VERSION = "1"
MAX_TEXT_CHARS = 3000
MAX_REASON_CHARS = 240
MAX_REPLY_BYTES = 1_000_000
CACHE_SIZE = 10_000
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

SYSTEM_PROMPT = """You classify web pages for a reading corpus.
Page types: article (news, blog post, essay, review, guide), documentation (API docs, manuals,
tutorials, wiki pages), forum (discussion threads, Q&A), product (one product for sale),
collection (category or product grid), listing (index of articles, search results, archive),
service (company, SaaS or marketing page), login (sign-in or registration form),
error (not found or error page), other.
Suitable pages are those of type: {suitable}.
Answer with one JSON object and nothing else:
{{"isSuitable": true or false, "pageType": "<one page type>", "reason": "<one short sentence>"}}"""


@dataclass(frozen=True, slots=True)
class LLMAnswer:
    """A strictly parsed answer: the page type, whether it is suitable, and why."""

    suitable: bool
    page_type: str
    reason: str


class RateLimiter:
    """At most `per_minute` acquisitions in any sliding 60-second window; never waits."""

    def __init__(self, per_minute: int) -> None:
        self._per_minute = per_minute
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        now = time.monotonic()
        with self._lock:
            while self._times and now - self._times[0] >= 60.0:
                self._times.popleft()
            if len(self._times) >= self._per_minute:
                return False
            self._times.append(now)
            return True


def endpoint_url(base: str) -> str:
    """The chat-completions URL, given either the API base (`…/v1`) or the full endpoint."""
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def build_messages(
    extraction: Extraction, url: str | None, policy: SuitabilityPolicy
) -> list[dict[str, str]]:
    """The system and user messages for one page (text cut to MAX_TEXT_CHARS)."""
    suitable = ", ".join(sorted(policy.suitable_types))
    page = (
        f"URL: {url or 'unknown'}\nTitle: {extraction.title or ''}\n"
        f"Structure: {extraction.n_paragraphs} paragraphs, {extraction.n_list_items} list items, "
        f"{extraction.n_headings} headings, {extraction.n_links} links\n"
        f"Main text:\n{extraction.text[:MAX_TEXT_CHARS]}"
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(suitable=suitable)},
        {"role": "user", "content": page},
    ]


def parse_answer(content: str, secret: str | None = None) -> LLMAnswer | None:
    """The answer in a reply's content, or None unless it is exactly the JSON asked for."""
    content = content.strip()
    fenced = _FENCE.match(content)
    if fenced:
        content = fenced.group(1)
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(data, dict):
        return None
    suitable, page_type, reason = data.get("isSuitable"), data.get("pageType"), data.get("reason")
    if not isinstance(suitable, bool) or page_type not in PAGE_TYPES:
        return None
    if not isinstance(reason, str) or not reason.strip():
        return None
    # One line of printable text: no control characters (Postgres refuses a NUL in text).
    reason = " ".join(_CONTROL.sub(" ", reason).split())[:MAX_REASON_CHARS]
    if not reason:
        return None
    if secret and secret in reason:
        return None
    return LLMAnswer(suitable, str(page_type), reason)


def reply_content(body: bytes) -> str | None:
    """The first choice's message content of a chat-completions response, if well formed."""
    try:
        data: Any = json.loads(body)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None
    return content if isinstance(content, str) else None


def _read_within(response: Any, deadline: float, limit: int = MAX_REPLY_BYTES) -> bytes:
    """The body, read in pieces so that a reply trickling in (each read within the socket
    timeout) still ends at the deadline: `TimeoutError` then."""
    body = bytearray()
    while len(body) < limit:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply took longer than the timeout")
        piece = response.read1(min(65536, limit - len(body)))
        if not piece:
            break
        body += piece
    return bytes(body)


class LLMClassifier:
    """Asks the configured endpoint about one page; None whenever no usable answer comes."""

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.url or not settings.model:
            raise ValueError("the LLM tier needs SLUICE_LLM__URL and SLUICE_LLM__MODEL")
        self._settings = settings
        self._url = endpoint_url(settings.url)
        self._model = settings.model
        self._limiter = RateLimiter(settings.requests_per_minute)
        self._cache: collections.OrderedDict[str, LLMAnswer] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._paused_until = 0.0

    def _secret(self) -> str | None:
        key = self._settings.api_key
        return key.get_secret_value() if key is not None else None

    def cache_key(self, extraction: Extraction, url: str | None, policy: SuitabilityPolicy) -> str:
        parts = [PROMPT_VERSION, self._model, ",".join(sorted(policy.suitable_types)), url or ""]
        parts += [extraction.title or "", extraction.text]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()

    def _cached(self, key: str) -> LLMAnswer | None:
        with self._lock:
            answer = self._cache.get(key)
            if answer is not None:
                self._cache.move_to_end(key)
            return answer

    def _remember(self, key: str, answer: LLMAnswer) -> None:
        with self._lock:
            self._cache[key] = answer
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)

    def classify(
        self, extraction: Extraction, url: str | None, policy: SuitabilityPolicy
    ) -> LLMAnswer | None:
        """The endpoint's answer for one page, from the cache when the content was seen."""
        key = self.cache_key(extraction, url, policy)
        cached = self._cached(key)
        if cached is not None:
            return cached
        if time.monotonic() < self._paused_until:
            logger.debug("LLM endpoint paused after a failure; keeping the model's verdict")
            return None
        if not self._limiter.try_acquire():
            logger.debug("LLM rate limit reached; keeping the model's verdict for %s", url)
            return None
        content = self._post(build_messages(extraction, url, policy))
        answer = parse_answer(content, self._secret()) if content is not None else None
        if answer is None:
            logger.debug("LLM gave no usable answer for %s", url)
            return None
        self._remember(key, answer)
        return answer

    def _request(self, messages: list[dict[str, str]]) -> urllib.request.Request:
        body = {"model": self._model, "messages": messages, "temperature": 0}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        secret = self._secret()
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        return urllib.request.Request(
            self._url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )

    def _post(self, messages: list[dict[str, str]]) -> str | None:
        """The reply's content, or None (and the tier paused) on any failure: refused, an
        HTTP error, a reply that is not HTTP, or one slower than the timeout in all."""
        timeout = self._settings.timeout
        try:
            with urllib.request.urlopen(  # noqa: S310 - the URL is the operator's setting
                self._request(messages), timeout=timeout
            ) as response:
                return reply_content(_read_within(response, time.monotonic() + timeout))
        except Exception as error:
            # The tier is optional: whatever fails, the model's verdict stands. Only the
            # error's type and status are logged: the request (with its key) never is.
            status = getattr(error, "code", "")
            pause = self._settings.failure_pause
            logger.warning("LLM request failed: %s %s; pausing the LLM tier for %.0f s",
                           type(error).__name__, status, pause)
            self._paused_until = time.monotonic() + pause
            return None
