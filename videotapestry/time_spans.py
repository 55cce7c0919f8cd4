"""Sets of time spans in seconds: their union, length, intersection, IoU and overlap.

Grounding is scored by comparing where an answer says to look (the spans its citations
cite) with where a benchmark says the evidence is (LVBench's ``time_reference``, CG-Bench's
``clue_intervals``). Either side may be several spans that overlap each other, so every
measure here is taken on the *union* of a side: two citations of the same ten seconds are
ten seconds, not twenty. That is also how CG-Bench's own scorer merges intervals before its
IoU, so the figures are comparable.

Spans are closed: ``(5, 10)`` and ``(10, 20)`` touch at 10 and are merged into one, and a
citation of the moment 10 s (a frame: start equals end) overlaps both. A moment has no
length, so it can count as a hit but adds nothing to an intersection or an IoU.

Pure functions over ``(start, end)`` pairs; nothing here knows what a citation is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: ``(start, end)`` in seconds, ``start <= end``.
Span = tuple[float, float]


def checked(start: float, end: float) -> Span:
    """``(start, end)`` as floats, refused when it is not a span of a video.

    A ``ValueError`` names the pair, so a loader can add the file and row: times must be
    finite, not negative, and the end must not come before the start.
    """
    low, high = float(start), float(end)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"a time span must be finite seconds, got ({start!r}, {end!r})")
    if low < 0:
        raise ValueError(f"a time span cannot start before 0 s, got ({start!r}, {end!r})")
    if high < low:
        raise ValueError(f"a time span cannot end before it starts, got ({start!r}, {end!r})")
    return (low, high)


def union(spans: Iterable[Span]) -> list[Span]:
    """The spans merged where they overlap or touch, sorted by start."""
    merged: list[Span] = []
    for start, end in sorted(checked(*span) for span in spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total_length(spans: Iterable[Span]) -> float:
    """Seconds covered by the spans, each second counted once."""
    return sum(end - start for start, end in union(spans))


def intersection(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Where the union of ``a`` meets the union of ``b``, sorted; a shared endpoint or a
    moment inside the other side gives a zero-length piece (it is an overlap, of no length)."""
    left, right = union(a), union(b)
    pieces: list[Span] = []
    i = j = 0
    while i < len(left) and j < len(right):
        start = max(left[i][0], right[j][0])
        end = min(left[i][1], right[j][1])
        if start <= end:
            pieces.append((start, end))
        # Move past whichever span ends first; the other may still meet the next one.
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return union(pieces)


def overlaps(a: Iterable[Span], b: Iterable[Span]) -> bool:
    """Whether the two sets share any moment (touching counts; empty never overlaps)."""
    return bool(intersection(a, b))


def iou(a: Iterable[Span], b: Iterable[Span]) -> float:
    """Intersection over union of the two sets' unions, by length, in [0, 1].

    0.0 when both together cover no length (both empty, or moments only): there is nothing
    to measure, and a score of 1 would reward citing nothing.
    """
    left, right = union(a), union(b)
    covered = total_length([*left, *right])
    if covered <= 0:
        return 0.0
    return total_length(intersection(left, right)) / covered
