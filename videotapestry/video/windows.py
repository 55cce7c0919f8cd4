"""The window rules of SPEC §5 as pure functions over ``TimeWindow``.

The agents' plans come from a model, so their time ranges can be anything: reversed, NaN,
outside the video, or missing. These functions turn whatever was planned into the windows the
method actually observes, and each has a documented fallback instead of an error:

- ``visual_window`` (Overview): one continuous window, bounded by the video, at least
  ``min(min_span_s, duration)`` long; the whole video when nothing valid was planned.
- ``asr_windows`` (Overview's ASR tool): at most ``max_windows`` windows of
  ``min_span_s``–``max_span_s`` each inside the video (the whole video when it is shorter than
  ``min_span_s``); the visual window when nothing valid was planned.
- ``observation_windows`` (Skim/Focus): planned ranges intersected with the candidate
  memories' intervals; the candidate intervals when that leaves nothing.

Limits are arguments (the caller passes its config values), never constants here.
``TimeWindow`` is a ``NamedTuple``, so it is also a plain ``(start, end)`` tuple for code that
works with spans.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

#: What a planner may hand over as a range: a window, a 2-sequence or a {start, end} mapping.
RawRange = Any


class TimeWindow(NamedTuple):
    """A closed interval of video time in seconds; ``start_s <= end_s``."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def center_s(self) -> float:
        return (self.start_s + self.end_s) / 2.0

    def contains(self, t: float) -> bool:
        return self.start_s <= t <= self.end_s

    def overlaps(self, other: TimeWindow) -> bool:
        """True when the two share more than a boundary point."""
        return self.start_s < other.end_s and other.start_s < self.end_s

    def intersection(self, other: TimeWindow) -> TimeWindow | None:
        start, end = max(self.start_s, other.start_s), min(self.end_s, other.end_s)
        return TimeWindow(start, end) if start <= end else None

    def clip(self, duration_s: float) -> TimeWindow | None:
        """The part inside ``[0, duration_s]``, or None when the window lies entirely outside."""
        return self.intersection(TimeWindow(0.0, duration_s))


def as_window(raw: RawRange) -> TimeWindow | None:
    """Read one planned range; None when it is not two finite numbers with start <= end.

    Accepts a ``TimeWindow``, a ``(start, end)`` sequence, or a mapping with ``start``/``end``
    (or ``start_s``/``end_s``) keys — the shapes a model's JSON plan takes.
    """
    if isinstance(raw, Mapping):
        start = raw.get("start_s", raw.get("start"))
        end = raw.get("end_s", raw.get("end"))
    elif isinstance(raw, Sequence) and not isinstance(raw, (str, bytes)) and len(raw) == 2:
        start, end = raw
    else:
        return None
    try:
        start_f, end_f = float(start), float(end)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(start_f) and math.isfinite(end_f)) or end_f < start_f:
        return None
    return TimeWindow(start_f, end_f)


def valid_windows(planned: Iterable[RawRange] | None, duration_s: float) -> list[TimeWindow]:
    """The planned ranges that are well-formed, clipped to the video; the rest are dropped."""
    _check_duration(duration_s)
    kept = []
    for raw in planned or ():
        window = as_window(raw)
        clipped = window.clip(duration_s) if window is not None else None
        if clipped is not None:
            kept.append(clipped)
    return kept


def merge_overlapping(windows: Iterable[TimeWindow]) -> list[TimeWindow]:
    """Sorted, with overlapping or touching windows joined into one."""
    merged: list[TimeWindow] = []
    for window in sorted(windows):
        if merged and window.start_s <= merged[-1].end_s:
            last = merged[-1]
            merged[-1] = TimeWindow(last.start_s, max(last.end_s, window.end_s))
        else:
            merged.append(window)
    return merged


def widen(window: TimeWindow, span_s: float, duration_s: float) -> TimeWindow:
    """Grow ``window`` to ``span_s`` around its centre, shifted as needed to stay in the video.

    A window already at least ``span_s`` long is returned unchanged; ``span_s`` is capped at
    the duration.
    """
    span_s = min(span_s, duration_s)
    if window.duration_s >= span_s:
        return window
    start = window.center_s - span_s / 2.0
    start = min(max(start, 0.0), duration_s - span_s)
    return TimeWindow(start, min(start + span_s, duration_s))


def shrink(window: TimeWindow, span_s: float) -> TimeWindow:
    """Cut ``window`` down to ``span_s`` around its centre (unchanged when already shorter)."""
    if window.duration_s <= span_s:
        return window
    start = max(window.start_s, window.center_s - span_s / 2.0)
    return TimeWindow(start, min(start + span_s, window.end_s))


def visual_window(
    planned: Iterable[RawRange] | None, duration_s: float, *, min_span_s: float
) -> TimeWindow:
    """The Overview's one continuous observation window (SPEC §5, Algorithm 2 line 4).

    The valid planned ranges are merged into the single window spanning all of them (gaps
    included: the Overview looks at one continuous stretch), clipped to the video, then widened
    around its centre to at least ``min(min_span_s, duration_s)``. With no valid range, the
    whole video.
    """
    if min_span_s < 0:
        raise ValueError("min_span_s must be >= 0")
    ranges = valid_windows(planned, duration_s)
    if not ranges:
        return TimeWindow(0.0, duration_s)
    hull = TimeWindow(min(w.start_s for w in ranges), max(w.end_s for w in ranges))
    return widen(hull, min_span_s, duration_s)


def asr_windows(
    planned: Iterable[RawRange] | None,
    duration_s: float,
    fallback: TimeWindow | None,
    *,
    max_windows: int,
    min_span_s: float,
    max_span_s: float,
) -> list[TimeWindow]:
    """The transcript windows of the Overview's ASR tool (SPEC §5, Algorithm 2 lines 6–7).

    - A video shorter than ``min_span_s``: the whole video, one window.
    - Otherwise the first ``max_windows`` valid planned ranges, each widened (around its
      centre, inside the video) or shrunk (around its centre) to ``min_span_s``–``max_span_s``.
    - No valid planned range: the ``fallback`` (the visual window; the whole video if that is
      missing or invalid) covered by up to ``max_windows`` consecutive equal pieces of at most
      ``max_span_s`` each — its centre part when even that cannot cover it all. So a 600 s
      visual window is one ASR window, and a one-hour one is three 1200 s windows.

    Returned sorted by start, without exact duplicates.
    """
    if max_windows < 1:
        raise ValueError("max_windows must be >= 1")
    if not 0 < min_span_s <= max_span_s:
        raise ValueError("need 0 < min_span_s <= max_span_s")
    _check_duration(duration_s)
    if duration_s < min_span_s:
        return [TimeWindow(0.0, duration_s)]
    ranges = valid_windows(planned, duration_s)
    if ranges:
        chosen = [_fit_span(w, min_span_s, max_span_s, duration_s) for w in ranges[:max_windows]]
    else:
        base = valid_windows([fallback] if fallback is not None else [], duration_s)
        whole = base[0] if base else TimeWindow(0.0, duration_s)
        chosen = _cover(whole, max_windows, min_span_s, max_span_s, duration_s)
    return sorted(set(chosen))


def observation_windows(
    planned: Iterable[RawRange] | None,
    candidates: Iterable[RawRange],
    *,
    duration_s: float | None = None,
) -> list[TimeWindow]:
    """Skim/Focus observation windows (SPEC §5, Algorithm 2 line 13).

    Each valid planned range is intersected with each valid candidate interval; the pieces are
    merged and sorted. When that leaves nothing (no plan, invalid plan, or a plan outside every
    candidate), the candidate intervals themselves, merged. A zero-length piece is kept only
    when the planner asked for a single moment (a point range inside a candidate); pieces that
    merely touch at a boundary are dropped. ``duration_s``, when given, clips everything to the
    video. An empty result means there was no valid candidate either.
    """
    bound = duration_s if duration_s is not None else math.inf
    cands = valid_windows(candidates, bound)
    plans = valid_windows(planned, bound)
    pieces = []
    for plan in plans:
        for cand in cands:
            piece = plan.intersection(cand)
            if piece is None:
                continue
            if piece.duration_s > 0 or plan.duration_s == 0 or cand.duration_s == 0:
                pieces.append(piece)
    return merge_overlapping(pieces) if pieces else merge_overlapping(cands)


def _fit_span(
    window: TimeWindow, min_span_s: float, max_span_s: float, duration_s: float
) -> TimeWindow:
    return shrink(widen(window, min_span_s, duration_s), max_span_s)


def _cover(
    window: TimeWindow, max_windows: int, min_span_s: float, max_span_s: float, duration_s: float
) -> list[TimeWindow]:
    count = max(1, min(max_windows, math.ceil(window.duration_s / max_span_s - 1e-9)))
    part = shrink(window, count * max_span_s)
    step = part.duration_s / count
    edges = [part.start_s + k * step for k in range(count)] + [part.end_s]
    pieces = [TimeWindow(edges[k], edges[k + 1]) for k in range(count)]
    return [_fit_span(piece, min_span_s, max_span_s, duration_s) for piece in pieces]


def _check_duration(duration_s: float) -> None:
    if not (duration_s > 0):  # also rejects NaN
        raise ValueError(f"video duration must be positive, got {duration_s}")
