"""The web app's library panel (SPEC §15) end to end: Debian's chromium driven by Playwright
on a real ``videotapestry serve`` over test_serve_library's root (the sample with its memory,
two memories without a video, a symlink out of the root), with a short video added that the
player opens first, so a click on a hit or a citation has to open the sample.

The library is indexed once, by its button, after the panel said it holds nothing; each size
then searches for the door code and plays the hit; one question across the library (on the
phone only, to keep the run cheap) plays its citation.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
import test_serve_library as library_setup
import test_serve_web as web_setup
from serve_support import Server
from test_serve_library import GATE_B, QUESTION, SAMPLE
from test_serve_web import Page, _fits, _in_view

pytestmark = [pytest.mark.slow, pytest.mark.browser]

root = library_setup.root
server = library_setup.server
browser = web_setup.browser

#: A video sorted before the sample: the one the page opens first.
FIRST = "a-tour.mp4"
VIEWPORTS = [(1400, 900), (390, 844)]


@pytest.fixture(scope="module")
def ui_indexed(server: Server, browser: Any) -> dict[str, Any]:
    """The library indexed by pressing Index the library, once the panel said it was empty."""
    from videotapestry.testing.media import make_test_video

    make_test_video(server.root / FIRST, 20, fps=2, size=(160, 90), scene_s=10)
    tab = Page(browser, server.url, VIEWPORTS[0])
    page = tab.page
    page.wait_for_selector("#lib-empty:not([hidden])")
    assert "Index the library" in page.text_content("#lib-empty")
    page.click("#lib-index")
    page.wait_for_selector("#lib-index-state[data-state]", timeout=900_000)
    status = page.text_content("#lib-index-state")
    assert page.get_attribute("#lib-index-state", "data-state") == "done", status
    assert status.startswith("library indexed: 3 added, 0 updated, 0 removed"), status
    page.wait_for_selector("#lib-empty[hidden]", state="attached")
    assert SAMPLE in page.text_content("#lib-count")
    assert tab.errors == []
    page.close()
    return next(job for job in server.get("/api/jobs") if job["kind"] == "library_index")


def _player_at(page: Any, video: str, low: float, high: float) -> float:
    """Wait until the player has ``video`` loaded at a time in [low, high]; that time."""
    page.wait_for_function(
        "([video, low, high]) => { const p = document.getElementById('player');"
        " return (p.getAttribute('src') || '').endsWith(encodeURIComponent(video))"
        " && p.readyState >= 1 && p.currentTime >= low && p.currentTime <= high; }",
        arg=[video, low, high],
        timeout=60_000,
    )
    return float(page.evaluate("document.getElementById('player').currentTime"))


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v[0]}x{v[1]}")
def test_a_search_hit_opens_its_video_at_the_moment(
    server: Server, browser: Any, ui_indexed: dict[str, Any], viewport: tuple[int, int]
) -> None:
    assert ui_indexed["state"] == "done", ui_indexed
    tab = Page(browser, server.url, viewport)
    page = tab.page
    page.wait_for_function(  # the page opens the first video
        f"() => (document.getElementById('player').getAttribute('src') || '').endsWith('{FIRST}')"
    )
    page.fill("#lib-query", "door code 4417")
    page.click("#lib-search")
    page.wait_for_selector("#lib-hits button.hit")
    hit = server.get(f"/api/library/search?{urllib.parse.urlencode({'q': 'door code 4417'})}")[0]
    first = page.locator("#lib-hits button.hit").first
    assert first.get_attribute("data-video") == "sample.mp4" == hit["video"]
    text = first.text_content()
    assert SAMPLE in text and hit["when"] in text and hit["level"] in text, text
    thumb = first.locator("img.thumb")
    thumb.scroll_into_view_if_needed()
    thumb.evaluate(
        "img => img.complete && img.naturalWidth > 0 || new Promise((ok, fail) => {"
        " img.addEventListener('load', ok); img.addEventListener('error', fail); })"
    )
    assert thumb.evaluate("img => img.naturalWidth") > 0
    _fits(page)
    first.click()
    at = _player_at(page, "sample.mp4", hit["start_s"] - 2, hit["end_s"] + 2)
    assert GATE_B[0] - 2 <= at <= GATE_B[1] + 2, at
    _in_view(page, "#player")
    _fits(page)
    assert tab.errors == []


def test_a_library_answer_cites_the_sample_and_its_citation_plays_it(
    server: Server, browser: Any, ui_indexed: dict[str, Any]
) -> None:
    tab = Page(browser, server.url, VIEWPORTS[1])
    page = tab.page
    page.fill("#lib-question", QUESTION)
    page.click("#lib-ask")
    page.wait_for_selector("#lib-answer[data-state]", timeout=900_000)
    assert page.get_attribute("#lib-answer", "data-state") == "done"
    assert "4417" in page.text_content("#lib-answer")
    assert page.text_content("#lib-from") == f"from: {SAMPLE}"
    cite = page.locator("#lib-citations button.cite").first
    assert cite.get_attribute("data-video") == "sample.mp4"
    start = float(cite.get_attribute("data-seek"))
    assert GATE_B[0] - 1 <= start <= GATE_B[1] + 1, start
    cite.scroll_into_view_if_needed()
    cite.click()
    _player_at(page, "sample.mp4", start - 1, start + 1)
    _in_view(page, "#player")
    _fits(page)
    assert tab.errors == []
