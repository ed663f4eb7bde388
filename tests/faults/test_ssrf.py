"""SSRF: with private networks refused (the default), no request reaches a loopback, private,
link-local, multicast or metadata address: not directly, not through a redirect, not through a
name that resolves differently at connection time, and not from the browser."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawler.browser_guard import abort_private_request
from crawler.middlewares.ssrf import ssrf_settings
from crawler.settings import scrapy_settings
from sluice.config import Settings
from sluice.errors import BlockedAddress
from sluice.urls import check_address_allowed
from tests.conftest import PROJECT_ROOT
from tests.faults.conftest import all_rows, crawl_urls, fault_env, status_of
from tests.faults.hostile import HostileServer

REFUSED = ["127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "172.16.5.4", "192.168.1.1",
           "169.254.169.254", "fe80::1", "fd00::1", "224.0.0.1", "ff02::1", "0.0.0.0",
           "::ffff:127.0.0.1", "::ffff:169.254.169.254", "100.64.0.1", "fd00:ec2::254"]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    with pytest.raises(BlockedAddress):
        check_address_allowed("example.com", address, allow_private=False)
    check_address_allowed("example.com", address, allow_private=True)


@pytest.mark.parametrize("host", ["metadata.google.internal", "metadata", "instance-data."])
def test_metadata_names_are_refused_whatever_they_resolve_to(host: str) -> None:
    with pytest.raises(BlockedAddress):
        check_address_allowed(host, "93.184.216.34", allow_private=False)


def test_public_addresses_are_allowed() -> None:
    check_address_allowed("example.com", "93.184.216.34", allow_private=False)
    check_address_allowed("example.com", "2606:2800:220:1::", allow_private=False)


def test_the_guard_is_installed_unless_private_networks_are_allowed() -> None:
    refused = scrapy_settings(Settings(allow_private_networks=False, _env_file=None))
    assert refused["TWISTED_DNS_RESOLVER"] == "crawler.resolver.PublicAddressResolver"
    assert "crawler.middlewares.ssrf.SSRFGuardMiddleware" in refused["DOWNLOADER_MIDDLEWARES"]
    if "PLAYWRIGHT_ABORT_REQUEST" in refused:
        assert refused["PLAYWRIGHT_ABORT_REQUEST"].endswith("abort_private_request")
    assert ssrf_settings(Settings(allow_private_networks=True, _env_file=None), {}) == {}


@dataclass
class FakeBrowserRequest:
    url: str
    resource_type: str = "document"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "data:text/html,<p>x</p>",
                                 "chrome://settings", "http://127.0.0.1:9/",
                                 "http://localhost:9/", "http://[::1]:9/",
                                 "http://169.254.169.254/latest/meta-data/",
                                 "http://10.0.0.1/", "http://metadata.google.internal/"])
def test_browser_requests_to_local_urls_are_aborted(url: str) -> None:
    assert asyncio.run(abort_private_request(FakeBrowserRequest(url))) is True


def test_browser_requests_to_public_addresses_pass() -> None:
    assert asyncio.run(abort_private_request(FakeBrowserRequest("http://93.184.216.34/"))) is False


@pytest.mark.integration
def test_crawl_refuses_loopback_urls(pg_url: str, tmp_path: Path) -> None:
    with HostileServer() as server:
        port = server.httpd.server_address[1]
        urls = [server.url("/html/a"), f"http://localhost:{port}/html/b",
                f"http://[::1]:{port}/html/c", f"http://127.1.2.3:{port}/html/d"]
        env = fault_env(pg_url, SLUICE_ALLOW_PRIVATE_NETWORKS="false")
        stats = crawl_urls(urls, env, tmp_path)
        hits = sum(server.hits.values())
    rows = all_rows(pg_url)
    assert {url: status_of(rows[url]) for url in urls} == {
        url: ("fetch_failed", "blocked_address") for url in urls}
    assert hits == 0
    assert stats["finish_reason"] == "finished"


@pytest.mark.integration
def test_redirects_and_rebinding_are_refused_at_connection_time(pg_url: str,
                                                                tmp_path: Path) -> None:
    with HostileServer() as server:
        port = server.httpd.server_address[1]
        public = f"http://localhost:{port}"  # treated as a public site by the test's resolver
        urls = [public + "/html/ok", public + "/to-loopback", server.url("/html/direct")]
        (tmp_path / "urls.txt").write_text("\n".join(urls))
        env = fault_env(pg_url, SLUICE_ALLOW_PRIVATE_NETWORKS="false")
        result = subprocess.run(
            [sys.executable, "-m", "tests.faults.ssrf_crawl", str(tmp_path / "urls.txt"),
             str(tmp_path / "stats.json")], env=env, cwd=PROJECT_ROOT, capture_output=True,
            text=True, timeout=600, check=False)
        hits = dict(server.hits)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "stats.json").read_text())["finish_reason"] == "finished"
    rows = all_rows(pg_url)
    assert status_of(rows[public + "/html/ok"])[0] != "fetch_failed"  # fetched: allowed
    assert status_of(rows[public + "/to-loopback"]) == ("fetch_failed", "blocked_address")
    assert status_of(rows[server.url("/html/direct")]) == ("fetch_failed", "blocked_address")
    assert hits.get("/to-loopback") == 1
    assert "/html/inner" not in hits and "/html/direct" not in hits
