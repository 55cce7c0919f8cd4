"""A finished memory that is up to date is kept: a build of the same video into the same folder
with the same settings returns it at once (no decoding, no model, no embedder), and anything
that would change it — the video, a setting, a file of the memory, a partial first build —
builds as before, through the checkpoints."""

from __future__ import annotations

import json
import time
from pathlib import Path

import cv2
import pytest

import memory_builders.builder as builder_module
from memory_builders.builder import KEPT_STAGE, BuildResult, MemoryBuilder
from memory_builders.lock import OtherVideoError
from memory_builders.progress import BuildProgress
from memory_builders.report import summary_text
from memory_builders.stamp import STAMP_ENTRY
from videotapestry.config import load_config
from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.scripted_builder import (
    ScriptedBuilderModel,
    offline_build_overrides,
    perception_requests,
)

#: Each test builds a 30 s video two to four times.
pytestmark = [pytest.mark.usefixtures("module_api_key"), pytest.mark.slow]


@pytest.fixture(scope="module")
def clip_video(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    """30 s, a new scene every 10 s: three clips."""
    path = tmp_path_factory.mktemp("stamp") / "walk.mp4"
    return make_test_video(path, 30, fps=4, size=(192, 108), scene_s=10)


def build(
    server: FakeOpenAIServer, embedder, video: Path, out: Path, *overrides: str, **kwargs
) -> BuildResult:
    config = load_config(
        overrides=offline_build_overrides(
            server.base_url, "builder.ocr.engine=none", "cache.enabled=false", *overrides
        )
    )
    builder = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False))
    return builder.build(video, out, **kwargs)


@pytest.fixture
def server(clip_video: TestVideo):
    with FakeOpenAIServer() as fake:
        fake.on(None, ScriptedBuilderModel(clip_video.fps, clip_video.scenes))
        yield fake


def test_a_second_build_returns_the_finished_memory_at_once(
    server: FakeOpenAIServer,
    clip_video: TestVideo,
    embedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    first = build(server, embedder, clip_video.path, out)
    assert not first.kept and first.report.status == "complete"
    manifest = json.loads((out / "manifest.json").read_text())
    files = manifest["build"][STAMP_ENTRY]["files"]
    assert {"memory.json", "embeddings.npy", "build_report.json"} <= set(files)
    calls = len(server.requests)

    async def refused(*_: object) -> None:  # the first stage, which decodes the video
        raise AssertionError("a stage ran: the memory was not kept")

    monkeypatch.setattr(builder_module, "probe_stage", refused)
    started = time.perf_counter()
    again = build(server, embedder, clip_video.path, out)
    seconds = time.perf_counter() - started
    assert again.kept and len(server.requests) == calls  # no model call, no stage
    assert list(again.report.stages) == [KEPT_STAGE] and again.report.usage == {}
    assert again.memory == first.memory == load_memory(out)
    assert again.report.status == "complete" and again.report.clips == first.report.clips
    assert json.loads((out / "manifest.json").read_text()) == manifest  # nothing rewritten
    assert f"memory up to date, kept: {out}; --restart to build again" in summary_text(again.report)
    with capsys.disabled():
        print(f"\n[kept in {seconds:.3f} s, check {again.report.wall_s:.3f} s]")
    # A setting the builder does not read (the answering agents') keeps it too.
    assert build(server, embedder, clip_video.path, out, "answer.citations=false").kept
    monkeypatch.undo()
    # --restart builds again (from nothing: the checkpoints are cleared).
    restarted = build(server, embedder, clip_video.path, out, restart=True)
    assert not restarted.kept and len(perception_requests(server.requests[calls:])) == 3


def test_a_changed_setting_rebuilds_then_is_kept(
    server: FakeOpenAIServer, clip_video: TestVideo, embedder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    build(server, embedder, clip_video.path, out)
    changed = build(server, embedder, clip_video.path, out, "builder.perception.frames=4")
    assert not changed.kept
    assert changed.report.stages["perception"].computed == 3  # the clips seen again
    assert build(server, embedder, clip_video.path, out, "builder.perception.frames=4").kept
    assert not build(server, embedder, clip_video.path, out).kept  # and back


def test_a_rewritten_frame_rebuilds(
    server: FakeOpenAIServer, clip_video: TestVideo, embedder, tmp_path: Path
) -> None:
    video = tmp_path / "walk.mp4"
    video.write_bytes(clip_video.path.read_bytes())
    out = tmp_path / "out"
    build(server, embedder, video, out)
    _rewrite_frame(video, 50)
    with pytest.raises(OtherVideoError):  # another video's memory: refused unless forced
        build(server, embedder, video, out)
    again = build(server, embedder, video, out, force=True)
    assert not again.kept and again.report.stages["scan"].computed == 1
    assert build(server, embedder, video, out).kept


@pytest.mark.parametrize("damage", ["deleted", "edited"])
def test_a_deleted_or_edited_memory_file_rebuilds(
    server: FakeOpenAIServer, clip_video: TestVideo, embedder, tmp_path: Path, damage: str
) -> None:
    out = tmp_path / "out"
    first = build(server, embedder, clip_video.path, out)
    calls = len(server.requests)
    if damage == "deleted":
        (out / "embeddings.npy").unlink()
    else:
        memory = out / "memory.json"
        data = json.loads(memory.read_text())
        data["clips"][0]["captions"][0] = data["clips"][0]["captions"][0].upper()
        memory.write_text(json.dumps(data))
    again = build(server, embedder, clip_video.path, out)
    assert not again.kept and len(server.requests) == calls  # from the checkpoints
    assert again.report.stages["perception"].reused == 3
    assert load_memory(out) == again.memory == first.memory  # written again, as it was
    assert build(server, embedder, clip_video.path, out).kept


def test_a_partial_memory_is_not_kept(clip_video: TestVideo, embedder, tmp_path: Path) -> None:
    out = tmp_path / "out"
    lenient = "builder.max_failed_share=0.5"
    with FakeOpenAIServer() as server:
        server.on(
            None,
            ScriptedBuilderModel(clip_video.fps, clip_video.scenes, garbage_clips={"clip_0002"}),
        )
        first = build(server, embedder, clip_video.path, out, lenient)
        assert first.partial
        assert STAMP_ENTRY not in load_memory(out).manifest.build
        before = len(server.requests)
        again = build(server, embedder, clip_video.path, out, lenient)
        assert not again.kept and again.partial
        # The failed clip is asked again (its reply and the repair), the others are not.
        assert perception_requests(server.requests[before:]) == {"clip_0002": 2}


def _rewrite_frame(video: Path, index: int) -> None:
    """Re-encode ``video`` with frame ``index`` painted over (same length, same scenes)."""
    capture = cv2.VideoCapture(str(video))
    fps = capture.get(cv2.CAP_PROP_FPS)
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    cv2.rectangle(frames[index], (10, 10), (60, 40), (0, 0, 255), -1)
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"mp4v"), fps, (width, height))
    for frame in frames:
        writer.write(frame)
    writer.release()
