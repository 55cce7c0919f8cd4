"""Where uniform samples fall in a window, and reading them.

A window ``[start, end]`` asked for ``count`` frames is cut into ``count`` equal
sub-intervals; sample ``k`` is the frame on screen at the centre of sub-interval ``k``
(``start + (k + 0.5) * width``). Centres, not edges, so that the first and last samples are
not the window's boundary frames, and two adjacent windows sampled this way do not share a
frame (when each slot is at least a frame long).

Keyframe snapping (``keyframe_snap`` in ``VideoConfig``): reaching an arbitrary frame of a
long-GOP video means decoding every frame from the keyframe before it, on average half a GOP
(seconds of video) per sample, while a keyframe decodes on its own. So when the reader can
tell where the keyframes are and one lies within ``keyframe_snap * width`` of a sample's
centre, that keyframe (the last one in that band) is taken instead. The band lies inside the
sample's own sub-interval, so the samples still cover the window evenly, stay in time order
and stay distinct; every returned ``Frame`` carries its true timestamp either way.
``keyframe_snap = 0`` gives exact centres.

Frame reuse (``frame_reuse`` in ``VideoConfig``) goes first: a frame decoded already (by an
earlier level, variant or question of the same facade, kept in its ``FrameCache``) within
``frame_reuse * width`` of a sample's centre is taken instead of decoding one, the kept frame
nearest the centre. Like a keyframe it lies in the sample's own band, and the ``Frame`` it
gives carries its own true timestamp, so labels burned into images and the moments the agents
cite are the times actually shown. It applies to every uniform sample of a window read
through a reader that shares a cache: the Overview's grids, Skim's and Focus's frames, the
Direct baseline's frames. Which frames are chosen then depends on what earlier questions
decoded (the first question of a video samples as with ``frame_reuse = 0``); ``0`` reuses only
the exact frame, the paper's sampling.

When a window holds fewer frames than asked for, each frame is returned once (fewer samples).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from videotapestry.errors import VideoWindowError
from videotapestry.video.container import index_at
from videotapestry.video.reader import Frame, VideoReader
from videotapestry.video.windows import TimeWindow

_EPS = 1e-9


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
    keyframe_before: Callable[[int], int | None] | None = None,
    keyframe_snap: float = 0.0,
    kept_near: Callable[[int, int, float], int | None] | None = None,
    frame_reuse: float = 0.0,
) -> list[int]:
    """Frame indices of ``count`` uniform samples of the window (see the module docstring).

    ``keyframe_before(i)`` gives the last keyframe at or before frame ``i`` (None if unknown);
    a sample takes the last keyframe inside its band when there is one. ``kept_near(low,
    high, center)`` gives a frame decoded already in ``[low, high]`` (None if none), which a
    sample takes first when it lies within ``frame_reuse`` of the centre. Pure apart from
    those callbacks: the window must already lie inside the video. Returns sorted, distinct
    indices.
    """
    if count < 1:
        return []
    for name, value in (("keyframe_snap", keyframe_snap), ("frame_reuse", frame_reuse)):
        if not 0.0 <= value <= 0.5:
            raise ValueError(f"{name} must be within [0, 0.5]")
    width = (end_s - start_s) / count
    centers = sample_centers(start_s, end_s, count)
    chosen = [index_at(c, fps, frame_count) for c in centers]
    for k, center in enumerate(centers):
        if kept_near is not None and frame_reuse > 0 and width > 0:
            low, high = _band(center, frame_reuse * width, fps, frame_count)
            kept = kept_near(low, high, center * fps) if low <= high else None
            if kept is not None:
                chosen[k] = kept
                continue
        if keyframe_before is not None and keyframe_snap > 0 and width > 0:
            radius = keyframe_snap * width
            _low, last = _band(center, radius, fps, frame_count)
            keyframe = keyframe_before(last)
            if keyframe is not None and keyframe / fps >= center - radius - _EPS:
                chosen[k] = keyframe
    return sorted(set(chosen))


def _band(center: float, radius: float, fps: float, frame_count: int) -> tuple[int, int]:
    """First and last frame whose timestamp lies in ``[center - radius, center + radius)``.

    Half-open: with the widest band (0.5) a frame on the border between two slots belongs to
    the later one, so two samples never take the same frame.
    """
    last = min(frame_count - 1, max(0, math.ceil((center + radius) * fps - 1e-6) - 1))
    first = max(0, math.ceil((center - radius) * fps - 1e-6))
    return first, last


def keyframes_before(keyframes: Sequence[int] | np.ndarray) -> Callable[[int], int | None]:
    """``keyframe_before`` over a known, sorted list of keyframe indices."""
    ordered = np.asarray(keyframes, dtype=np.int64)

    def before(index: int) -> int | None:
        position = int(np.searchsorted(ordered, index, side="right")) - 1
        return int(ordered[position]) if position >= 0 else None

    return before


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


def uniform_indices(
    reader: VideoReader,
    start_s: float,
    end_s: float,
    count: int,
    *,
    keyframe_snap: float | None = None,
) -> list[int]:
    """The frame indices ``sample_uniform`` reads (the sampling rule, without decoding)."""
    window = clip_window(reader, start_s, end_s)
    snap = reader.config.keyframe_snap if keyframe_snap is None else keyframe_snap
    reuse = reader.config.frame_reuse
    info = reader.info
    return plan_uniform_indices(
        window.start_s,
        window.end_s,
        count,
        fps=info.fps,
        frame_count=info.frame_count,
        keyframe_before=reader.keyframe_before if snap > 0 else None,
        keyframe_snap=snap,
        kept_near=reader.kept_near if reuse > 0 else None,
        frame_reuse=reuse,
    )


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
    return reader.frames_at_indices(
        uniform_indices(reader, start_s, end_s, count, keyframe_snap=keyframe_snap)
    )


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


def window_indices(
    reader: VideoReader,
    windows: Sequence[TimeWindow],
    count: int,
    *,
    keyframe_snap: float | None = None,
) -> list[int]:
    """The frame indices ``sample_windows`` reads: each window's share, merged, no repeats."""
    indices: set[int] = set()
    for window, share in zip(windows, allocate_frames(windows, count), strict=True):
        if share:
            indices.update(
                uniform_indices(
                    reader, window.start_s, window.end_s, share, keyframe_snap=keyframe_snap
                )
            )
    return sorted(indices)


def sample_windows(
    reader: VideoReader,
    windows: Sequence[TimeWindow],
    count: int,
    *,
    keyframe_snap: float | None = None,
) -> list[Frame]:
    """Up to ``count`` frames over several windows (Skim/Focus), in time order, no repeats."""
    return decode_indices(
        [reader], window_indices(reader, windows, count, keyframe_snap=keyframe_snap)
    )


def decode_indices(readers: Sequence[VideoReader], indices: Sequence[int]) -> list[Frame]:
    """The frames at ``indices``, in time order without repeats, decoded by all ``readers``.

    Each reader (its own file handle, on its own thread) takes one contiguous run of the
    sorted indices, so every reader decodes forward through its own stretch of the video:
    the frames are exactly those one reader would return, in less wall time on a multi-core
    machine (decoders release the GIL). Readers must be open on the same file.
    """
    ordered = sorted(set(indices))
    if not ordered:
        return []
    parts = min(len(readers), len(ordered))
    bounds = [round(k * len(ordered) / parts) for k in range(parts + 1)]
    chunks = [ordered[bounds[k] : bounds[k + 1]] for k in range(parts)]
    if parts == 1:
        decoded = [readers[0].frames_at_indices(chunks[0])]
    else:
        with ThreadPoolExecutor(max_workers=parts) as pool:
            decoded = list(
                pool.map(
                    lambda pair: pair[0].frames_at_indices(pair[1]),
                    zip(readers[:parts], chunks, strict=True),
                )
            )
    frames: dict[int, Frame] = {}
    for chunk in decoded:
        for frame in chunk:
            frames.setdefault(frame.index, frame)
    return [frames[i] for i in sorted(frames)]
