"""Where uniform samples fall in a window, and reading them.

A window ``[start, end]`` asked for ``count`` frames is cut into ``count`` equal
sub-intervals; sample ``k`` is the frame on screen at the centre of sub-interval ``k``
(``start + (k + 0.5) * width``). Centres, not edges, so that the first and last samples are
not the window's boundary frames, and two adjacent windows sampled this way never share a
frame.

Keyframe snapping (``keyframe_snap`` in ``VideoConfig``): reaching an arbitrary frame of a
long-GOP video means decoding every frame from the keyframe before it, on average half a GOP
(seconds of video) per sample, while a keyframe decodes on its own. So when the reader knows
where the keyframes are and one lies within ``keyframe_snap * width`` of a sample's centre,
that keyframe is taken instead. The band lies inside the sample's own sub-interval, so the
samples still cover the window evenly, stay in time order and stay distinct; every returned
``Frame`` carries its true timestamp either way. ``keyframe_snap = 0`` gives exact centres.

When a window holds fewer frames than asked for, each frame is returned once (fewer samples).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from videotapestry.errors import VideoWindowError
from videotapestry.video.reader import Frame, VideoReader, index_at
from videotapestry.video.windows import TimeWindow


def sample_centers(start_s: float, end_s: float, count: int) -> list[float]:
    """Centres of ``count`` equal sub-intervals of ``[start_s, end_s]``."""
    if count < 1:
        return []
    width = (end_s - start_s) / count
    return [start_s + (k + 0.5) * width for k in range(count)]


def plan_uniform_indices(
    start_s: float,
    end_s: float,
    count: int,
    *,
    fps: float,
    frame_count: int,
    keyframes: np.ndarray | Sequence[int] | None = None,
    keyframe_snap: float = 0.0,
) -> list[int]:
    """Frame indices of ``count`` uniform samples of the window (see the module docstring).

    Pure: the window must already lie inside the video. Returns sorted, distinct indices.
    """
    if count < 1:
        return []
    if not 0.0 <= keyframe_snap <= 0.5:
        raise ValueError("keyframe_snap must be within [0, 0.5]")
    width = (end_s - start_s) / count
    centers = sample_centers(start_s, end_s, count)
    chosen = [index_at(c, fps, frame_count) for c in centers]
    if keyframes is not None and len(keyframes) and keyframe_snap > 0 and width > 0:
        key_times = np.asarray(keyframes, dtype=np.float64) / fps
        radius = keyframe_snap * width
        for k, center in enumerate(centers):
            lo = int(np.searchsorted(key_times, center - radius, side="left"))
            hi = int(np.searchsorted(key_times, center + radius, side="right"))
            if lo < hi:
                nearest = lo + int(np.argmin(np.abs(key_times[lo:hi] - center)))
                chosen[k] = int(keyframes[nearest])
    return sorted(set(chosen))


def clip_window(reader: VideoReader, start_s: float, end_s: float) -> TimeWindow:
    """The part of ``[start_s, end_s]`` inside the video; a typed error when there is none."""
    info = reader.info
    if not (math.isfinite(start_s) and math.isfinite(end_s)) or end_s < start_s:
        raise VideoWindowError(
            f"window [{start_s:g}, {end_s:g}] s for {info.path} is invalid "
            "(need finite start <= end)",
            path=info.path,
        )
    clipped = TimeWindow(start_s, end_s).clip(info.duration_s)
    if clipped is None:
        raise VideoWindowError(
            f"window [{start_s:g}, {end_s:g}] s is outside {info.path} "
            f"(duration {info.duration_s:.3f} s)",
            path=info.path,
        )
    return clipped


def sample_uniform(
    reader: VideoReader,
    start_s: float,
    end_s: float,
    count: int,
    *,
    keyframe_snap: float | None = None,
) -> list[Frame]:
    """``count`` frames spread evenly over ``[start_s, end_s]``, in time order.

    A window partly outside the video is clipped to it; one entirely outside (or reversed,
    or NaN) raises ``VideoWindowError``. ``keyframe_snap`` defaults to the reader's config.
    """
    window = clip_window(reader, start_s, end_s)
    snap = reader.config.keyframe_snap if keyframe_snap is None else keyframe_snap
    info = reader.info
    indices = plan_uniform_indices(
        window.start_s,
        window.end_s,
        count,
        fps=info.fps,
        frame_count=info.frame_count,
        keyframes=reader.keyframe_indices() if snap > 0 else None,
        keyframe_snap=snap,
    )
    return reader.frames_at_indices(indices)


def allocate_frames(windows: Sequence[TimeWindow], count: int) -> list[int]:
    """Split ``count`` samples over ``windows`` in proportion to their durations.

    Largest remainders get the leftover samples; every window gets at least one while there
    are enough samples to go round (so a short but planned window is never skipped).
    """
    if not windows or count < 1:
        return [0] * len(windows)
    total = sum(max(w.duration_s, 0.0) for w in windows)
    if total <= 0:
        shares = [count / len(windows)] * len(windows)
    else:
        shares = [count * max(w.duration_s, 0.0) / total for w in windows]
    counts = [math.floor(s) for s in shares]
    floor = 1 if count >= len(windows) else 0
    counts = [max(floor, c) for c in counts]
    # Settle the difference one sample at a time, where the count is furthest from the share.
    while sum(counts) > count:
        spare = [i for i, c in enumerate(counts) if c > floor]
        counts[max(spare, key=lambda i: (counts[i] - shares[i], -i))] -= 1
    while sum(counts) < count:
        counts[max(range(len(counts)), key=lambda i: (shares[i] - counts[i], -i))] += 1
    return counts


def sample_windows(
    reader: VideoReader,
    windows: Sequence[TimeWindow],
    count: int,
    *,
    keyframe_snap: float | None = None,
) -> list[Frame]:
    """Up to ``count`` frames over several windows (Skim/Focus), in time order, no repeats."""
    frames: dict[int, Frame] = {}
    for window, share in zip(windows, allocate_frames(windows, count), strict=True):
        if share:
            for frame in sample_uniform(
                reader, window.start_s, window.end_s, share, keyframe_snap=keyframe_snap
            ):
                frames.setdefault(frame.index, frame)
    return [frames[i] for i in sorted(frames)]
