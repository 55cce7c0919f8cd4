"""Frames decoded while a level's plan is in flight (``agents/prefetch.py``): they land in
the shared frame cache, the observation reads them from there, a narrowed or cancelled
prefetch decodes no more than it must, and what the model is sent does not change."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest
from method_support import ask, make_vt

from videotapestry.agents.prefetch import FramePrefetch, prefetching, split_stretches
from videotapestry.config import VideoConfig
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import FrameCache, open_video

PLANNED = [4, 9, 30, 31, 60, 200, 401]
NEEDED = [9, 31, 200, 555]


def _gated(indices: list[int], gate: threading.Event):
    """A prefetch plan that waits for ``gate``, so a test can narrow it before any decode."""

    def plan() -> list[int]:
        gate.wait(timeout=30)
        return indices

    return plan


def test_stretches_are_contiguous_runs_of_the_sorted_frames() -> None:
    assert split_stretches([9, 1, 5, 5, 7], 2) == [[1, 5], [7, 9]]
    assert split_stretches([3], 4) == [[3]]
    assert split_stretches([], 2) == []


def test_a_narrowed_prefetch_decodes_only_the_needed_frames_and_the_cache_serves_them(
    video: Path,
) -> None:
    cache = FrameCache(64 * 2**20)

    async def run() -> tuple[object, list, int]:
        with (
            open_video(video, VideoConfig(), frame_cache=cache) as one,
            open_video(video, VideoConfig(), frame_cache=cache) as two,
        ):
            gate = threading.Event()
            prefetch = FramePrefetch([one, two], _gated(PLANNED, gate)).start()
            narrowing = asyncio.ensure_future(prefetch.narrow(NEEDED))
            await asyncio.sleep(0)  # the narrowing is in place before the plan is known
            gate.set()
            await narrowing
            before = one.reused_frames
            frames = one.frames_at_indices(NEEDED)
            return prefetch.report(), frames, one.reused_frames - before

    report, frames, reused = asyncio.run(run())
    shared = sorted(set(PLANNED) & set(NEEDED))
    assert report.planned == len(PLANNED)  # type: ignore[attr-defined]
    assert report.decoded == report.used == len(shared)  # type: ignore[attr-defined]
    assert report.error is None  # type: ignore[attr-defined]
    assert reused == len(shared)  # the frame outside the plan (555) was decoded by the reader
    with open_video(video, VideoConfig()) as fresh:
        for frame, again in zip(frames, fresh.frames_at_indices(NEEDED), strict=True):
            assert frame.index == again.index
            assert np.array_equal(frame.image, again.image)


def test_a_prefetch_left_before_its_plan_is_known_decodes_nothing(video: Path) -> None:
    cache = FrameCache(64 * 2**20)

    async def run() -> object:
        with open_video(video, VideoConfig(), frame_cache=cache) as reader:
            gate = threading.Event()
            async with prefetching([reader], _gated(PLANNED, gate)) as prefetch:
                assert prefetch is not None
                threading.Timer(0.05, gate.set).start()
            return prefetch.report()

    report = asyncio.run(run())
    assert report.decoded == 0 and report.used == 0  # type: ignore[attr-defined]
    assert len(cache) == 0


def test_a_prefetch_that_cannot_decode_keeps_the_error_to_itself(video: Path) -> None:
    async def run() -> object:
        with open_video(video, VideoConfig(), frame_cache=FrameCache(2**20)) as reader:
            prefetch = FramePrefetch([reader], lambda: [10**9]).start()
            await prefetch.narrow([10**9])
            return prefetch.report()

    report = asyncio.run(run())
    assert report.decoded == 0
    assert report.error is not None and "outside" in report.error  # type: ignore[attr-defined]


def _fallback_plan(request) -> dict:
    """A level plan that names no time range: the level looks at its candidates' intervals."""
    reply = ScriptedModel()._level_planning(request)
    return {**reply, "time_ranges": []}


@pytest.mark.parametrize("level_plan", ["fallback", "narrowed"])
def test_the_method_sends_the_same_frames_with_or_without_the_prefetch(
    server, embedder, video: Path, level_plan: str
) -> None:
    overrides = {"level_planning": _fallback_plan} if level_plan == "fallback" else {}
    sent: dict[bool, list[list[bytes]]] = {}
    answers: dict[bool, str] = {}
    notes: dict[bool, list[dict]] = {}
    hits: dict[bool, int] = {}
    for on in (False, True):
        server.reset()
        server.on(None, ScriptedModel(**overrides))
        vt = make_vt(server, embedder, f"agents.prefetch_frames={str(on).lower()}")
        result = ask(vt, video)
        answers[on] = result.answer
        sent[on] = [r.images for r in server.requests if r.prompt == "visual_observation"]
        notes[on] = [e.output for e in result.trace.events if e.name == "frames_prefetched"]
        hits[on] = vt.frames.stats.hits
    assert answers[True] == answers[False]
    assert sent[True] == sent[False] and len(sent[True]) == 3  # Super, Macro, Subgraph
    assert notes[False] == []
    assert [n["level"] for n in notes[True]] == ["macro", "subgraph"]
    for note in notes[True]:
        assert note["error"] is None and note["planned"] > 0
        assert note["used"] <= note["decoded"] <= note["planned"]
        if level_plan == "fallback":  # the plan's frames are the prefetched ones, all used
            assert note["used"] == note["planned"]
    assert hits[True] >= sum(n["used"] for n in notes[True])
