"""A video the builder could decode only part of (issue 38): the build is partial and names
the lost span and the clips it cuts into, whatever the container, and keeps them on resume.
Real generated videos, really truncated, really decoded; the scripted model over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_builders.builder import MemoryBuilder
from memory_builders.progress import BuildProgress
from memory_builders.report import summary_text
from memory_builders.scan import ScanResult, lost_spans
from videotapestry.config import load_config
from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.builder_media import faststart_copy, remux_copy, truncate_video
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, offline_build_overrides
from videotapestry.timecode import format_timestamp

#: Every test and module fixture here builds with a key set (conftest's, unset after).
pytestmark = pytest.mark.usefixtures("module_api_key")


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    """40 s in 10 s scenes: four clips."""
    path = tmp_path_factory.mktemp("lost") / "raw.mp4"
    return make_test_video(path, 40, fps=2, size=(160, 90), scene_s=10)


def cut_copy(raw: TestVideo, folder: Path, container: str, at_s: float) -> Path:
    if container == "mp4":
        path = faststart_copy(raw.path, folder / "cut.mp4")
    else:
        path = remux_copy(raw.path, folder / "cut.mkv", "matroska")
    truncate_video(path, at_s)
    return path


def build(raw: TestVideo, embedder, video: Path, out: Path):
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(raw.fps, raw.scenes))
        config = load_config(
            overrides=offline_build_overrides(
                server.base_url,
                "builder.ocr.engine=none",
                "builder.macro.min_s=30",
                "cache.enabled=false",
            )
        )
        builder = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False))
        return builder.build(video, out)


@pytest.mark.slow
@pytest.mark.parametrize("container", ["mp4", "mkv"])
def test_a_half_truncated_video_is_partial_with_its_lost_span(
    raw: TestVideo, embedder, tmp_path: Path, container: str
) -> None:
    video = cut_copy(raw, tmp_path, container, 20.0)
    out = tmp_path / "out"
    report = build(raw, embedder, video, out).report
    assert report.status == "partial" and report.partial
    [span] = report.lost_spans
    assert 19.0 <= span.start_s <= 20.0 and span.end_s == 40.0
    assert span.clips == ["clip_0002"]  # 10-40 s: no shot cut is left to end it at 20 s
    assert not report.failures  # clip_0002 has its frames of 10-20 s
    built = load_memory(out).manifest.build
    assert built["status"] == "partial" and built["partial"] is True
    assert built["lost_spans"] == [
        {"start_s": span.start_s, "end_s": 40.0, "reason": span.reason, "clips": span.clips}
    ]
    saved = json.loads((out / "build_report.json").read_text())
    assert saved["lost_spans"] == built["lost_spans"]
    start = format_timestamp(span.start_s)
    assert f"PARTIAL: video undecodable from {start} to 00:40 (clips clip_0002)" in (
        summary_text(report)
    )
    # A rerun reuses the scan's checkpoint and keeps the span.
    again = build(raw, embedder, video, out).report
    assert again.stages["scan"].reused == 1
    assert again.status == "partial" and again.lost_spans == report.lost_spans


@pytest.mark.slow
def test_a_clip_that_lost_only_its_tail_is_named(raw: TestVideo, embedder, tmp_path: Path) -> None:
    video = cut_copy(raw, tmp_path, "mp4", 36.0)
    report = build(raw, embedder, video, tmp_path / "out").report
    assert report.status == "partial" and not report.failures  # clip_0004 has 30-36 s
    [span] = report.lost_spans
    assert span.start_s == 36.0 and span.end_s == 40.0 and span.clips == ["clip_0004"]
    assert "truncated" in span.reason


def test_only_undecodable_stretches_are_lost() -> None:
    def scan(until: float, gaps=(), errors=()) -> ScanResult:
        return ScanResult([], [], until, 0, list(errors), list(gaps))

    # A duration a little past the last frame (a longer audio track) loses nothing.
    assert lost_spans(scan(58.5), 60.0, 25.0) == []
    assert lost_spans(scan(55.0), 60.0, 25.0) == [(55.0, 60.0, "the file ends early (truncated?)")]
    stopped = "decoding stopped at 30.00 s after 8 bad packets"
    assert lost_spans(scan(30.0, errors=[stopped]), 60.0, 25.0) == [(30.0, 60.0, stopped)]
    # Frames skipped over bad packets in the middle are lost, however short.
    assert lost_spans(scan(60.0, gaps=[(12.0, 12.5)]), 60.0, 25.0) == [
        (12.0, 12.5, "undecodable data")
    ]
