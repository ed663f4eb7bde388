"""URL lists: every bad line is reported with its number; none aborts the batch."""

from __future__ import annotations

from sluice.inputs import read_url_list


def test_url_list_reports_each_problem_with_its_line() -> None:
    lines = [
        "# my feeds",
        "",
        "https://a.example/feed.xml",
        "ftp://b.example/feed",
        "https://a.example/feed.xml#again",
        b"https://caf\xe9.example/rss",
        '{"url": "https://c.example/feed", "render": "always"}',
        "{not json",
        "javascript:alert(1)",
        "https://d.example/" + "x" * 3000,
        "https://e.example/rss   trailing words",
    ]
    listed = read_url_list(lines)
    assert [(item.line, item.url) for item in listed.urls] == [
        (3, "https://a.example/feed.xml"),
        (6, "https://xn--caf-dma.example/rss"),
        (7, "https://c.example/feed"),
        (11, "https://e.example/rss"),
    ]
    assert listed.urls[2].options == {"render": "always"}
    assert [(problem.line, problem.reason) for problem in listed.problems] == [
        (4, "unsupported_scheme"), (5, "duplicate"), (8, "invalid_json"),
        (9, "unsupported_scheme"), (10, "url_too_long"),
    ]
