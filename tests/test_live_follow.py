"""Following a stream that is still arriving (SPEC §16): a memory that grows version by
version, asked while the stream goes on, and equal at its end to a build of the whole.

A generated 6-minute video (a fact on screen every minute or so) is encoded as a live HLS
event (H.264 MPEG-TS segments of 20 s) and published a few segments at a time over HTTP on
127.0.0.1; ``build-memory URL MEM --follow`` runs as a real process with the offline model.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from method_support import run_cli_output

from memory_builders.recording import Recording, stream_identity
from memory_builders.report import BuildError
from memory_builders.sources import Playlist, parse_playlist
from videotapestry.api import VideoTapestry
from videotapestry.errors import MemoryFormatError
from videotapestry.memory import (
    LiveState,
    live_state,
    live_video,
    load_memory,
    publish_live_state,
    resolve_memory_path,
    save_memory,
)
from videotapestry.testing.builder_media import make_text_schedule_video
from videotapestry.testing.fact_videos import FactVideo, make_fact_video
from videotapestry.testing.live_media import HlsFeed, covered_now, encode_hls, serve_folder
from videotapestry.testing.memories import synthetic_memory
from videotapestry.video import probe

ROOT = Path(__file__).resolve().parents[1]
#: Versions every 60 s of video, the source looked at five times a second; SuperEvents of
#: about a minute, so that a version has earlier ones to keep, and the last one and the
#: root revised every 2 minutes of video.
FOLLOW = [
    "-o", "builder.follow.append_every_s=60", "-o", "builder.follow.poll_s=0.2",
    "-o", "builder.follow.idle_end_s=120", "-o", "builder.super_events.target_minutes=1",
    "-o", "builder.follow.revise_every_s=120",
]  # fmt: skip


# --------------------------------------------------------------------------- pure parts


def test_a_media_playlist_lists_its_segments_and_says_when_it_ended() -> None:
    text = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:20,\na.ts\n#EXTINF:20,\nhttp://h/b.ts\n"
    assert parse_playlist(text) == Playlist(7, ["a.ts", "http://h/b.ts"], False)
    assert parse_playlist(text + "#EXT-X-ENDLIST\n").ended
    with pytest.raises(BuildError, match="master playlist"):
        parse_playlist("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n")
    with pytest.raises(BuildError, match="not an HLS playlist"):
        parse_playlist("<html>")


def test_a_live_folder_reads_as_its_newest_version_and_is_asked_with_its_source(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "mem"
    for number, minutes in ((1, 2.0), (2, 4.0)):
        memory = synthetic_memory(duration_s=minutes * 60, supers=1, macros_per_super=2, seed=1)
        save_memory(memory, folder / "versions" / f"v{number:06d}")
    recording = folder / "live" / "recording.mp4"
    recording.parent.mkdir(parents=True)
    recording.write_bytes(b"x")
    state = LiveState("v000001", 120.0, False, "http://127.0.0.1:9/live.m3u8", "live/recording.mp4")
    publish_live_state(folder, state)
    assert resolve_memory_path(folder) == folder / "versions" / "v000001"
    assert load_memory(folder).duration == pytest.approx(120.0)
    publish_live_state(folder, LiveState(**{**state.to_json(), "version": "v000002"}))
    assert load_memory(folder).duration == pytest.approx(240.0)
    assert live_state(folder).describe() == "live memory covering 00:00-02:00 (still recording)"
    # Asked with the source it follows (or its recording), a live memory reads its recording.
    assert live_video(folder, state.source) == recording
    assert live_video(folder, recording) == recording
    with pytest.raises(MemoryFormatError, match="ask it with that source"):
        live_video(folder, tmp_path / "other.mp4")
    publish_live_state(folder, LiveState(**{**state.to_json(), "version": "v000009"}))
    with pytest.raises(MemoryFormatError, match="v000009, which is missing"):
        load_memory(folder)


def test_a_recording_undoes_an_append_a_kill_left_unrecorded(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "live", "stream.m3u8")
    recording._save()
    (recording.segments / "seg_000000.ts").write_bytes(b"\x47" * 188)
    recording.stream.write_bytes(b"\x47" * 188 * 3)  # appended, but never recorded
    again = Recording(tmp_path / "live", "stream.m3u8")
    assert again.bytes == 0 and again.stream.stat().st_size == 0
    with pytest.raises(BuildError, match=r"follows stream\.m3u8"):
        Recording(tmp_path / "live", "other.m3u8")
    assert stream_identity("a", b"1") != stream_identity("b", b"1")


@pytest.mark.slow
def test_a_recording_is_remuxed_only_when_a_version_needs_it(tmp_path: Path) -> None:
    video, _ = make_text_schedule_video(tmp_path / "cam.mp4", [], 30.0, fps=5.0)
    segments = encode_hls(video, tmp_path / "hls", 10.0)
    recording = Recording(tmp_path / "live", str(tmp_path / "hls" / "index.m3u8"))
    for count, segment in enumerate(segments, start=1):
        shutil.copy(tmp_path / "hls" / segment.name, recording.segments / f"seg_{count:06d}.ts")
        assert recording.append_new() == 1
        # What arrived is read off the MPEG-TS stream: no MP4 is written at each look.
        assert recording.arrived_s() == pytest.approx(10.0 * count, abs=0.3)
        assert not recording.path.exists()
    recording.update_mp4()
    written = recording.path.stat().st_mtime_ns
    assert probe(recording.path).duration_s == pytest.approx(30.0, abs=0.3)
    recording.update_mp4()  # nothing new arrived: the MP4 stays as it is
    assert recording.path.stat().st_mtime_ns == written


def test_a_scan_resumed_on_a_grown_recording_equals_one_whole_pass(tmp_path: Path) -> None:
    """Real H.264 with a shot every 7 s: the first 30 s scanned, then the whole 60 s from
    there, gives the cuts and kept frames of one pass over the whole."""
    import av

    from memory_builders.scan import scan_video
    from videotapestry.config import load_config
    from videotapestry.testing.media import make_h264_video

    video = make_h264_video(tmp_path / "v.mp4", 60, fps=25, size=(320, 180), gop_frames=50,
                            scene_s=7.0).path  # fmt: skip
    prefix = tmp_path / "first_half.mp4"
    with av.open(str(video)) as src, av.open(str(prefix), "w", format="mp4") as out:
        stream = src.streams.video[0]
        copy = out.add_stream_from_template(stream)
        for packet in src.demux(stream):
            if packet.dts is None:
                continue
            if packet.is_keyframe and packet.pts * stream.time_base >= 30:
                break
            packet.stream = copy
            out.mux(packet)
    settings = load_config("default").builder.scan
    whole = scan_video(probe(video), settings, tmp_path / "whole")
    first = scan_video(probe(prefix), settings, tmp_path / "grown")
    grown = scan_video(probe(video), settings, tmp_path / "grown", resume=first)
    assert first.decoded_until_s == pytest.approx(30.0) and len(whole.cuts) >= 7
    assert grown.cuts == whole.cuts
    assert [f.to_json() for f in grown.frames] == [f.to_json() for f in whole.frames]
    assert grown.frames_decoded == whole.frames_decoded


# --------------------------------------------------------------------------- a live stream


@pytest.fixture(scope="module")
def fact_video(tmp_path_factory: pytest.TempPathFactory) -> FactVideo:
    folder = tmp_path_factory.mktemp("live-video")
    return make_fact_video(folder / "talk.mp4", duration_s=360.0, count=6, seed=3)


@pytest.fixture(scope="module")
def encoded(fact_video: FactVideo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hls-encoded")
    encode_hls(fact_video.path, folder, 20.0)
    return folder


@pytest.fixture(scope="module")
def offline_build(fact_video: FactVideo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished file built the usual way: what the followed memory must end equal to."""
    out = tmp_path_factory.mktemp("offline-build") / "mem"
    code = subprocess.run(
        [sys.executable, "-m", "videotapestry.cli", "build-memory", str(fact_video.path), str(out),
         "--profile", "offline", "--quiet"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    ).returncode  # fmt: skip
    assert code == 0
    return out


def start_follow(source: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "videotapestry.cli", "build-memory", source, str(out), "--follow",
         "--profile", "offline", "--json", *FOLLOW],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip


def wait_for(predicate, what: str, process: subprocess.Popen[str], timeout_s: float = 300.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process.poll() is not None:
            raise AssertionError(f"follow ended early ({what}): {process.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def stream(encoded: Path, tmp_path: Path) -> Iterator[tuple[HlsFeed, str]]:
    feed = HlsFeed(encoded, tmp_path / "served", _segments(encoded))
    feed.publish(1)
    with serve_folder(feed.served) as base:
        yield feed, f"{base}/index.m3u8"


def _segments(encoded: Path):
    from videotapestry.testing.live_media import read_segments

    return read_segments(encoded / "index.m3u8")


def fact_spans(memory_dir: Path) -> dict[str, tuple[float, float]]:
    memory = load_memory(memory_dir)
    return {
        n.text: (n.time_range.start, n.time_range.end)
        for n in memory.nodes()
        if n.kind == "OCRText" and "CODE" in n.text
    }


def macro_spans(memory_dir: Path) -> list[tuple[str, float, float]]:
    memory = load_memory(memory_dir)
    return [(m.id, m.time_range.start, m.time_range.end) for m in memory.macro_events()]


def clip_spans(memory_dir: Path) -> list[tuple[str, float, float]]:
    memory = load_memory(memory_dir)
    return [(c.id, c.time_range.start, c.time_range.end) for c in memory.clips]


@pytest.mark.slow
def test_a_fact_is_answerable_while_the_stream_goes_on_and_the_end_equals_a_whole_build(
    stream: tuple[HlsFeed, str],
    fact_video: FactVideo,
    offline_build: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    feed, url = stream
    out = tmp_path / "mem"
    loads: list[float] = []
    supers: dict[float, list[tuple]] = {}  # each version's SuperEvents, by covered time
    torn: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        """Loads the memory over and over while versions are published."""
        while not stop.is_set():
            published = (out / "live.json").exists()
            try:
                memory = load_memory(out)
            except MemoryFormatError as exc:
                if published:
                    torn.append(str(exc))
                continue
            clips = memory.clips
            if clips[-1].time_range.end != pytest.approx(memory.duration, abs=0.01):
                torn.append(f"clips end at {clips[-1].time_range.end}, memory {memory.duration}")
            loads.append(memory.duration)
            supers[memory.duration] = [
                (s.id, s.label, s.description, s.time_range.start, s.time_range.end)
                for s in memory.super_events()
            ]

    watcher = threading.Thread(target=reader, daemon=True)
    watcher.start()
    process = start_follow(url, out)
    try:
        # The stream arrives in steps, up to 3:20; the memory follows it.
        for until in (60.0, 120.0, 200.0):
            feed.publish_until(until)
            wait_for(
                lambda u=until: covered_now(out) >= u - 20, f"the memory at {until} s", process
            )
        assert feed.published_s == pytest.approx(200.0)
        exit_3 = next(f for f in fact_video.facts if f.label == "EXIT 3")  # at 01:44
        assert exit_3.end_s < covered_now(out) < 240
        code, text, err = run_cli_output(
            capsys, "ask", url, "--memory", str(out), "--profile", "offline", "--json",
            "--question", "What is the code shown for EXIT 3?",
        )  # fmt: skip
        assert code == 0, err
        result = json.loads(text)
        assert exit_3.code in result["answer_text"]
        spans = [(s["start_s"], s["end_s"]) for c in result["citations"] for s in c["sources"]]
        assert any(s <= exit_3.end_s and e >= exit_3.start_s for s, e in spans), spans
        # A fact still to come is not in the memory yet.
        assert not any("HALL 31" in t for t in fact_spans(out))
        # A conversation reads the recording so far; its next turn, after more arrived,
        # reads the grown recording (its decoders opened again at the newer version).
        chat = VideoTapestry(None, profile="offline").conversation(url, out)
        first_turn = chat.ask("What is the code shown for EXIT 3?")
        assert exit_3.code in first_turn.answer_text
        assert chat._readers[0].info.duration_s < 240
        # "The last 2 minutes" are those of the recording so far, and only they are cited.
        now = covered_now(out)
        code, text, err = run_cli_output(
            capsys, "ask", url, "--memory", str(out), "--profile", "offline", "--json",
            "--question", "What was on screen in the last 2 minutes?",
        )  # fmt: skip
        assert code == 0, err
        recent = json.loads(text)
        assert recent["asked"] != recent["question"] and "between" in recent["question"]
        spans = [(s["start_s"], s["end_s"]) for c in recent["citations"] for s in c["sources"]]
        assert spans and all(s >= now - 121 and e <= now + 1 for s, e in spans), (now, spans)
        assert recent["memory_covers"]["covered_s"] == pytest.approx(now)

        feed.publish(len(feed.segments), ended=True)
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        hall_31 = next(f for f in fact_video.facts if f.label == "HALL 31")  # at 05:24
        with chat:
            later_turn = chat.ask("What is the code shown for HALL 31?")
            assert hall_31.code in later_turn.answer_text
            assert chat._readers[0].info.duration_s == pytest.approx(360.0, abs=0.5)
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
        watcher.join(timeout=10)
    versions = [json.loads(line) for line in stdout.splitlines()]
    assert len(versions) >= 4 and versions[-1]["ended"] and versions[-1]["covered_s"] == 360.0
    assert [v["covered_s"] for v in versions] == sorted(v["covered_s"] for v in versions)
    # Readers loaded versions all along, never a torn one.
    assert not torn, torn[:3]
    assert len(set(loads)) >= 3, sorted(set(loads))
    # Each version kept the SuperEvents before the last of the version before it, as they
    # were: only the tail is planned again.
    history = [supers[d] for d in sorted(supers)]
    for before, after in itertools.pairwise(history):
        assert after[: len(before) - 1] == before[:-1], (before, after)
    assert len(history[-1]) >= 3 and any(len(h) >= 2 for h in history[:-1]), history
    # Between revisions (every 2 minutes, and at the end) the tail and the root kept their
    # text: the version at 3:20 followed the one at 2:00 without a summary call.
    summaries = [v["report"]["stages"]["super_events"] for v in versions]
    assert any(s["reused"] == 1 and not s["usage"].get("calls") for s in summaries[:-1]), summaries
    assert summaries[-1]["reused"] == 0, summaries
    # The end equals a build of the finished file: every clip and MacroEvent, every fact at
    # its time. Only the SuperEvents may differ: those kept from earlier versions were cut
    # without seeing what came after them.
    assert clip_spans(out) == clip_spans(offline_build)
    assert macro_spans(out) == macro_spans(offline_build)
    assert fact_spans(out) == fact_spans(offline_build)
    assert len(fact_spans(out)) == len(fact_video.facts)
    # The last append reused what the version before it finished: only the clips of the
    # new video (and the one the old end cut short) were looked at.
    last = versions[-1]["report"]["stages"]["perception"]
    before = versions[-2]["covered_s"]
    settled = [c for c in clip_spans(out) if c[2] <= before - 30.0]
    assert len(settled) >= 5 and last["reused"] >= len(settled), (last, before)
    assert last["computed"] == len(clip_spans(out)) - last["reused"]


@pytest.mark.slow
def test_a_follow_killed_mid_stream_resumes_without_redoing_a_finished_clip(
    stream: tuple[HlsFeed, str], offline_build: Path, tmp_path: Path
) -> None:
    feed, url = stream
    out = tmp_path / "mem"
    feed.publish_until(180.0)
    process = start_follow(url, out)
    try:
        wait_for(lambda: covered_now(out) >= 160, "a version at 3 minutes", process)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    before = load_memory(out)  # the newest version stays readable after the kill
    finished = [c for c in before.clips if c.time_range.end <= before.duration - 60]
    feed.publish(len(feed.segments), ended=True)
    process = start_follow(url, out)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    versions = [json.loads(line) for line in stdout.splitlines()]
    first = versions[0]["report"]["stages"]["perception"]
    assert first["reused"] >= len(finished) >= 3, first
    assert first["computed"] + first["reused"] == versions[0]["report"]["clips"]
    assert clip_spans(out) == clip_spans(offline_build)
    assert fact_spans(out) == fact_spans(offline_build)


@pytest.mark.slow
def test_an_mp4_another_process_is_still_writing_is_followed_to_its_end(
    fact_video: FactVideo, offline_build: Path, tmp_path: Path
) -> None:
    """A recorder writing fragmented MP4 at 30x real time in a process of its own; the
    follow ends when the file stops growing, and equals a build of the finished file."""
    growing = tmp_path / "camera.mp4"
    writer = subprocess.Popen(
        [sys.executable, "-m", "videotapestry.testing.live_media", str(fact_video.path),
         str(growing), "--speed", "30"],
        cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (growing.is_file() and growing.stat().st_size > 0):
            assert time.monotonic() < deadline and writer.poll() is None
            time.sleep(0.05)
        out = tmp_path / "mem"
        done = subprocess.run(
            [sys.executable, "-m", "videotapestry.cli", "build-memory", str(growing), str(out),
             "--follow", "--profile", "offline", "--json", *FOLLOW,
             "-o", "builder.follow.idle_end_s=4"],
            capture_output=True, text=True, timeout=300, cwd=ROOT,
        )  # fmt: skip
        assert writer.wait(timeout=60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
    assert done.returncode == 0, done.stderr
    versions = [json.loads(line) for line in done.stdout.splitlines()]
    # Versions were published while the file grew, the last once it stopped.
    assert len(versions) >= 2 and versions[0]["covered_s"] < 300
    assert versions[-1]["ended"] and versions[-1]["covered_s"] == pytest.approx(360.0)
    assert clip_spans(out) == clip_spans(offline_build)
    assert fact_spans(out) == fact_spans(offline_build)
