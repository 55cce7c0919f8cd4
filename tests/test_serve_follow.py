"""Following a live source served (SPEC §16, issue 42 item 6): a build job over REST whose
progress is one event per version (covered time, lag), the served library indexed again
after each, questions that say which version they read; MCP's build tool with ``follow``.

A generated 2-minute video with a fact on screen is encoded as HLS segments of 20 s and
published a few at a time into a folder under the root (``HlsFeed``): the local playlist
is what the server follows; MCP follows the same playlist over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from method_support import run_cli_output
from serve_support import Server, start_server

from videotapestry.api import _memory_covers
from videotapestry.config import load_config
from videotapestry.memory import (
    LiveState,
    live_state,
    load_memory,
    publish_live_state,
    save_memory,
)
from videotapestry.result import load_result
from videotapestry.serve.app import BuildRequest, _follow_inputs
from videotapestry.serve.operations import _RootedHls, _served_covers, _unrecorded_s
from videotapestry.serve.roots import PathOutsideRootsError, Roots
from videotapestry.testing.fact_videos import FactVideo, make_fact_video
from videotapestry.testing.live_media import HlsFeed, encode_hls, read_segments, serve_folder
from videotapestry.testing.memories import synthetic_memory

#: The 2-minute video and its segments (tests/conftest.py: marks each test using them).
FIXTURE_NEEDS = {"fact_video": "long_video", "encoded": "long_video"}

#: A version every 40 s of video, the source looked at five times a second.
FOLLOW = [
    "-o", "builder.follow.append_every_s=40", "-o", "builder.follow.poll_s=0.2",
    "-o", "builder.follow.idle_end_s=120",
]  # fmt: skip


# --------------------------------------------------------------------------- pure parts


def test_what_a_playlist_lists_beyond_the_recording_is_what_has_arrived() -> None:
    playlist = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:3\n#EXTINF:20.000,\na.ts\n#EXTINF:12.5,\nb.ts\n"
    assert _unrecorded_s(playlist, set()) == 32.5
    assert _unrecorded_s(playlist, {"seg_000003.ts"}) == 12.5
    assert _unrecorded_s(playlist, {"seg_000003.ts", "seg_000004.ts"}) == 0.0


def test_a_served_playlist_reads_no_segment_outside_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "cam").mkdir(parents=True)
    roots = Roots.of([root])
    settings = load_config(None, profile="offline").builder.follow
    local = _RootedHls(str(root / "cam" / "index.m3u8"), tmp_path / "seg", settings, roots=roots)
    assert local._resolve("seg0.ts") == str(root / "cam" / "seg0.ts")
    assert local._resolve("http://127.0.0.1:9/a.ts") == "http://127.0.0.1:9/a.ts"
    with pytest.raises(Exception, match="outside the server's roots"):
        local._resolve("../../secret.ts")
    with pytest.raises(Exception, match="outside the server's roots"):
        local._resolve("/etc/passwd")
    remote = _RootedHls("http://127.0.0.1:9/live.m3u8", tmp_path / "seg", settings, roots=roots)
    assert remote._resolve("a.ts") == "http://127.0.0.1:9/a.ts"
    with pytest.raises(Exception, match="outside the server's roots"):
        remote._resolve(str(root / "cam" / "seg0.ts"))  # a remote playlist names no file here


def test_a_follow_request_names_a_source_and_a_folder_under_the_roots(tmp_path: Path) -> None:
    roots = Roots.of([tmp_path])

    def inputs(**fields: Any) -> dict[str, Any]:
        return _follow_inputs(roots, BuildRequest(kind="build", follow=True, **fields))

    local = inputs(video="cam/index.m3u8")
    assert local == {
        "video": str(tmp_path.resolve() / "cam/index.m3u8"),
        "out": str(tmp_path.resolve() / "memories/cam/index"),
        "follow": True,
    }
    url = "http://127.0.0.1:9/live.m3u8"
    assert inputs(video=url, out="memories/cam")["video"] == url
    with pytest.raises(Exception, match="give out"):
        inputs(video=url)
    camera = "rtsp://viewer:secret@127.0.0.1:8554/cam"  # a stream URL is followed as given
    assert inputs(video=camera, out="memories/cam")["video"] == camera
    with pytest.raises(Exception, match="give out"):
        inputs(video=camera)
    with pytest.raises(Exception, match="cannot follow"):
        inputs(video="talk.avi")
    with pytest.raises(PathOutsideRootsError):
        inputs(video="../elsewhere/index.m3u8")


def live_folder(folder: Path, versions: dict[str, float], pointed: str, ended: bool) -> Path:
    """A followed memory's folder made by hand: synthetic versions, ``pointed`` the newest."""
    for name, duration_s in versions.items():
        memory = synthetic_memory(duration_s=duration_s, supers=1, macros_per_super=2, seed=1)
        save_memory(memory, folder / "versions" / name)
    covered = versions[pointed]
    state = LiveState(pointed, covered, ended, "http://127.0.0.1:9/live.m3u8", "live/rec.mp4")
    publish_live_state(folder, state)
    return folder


@pytest.mark.slow
def test_ask_says_which_version_of_a_live_memory_it_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = live_folder(tmp_path / "mem", {"v000001": 120.0, "v000002": 200.0}, "v000002", False)
    question = ["--question", "What happens?", "--profile", "offline", "--memory", str(folder)]
    code, text, err = run_cli_output(capsys, "ask", *question, "--json")
    assert code == 0, err
    printed = json.loads(text)
    assert printed["memory_covers"] == {
        "version": "v000002",
        "covered_s": 200.0,
        "ended": False,
        "source": "http://127.0.0.1:9/live.m3u8",
        "text": "live memory covering 00:00-03:20 (still recording)",
    }
    assert load_result(printed["trace_path"]).memory_covers == printed["memory_covers"]
    code, text, err = run_cli_output(capsys, "ask", *question)
    assert code == 0, err
    assert "memory: live memory covering 00:00-03:20 (still recording)" in text.splitlines()[:3]


def test_the_version_read_is_the_one_loaded_and_a_finished_memory_has_none(
    tmp_path: Path,
) -> None:
    folder = live_folder(tmp_path / "mem", {"v000001": 120.0, "v000002": 200.0}, "v000002", True)
    newest = load_memory(folder)
    state = live_state(folder)
    covers = _memory_covers(state, newest)
    assert covers is not None and covers["version"] == "v000002" and covers["ended"] is True
    assert covers["text"] == "live memory covering 00:00-03:20 (the stream has ended)"
    # A question that loaded v000001 before v000002 was published reports what it read.
    older = _memory_covers(state, load_memory(folder / "versions" / "v000001"))
    assert older is not None and older["version"] is None and older["covered_s"] == 120.0
    assert older["text"] == "live memory covering 00:00-02:00 (still recording)"
    # Clients see a stream URL's password masked, and a path on the server as its name.
    camera = {**covers, "source": "rtsp://viewer:secret@127.0.0.1:8554/cam"}
    assert _served_covers(camera)["source"] == "rtsp://viewer:***@127.0.0.1:8554/cam"
    on_disk = {**covers, "source": str(tmp_path / "cam" / "feed.ts")}
    assert _served_covers(on_disk)["source"] == "feed.ts"
    plain = tmp_path / "plain"
    save_memory(synthetic_memory(duration_s=120.0, supers=1, seed=1), plain)
    assert live_state(plain) is None and _memory_covers(None, load_memory(plain)) is None


def test_the_roots_list_a_live_memory_once_not_its_versions(tmp_path: Path) -> None:
    live_folder(tmp_path / "memories" / "cam", {"v000001": 60.0, "v000002": 90.0}, "v000002", False)
    save_memory(synthetic_memory(duration_s=60.0, supers=1, seed=2), tmp_path / "memories" / "talk")
    listed = [p.relative_to(tmp_path.resolve()).as_posix() for p in Roots.of([tmp_path]).memories()]
    assert listed == ["memories/cam", "memories/talk"]


# --------------------------------------------------------------------------- a live source


@pytest.fixture(scope="module")
def fact_video(tmp_path_factory: pytest.TempPathFactory) -> FactVideo:
    folder = tmp_path_factory.mktemp("follow-video")
    return make_fact_video(folder / "talk.mp4", duration_s=120.0, count=4, seed=5)


@pytest.fixture(scope="module")
def encoded(fact_video: FactVideo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("follow-encoded")
    encode_hls(fact_video.path, folder, 20.0)
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.fixture
def feed(encoded: Path, root: Path) -> HlsFeed:
    feed = HlsFeed(encoded, root / "cam", read_segments(encoded / "index.m3u8"))
    feed.publish(1)
    return feed


@pytest.fixture
def server(root: Path) -> Iterator[Server]:
    served = start_server(root, root.parent / "data", *FOLLOW)
    try:
        yield served
    finally:
        served.stop()


def read_events(server: Server, job_id: str, into: list[dict[str, Any]]) -> None:
    """The job's server-sent events until its end (run on a thread)."""
    url = f"{server.url}/api/jobs/{job_id}/events"
    with urllib.request.urlopen(url, timeout=300) as stream:
        for raw in stream:
            line = raw.decode("utf-8").strip()
            if line.startswith("data: "):
                event = json.loads(line[6:])
                into.append(event)
                if event["type"] == "end":
                    return


def wait_for(predicate: Any, what: str, server: Server, timeout_s: float = 240.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; server log:\n{server.log.read_text()}")


@pytest.mark.slow
def test_a_followed_source_is_a_job_of_versions_asked_while_it_grows(
    server: Server, feed: HlsFeed, fact_video: FactVideo
) -> None:
    pytest.importorskip("lancedb")
    # The server has a library (indexed once, empty): each version is indexed into it.
    assert server.wait_job(server.post("/api/library/index", {})["id"])["state"] == "done"
    for body, status in (
        ({"kind": "build", "video": "../x/index.m3u8", "follow": True}, 403),
        ({"kind": "build", "video": "http://127.0.0.1:9/i.m3u8", "follow": True}, 400),
        ({"kind": "build", "video": "cam/index.m3u8", "follow": True, "force": True}, 400),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.post("/api/jobs", body)
        assert refused.value.code == status, body
    feed.publish_until(60.0)
    job = server.post("/api/jobs", {"kind": "build", "video": "cam/index.m3u8", "follow": True})
    assert job["inputs"] == {"video": "cam/index.m3u8", "out": "memories/cam/index", "follow": True}
    events: list[dict[str, Any]] = []
    reader = threading.Thread(target=read_events, args=(server, job["id"], events), daemon=True)
    reader.start()

    def progress() -> dict[str, Any]:
        figures: dict[str, Any] = server.get(f"/api/jobs/{job['id']}")["progress"]
        return figures

    wait_for(lambda: progress().get("covered_s", 0) >= 40, "the first version", server)
    first = progress()
    assert first["stage"] == "follow" and first["version"].startswith("v")
    assert first["covers"].endswith("(still recording)") and not first["ended"]
    assert first["arrived_s"] >= first["covered_s"] and first["lag_s"] >= 0
    assert first["library"]["indexed"] is True, first["library"]

    # Listed as one memory (not its versions), saying what it covers.
    listed = {m["path"]: m for m in server.get("/api/memories")}
    assert list(listed) == ["memories/cam/index"], listed
    assert listed["memories/cam/index"]["live"].startswith("live memory covering 00:00-")
    assert listed["memories/cam/index"]["recording"] == "memories/cam/index/live/recording.mp4"

    # Asked while the source still arrives: the answer says which version it read.
    asked = server.post(
        "/api/jobs",
        {"kind": "ask", "memory": "memories/cam/index", "question": "What is on screen?"},
    )
    answer = server.wait_job(asked["id"])
    assert answer["state"] == "done", answer
    covers = answer["result"]["memory_covers"]
    assert covers["text"].startswith("live memory covering 00:00-") and covers["ended"] is False
    assert covers["source"] == "index.m3u8"  # a path on the server is named by its name only

    feed.publish(len(feed.segments), ended=True)
    done = server.wait_job(job["id"], timeout=300)
    assert done["state"] == "done", (done, server.log.read_text())
    reader.join(timeout=30)
    result = done["result"]
    assert result["memory"] == "memories/cam/index"
    assert result["live"]["ended"] and result["live"]["covered_s"] == pytest.approx(120.0)
    assert result["covers"] == "live memory covering 00:00-02:00 (the stream has ended)"

    # One progress event per version published, covering more each time, the last ended.
    versions = [e for e in events if e["type"] == "progress"]
    assert len(versions) >= 2, events
    assert len({v["version"] for v in versions}) == len(versions)
    covered = [v["covered_s"] for v in versions]
    assert covered == sorted(covered) and versions[-1]["ended"]
    assert all(v["library"]["indexed"] for v in versions), versions
    # The library holds the followed memory at its last version.
    videos = server.get("/api/library/videos")
    assert [v["memory"] for v in videos] == ["memories/cam/index"]
    assert videos[0]["duration_s"] == pytest.approx(120.0, abs=1.0)


@pytest.mark.slow
def test_mcp_builds_with_follow_and_its_answer_says_what_the_memory_covers(
    encoded: Path, tmp_path: Path
) -> None:
    from mcp import Client

    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server

    root = tmp_path / "root"
    root.mkdir()
    feed = HlsFeed(encoded, tmp_path / "served", read_segments(encoded / "index.m3u8"))
    feed.publish(len(feed.segments), ended=True)  # a stream that has ended: the call returns
    overrides = ["cache.enabled=false", "builder.follow.append_every_s=60"]
    overrides += ["builder.follow.poll_s=0.2"]
    config = load_config(None, profile="offline", overrides=overrides)
    roots = Roots.of([root])
    server = create_mcp_server(McpSettings(config, roots, root / "videotapestry-traces"))
    heard: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async def calls(url: str) -> tuple[Any, Any]:
        async with Client(server) as client:
            built = await client.call_tool(
                "build_memory",
                {"video": url, "out": "memories/cam", "follow": True},
                progress_callback=on_progress,
            )
            asked = await client.call_tool(
                "answer_question",
                {"video": url, "memory": "memories/cam", "question": "What is on screen?"},
            )
            return built, asked

    with serve_folder(feed.served) as base:
        url = f"{base}/index.m3u8"
        built, asked = asyncio.run(calls(url))
    assert not built.is_error, built.content
    output = built.structured_content
    assert output["memory"] == "memories/cam" and output["duration_s"] == pytest.approx(120.0)
    assert output["covers"] == "live memory covering 00:00-02:00 (the stream has ended)"
    assert heard and all("live memory covering" in m and "lag" in m for m in heard), heard
    assert not asked.is_error, asked.content
    covers = asked.structured_content["memory_covers"]
    assert covers["source"] == url and covers["ended"] is True
    text = asked.content[0].text
    assert "memory: live memory covering 00:00-02:00 (the stream has ended)" in text
