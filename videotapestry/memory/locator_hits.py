"""What the locator answers: hits, one anchor's match, candidate windows, a whole result.

These are the hints the Overview agent reads (and a trace records), kept apart from the
searches that produce them so that the window logic and the agents can use them without the
search indexes. Lexical matches are scored on the same 0..1 scale as cosine similarities, so
hits of every search can be ranked together.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from videotapestry.memory.types import TimeRange

MatchKind = Literal[
    "exact",
    "alias",
    "substring",
    "ocr_exact",
    "ocr_substring",
    "ocr_confusable",
    "text",
    "semantic",
    "time",
]

#: Scores of lexical matches, on the same 0..1 scale as cosine similarities.
LEXICAL_SCORES: dict[str, float] = {
    "exact": 1.0,
    "ocr_exact": 1.0,
    "alias": 0.95,
    "substring": 0.75,
    "ocr_substring": 0.75,
    "ocr_confusable": 0.7,
    "text": 0.6,
    "time": 1.0,
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LocatorHit(_Frozen):
    """One node that matched, with where it sits in the hierarchy and in time."""

    node_id: str
    kind: str
    label: str
    description: str
    time_range: TimeRange
    macro_id: str | None
    super_id: str | None
    match: MatchKind
    score: float


class AnchorMatch(_Frozen):
    anchor: str
    hit: LocatorHit


class CandidateWindow(_Frozen):
    """A joint hypothesis: one match per anchor, and the time span that covers them all."""

    time_range: TimeRange
    matches: tuple[AnchorMatch, ...]
    score: float

    @property
    def span_s(self) -> float:
        return self.time_range.duration

    @property
    def macro_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.hit.macro_id for m in self.matches if m.hit.macro_id))

    @property
    def super_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.hit.super_id for m in self.matches if m.hit.super_id))


class MultiAnchorResult(_Frozen):
    anchors: tuple[str, ...]
    candidate_windows: tuple[CandidateWindow, ...]
    unresolved_anchors: tuple[str, ...]
    anchor_hits: dict[str, tuple[LocatorHit, ...]]
