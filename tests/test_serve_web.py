"""The web app end to end: a real ``videotapestry serve`` on 127.0.0.1 over a root holding
the shipped sample, the offline model, and Debian's chromium driven by Playwright.

One server serves every test of the module: the sample with its memory (the test run's one
build of it) to ask about, and a two-minute tour whose memory the UI builds. The kill -9 tests
start servers of their own, since killing the shared one would end the others.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_support import Server, playwright_chromium, sample_root, start_server

from videotapestry.demo import sample_video_path

pytestmark = [pytest.mark.slow, pytest.mark.browser]

GATE_B = "gate_b_code"
PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


#: The video the UI builds (the kill -9 test builds it again): twelve 10 s scenes. The
#: sample's memory is the test run's one build of it, put in the root beforehand.
TOUR_S = 120


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> Iterator[Server]:
    from videotapestry.demo.runner import demo_memory_dir
    from videotapestry.testing.media import make_test_video

    base = tmp_path_factory.mktemp("serve")
    root = sample_root(base / "root", demo_memory_dir(sample_video_path(), demo_cache))
    make_test_video(root / "tour.mp4", TOUR_S, fps=2, size=(320, 180), scene_s=10)
    server = start_server(root, base / "data")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_chromium() as chromium:
        yield chromium


#: A phone and a desktop, as the issue measured them (width, height in CSS pixels).
VIEWPORTS = [(390, 844), (1400, 900)]


class Page:
    """A browser tab on the server, recording every console error and uncaught exception."""

    def __init__(self, browser: Any, url: str, viewport: tuple[int, int] | None = None) -> None:
        size = {"width": viewport[0], "height": viewport[1]} if viewport else None
        self.page = browser.new_page(viewport=size) if size else browser.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.goto(url)


@pytest.fixture(scope="module")
def ui_build(served: Server, browser: Any) -> dict[str, Any]:
    """The tour's memory, built by clicking Build in the UI and watching its progress bar."""
    tab = Page(browser, served.url)
    page = tab.page
    page.locator('#videos li[data-path="tour.mp4"] button.build').click()
    page.wait_for_function(  # the bar moves with the build's stages
        "() => { const bar = document.querySelector('#videos progress:not([hidden])');"
        " return bar !== null && bar.max > 1 && bar.value > 0; }",
        timeout=300_000,
    )
    # The library is redrawn once the job ends, listing the new memory.
    page.wait_for_selector('#memories li[data-path="memories/tour"]', timeout=900_000)
    build = next(job for job in served.get("/api/jobs") if job["kind"] == "build")
    assert build["state"] == "done", build
    assert tab.errors == []
    page.close()
    return {"job": build}


def test_ui_builds_asks_and_seeks_to_a_citation(
    served: Server, browser: Any, ui_build: dict[str, Any]
) -> None:
    assert ui_build["job"]["result"]["memory"] == "memories/tour"
    assert ui_build["job"]["result"]["report"]["status"] == "complete"
    tab = Page(browser, served.url)
    page = tab.page
    _ask_the_first_shipped_question(page)
    assert "Gate B" in page.input_value("#question")
    assert page.get_attribute("#answer", "data-letter") == "C"
    assert "4417" in page.text_content("#answer")
    levels = page.locator("#timeline li.level").all_text_contents()
    assert any(text.startswith("Overview (whole video)") for text in levels), levels
    cite = page.locator("#citations button.cite").first
    start = float(cite.get_attribute("data-seek"))
    cite.click()
    page.wait_for_function(
        f"() => Math.abs(document.getElementById('player').currentTime - {start}) < 1",
        timeout=60_000,
    )
    assert abs(page.evaluate("document.getElementById('player').currentTime") - start) < 1
    page.wait_for_selector("#degraded[hidden]", state="attached")
    page.wait_for_selector("#warnings[hidden]", state="attached")
    assert tab.errors == []


def _ask_the_first_shipped_question(page: Any, *, memory_only: bool = False) -> None:
    """Open the sample with its memory, ask its first shipped question, wait for the answer."""
    page.wait_for_selector('#memories li[data-path="memories/sample"]')
    page.locator('#videos li[data-path="sample.mp4"] button.open').click()
    page.select_option("#shipped", index=1)  # the first shipped question: Gate B's code
    if memory_only:
        page.check("#memory-only")
    page.click("#ask")
    page.wait_for_selector("#answer[data-letter]", timeout=600_000)


def test_a_memory_only_question_says_what_was_not_observed(
    served: Server, browser: Any, ui_build: dict[str, Any]
) -> None:
    tab = Page(browser, served.url)
    page = tab.page
    _ask_the_first_shipped_question(page, memory_only=True)
    page.wait_for_selector("#unobserved:not([hidden])")
    assert "no video file was given" in page.text_content("#unobserved")
    [ask] = [
        job
        for job in served.get("/api/jobs")
        if job["kind"] == "ask" and job["inputs"]["video"] is None
    ]
    assert ask["inputs"]["memory"] == "memories/sample"  # named as the library names it
    assert ask["result"]["observation_disabled"]
    assert ask["result"]["levels_visited"]
    assert tab.errors == []


def test_a_degraded_answer_shows_what_the_run_lost(
    served: Server, browser: Any, ui_build: dict[str, Any], tmp_path: Path
) -> None:
    # A server told to read subtitles, asked about a video that has none: the ASR tool reads
    # the memory's stored transcript instead, and the answer must say so where it is shown.
    root = sample_root(tmp_path / "root")
    shutil.copytree(served.root / "memories" / "sample", root / "memories" / "sample")
    # The ASR-only variant: the same substitution, without the visual looks' time.
    server = start_server(
        root, tmp_path / "data", "-o", "asr.source=subtitles", "-o", "variant=wo_visual"
    )
    try:
        tab = Page(browser, server.url)
        page = tab.page
        _ask_the_first_shipped_question(page)
        page.wait_for_selector("#degraded:not([hidden])")
        shown = page.locator("#degraded li").all_text_contents()
        [ask] = [job for job in server.get("/api/jobs") if job["kind"] == "ask"]
    finally:
        server.stop()
    assert any("asr_substituted" in line for line in shown), shown
    assert [d["kind"] for d in ask["result"]["degraded"]] == ["asr_substituted"]
    assert len(shown) == len(ask["result"]["degraded_text"])
    assert tab.errors == []


def test_memory_text_with_markup_renders_inert(
    served: Server, browser: Any, tmp_path: Path
) -> None:
    from videotapestry.memory import save_memory
    from videotapestry.testing.memories import synthetic_memory

    folder = served.root / "memories" / "markup"
    save_memory(synthetic_memory(supers=2, macros_per_super=2, title=PAYLOAD), folder)
    tab = Page(browser, served.url)
    page = tab.page
    page.locator('#memories li[data-path="memories/markup"] a').click()
    page.wait_for_function(
        "() => document.querySelector('#outline .name')?.textContent.includes('onerror')"
    )
    assert page.text_content("#outline .name") == PAYLOAD
    assert page.locator("#outline img, #outline script").count() == 0
    assert page.evaluate("window.__xss") is None
    assert tab.errors == []


def test_sse_shows_each_level_before_the_job_ends(served: Server, ui_build: dict[str, Any]) -> None:
    question = json.loads((served.root / "questions.json").read_text())["questions"][1]
    job = served.post(
        "/api/jobs",
        {
            "kind": "ask",
            "memory": "memories/sample",
            "video": "sample.mp4",
            "question": question["question"],
            "options": question["options"],
        },
    )
    events = []
    with urllib.request.urlopen(f"{served.url}/api/jobs/{job['id']}/events", timeout=600) as stream:
        for raw in stream:
            line = raw.decode().strip()
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] == "end":
                    break
    kinds = [event["type"] for event in events]
    done_at = next(i for i, e in enumerate(events) if e.get("state") == "done")
    finished = events[-1]["job"]
    assert finished["state"] == "done" and finished["result"]["answer"] == question["answer"]
    for level in finished["result"]["levels_visited"]:
        seen = [
            i
            for i, e in enumerate(events)
            if e["type"] == "level" and e["level"] == level and e.get("step") == "done"
        ]
        assert seen and seen[0] < done_at, (level, kinds)


@pytest.mark.parametrize(
    "query",
    [
        "path=../../etc/passwd",
        "path=/etc/passwd",
        "path=..%2F..%2Fetc%2Fpasswd",
        "path=..%252F..%252Fetc%252Fpasswd",
        "path=outside.mp4",
    ],
)
def test_paths_outside_the_roots_are_refused(served: Server, query: str) -> None:
    root = served.root
    outside = root.parent / "outside-target.mp4"
    outside.write_bytes(b"not for you")
    link = root / "outside.mp4"
    if not link.is_symlink():
        link.symlink_to(outside)
    for route in ("/api/media", "/api/memory"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{served.url}{route}?{query}", timeout=30)
        assert refused.value.code == 403
        assert "not under the server's roots" in json.loads(refused.value.read())["detail"]
    with pytest.raises(urllib.error.HTTPError) as build:
        served.post("/api/jobs", {"kind": "build", "video": query.removeprefix("path=")})
    assert build.value.code == 403


def test_bad_requests_get_a_4xx_with_a_message(served: Server) -> None:
    with pytest.raises(urllib.error.HTTPError) as unknown:
        served.get("/api/jobs/nosuchjob")
    assert unknown.value.code == 404 and "no such job" in unknown.value.read().decode()
    with pytest.raises(urllib.error.HTTPError) as empty:
        served.post("/api/jobs", {"kind": "ask", "memory": "memories/sample", "question": ""})
    assert empty.value.code in (400, 422)
    assert "Traceback" not in empty.value.read().decode()


def test_a_bind_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "videotapestry.cli", "serve", "--host", "0.0.0.0",
            "--root", str(tmp_path), "--data-dir", str(tmp_path / "data")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "VIDEOTAPESTRY_SERVE_TOKEN"}
    run = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 2
    assert "--token" in run.stderr and "Traceback" not in run.stderr


def test_a_wrong_token_gets_401(tmp_path: Path) -> None:
    server = start_server(tmp_path, tmp_path / "data", "--token", "right-token-123")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}):
            request = urllib.request.Request(f"{server.url}/api/videos", headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)
            assert refused.value.code == 401
        good = urllib.request.Request(
            f"{server.url}/api/videos", headers={"Authorization": "Bearer right-token-123"}
        )
        with urllib.request.urlopen(good, timeout=30) as response:
            assert json.loads(response.read()) == []
    finally:
        server.stop()


def test_kill_9_during_a_build_resumes_without_repeating_a_clip(
    served: Server, ui_build: dict[str, Any], tmp_path: Path
) -> None:
    from videotapestry.memory import open_memory

    root = tmp_path / "root"
    root.mkdir()
    shutil.copyfile(served.root / "tour.mp4", root / "tour.mp4")
    checkpoints = root / "memories" / "tour" / "build" / "perception"
    server = start_server(root, tmp_path / "data")
    try:
        job = server.post("/api/jobs", {"kind": "build", "video": "tour.mp4"})
        _kill_9_once(server, job["id"], lambda: checkpoints.is_dir() and any(checkpoints.iterdir()))
        finished_clips = len(list(checkpoints.glob("*.json")))
    finally:
        server.stop()
    resumed = _restarted_until_done(root, tmp_path / "data", job["id"])
    perception = _stage(resumed["result"]["report"], "perception")
    clips = ui_build["job"]["result"]["report"]["clips"]
    assert _stage(ui_build["job"]["result"]["report"], "perception")["computed"] == clips
    assert perception["reused"] == finished_clips
    assert perception["computed"] == clips - finished_clips
    uninterrupted = open_memory(served.root / "memories" / "tour")
    assert open_memory(root / "memories" / "tour") == uninterrupted


def _kill_9_once(server: Server, job_id: str, ready: Callable[[], bool]) -> None:
    """Kill the server with SIGKILL as soon as ``ready()`` holds, the job still unfinished."""
    deadline = time.monotonic() + 900
    while not ready():
        assert time.monotonic() < deadline, server.log.read_text()
        assert server.get(f"/api/jobs/{job_id}")["state"] in ("queued", "running")
        time.sleep(0.05)
    server.kill()
    assert server.process.returncode == -9


def _restarted_until_done(root: Path, data: Path, job_id: str) -> dict[str, Any]:
    """Start a server again on ``data`` and wait for the job it resumes; it must finish on
    its second attempt."""
    server = start_server(root, data)
    try:
        resumed = server.wait_job(job_id)
    finally:
        server.stop()
    assert resumed["state"] == "done", resumed
    assert resumed["attempts"] == 2
    return resumed


def _stage(report: dict[str, Any], name: str) -> dict[str, Any]:
    stage: dict[str, Any] = report["stages"][name]
    return stage


def test_eval_runs_show_their_report_and_the_flips_between_two(
    served: Server, browser: Any
) -> None:
    from eval_support import header, record, write_run

    evals = served.root / "evals"
    write_run(evals / "a", [record("q1", "A", "A"), record("q2", "B", "C")], header())
    write_run(evals / "b", [record("q1", "A", "D"), record("q2", "B", "B")], header())
    assert [run["path"] for run in served.get("/api/evals")] == ["evals/a", "evals/b"]
    tab = Page(browser, served.url)
    page = tab.page
    page.locator('#evals li[data-path="evals/a"] a').click()
    page.wait_for_function(
        "() => document.getElementById('eval-view').textContent.includes('Evaluation report')"
    )
    assert "| full |" in page.text_content("#eval-view")
    assert "50.0" in page.text_content("#eval-view")
    page.click("#compare")
    page.wait_for_function("() => document.getElementById('eval-view').textContent.includes('q2')")
    compared = served.get("/api/evals/compare?a=evals/a&b=evals/b")["comparison"]
    [full] = compared["variants"]
    assert full["became_right"] == ["q2"] and full["became_wrong"] == ["q1"]
    assert "q1" in page.text_content("#eval-view")
    assert tab.errors == []


def _jsonl_annotations(root: Path, count: int) -> list[dict[str, Any]]:
    """The first ``count`` shipped questions as a generic JSONL benchmark over
    ``root/sample.mp4``."""
    shipped = json.loads((root / "questions.json").read_text())["questions"][:count]
    rows = [
        {"id": q["id"], "video": "sample.mp4", "question": q["question"],
         "options": q["options"], "answer": q["answer"]}
        for q in shipped
    ]  # fmt: skip
    (root / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def test_an_eval_job_killed_with_9_resumes_and_asks_no_finished_question_again(
    served: Server, ui_build: dict[str, Any], tmp_path: Path
) -> None:
    root = sample_root(tmp_path / "root")
    shutil.copytree(served.root / "memories" / "sample", root / "memories" / "sample")
    rows = _jsonl_annotations(root, 1)  # two records: killed after the first, one to go
    results = root / "evals" / "jsonl" / "results.jsonl"
    request = {"kind": "eval", "benchmark": "jsonl", "annotations": "questions.jsonl",
               "videos": ".", "memories": "memories", "variants": ["full", "wo_asr"],
               "concurrency": 1}  # fmt: skip
    server = start_server(root, tmp_path / "data")
    try:
        job = server.post("/api/jobs", request)
        assert job["inputs"]["out"] == "evals/jsonl"  # paths shown relative to the root
        assert job["inputs"]["annotations"] == "questions.jsonl"
        _kill_9_once(server, job["id"], lambda: results.is_file() and "\n" in results.read_text())
        kept = results.read_text().split("\n")[:-1]  # whole lines (a torn last one is cut)
        assert 1 <= len(kept) < 2 * len(rows)
    finally:
        server.stop()
    resumed = _restarted_until_done(root, tmp_path / "data", job["id"])
    lines = results.read_text().splitlines()
    assert lines[: len(kept)] == kept  # what was finished stands, untouched
    keys = [(record["variant"], record["question_id"]) for record in map(json.loads, lines)]
    assert len(keys) == len(set(keys)) == 2 * len(rows)  # each asked once, none twice
    result = resumed["result"]
    assert result["reused"] == len(kept) and result["written"] == 2 * len(rows) - len(kept)
    assert result["run"] == "evals/jsonl" and "evals/jsonl/report.md" in result["files"]
    full = next(figures for figures in result["variants"] if figures["variant"] == "full")
    assert full["right"] == full["graded"] == len(rows)  # the demo's answers, read from video
    assert (root / "evals" / "jsonl" / "report.md").is_file()


# --------------------------------------------------------------------------- at any size


def _fits(page: Any) -> None:
    """No horizontal scroll; the player has a size; Ask is shown, on no other element's way."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), width
    player = page.locator("#player").bounding_box()
    assert player is not None and player["width"] > 0 and player["height"] > 0, player
    assert page.locator("#ask").is_visible()


def _in_view(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], (box, size)
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], (box, size)
    return dict(box)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v[0]}x{v[1]}")
def test_the_page_fits_a_phone_and_a_desktop(
    served: Server, browser: Any, viewport: tuple[int, int]
) -> None:
    tab = Page(browser, served.url, viewport)
    page = tab.page
    page.wait_for_selector('#memories li[data-path="memories/sample"]')
    _fits(page)
    watch = page.locator("#watch").bounding_box()
    assert watch is not None and watch["width"] >= min(viewport[0] - 40, 600), watch
    if viewport[0] < 900:  # one column, the player first
        library = page.locator("#library").bounding_box()
        assert library is not None and library["y"] > watch["y"], (library, watch)
    assert page.locator("#ask").is_enabled()
    page.click("#ask")  # no force: nothing covers it (an empty question is not sent)
    assert tab.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v[0]}x{v[1]}")
def test_a_citation_click_brings_the_player_into_view_at_the_cited_moment(
    served: Server, browser: Any, viewport: tuple[int, int]
) -> None:
    tab = Page(browser, served.url, viewport)
    page = tab.page
    _ask_the_first_shipped_question(page)
    _fits(page)
    assert page.get_attribute("#answer", "data-letter") == "C"
    # The shipped question's answer key is C: the answer is marked right against it.
    assert page.text_content("#verdict").startswith("✓ right")
    # What it cost, in the words ask prints (SPEC §17): calls, tokens, dollars.
    usage = page.text_content("#usage")
    assert re.match(r"cost: \d+ calls, \d+ images, tokens [\d,]+ in / ", usage)
    # The agents as a person names them, in their order; no graph bookkeeping.
    levels = page.locator("#timeline li.level").all_text_contents()
    names = [text.split(":")[0] for text in levels]
    assert names == ["Overview (whole video)", "Skim (events)", "Focus (moments)", "Answer"]
    assert not any(text.startswith(("assemble", "answer:", "subgraph", "super", "macro"))
                   for text in levels), levels  # fmt: skip
    cites = page.locator("#citations button.cite")
    starts = {float(cites.nth(i).get_attribute("data-seek")) for i in range(cites.count())}
    # The times on the buttons are the trace page's, in its order.
    trace_link = page.get_attribute("#trace-page", "href")
    with urllib.request.urlopen(urllib.parse.urljoin(served.url, trace_link)) as response:
        trace_page = response.read().decode()
    page_times = re.findall(r'title="its mark on the timeline">([^<]*)</a>', trace_page)
    shown = cites.all_text_contents()
    assert shown and shown == [html.unescape(t) for t in page_times], (shown, page_times)
    # Each cited moment is marked on the bar under the player, placed by its time.
    page.wait_for_selector("#cues .cue")
    marks = page.locator("#cues .cue")
    assert {float(marks.nth(i).get_attribute("data-seek")) for i in range(marks.count())} == starts
    bar = page.locator("#cues").bounding_box()
    duration = page.evaluate("document.getElementById('player').duration")
    for i in range(marks.count()):
        mark = marks.nth(i).bounding_box()
        at = float(marks.nth(i).get_attribute("data-seek")) / duration
        assert abs(mark["x"] + mark["width"] / 2 - (bar["x"] + at * bar["width"])) < 2
    # Each cited moment shows its frame (the frame route's JPEG, loaded lazily), its time
    # as the picture's text.
    for i in range(cites.count()):
        thumb = cites.nth(i).locator("img.thumb")
        assert thumb.get_attribute("alt") == shown[i]
        assert thumb.get_attribute("loading") == "lazy"
        thumb.scroll_into_view_if_needed()
        thumb.evaluate(
            "img => img.complete && img.naturalWidth > 0 || new Promise((ok, fail) => {"
            " img.addEventListener('load', ok); img.addEventListener('error', fail); })"
        )
        assert thumb.evaluate("img => img.naturalWidth") > 0, thumb.get_attribute("src")
    cite = cites.last
    cite.scroll_into_view_if_needed()
    start = float(cite.get_attribute("data-seek"))
    # the player was out of view: a click on the moment's picture brings it back, there
    cite.locator("img.thumb").click()
    page.wait_for_function(
        f"() => Math.abs(document.getElementById('player').currentTime - {start}) < 1",
        timeout=60_000,
    )
    _in_view(page, "#player")
    assert tab.errors == []


def test_the_trace_page_marks_the_right_option_and_the_chosen_one(served: Server) -> None:
    question = json.loads((served.root / "questions.json").read_text())["questions"][0]
    job = served.post(
        "/api/jobs",
        {"kind": "ask", "memory": "memories/sample", "video": "sample.mp4",
         "question": question["question"], "options": question["options"]},
    )  # fmt: skip
    assert served.wait_job(job["id"])["state"] == "done"
    with urllib.request.urlopen(f"{served.url}/api/jobs/{job['id']}/trace.html") as response:
        page = response.read().decode()
    right = next(o for o in question["options"] if o.startswith(f"{question['answer']}."))
    assert '<li class="vt-chosen vt-correct"><span class="vt-mark vt-right"' in page
    assert f"✓</span>{right} <span" in page


def test_a_server_without_memories_says_what_to_do(browser: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copyfile(sample_video_path(), root / "sample.mp4")
    server = start_server(root, tmp_path / "data")
    try:
        tab = Page(browser, server.url, VIEWPORTS[0])
        page = tab.page
        page.wait_for_selector('#videos li[data-path="sample.mp4"]')
        page.wait_for_selector("#ask-hint:not([hidden])")
        assert "Build a memory first" in page.text_content("#ask-hint")
        assert page.locator("#ask").is_disabled()
        assert page.locator("#memory-select option").count() == 0
        page.wait_for_selector("#evals-empty:not([hidden])")
        assert "no eval runs yet" in page.text_content("#evals-empty").lower()
        assert "videotapestry eval" in page.text_content("#evals-empty")
        assert page.locator("#compare").is_disabled()
        _fits(page)
        assert tab.errors == []
    finally:
        server.stop()


def test_the_memory_outline_titles_each_entry_and_marks_its_cuts(
    served: Server, browser: Any
) -> None:
    tab = Page(browser, served.url)
    page = tab.page
    page.locator('#memories li[data-path="memories/sample"] a').click()
    page.wait_for_selector("#outline .outline-macro")
    outline = served.get("/api/memory?path=memories/sample")
    titles = page.locator("#outline .outline-macro .label").all_text_contents()
    assert len(titles) == sum(len(s["macro_events"]) for s in outline["super_events"])
    assert len(set(titles)) == len(titles), titles
    assert outline["title"] not in titles
    summaries = page.locator("#outline .outline-macro .summary").all_text_contents()
    stored = [m["summary"] for s in outline["super_events"] for m in s["macro_events"]]
    cut = [(shown, full) for shown, full in zip(summaries, stored, strict=True) if shown != full]
    assert cut, "the sample's summaries are long: some are cut"
    for shown, full in cut:
        assert shown.endswith("…") and full.startswith(shown[:-1].rstrip(" ,;:.")), shown
    assert tab.errors == []
