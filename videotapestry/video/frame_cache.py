"""Decoded frames kept for asking again, shared by every reader one facade opens.

The three levels of one question, the variants of one question and the questions of one
video (a conversation's turns, an eval's questions) sample largely the same moments, and
decoding is the framework's largest CPU cost per question. A frame is kept under the video's
fingerprint, the decoded size and its index, so a different file, a changed file or another
``decoded_max_side`` never gets it. ``get`` gives only the exact frame; ``nearest`` tells
uniform sampling which kept frame lies inside a sample's tolerance band
(``video.frame_reuse``, see ``sampling``), so a nearby request can take a frame already
decoded, with that frame's own true timestamp. Least recently used frames go first once the
byte budget is spent. Thread-safe: decoders run in worker threads.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass

from videotapestry.video.frame import Frame

#: (video fingerprint, decoded_max_side, frame index).
FrameKey = tuple[str, int | None, int]
#: (video fingerprint, decoded_max_side): the frames of one video at one decoded size.
VideoKey = tuple[str, int | None]


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
        #: The kept frame indices of each video, sorted, for ``nearest``.
        self._indices: dict[VideoKey, list[int]] = {}
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

    def nearest(self, video: VideoKey, low: int, high: int, center: float) -> int | None:
        """The kept frame index in ``[low, high]`` closest to ``center`` (the earlier one on a
        tie); None when none is kept. Counts nothing: the ``get`` that follows does."""
        with self._lock:
            kept = self._indices.get(video)
            if not kept:
                return None
            start = bisect.bisect_left(kept, low)
            stop = bisect.bisect_right(kept, high)
            if start >= stop:
                return None
            return min(kept[start:stop], key=lambda index: (abs(index - center), index))

    def put(self, key: FrameKey, frame: Frame) -> None:
        size = frame.image.nbytes
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._frames.pop(key, None)
            if old is not None:
                self._bytes -= old.image.nbytes
            else:
                bisect.insort(self._indices.setdefault(key[:2], []), key[2])
            self._frames[key] = frame
            self._bytes += size
            while self._bytes > self.max_bytes:
                dropped_key, dropped = self._frames.popitem(last=False)
                self._bytes -= dropped.image.nbytes
                self._forget(dropped_key)
                self.stats.evicted += 1

    def _forget(self, key: FrameKey) -> None:
        kept = self._indices[key[:2]]
        del kept[bisect.bisect_left(kept, key[2])]
        if not kept:
            del self._indices[key[:2]]
