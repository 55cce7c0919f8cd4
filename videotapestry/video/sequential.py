"""One pass over every frame of a video, front to back.

Work that must look at the whole video (the memory builder's scan for shot cuts and the
frames it keeps) decodes far faster in one pass with frame threading than by seeking to each
frame. The pass times frames as the readers do (``container.StreamClock``), so a frame has
one index and one timestamp whichever path decoded it, and it turns a frame into pixels only
when asked, since it meets every frame and keeps few.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from videotapestry.video.container import (
    TIME_EPSILON,
    StreamClock,
    VideoInfo,
    error_reason,
    open_stream,
)
from videotapestry.video.frame import turned_size, upright

#: Undecodable packets in a row after which a ``SequentialPass`` gives up on the rest.
MAX_CONSECUTIVE_ERRORS = 8


class SequentialPass:
    """Every frame of a video once, front to back, timed as the readers time them.

    For work that must look at the whole video (shot detection, keeping frames for later
    stages): one pass with frame threading decodes far faster than seeking to each frame. A
    frame's index comes from its presentation time as in ``PyAVReader``, kept strictly
    rising (a repeated or missing time takes the next index). A packet that cannot be
    decoded is skipped and named in ``errors``; after ``max_consecutive_errors`` in a row
    the pass ends there, so what comes later has no frames rather than guessed ones. The
    stretches skipped before decoding picked up again are in ``gaps`` (seconds, start and
    end): only there are missing frames known to be lost, as a variable frame rate leaves
    jumps in the frame times of an undamaged file too.
    """

    def __init__(
        self,
        info: VideoInfo,
        *,
        max_consecutive_errors: int = MAX_CONSECUTIVE_ERRORS,
        start_s: float = 0.0,
    ) -> None:
        self.info = info
        #: Where the pass begins: the keyframe at or before this time is sought, and the
        #: frames before ``start_s`` are left out (a scan resumed on a grown recording).
        self.start_s = start_s
        self.max_consecutive_errors = max_consecutive_errors
        self.errors: list[str] = []
        self.gaps: list[tuple[float, float]] = []
        self.frames_decoded = 0
        self.last_index = -1

    @property
    def decoded_until_s(self) -> float:
        """The end of the last frame decoded so far (0 before the first)."""
        return (self.last_index + 1) / self.info.fps

    def __iter__(self) -> Iterator[PassFrame]:
        import av

        container, stream = open_stream(self.info)
        with container:
            stream.thread_type = "AUTO"  # no seeks in a pass: frame threads pay off
            clock = StreamClock(stream, self.info)
            first = round(self.start_s * self.info.fps)
            if first > 0:
                container.seek(clock.pts_of(first), stream=stream)
                self.last_index = first - 1
            frames = container.decode(stream)
            consecutive = 0
            while True:
                try:
                    frame = next(frames)
                except (StopIteration, av.error.EOFError):
                    return
                except av.error.FFmpegError as exc:
                    consecutive += 1
                    if not self._skipped(exc, consecutive):
                        return
                    frames = container.decode(stream)  # demuxing resumes after the bad packet
                    continue
                index = self.last_index + 1 if frame.pts is None else clock.index_of(frame.pts)
                if index < first and self.frames_decoded == 0:
                    continue  # decoded from the keyframe before the start: not there yet
                if consecutive and index > self.last_index + 1:
                    self.gaps.append((self.decoded_until_s, index / self.info.fps))
                consecutive = 0
                self.frames_decoded += 1
                self.last_index = max(index, self.last_index + 1)
                timestamp = self.last_index / self.info.fps
                yield PassFrame(self.last_index, timestamp, frame, self.info.rotation_deg)

    def _skipped(self, exc: BaseException, consecutive: int) -> bool:
        """Note an undecodable packet; False when the pass must stop."""
        position = self.decoded_until_s
        self.errors.append(f"undecodable data near {position:.2f} s: {error_reason(exc, 200)}")
        if consecutive < self.max_consecutive_errors:
            return True
        self.errors.append(f"decoding stopped at {position:.2f} s after {consecutive} bad packets")
        return False


@dataclass(frozen=True, eq=False)
class PassFrame:
    """A frame met by a ``SequentialPass``. It becomes pixels only when asked: a pass meets
    every frame of the video and keeps few of them."""

    index: int
    timestamp_s: float
    decoded: Any = field(repr=False)  # the decoder's frame
    #: Clockwise degrees the frame is turned to be upright (``VideoInfo.rotation_deg``).
    rotation_deg: int = 0

    def to_array(self, size: tuple[int, int], *, pixel_format: str = "rgb24") -> np.ndarray:
        """The frame upright at ``size`` (width, height, as shown: ``VideoInfo.display_size``
        scaled), as the readers return it; averaged over source pixels when shrunk, which
        keeps fine detail (text, edges) from aliasing; ``bgr24`` for OpenCV code."""
        width, height = turned_size(size, self.rotation_deg)
        image: np.ndarray = self.decoded.to_ndarray(
            format=pixel_format, width=width, height=height, interpolation="AREA"
        )
        return upright(image, self.rotation_deg)


class RateSampler:
    """Picks frames of a sequential pass about ``fps`` times a second of video: the first
    frame at or after each tick. A tick with no frame of its own (a gap, a low frame rate)
    is skipped, not made up later, so the frames taken stay evenly spread."""

    def __init__(self, fps: float) -> None:
        self.step = 1.0 / fps
        self.next_s = 0.0

    def takes(self, timestamp_s: float) -> bool:
        if timestamp_s + TIME_EPSILON < self.next_s:
            return False
        while self.next_s <= timestamp_s + TIME_EPSILON:
            self.next_s += self.step
        return True
