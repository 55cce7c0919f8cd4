"""Evidence units for PACE-Mem: text records grouped into clips (time windows).

PACE-Mem scores clips, not single records, so the leaf memory has to be cut into clips first.
A memory built by our builder already has clips (its atomic perception windows); an imported
MemDreamer memory does not, so fixed time bins inside the selected MacroEvents' spans stand in
for them. These types are deliberately plain (no dependency on ``videotapestry.memory``) so the
selection code can be tested and reused on any clip-based memory; a thin adapter turns memory
nodes into ``EvidenceRecord`` objects.

Assignment rule (one clip per record, so no record is shown or counted twice):

* an interval record (``end_s > start_s``) goes to the window it overlaps most; ties go to the
  earlier window;
* a point record (``end_s`` is None or equal to ``start_s``, e.g. an Entity's grounding time)
  goes to the window containing it; on a boundary shared by two windows it goes to the later
  one (windows are half-open, except that the end of the last window counts as inside);
* a record that touches no window (clock drift, a span that was cut) goes to the nearest
  window by time distance, ties to the earlier window; it is never dropped silently;
* with time bins, a record whose ``macro_id`` names one of the spans is only placed in that
  span's bins, so overlapping MacroEvents do not steal each other's records.

Windows that receive no record are dropped: an empty clip has nothing to score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from videotapestry.errors import RetrievalError

#: Records are placed against windows in blocks of this many rows, to bound memory use.
_ASSIGN_BLOCK = 2048


@dataclass(frozen=True, eq=False)
class EvidenceRecord:
    """One text record of the leaf memory (an Entity, Event or OCRText node, a caption line).

    ``embedding`` is the record's vector, or an integer row of the ``embeddings`` matrix passed
    to ``build_clips`` (how a stored memory keeps its node vectors). ``end_s=None`` marks a
    point in time. ``kind`` is free text for the reader ("Entity", "Event", "OCRText" ...);
    selection does not look at it.
    """

    id: str
    text: str
    start_s: float
    end_s: float | None
    embedding: np.ndarray | int
    macro_id: str | None = None
    kind: str = "record"

    @property
    def is_point(self) -> bool:
        return self.end_s is None or self.end_s == self.start_s


@dataclass(frozen=True)
class TimeWindow:
    """A MacroEvent span or a builder clip: an id and an absolute time range in seconds."""

    id: str
    start_s: float
    end_s: float


@dataclass(frozen=True, eq=False)
class Clip:
    """A time window and the records assigned to it, with their vectors as one matrix.

    ``embeddings`` row ``i`` belongs to ``records[i]``; records are in chronological order.
    """

    id: str
    start_s: float
    end_s: float
    records: tuple[EvidenceRecord, ...]
    embeddings: np.ndarray
    macro_id: str | None = None

    def __post_init__(self) -> None:
        matrix = self.embeddings
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2:
            shape = getattr(matrix, "shape", type(matrix).__name__)
            raise RetrievalError(
                f"clip {self.id!r}: embeddings must be a 2-D array (records x dimension), "
                f"got {shape}"
            )
        if matrix.shape[0] != len(self.records):
            raise RetrievalError(
                f"clip {self.id!r} has {len(self.records)} records but {matrix.shape[0]} "
                "embedding rows; each record needs exactly one row"
            )
        if not math.isfinite(self.start_s) or not math.isfinite(self.end_s):
            raise RetrievalError(f"clip {self.id!r}: start_s/end_s must be finite numbers")
        if self.end_s < self.start_s:
            raise RetrievalError(
                f"clip {self.id!r}: end_s {self.end_s} is before start_s {self.start_s}"
            )

    @property
    def texts(self) -> list[str]:
        return [record.text for record in self.records]


def time_bins(span: TimeWindow, bin_s: float) -> list[TimeWindow]:
    """Cut a span into consecutive bins of ``bin_s`` seconds.

    The last bin absorbs a remainder shorter than half a bin, so a 61 s span gives 30 s + 31 s
    instead of a 1 s sliver; a span shorter than half a bin (or of zero length) is one bin.
    """
    if not bin_s > 0:
        raise RetrievalError(f"clip bin length must be positive, got {bin_s}")
    _check_window(span, "span")
    duration = span.end_s - span.start_s
    count = max(1, math.floor(duration / bin_s + 0.5))
    edges = [span.start_s + bin_s * index for index in range(count)] + [span.end_s]
    return [
        TimeWindow(f"{span.id}_bin{index:02d}", edges[index], edges[index + 1])
        for index in range(count)
    ]


def build_clips(
    records: Sequence[EvidenceRecord],
    spans: Sequence[TimeWindow],
    *,
    builder_clips: Sequence[TimeWindow] | None = None,
    bin_s: float = 30.0,
    embeddings: np.ndarray | None = None,
) -> list[Clip]:
    """Group ``records`` into clips, in chronological order, following the module's rule.

    ``spans`` are the selected MacroEvents. With ``builder_clips`` the builder's windows that
    overlap those spans are the clips (all builder clips when ``spans`` is empty); without
    them each span is cut into ``bin_s`` bins. ``embeddings`` is the matrix that integer
    ``EvidenceRecord.embedding`` values index into.
    """
    for span in spans:
        _check_window(span, "MacroEvent span")
    if builder_clips is not None:
        for window in builder_clips:
            _check_window(window, "builder clip")
        windows = _builder_windows(builder_clips, spans)
        owners: list[str | None] = [None] * len(windows)
    else:
        windows, owners = [], []
        for span in spans:
            bins = time_bins(span, bin_s)
            windows += bins
            owners += [span.id] * len(bins)
    if not records:
        return []
    if not windows:
        raise RetrievalError(
            f"cannot place {len(records)} evidence records: no MacroEvent spans and no builder "
            "clips were given"
        )

    starts, ends = _record_times(records)
    vectors = _record_vectors(records, embeddings)
    order = sorted(range(len(windows)), key=lambda i: (windows[i].start_s, windows[i].end_s, i))
    windows = [windows[i] for i in order]
    owners = [owners[i] for i in order]
    window_codes, record_codes = _owner_codes(records, owners)
    assignment = _assign(starts, ends, windows, window_codes, record_codes)

    clips = []
    record_order = np.lexsort((np.arange(len(records)), starts, assignment))
    boundaries = np.flatnonzero(np.diff(assignment[record_order])) + 1
    for group in np.split(record_order, boundaries):
        window_index = int(assignment[group[0]])
        window = windows[window_index]
        members = tuple(records[i] for i in group)
        clips.append(
            Clip(
                id=window.id,
                start_s=window.start_s,
                end_s=window.end_s,
                records=members,
                embeddings=vectors[group],
                macro_id=owners[window_index],
            )
        )
    return clips


# --------------------------------------------------------------------------- helpers


def _check_window(window: TimeWindow, what: str) -> None:
    if not (math.isfinite(window.start_s) and math.isfinite(window.end_s)):
        raise RetrievalError(f"{what} {window.id!r}: start_s/end_s must be finite numbers")
    if window.end_s < window.start_s:
        raise RetrievalError(
            f"{what} {window.id!r}: end_s {window.end_s} is before start_s {window.start_s}"
        )


def _builder_windows(
    builder_clips: Sequence[TimeWindow], spans: Sequence[TimeWindow]
) -> list[TimeWindow]:
    if not spans:
        return list(builder_clips)
    kept = []
    for window in builder_clips:
        for span in spans:
            overlap = min(window.end_s, span.end_s) - max(window.start_s, span.start_s)
            inside = span.start_s <= window.start_s <= span.end_s
            if overlap > 0 or inside:
                kept.append(window)
                break
    return kept


def _record_times(records: Sequence[EvidenceRecord]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.empty(len(records))
    ends = np.empty(len(records))
    for index, record in enumerate(records):
        start = record.start_s
        end = record.start_s if record.end_s is None else record.end_s
        if not (math.isfinite(start) and math.isfinite(end)):
            raise RetrievalError(f"evidence record {record.id!r}: times must be finite numbers")
        if end < start:
            raise RetrievalError(
                f"evidence record {record.id!r}: end_s {end} is before start_s {start}"
            )
        starts[index], ends[index] = start, end
    return starts, ends


def _record_vectors(records: Sequence[EvidenceRecord], embeddings: np.ndarray | None) -> np.ndarray:
    if embeddings is not None and (not isinstance(embeddings, np.ndarray) or embeddings.ndim != 2):
        raise RetrievalError(
            "the embeddings matrix must be a 2-D array (rows x dimension), got "
            f"{getattr(embeddings, 'shape', type(embeddings).__name__)}"
        )
    rows = []
    for record in records:
        value = record.embedding
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if embeddings is None:
                raise RetrievalError(
                    f"evidence record {record.id!r} names embedding row {int(value)} but no "
                    "embeddings matrix was passed to build_clips"
                )
            if not 0 <= value < embeddings.shape[0]:
                raise RetrievalError(
                    f"evidence record {record.id!r}: embedding row {int(value)} is outside the "
                    f"matrix ({embeddings.shape[0]} rows)"
                )
            rows.append(embeddings[value])
        else:
            vector = np.asarray(value)
            if vector.ndim != 1:
                raise RetrievalError(
                    f"evidence record {record.id!r}: embedding must be a 1-D vector or a row "
                    f"index, got shape {vector.shape}"
                )
            rows.append(vector)
    first = rows[0].shape[0]
    for record, row in zip(records, rows, strict=True):
        if row.shape[0] != first:
            raise RetrievalError(
                f"evidence record {record.id!r} has a {row.shape[0]}-dimensional embedding but "
                f"{records[0].id!r} has {first}; all records need the same embedding model"
            )
    return np.asarray(np.stack(rows), dtype=np.float32)


def _owner_codes(
    records: Sequence[EvidenceRecord], owners: list[str | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the span owning each window (-2: none) and each record (-1: any)."""
    known = {name: code for code, name in enumerate(dict.fromkeys(o for o in owners if o))}
    window_codes = np.array([known.get(o, -2) if o else -2 for o in owners])
    record_codes = np.array([known.get(r.macro_id, -1) if r.macro_id else -1 for r in records])
    return window_codes, record_codes


def _assign(
    starts: np.ndarray,
    ends: np.ndarray,
    windows: list[TimeWindow],
    w_owner: np.ndarray,
    macro_codes: np.ndarray,
) -> np.ndarray:
    w_start = np.array([w.start_s for w in windows])
    w_end = np.array([w.end_s for w in windows])
    result = np.empty(len(starts), dtype=np.int64)
    for lo in range(0, len(starts), _ASSIGN_BLOCK):
        s = starts[lo : lo + _ASSIGN_BLOCK, None]
        e = ends[lo : lo + _ASSIGN_BLOCK, None]
        codes = macro_codes[lo : lo + _ASSIGN_BLOCK, None]
        allowed = (codes < 0) | (w_owner[None, :] == codes)
        overlap = np.minimum(e, w_end) - np.maximum(s, w_start)
        point = (e == s)[:, 0]
        # Interval records: the largest positive overlap, first (earliest) window on ties.
        best_overlap = np.where(allowed, overlap, -np.inf)
        interval_pick = np.argmax(best_overlap, axis=1)
        interval_ok = best_overlap[np.arange(len(s)), interval_pick] > 0
        # Point records: the latest-starting window that contains the point.
        contains = allowed & (w_start <= s) & (s <= w_end)
        latest = np.where(contains, np.arange(len(windows)), -1).max(axis=1)
        # Fallback for both: the nearest window, first on ties.
        distance = np.where(allowed, np.maximum(w_start - e, s - w_end).clip(min=0), np.inf)
        nearest = np.argmin(distance, axis=1)
        pick = np.where(point, np.where(latest >= 0, latest, nearest), 0)
        pick = np.where(~point, np.where(interval_ok, interval_pick, nearest), pick)
        result[lo : lo + _ASSIGN_BLOCK] = pick
    return result
