"""Decoding the frames a level will very likely look at while its planning call is in flight.

A level's planning call keeps the CPU idle for as long as the model thinks, and the
observation that follows must first decode its frames, which on a long-GOP video is the
largest CPU cost on a question's critical path. The Skim and Focus agents observe their
planned ranges intersected with the candidates' intervals, and the candidate intervals
themselves when the plan names no range inside them (Algorithm 2, line 13), so the frames of
those fallback windows are the ones the observation reads in that case, and a plan that asks
for a candidate's whole span reads them too. Those are the frames decoded here, and only
those: at most one observation's frame budget.

The prefetch only changes when a frame is decoded, never which frames are shown: it decodes
into the shared frame cache (``video.frame_cache_mb``), where the observation finds them;
once the plan is known it is narrowed to the frames the observation reads (the rest are
never decoded), or cancelled when the level does not look, and the level waits for it
before it decodes, so no frame is decoded twice. Each reader walks its own contiguous
stretch, as ``decode_indices`` splits them, so decoding runs forward through the file.
A prefetch that fails to decode keeps the error to itself: the observation decodes the
same frames and reports it as the method does (an observation with an error and a
``visual_lost`` degradation).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from videotapestry.errors import VideoError
from videotapestry.video import VideoReader


@dataclass(frozen=True)
class PrefetchReport:
    """What one prefetch did: frames it planned, decoded, and the observation then read."""

    planned: int
    decoded: int
    used: int
    error: str | None = None


def split_stretches(indices: Sequence[int], parts: int) -> list[list[int]]:
    """``indices`` sorted and cut into ``parts`` contiguous runs of near-equal length (the
    split ``decode_indices`` makes, so each reader decodes forward through its stretch)."""
    ordered = sorted(set(indices))
    parts = max(1, min(parts, len(ordered)))
    bounds = [round(k * len(ordered) / parts) for k in range(parts + 1)]
    return [ordered[bounds[k] : bounds[k + 1]] for k in range(parts)] if ordered else []


class FramePrefetch:
    """One background decode of the frames ``plan()`` names, by ``readers`` (which must share
    a frame cache); ``narrow`` and ``cancel`` bound it, ``report`` says what it did."""

    def __init__(self, readers: Sequence[VideoReader], plan: Callable[[], Sequence[int]]) -> None:
        self._readers = list(readers)
        self._plan = plan
        self._lock = threading.Lock()
        self._queues: list[deque[int]] = []
        self._keep: set[int] | None = None  # the frames still wanted; None: all planned
        self._stopped = False
        self._planned = 0
        self._decoded: set[int] = set()
        self._used = 0
        self._error: str | None = None
        self._task: asyncio.Future[None] | None = None

    def start(self) -> FramePrefetch:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        try:
            indices = await asyncio.to_thread(self._plan)
        except VideoError as exc:
            self._error = str(exc)
            return
        with self._lock:
            self._planned = len(set(indices))
            self._queues = [deque(s) for s in split_stretches(indices, len(self._readers))]
        await asyncio.gather(
            *(
                asyncio.to_thread(self._walk, reader, queue)
                for reader, queue in zip(self._readers, self._queues, strict=False)
            )
        )

    def _next(self, queue: deque[int]) -> int | None:
        with self._lock:
            while queue and not self._stopped:
                index = queue.popleft()
                if self._keep is None or index in self._keep:
                    return index
            return None

    def _walk(self, reader: VideoReader, queue: deque[int]) -> None:
        """Decode one frame at a time, so a narrowing or a cancel takes effect at once."""
        while (index := self._next(queue)) is not None:
            try:
                reader.frames_at_indices([index])
            except VideoError as exc:
                with self._lock:
                    self._error = str(exc)
                    self._stopped = True
                return
            with self._lock:
                self._decoded.add(index)

    async def narrow(self, needed: Collection[int]) -> None:
        """Decode only the frames of ``needed`` it planned and has not decoded yet, and wait
        until they are done (the observation would otherwise decode them a second time)."""
        wanted = set(needed)
        with self._lock:
            self._keep = wanted if self._keep is None else self._keep & wanted
        await self._wait()
        with self._lock:
            self._used = len(self._decoded & wanted)

    async def cancel(self) -> None:
        """Stop after the frame being decoded, and wait for it."""
        with self._lock:
            self._stopped = True
        await self._wait()

    async def _wait(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)

    def report(self) -> PrefetchReport:
        with self._lock:
            return PrefetchReport(self._planned, len(self._decoded), self._used, self._error)


@contextlib.asynccontextmanager
async def prefetching(readers: Sequence[VideoReader], plan: Callable[[], Sequence[int]] | None):
    """A started ``FramePrefetch`` (None when ``plan`` is None), cancelled on the way out
    whatever happened, so no decode outlives its level."""
    if plan is None or not readers:
        yield None
        return
    prefetch = FramePrefetch(readers, plan).start()
    try:
        yield prefetch
    finally:
        await prefetch.cancel()
