"""An observation's images kept for asking again: the same frames, grids and JPEG bytes.

Every question of a video sends the Overview the same frames (uniform over the whole video,
snapped to the same keyframes), laid out in the same grids: re-encoding them is the largest
CPU cost of a further question once its frames are decoded (bench_method.py). A render is
kept under everything that decides it (the ``FrameJob``: video fingerprint, windows, count,
layout, image and video settings) and whether a frame proxy was decoded, so a different
video, window or setting never gets it, and what is sent is byte for byte what rendering
again would send. Least recently used renders go first once the byte budget is spent.
Thread-safe: observations render in worker threads.

Questions of one video in flight together (an eval asks video by video) would all miss at
once and render the same Overview side by side; ``rendering`` lets the first one render and
the others wait for it (on the same event loop), which is still the very same bytes.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict

from videotapestry.video.frame_workers import FrameJob, RenderedFrames


def render_key(job: FrameJob, *, proxy: bool) -> str:
    """What decides a render. The pydantic settings inside the job print every field."""
    return f"{'proxy' if proxy else 'source'}|{job!r}"


def _size(rendered: RenderedFrames) -> int:
    return sum(len(image.jpeg) for image in rendered.images)


class RenderCache:
    """At most ``max_bytes`` of rendered observations, least recently used dropped first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self.hits = 0
        self.misses = 0
        self._renders: OrderedDict[str, RenderedFrames] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pending: dict[str, asyncio.Future[RenderedFrames | None]] = {}

    @property
    def bytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> RenderedFrames | None:
        with self._lock:
            rendered = self._renders.get(key)
            if rendered is None:
                self.misses += 1
                return None
            self._renders.move_to_end(key)
            self.hits += 1
            return rendered

    def put(self, key: str, rendered: RenderedFrames) -> None:
        size = _size(rendered)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._renders.pop(key, None)
            if old is not None:
                self._bytes -= _size(old)
            self._renders[key] = rendered
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._renders.popitem(last=False)
                self._bytes -= _size(dropped)

    def rendering(self, key: str) -> tuple[asyncio.Future[RenderedFrames | None], bool]:
        """(the future of ``key``'s render, whether the caller renders it). The caller that
        renders calls ``done`` with its render, or None when it failed: the others then
        render for themselves. Call from a coroutine; renders on another loop are not shared."""
        loop = asyncio.get_running_loop()
        with self._lock:
            future = self._pending.get(key)
            if future is not None and not future.done() and future.get_loop() is loop:
                return future, False
            future = loop.create_future()
            self._pending[key] = future
            return future, True

    def done(
        self,
        key: str,
        future: asyncio.Future[RenderedFrames | None],
        rendered: RenderedFrames | None,
    ) -> None:
        with self._lock:
            if self._pending.get(key) is future:
                del self._pending[key]
        if not future.done():
            future.set_result(rendered)
