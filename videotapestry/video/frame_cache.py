"""Decoded frames kept for asking again, shared by every reader one facade opens.

The three levels of one question, the variants of one question and the questions of one
video (a conversation's turns, an eval's questions) sample largely the same moments, and
decoding is the framework's largest CPU cost per question. A frame is kept under the video's
fingerprint, the decoded size and its index, so a different file, a changed file or another
``decoded_max_side`` never gets it; only the exact frame is reused (a nearby one is decoded:
the method's timestamps stay the ones it asked for). Least recently used frames go first
once the byte budget is spent. Thread-safe: decoders run in worker threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from videotapestry.video.frame import Frame

#: (video fingerprint, decoded_max_side, frame index).
FrameKey = tuple[str, int | None, int]


@dataclass
class FrameCacheStats:
    hits: int = 0
    misses: int = 0
    evicted: int = 0


class FrameCache:
    """At most ``max_bytes`` of decoded images, least recently used dropped first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self.stats = FrameCacheStats()
        self._frames: OrderedDict[FrameKey, Frame] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._frames)

    def get(self, key: FrameKey) -> Frame | None:
        with self._lock:
            frame = self._frames.get(key)
            if frame is None:
                self.stats.misses += 1
                return None
            self._frames.move_to_end(key)
            self.stats.hits += 1
            return frame

    def put(self, key: FrameKey, frame: Frame) -> None:
        size = frame.image.nbytes
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._frames.pop(key, None)
            if old is not None:
                self._bytes -= old.image.nbytes
            self._frames[key] = frame
            self._bytes += size
            while self._bytes > self.max_bytes:
                _key, dropped = self._frames.popitem(last=False)
                self._bytes -= dropped.image.nbytes
                self.stats.evicted += 1
