"""The multi-anchor locator's pure parts: a target split into anchors, anchors into windows.

A question often names several things at once (Tom, the score card, the kitchen); each is an
anchor searched on its own, and a candidate window is one joint hypothesis holding a grounded
match for every anchor, compact in time. Both steps are pure functions of their input, so they
are tested without a memory and reused by ``MemoryLocator.locate``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from videotapestry.memory.locator_hits import AnchorMatch, CandidateWindow, LocatorHit
from videotapestry.memory.types import TimeRange

_SPLIT = re.compile(r"\s*(?:[,;|/+]|\b(?:and|then|with|after|before|while)\b)\s*", re.I)
_QUOTED = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")
_ARTICLES = re.compile(r"^(?:(?:the|a|an)\b\s*)+", re.I)


def split_anchors(target: str) -> list[str]:
    """Split a free-text target into atomic anchors (quoted phrases stay whole).

    A simple fallback for callers without a planner: ``'Tom and the "score card"'`` →
    ``["score card", "Tom"]``. Agents normally pass their own anchor list to ``locate``.
    """
    quoted = [q.strip() for q in _QUOTED.findall(target) if q.strip()]
    rest = _QUOTED.sub(" , ", target)
    parts = [_ARTICLES.sub("", p.strip()).strip() for p in _SPLIT.split(rest)]
    anchors = quoted + [p for p in parts if p]
    return list(dict.fromkeys(anchors))


def _iou(a: TimeRange, b: TimeRange) -> float:
    inter = min(a.end, b.end) - max(a.start, b.start)
    if inter < 0:
        return 0.0
    union = max(a.end, b.end) - min(a.start, b.start)
    return 1.0 if union == 0 else inter / union


def candidate_windows(
    hits: Mapping[str, Sequence[LocatorHit]],
    *,
    compactness_s: float = 600.0,
    limit: int | None = None,
    max_overlap: float | None = None,
) -> list[CandidateWindow]:
    """Joint hypotheses with one match per anchor, best first. Pure function of its input.

    Every match of every anchor is taken in turn as a pivot; each anchor contributes the
    match that best trades its score against its time gap to the pivot
    (score x exp(-gap / compactness_s)). A window's score is the mean match score x
    exp(-span / compactness_s), so strong matches that sit close together rank first, and a
    tight cluster of weak matches does not hide a slightly wider cluster of exact ones.
    With ``max_overlap``, a window whose time range overlaps a better one by more than that
    (intersection over union) is dropped; ``limit`` caps how many are returned.
    """
    anchors = list(hits)
    if not anchors or any(not hits[a] for a in anchors):
        return []
    scale = compactness_s if compactness_s > 0 else math.inf
    groups = [list(hits[a]) for a in anchors]
    starts = [np.array([h.time_range.start for h in g]) for g in groups]
    ends = [np.array([h.time_range.end for h in g]) for g in groups]
    scores = [np.array([h.score for h in g]) for g in groups]
    pivot_starts, pivot_ends = np.concatenate(starts), np.concatenate(ends)
    # chosen[p, a]: index into groups[a] of the match anchor a contributes for pivot p.
    chosen = np.empty((pivot_starts.size, len(anchors)), dtype=np.int64)
    for a in range(len(anchors)):
        gaps = np.maximum(
            0.0,
            np.maximum(
                starts[a][None, :] - pivot_ends[:, None], pivot_starts[:, None] - ends[a][None, :]
            ),
        )
        chosen[:, a] = np.argmax(scores[a][None, :] * np.exp(-gaps / scale), axis=1)
    chosen = np.unique(chosen, axis=0)
    columns = range(len(anchors))
    window_start = np.min([starts[a][chosen[:, a]] for a in columns], axis=0)
    window_end = np.max([ends[a][chosen[:, a]] for a in columns], axis=0)
    mean = np.mean([scores[a][chosen[:, a]] for a in columns], axis=0)
    window_score = np.round(mean * np.exp(-(window_end - window_start) / scale), 6)
    order = np.lexsort((window_start, window_end - window_start, -window_score))
    windows: list[CandidateWindow] = []
    for row in order:
        span = TimeRange.model_construct(start=float(window_start[row]), end=float(window_end[row]))
        if max_overlap is not None and any(
            _iou(span, kept.time_range) > max_overlap for kept in windows
        ):
            continue
        matches = tuple(
            AnchorMatch(anchor=anchors[a], hit=groups[a][chosen[row, a]]) for a in columns
        )
        windows.append(
            CandidateWindow(time_range=span, matches=matches, score=float(window_score[row]))
        )
        if limit is not None and len(windows) >= limit:
            break
    return windows
