"""The web app's "Follow (live source)" form end to end (SPEC §16): Debian's chromium driven
by Playwright on a real ``videotapestry serve`` (127.0.0.1, the offline model) follows an
HLS stream served over HTTP on 127.0.0.1.

The stream is test_live_library's 60-second video (a code at 00:04, another at 00:38) in
segments of 10 s, published in two steps: the form's status shows the first version's
covered time while the stream goes on, then the ended one; the memory is listed once (not
its versions) with what it covers, its recording listed as its video (no build of its
own), and a question asked about it in the page is answered from it, saying which version
it read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_live_library as live_setup
import test_serve_web as web_setup
from serve_support import Server, start_server
from test_live_library import DOCK
from test_serve_web import Page

from videotapestry.testing.live_media import HlsFeed, read_segments, serve_folder

pytestmark = [pytest.mark.slow, pytest.mark.browser]

encoded = live_setup.encoded
browser = web_setup.browser

#: A version every 30 s of video, the source looked at five times a second.
FOLLOW = [
    "-o", "builder.follow.append_every_s=30", "-o", "builder.follow.poll_s=0.2",
    "-o", "builder.follow.idle_end_s=60",
]  # fmt: skip


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    served = start_server(root, tmp_path / "data", *FOLLOW)
    try:
        yield served
    finally:
        served.stop()


def test_the_follow_form_shows_each_version_and_the_memory_is_asked(
    server: Server, browser: Any, encoded: Path, tmp_path: Path
) -> None:
    feed = HlsFeed(encoded, tmp_path / "served", read_segments(encoded / "index.m3u8"))
    feed.publish_until(30.0)
    tab = Page(browser, server.url, (1400, 900))
    page = tab.page
    page.wait_for_selector("#memories-empty:not([hidden])")  # nothing built yet
    with serve_folder(feed.served) as base:
        page.fill("#follow-source", f"{base}/index.m3u8")
        page.fill("#follow-out", "memories/cam")
        page.click("#follow-start")
        # The first version: its covered time in the form's status, the stream still going.
        status = page.locator("#follow-state")
        page.wait_for_function(
            "() => document.getElementById('follow-state').textContent.startsWith('v0')",
            timeout=240_000,
        )
        first = status.text_content() or ""
        assert re.fullmatch(
            r"v\d{6}: live memory covering 00:00-00:(29|30|31) \(still recording\); lag \d+ s",
            first,
        ), first
        listed = page.locator('#memories li[data-path="memories/cam"]')
        listed.wait_for()
        assert "(still recording)" in (listed.locator(".live").text_content() or "")
        # The rest arrives and the stream ends: the last version says so.
        feed.publish(len(feed.segments), ended=True)
        page.wait_for_function(
            "() => document.getElementById('follow-state').textContent.includes('has ended')",
            timeout=240_000,
        )
    ended = status.text_content() or ""
    assert ended.startswith("live memory covering 00:00-01:00 (the stream has ended); "), ended
    assert "memory built (complete)" in ended, ended
    job = next(j for j in server.get("/api/jobs") if j["kind"] == "build")
    assert job["state"] == "done" and job["inputs"]["follow"] is True, job
    # Listed once (its versions are not memories of their own), with what it covers.
    page.wait_for_function(
        "() => (document.querySelector('#memories li .live') || {}).textContent"
        " === 'live memory covering 00:00-01:00 (the stream has ended)'"
    )
    assert page.locator("#memories li").evaluate_all("items => items.map(i => i.dataset.path)") == [
        "memories/cam"
    ]
    assert page.locator("#memory-select option").all_text_contents() == ["memories/cam"]
    # Its recording is under the roots: listed as the memory's video, opened with it, and
    # offered no build of its own.
    video = page.locator('#videos li[data-path="memories/cam/live/recording.mp4"]')
    assert page.locator("#videos li").count() == 1
    assert video.locator(".state").text_content() == "recording of memories/cam"
    assert video.locator("button.build").count() == 0
    video.locator("button.open").click()
    assert page.text_content("#current-title") == "recording.mp4"
    assert page.input_value("#memory-select") == "memories/cam"
    # Asked in the page: answered from the memory, saying which version it read.
    page.select_option("#memory-select", "memories/cam")
    page.fill("#question", "What is the code shown for DOCK 22?")
    page.fill("#options", "")
    page.click("#ask")
    page.wait_for_function(
        "() => ['done', 'failed'].includes(document.getElementById('ask-state').textContent)",
        timeout=300_000,
    )
    answer = page.text_content("#answer") or ""
    assert page.text_content("#ask-state") == "done", answer
    assert DOCK.text.endswith("9051") and "9051" in answer, answer
    covers = page.locator("#covers")
    assert covers.is_visible()
    assert (
        covers.text_content() == "memory: live memory covering 00:00-01:00 (the stream has ended)"
    )
    assert page.locator("#citations button.cite").count() >= 1
    assert tab.errors == []
