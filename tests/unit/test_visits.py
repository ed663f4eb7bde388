"""A visit's tally across the sources it followed, and a sitemap read in part."""

from __future__ import annotations

from sluice.discovery.sources import FoundArticle, SourceReading, read_source
from sluice.discovery.visits import SourceVisit
from sluice.schedule import FOLLOWED_SOURCES_FAILED, is_failure

INDEX = SourceReading("sitemap_index")


def urlset(count: int) -> bytes:
    entries = "".join(f"<url><loc>https://a.example/{n}</loc></url>" for n in range(count))
    return (f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
            ).encode()


def articles(count: int) -> SourceReading:
    return SourceReading("sitemap", articles=tuple(
        FoundArticle(f"https://a.example/{n}") for n in range(count)))


def test_a_visit_counts_the_articles_of_every_source_and_its_first_problem() -> None:
    visit = SourceVisit()
    visit.add_source("https://a.example/index.xml", INDEX)
    visit.add_followed("https://a.example/1.xml", articles(2))
    visit.add_followed("https://a.example/2.xml", "http_404")
    visit.add_followed("https://a.example/3.xml", SourceReading("sitemap", "malformed_xml"))
    visit.add_followed("https://a.example/4.xml", articles(3))
    assert (visit.entries, visit.followed, visit.failed) == (5, 4, 2)
    assert visit.first_problem == "https://a.example/2.xml: http_404"
    assert visit.status("ok") == "ok"


def test_a_visit_whose_followed_sources_all_failed_says_so_without_backing_off() -> None:
    visit = SourceVisit()
    visit.add_source("https://a.example/robots.txt", SourceReading("robots"))
    visit.add_followed("https://a.example/1.xml", "connection_refused")
    assert visit.status("ok") == FOLLOWED_SOURCES_FAILED
    assert not is_failure(FOLLOWED_SOURCES_FAILED)
    assert visit.status("http_5xx") == "http_5xx"  # the source's own failure comes first
    assert SourceVisit().status("ok") == "ok"  # nothing to follow is not a failure


def test_a_sitemap_read_in_part_keeps_its_entries_and_names_the_problem() -> None:
    reading = read_source(urlset(5), "https://a.example/s.xml", max_entries=3)
    assert (reading.status, len(reading.articles)) == ("ok", 3)
    assert (reading.problem, reading.detail) == ("too_many_entries", "more than 3 entries")
    visit = SourceVisit()
    visit.add_followed("https://a.example/s.xml", reading)
    assert (visit.entries, visit.failed) == (3, 0)
    assert visit.first_problem == "https://a.example/s.xml: too_many_entries (more than 3 entries)"
    assert read_source(urlset(3), "https://a.example/s.xml", max_entries=3).problem == ""
