"""Stage 5a rules: where MacroEvents begin, from a sliding window over the clip captions.

Clip captions are shown to a text model in windows of about ``window_s`` seconds that
overlap by ``overlap_s``; the model names the clips where a new event begins. Each window
*owns* the part of the video between the middles of its overlaps with its neighbours, and
only the boundaries it proposes inside its own part are kept, so every stretch of the video
is decided once, by the window that sees it with the most context on both sides. When a
window's call fails, its part falls back to embedding change points: a boundary before a
clip whose caption is much less similar to the previous one than is usual in that window.
Finally MacroEvents shorter than ``min_s`` merge into the neighbour they are more similar
to, and ones longer than ``max_s`` are split at their weakest link.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_builders.segmentation import ClipSpan

_EPS = 1e-6


@dataclass(frozen=True)
class BoundaryWindow:
    """Clips ``first``..``last`` (indices) shown in one call; it owns [own_start, own_end)."""

    first: int
    last: int
    own_start: float
    own_end: float


def boundary_windows(
    clips: Sequence[ClipSpan], window_s: float, overlap_s: float
) -> list[BoundaryWindow]:
    if not clips:
        return []
    spans: list[tuple[int, int]] = []
    first = 0
    while True:
        start = clips[first].start_s
        last = first
        while last + 1 < len(clips) and clips[last + 1].start_s < start + window_s - _EPS:
            last += 1
        spans.append((first, last))
        if last == len(clips) - 1:
            break
        step_to = start + max(window_s - overlap_s, _EPS)
        nxt = next((i for i in range(first + 1, last + 1) if clips[i].start_s >= step_to), last)
        first = max(first + 1, nxt)
    windows = []
    for k, (a, b) in enumerate(spans):
        own_start = -math.inf
        own_end = math.inf
        if k > 0:
            prev_end = clips[spans[k - 1][1]].end_s
            own_start = (clips[a].start_s + prev_end) / 2
        if k + 1 < len(spans):
            own_end = (clips[spans[k + 1][0]].start_s + clips[b].end_s) / 2
        windows.append(BoundaryWindow(a, b, own_start, own_end))
    return windows


def kept_boundaries(
    window: BoundaryWindow, clips: Sequence[ClipSpan], proposed: Sequence[str]
) -> set[int]:
    """Clip indices (> 0) at which a MacroEvent begins, from one window's proposal."""
    index = {clips[i].id: i for i in range(window.first, window.last + 1)}
    kept = set()
    for clip_id in proposed:
        i = index.get(str(clip_id).strip())
        if i is None or i == 0:
            continue
        if window.own_start - _EPS <= clips[i].start_s < window.own_end - _EPS:
            kept.add(i)
    return kept


def neighbour_similarity(vectors: np.ndarray, valid: Sequence[bool]) -> np.ndarray:
    """Cosine similarity of each clip's caption to the previous clip's (1.0 for the first and
    wherever either caption is missing, so a failed clip never makes a boundary)."""
    sims = np.ones(len(valid), dtype=np.float64)
    for i in range(1, len(valid)):
        if valid[i] and valid[i - 1]:
            sims[i] = float(np.dot(vectors[i], vectors[i - 1]))
    return sims


def change_points(window: BoundaryWindow, sims: np.ndarray, clips: Sequence[ClipSpan]) -> set[int]:
    """Fallback boundaries in a window's own part: similarity a standard deviation below the
    window's mean and lower than both neighbours'."""
    indices = [i for i in range(max(1, window.first), window.last + 1)]
    if len(indices) < 2:
        return set()
    values = sims[indices]
    threshold = float(values.mean() - values.std())
    cuts = set()
    for i in indices:
        left = sims[i - 1] if i - 1 >= 1 else math.inf
        right = sims[i + 1] if i + 1 < len(sims) else math.inf
        owned = window.own_start - _EPS <= clips[i].start_s < window.own_end - _EPS
        if owned and sims[i] < threshold and sims[i] <= left and sims[i] <= right:
            cuts.add(i)
    return cuts


def segments_from_boundaries(count: int, boundaries: set[int]) -> list[list[int]]:
    starts = [0, *sorted(b for b in boundaries if 0 < b < count)]
    ends = [*starts[1:], count]
    return [list(range(a, b)) for a, b in zip(starts, ends, strict=True)]


def enforce_lengths(
    segments: list[list[int]],
    clips: Sequence[ClipSpan],
    sims: np.ndarray,
    *,
    min_s: float,
    max_s: float,
) -> list[list[int]]:
    """Merge MacroEvents shorter than ``min_s`` and split ones longer than ``max_s``."""

    def length(seg: list[int]) -> float:
        return clips[seg[-1]].end_s - clips[seg[0]].start_s

    segments = [list(s) for s in segments if s]
    while len(segments) > 1:
        short = [k for k, s in enumerate(segments) if length(s) < min_s - _EPS]
        if not short:
            break
        k = min(short, key=lambda j: (length(segments[j]), j))
        options = []
        if k > 0:
            options.append((sims[segments[k][0]], k - 1))
        if k + 1 < len(segments):
            options.append((sims[segments[k + 1][0]], k + 1))
        _, other = max(options, key=lambda o: (o[0], -o[1]))
        a, b = min(k, other), max(k, other)
        segments[a : b + 1] = [segments[a] + segments[b]]
    out: list[list[int]] = []
    pending = list(segments)
    while pending:
        seg = pending.pop(0)
        if length(seg) <= max_s + _EPS or len(seg) < 2:
            out.append(seg)
            continue
        cut = min(range(1, len(seg)), key=lambda j: (sims[seg[j]], abs(j - len(seg) / 2)))
        pending[:0] = [seg[:cut], seg[cut:]]
    return out
