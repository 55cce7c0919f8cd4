"""Stage 2b: shots → clips inside ``[min_s, max_s]``, covering the whole video without gaps.

Clips are the atomic perception unit (one model call each) and PACE-Mem's evidence unit, so
they should follow the video's own cuts where they can. The rule, a pure function of the
shot cuts:

1. Every stretch between two consecutive cuts (or the video's ends) that is longer than
   ``max_s`` is cut into equal parts no longer than ``max_s``.
2. Then, repeatedly, the shortest clip under ``min_s`` is merged with the shorter of its
   neighbours. When the merged clip would be longer than ``max_s`` it is cut in two equal
   halves instead (both then lie inside the bounds, because ``max_s >= 2 * min_s``), which
   moves that one boundary off the shot cut.

A video shorter than ``min_s`` is one clip. Boundaries are rounded to the millisecond.
The stage also reports the scan's last decoding problems, as the clips after them may lack
frames, and records the spans it could not decode (``scan.lost_spans``) with the clips
they cut into: a clip that lost only its tail still gets a caption, of what remains, so the
span is the one place the loss is named.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from memory_builders.context import BuildContext
from memory_builders.report import LostSpan
from memory_builders.scan import ScanResult, lost_spans

_EPS = 1e-6


@dataclass(frozen=True)
class ClipSpan:
    """One clip: ``clip_0001``-style id and its time span in seconds."""

    id: str
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def clip_id(number: int) -> str:
    return f"clip_{number:04d}"


def clip_stage(
    ctx: BuildContext, duration_s: float, scan: ScanResult, *, fps: float
) -> list[ClipSpan]:
    bounds = ctx.settings.clips
    clips = plan_clips(duration_s, scan.cuts, min_s=bounds.min_s, max_s=bounds.max_s)
    ctx.report.clips = len(clips)
    for message in scan.errors[-3:]:
        ctx.degraded("frames", "scan", message)
    ctx.report.lost_spans = [
        LostSpan(
            round(start, 3),
            round(end, 3),
            why,
            [c.id for c in clips if c.start_s < end - _EPS and c.end_s > start + _EPS],
        )
        for start, end, why in lost_spans(scan, duration_s, fps)
    ]
    return clips


def plan_clips(
    duration_s: float, cuts: Sequence[float], *, min_s: float, max_s: float
) -> list[ClipSpan]:
    """Clips covering ``[0, duration_s]`` that start at shot cuts where the bounds allow."""
    if duration_s <= 0:
        return []
    if max_s < 2 * min_s:
        raise ValueError(f"max_s ({max_s}) must be at least twice min_s ({min_s})")
    points = [0.0, *sorted(c for c in cuts if _EPS < c < duration_s - _EPS), duration_s]
    bounds = [0.0]
    for start, end in itertools.pairwise(points):
        parts = max(1, math.ceil((end - start) / max_s - _EPS))
        bounds.extend(start + (end - start) * k / parts for k in range(1, parts + 1))
    bounds = _merge_short(bounds, min_s, max_s)
    rounded = [round(b, 3) for b in bounds]
    rounded[-1] = duration_s
    return [
        ClipSpan(clip_id(number), start, end)
        for number, (start, end) in enumerate(itertools.pairwise(rounded), start=1)
        if end > start
    ]


def _merge_short(bounds: list[float], min_s: float, max_s: float) -> list[float]:
    bounds = list(bounds)
    while len(bounds) > 2:
        lengths = [b - a for a, b in itertools.pairwise(bounds)]
        short = [i for i, length in enumerate(lengths) if length < min_s - _EPS]
        if not short:
            break
        i = min(short, key=lambda k: (lengths[k], k))
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(lengths)]
        j = min(neighbours, key=lambda k: (lengths[k], k))
        first, second = min(i, j), max(i, j)
        merged = lengths[first] + lengths[second]
        # The boundary between clip ``first`` and ``second`` is bounds[first + 1].
        if merged <= max_s + _EPS:
            del bounds[first + 1]
        else:
            bounds[first + 1] = bounds[first] + merged / 2
    return bounds
