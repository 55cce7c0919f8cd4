"""``build-memory --library`` (SPEC §15-16): a memory built is indexed into a library, and a
followed source each time a version is published, the way a served follow job keeps the
server's library current (``videotapestry.library.index_built``), the library's other
memories kept.

A generated 60-second video shows one code at 00:04 and another at 00:38; it is encoded as
HLS segments of 10 s and published over HTTP on 127.0.0.1 in two steps, and
``build-memory URL MEM --follow --library LIB`` runs as a real process with the offline
model (a version every 30 s of video).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from method_support import run_cli_output

from videotapestry.memory import save_memory
from videotapestry.testing.builder_media import ScheduledText, make_text_schedule_video
from videotapestry.testing.live_media import (
    HlsFeed,
    covered_now,
    encode_hls,
    read_segments,
    serve_folder,
)
from videotapestry.testing.memories import synthetic_memory

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: Shown in the first 30 s (the first version) and after them (only the last version).
GATE = ScheduledText("GATE 7 CODE 4417", 4.0, 12.0)
DOCK = ScheduledText("DOCK 22 CODE 9051", 38.0, 46.0)
FOLLOW = [
    "-o", "builder.follow.append_every_s=30", "-o", "builder.follow.poll_s=0.2",
    "-o", "builder.follow.idle_end_s=60",
]  # fmt: skip


@pytest.fixture(scope="module")
def encoded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("live-library")
    video, _ = make_text_schedule_video(
        folder / "gate.mp4", [GATE, DOCK], 60.0, size=(480, 270), colour_s=90.0,
        frame_code=False,
    )  # fmt: skip
    encode_hls(video, folder / "hls", 10.0)
    return folder / "hls"


def library_cli(capsys: pytest.CaptureFixture[str], library: Path, *args: str) -> list[Any]:
    """A ``videotapestry library`` command's JSON lines (it must succeed)."""
    code, text, err = run_cli_output(
        capsys, "library", *args, "--library", str(library), "--profile", "offline", "--json"
    )
    assert code == 0, err
    return [json.loads(line) for line in text.splitlines()]


def library_with_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A library at ``tmp_path/lib`` holding one other memory (``memories/other``)."""
    library = tmp_path / "lib"
    other = tmp_path / "memories" / "other"
    save_memory(synthetic_memory(duration_s=60.0, supers=1, seed=2), other)
    code, _, err = run_cli_output(
        capsys, "library", "index", str(other), "--library", str(library), "--profile",
        "offline", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    return library


def found_in(hits: list[dict[str, Any]], memory: Path, code: str) -> list[dict[str, Any]]:
    return [h for h in hits if h["memory"] == str(memory) and code in h["text"]]


def test_each_version_of_a_followed_source_is_indexed_into_the_library(
    encoded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("lancedb")
    # The library already holds another memory: following adds one, it forgets none.
    library = library_with_another(tmp_path, capsys)
    out = (tmp_path / "mem").resolve()
    feed = HlsFeed(encoded, tmp_path / "served", read_segments(encoded / "index.m3u8"))
    feed.publish_until(30.0)
    with serve_folder(feed.served) as base:
        process = subprocess.Popen(
            [sys.executable, "-m", "videotapestry.cli", "build-memory", f"{base}/index.m3u8",
             str(out), "--follow", "--library", str(library), "--profile", "offline", "--json",
             *FOLLOW],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while covered_now(out) < 30 and process.poll() is None:
                assert time.monotonic() < deadline, "no version of the first 30 s"
                time.sleep(0.2)
            assert process.stdout is not None
            first = json.loads(process.stdout.readline() or "null")  # printed once indexed
            assert first is not None, process.communicate(timeout=30)[1]
            # While the stream goes on, the library finds what it has shown so far only.
            hits = library_cli(capsys, library, "search", GATE.text, "--top", "5")
            assert found_in(hits, out, "4417"), hits
            hits = library_cli(capsys, library, "search", DOCK.text, "--top", "5")
            assert not found_in(hits, out, "9051"), hits
            feed.publish(len(feed.segments), ended=True)
            rest, stderr = process.communicate(timeout=240)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stderr
    versions = [first, *(json.loads(line) for line in rest.splitlines())]
    assert len(versions) >= 2 and versions[-1]["ended"], versions
    assert first["covered_s"] == pytest.approx(30.0, abs=1.0) and not first["ended"]
    # Each version was indexed as it was published: added once, then updated.
    assert [v["library"]["indexed"] for v in versions] == [True] * len(versions)
    assert first["library"]["added"] == [str(out)], first["library"]
    assert all(v["library"]["updated"] == [str(out)] for v in versions[1:]), versions
    # The library holds the followed memory at its newest version, beside the other one.
    listed = {Path(v["memory"]).name: v for v in library_cli(capsys, library, "ls")}
    assert sorted(listed) == ["mem", "other"], listed
    assert listed["mem"]["duration_s"] == pytest.approx(versions[-1]["covered_s"])
    # Its video is the recording, so library answers can look at its frames.
    assert listed["mem"]["video"] == str(out / "live" / "recording.mp4"), listed["mem"]
    assert versions[-1]["covered_s"] == pytest.approx(60.0, abs=1.0)
    hits = library_cli(capsys, library, "search", DOCK.text, "--top", "5")
    dock = found_in(hits, out, "9051")
    assert dock and dock[0]["start_s"] <= DOCK.end_s and dock[0]["end_s"] >= DOCK.start_s, hits


def test_a_built_memory_is_indexed_into_the_library_beside_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("lancedb")
    video, _ = make_text_schedule_video(
        tmp_path / "gate.mp4", [GATE], 20.0, size=(480, 270), frame_code=False
    )
    library = library_with_another(tmp_path, capsys)
    out = (tmp_path / "memories" / "gate").resolve()
    code, text, err = run_cli_output(
        capsys, "build-memory", str(video), str(out), "--library", str(library), "--profile",
        "offline", "--quiet", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(text)["library"] == {
        "indexed": True, "added": [str(out)], "updated": [], "unchanged": 0, "failed": [],
    }  # fmt: skip
    listed = sorted(Path(v["memory"]).name for v in library_cli(capsys, library, "ls"))
    assert listed == ["gate", "other"]
    hits = library_cli(capsys, library, "search", GATE.text, "--top", "5")
    assert found_in(hits, out, "4417"), hits
