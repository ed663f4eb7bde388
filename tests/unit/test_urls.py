"""URL canonicalisation: one page, one row key; bad URLs are refused with a reason code."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.errors import InvalidURL
from sluice.urls import canonicalize_url, check_address_allowed, is_public_address


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM:80/a/./b/../c", "http://example.com/a/c"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com/p?utm_source=rss&utm_medium=feed&id=7", "https://example.com/p?id=7"),
        ("https://example.com/p?b=2&a=1#comments", "https://example.com/p?a=1&b=2"),
        ("https://example.com/p?fbclid=abc&gclid=x", "https://example.com/p"),
        ("https://example.com/%7euser/caf%c3%a9", "https://example.com/~user/caf%C3%A9"),
        ("https://example.com/a%2Fb", "https://example.com/a%2Fb"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
        ("  https://example.com/x  ", "https://example.com/x"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        # The server is asked for the same bytes: escapes that are not UTF-8 are kept, not
        # replaced (two Latin-1 searches must stay two URLs), and a bare key stays bare.
        ("http://example.com/s?q=caf%e9", "http://example.com/s?q=caf%E9"),
        ("http://example.com/s?q=caf%E8&a", "http://example.com/s?a&q=caf%E8"),
        ("http://example.com/amp?amp", "http://example.com/amp?amp"),
        ("http://[::1]:8080/a", "http://[::1]:8080/a"),
    ],
)
def test_canonical_forms(raw: str, canonical: str) -> None:
    assert canonicalize_url(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("ftp://example.com/file", "unsupported_scheme"),
        ("file:///etc/passwd", "unsupported_scheme"),
        ("javascript:alert(1)", "unsupported_scheme"),
        ("data:text/html,hello", "unsupported_scheme"),
        ("example.com/no-scheme", "unsupported_scheme"),
        ("http://", "invalid_url"),
        ("http://exa mple.com/", "invalid_url"),
        ("http://example.com:99999/", "invalid_url"),
        ("", "invalid_url"),
        ("https://example.com/" + "a" * 3000, "url_too_long"),
        ("https://example.com:0/", "invalid_url"),
        ("http://[::1]x/", "invalid_url"),
        ("http://[::1", "invalid_url"),
        ("http://example.com/a\x00b", "invalid_url"),
        ("http://example.com/\ud800", "invalid_url"),
        ("http://example.com/?q=\udcff\ud800", "invalid_url"),
    ],
)
def test_bad_urls_are_refused_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(InvalidURL) as caught:
        canonicalize_url(raw)
    assert caught.value.reason == reason


@given(st.text(max_size=300)
       | st.builds(str.__add__, st.sampled_from(["http://a.example/", "https://[::1]:8/?q="]),
                   st.text(st.characters(exclude_categories=()), max_size=100)))
def test_canonicalisation_never_raises_anything_else_and_is_idempotent(raw: str) -> None:
    try:
        once = canonicalize_url(raw)
    except InvalidURL:
        return
    assert canonicalize_url(once) == once


@given(st.from_regex(r"https?://[a-z]{1,10}\.(com|org)(/[a-zA-Z0-9%._~-]{0,20}){0,4}"
                     r"(\?[a-z]{1,5}=[a-z0-9]{0,5}(&[a-z_]{1,9}=[a-z0-9]{0,5}){0,3})?",
                     fullmatch=True))
def test_canonical_urls_are_stable(raw: str) -> None:
    once = canonicalize_url(raw)
    assert canonicalize_url(once) == once
    assert "utm_" not in once


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.5.5",
                                     "169.254.169.254", "::1", "fe80::1", "224.0.0.1",
                                     "::ffff:127.0.0.1", "0.0.0.0", "100.64.0.1"])
def test_private_addresses_are_not_public(address: str) -> None:
    assert not is_public_address(address)


def test_public_address_is_allowed_and_metadata_host_is_not() -> None:
    assert is_public_address("93.184.216.34")
    check_address_allowed("example.com", "93.184.216.34", allow_private=False)
    with pytest.raises(Exception, match="metadata"):
        check_address_allowed("metadata.google.internal", "93.184.216.34", allow_private=False)
    check_address_allowed("localhost", "127.0.0.1", allow_private=True)
