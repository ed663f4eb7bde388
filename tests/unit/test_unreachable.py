"""The pause of a site that stopped answering: when it starts, what it refuses, how it ends."""

from __future__ import annotations

import time

import pytest
from scrapy import Request
from scrapy.exceptions import DownloadTimeoutError
from scrapy.http import Response

from crawler.middlewares.politeness import WaitingForSite
from crawler.middlewares.ssrf import BlockedRequest
from crawler.middlewares.unreachable import SiteUnreachable, UnreachableSiteMiddleware

PAUSE = 0.2


def sent_and_timed_out(guard: UnreachableSiteMiddleware, url: str) -> None:
    request = Request(url)
    guard.process_request(request)
    guard.process_exception(request, DownloadTimeoutError())


def probe_after_the_pause(guard: UnreachableSiteMiddleware, name: str) -> Request:
    """Two attempts without an answer (a guard pausing after two), the pause waited out, and
    the request that goes out as the probe."""
    for number in range(2):
        sent_and_timed_out(guard, f"http://dead.example/{number}")
    time.sleep(PAUSE * 1.5)
    probe = Request(f"http://dead.example/{name}")
    guard.process_request(probe)
    return probe


def test_a_site_is_paused_after_attempts_in_a_row_without_an_answer() -> None:
    guard = UnreachableSiteMiddleware(after=3, pause=PAUSE)
    sent_and_timed_out(guard, "http://dead.example/1")
    sent_and_timed_out(guard, "http://dead.example/2")
    answered = Request("http://dead.example/3")
    guard.process_response(answered, Response(answered.url, status=503))  # an answer
    sent_and_timed_out(guard, "http://dead.example/4")
    sent_and_timed_out(guard, "http://dead.example/5")
    guard.process_request(Request("http://dead.example/6"))  # two in a row: still sent
    sent_and_timed_out(guard, "http://dead.example/6")
    with pytest.raises(SiteUnreachable, match="did not answer 3 attempts in a row"):
        guard.process_request(Request("http://dead.example/7"))
    guard.process_request(Request("http://alive.example/1"))  # other sites go on


def test_after_the_pause_one_probe_goes_out_and_decides() -> None:
    guard = UnreachableSiteMiddleware(after=2, pause=PAUSE)
    probe = probe_after_the_pause(guard, "probe-1")
    with pytest.raises(SiteUnreachable):  # the others wait for the probe's outcome
        guard.process_request(Request("http://dead.example/waiting"))
    guard.process_exception(probe, DownloadTimeoutError())  # no answer: paused again
    with pytest.raises(SiteUnreachable):
        guard.process_request(Request("http://dead.example/too-soon"))
    time.sleep(PAUSE * 1.5)
    probe = Request("http://dead.example/probe-2")
    guard.process_request(probe)
    guard.process_response(probe, Response(probe.url, status=200))  # back: the pause ends
    for number in range(3):
        guard.process_request(Request(f"http://dead.example/after-{number}"))


def test_a_request_that_failed_before_it_was_sent_does_not_end_the_probe() -> None:
    """Another request of the paused site that fails on its way (parked for the site's turn,
    refused by the address guard) never reached the site: the probe still decides alone."""
    guard = UnreachableSiteMiddleware(after=2, pause=PAUSE)
    probe_after_the_pause(guard, "probe")
    guard.process_exception(Request("http://dead.example/parked"), WaitingForSite("not yet"))
    guard.process_exception(Request("http://dead.example/refused"), BlockedRequest("private"))
    with pytest.raises(SiteUnreachable):  # still the probe's turn alone
        guard.process_request(Request("http://dead.example/second-probe"))
