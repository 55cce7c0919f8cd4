"""Frames decoded once: a uniform sample near a kept frame takes it (``video.frame_reuse``),
with the kept frame's own pixels and true timestamp, and the questions of one facade decode
the frames they share once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from method_support import QUESTION, ask, make_vt

from videotapestry.config import VideoConfig
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import FrameCache, open_video, sample_uniform
from videotapestry.video.reader import PyAVReader


def test_a_nearby_sample_takes_the_kept_frame_with_its_own_pixels_and_time(video: Path) -> None:
    config = VideoConfig(backend="pyav", keyframe_snap=0.0, frame_reuse=0.25)
    one_frame = 320 * 180 * 3
    cache = FrameCache(max_bytes=12 * one_frame)
    with open_video(video, config, frame_cache=cache) as reader:
        first = sample_uniform(reader, 0.0, 100.0, 10)  # centres 5, 15, ... s
        # Moved by 1 s: every centre is within 0.25 x 10 s of a kept frame.
        again = sample_uniform(reader, 1.0, 101.0, 10)
        assert [f.index for f in again] == [f.index for f in first]
        assert reader.reused_frames == 10
        assert [f.timestamp_s for f in again] == [f.index / reader.info.fps for f in again]
        # Moved by 3 s: outside the band, so new frames at the new centres.
        moved = sample_uniform(reader, 3.0, 103.0, 10)
        assert [f.timestamp_s for f in moved] == [8.0 + 10 * k for k in range(10)]
        assert reader.reused_frames == 10
        assert cache.bytes <= cache.max_bytes and len(cache) == 12
    with open_video(video, config.model_copy(update={"frame_reuse": 0.0})) as fresh:
        exact = fresh.frames_at_indices([f.index for f in again])
        assert all(np.array_equal(a.image, b.image) for a, b in zip(again, exact, strict=True))
    with open_video(video, config.model_copy(update={"frame_reuse": 0.0}), frame_cache=cache) as r:
        assert [f.timestamp_s for f in sample_uniform(r, 1.0, 101.0, 10)] == [
            6.0 + 10 * k for k in range(10)
        ]  # 0: the exact centres, kept or not


@pytest.mark.parametrize("reuse", [0.0, 0.25])
def test_two_questions_on_one_video_decode_the_frames_they_share_once(
    server, embedder, video: Path, monkeypatch: pytest.MonkeyPatch, reuse: float
) -> None:
    decoded: Counter[int] = Counter()
    real = PyAVReader._decode

    def counted(self, indices):
        decoded.update(indices)
        return real(self, indices)

    monkeypatch.setattr(PyAVReader, "_decode", counted)
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, "video.backend=pyav", f"video.frame_reuse={reuse}")
    ask(vt, video)
    after_first = sum(decoded.values())
    ask(vt, video, question=QUESTION.replace("?", " exactly?"))
    # Frame 0 is decoded by every reader as it opens (a file that decodes nothing fails
    # there); any other frame is decoded once, by whichever question asked first.
    assert {i: n for i, n in decoded.items() if i != 0 and n > 1} == {}
    assert vt.frames.stats.hits > 0
    assert sum(decoded.values()) - after_first < after_first


@pytest.fixture
def overview_renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The frame count of every Overview render (grids packed and encoded), as it happens."""
    from videotapestry.video import frame_workers

    encoded: list[int] = []
    real = frame_workers.overview_images

    def counted(frames, *args, **kwargs):
        encoded.append(len(frames))
        return real(frames, *args, **kwargs)

    monkeypatch.setattr(frame_workers, "overview_images", counted)
    return encoded


@pytest.mark.parametrize("render_cache_mb", [64, 0])
def test_a_further_question_sends_the_overview_the_images_it_rendered_before(
    server, embedder, video: Path, overview_renders: list[int], render_cache_mb: int
) -> None:
    encoded = overview_renders
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, f"video.render_cache_mb={render_cache_mb}")
    first = ask(vt, video)
    second = ask(vt, video, question=QUESTION.replace("?", " exactly?"))

    def overview_grids(result) -> list[str]:
        return [image.sha256 for image in result.images if len(image.timestamps) > 1]

    assert overview_grids(first) and overview_grids(second) == overview_grids(first)
    # Rendered once with the cache (the same bytes come back), twice without it.
    assert len(encoded) == (1 if render_cache_mb else 2)
    assert (vt.renders.hits > 0) == bool(render_cache_mb)


def test_questions_in_flight_together_render_the_overview_once(
    server, embedder, video: Path, overview_renders: list[int]
) -> None:
    """Three questions of one video asked at once (as an eval asks a video's questions):
    the first to miss renders the Overview's grids, the others wait for its bytes."""
    import asyncio

    from method_support import OPTIONS, SAMPLE

    encoded = overview_renders
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    questions = [QUESTION, QUESTION.replace("?", " exactly?"), QUESTION.replace("?", " now?")]

    async def together():
        try:
            return await asyncio.gather(*(vt.aanswer(video, SAMPLE, q, OPTIONS) for q in questions))
        finally:
            await vt.aclose()

    results = asyncio.run(together())
    grids = [[i.sha256 for i in r.images if len(i.timestamps) > 1] for r in results]
    assert grids[0] and grids[1] == grids[0] and grids[2] == grids[0]
    assert len(encoded) == 1
    assert vt.renders.misses >= 1 and not vt.renders._pending
