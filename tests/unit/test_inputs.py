"""URL lists: every bad line is reported with its number; none aborts the batch."""

from __future__ import annotations

from pathlib import Path

from sluice.inputs import iter_lines, read_url_list


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
        "https://e.example/rss   # a note after the URL",
        "https://f.example/my feed.xml",  # not https://f.example/my: a space is no separator
        "https://g.example/#top  #note",
        "{" * 100_000 + "}" * 100_000,
        '{"url": "https://h.example/\\ud800"}',
    ]
    listed = read_url_list(lines)
    assert [(item.line, item.url) for item in listed.urls] == [
        (3, "https://a.example/feed.xml"),
        (6, "https://xn--caf-dma.example/rss"),
        (7, "https://c.example/feed"),
        (11, "https://e.example/rss"),
        (13, "https://g.example/"),
    ]
    assert listed.urls[2].options == {"render": "always"}
    assert [(problem.line, problem.reason) for problem in listed.problems] == [
        (4, "unsupported_scheme"), (5, "duplicate"), (8, "invalid_json"),
        (9, "unsupported_scheme"), (10, "url_too_long"), (12, "invalid_url"),
        (14, "invalid_json"), (15, "invalid_url"),
    ]


def test_a_file_with_cr_only_line_endings_has_a_line_per_url(tmp_path: Path) -> None:
    path = tmp_path / "old-mac.txt"
    path.write_bytes(b"https://a.example/1\rnot a url\rhttps://a.example/3\r")
    listed = read_url_list(iter_lines(str(path)))
    assert [(item.line, item.url) for item in listed.urls] == [
        (1, "https://a.example/1"), (3, "https://a.example/3")]
    assert [(problem.line, problem.reason) for problem in listed.problems] == [
        (2, "invalid_url")]
