"""Whether an answer's citations point at the benchmark's evidence: grounding, per variant.

Scored on every finished question whose benchmark gives evidence times (LVBench's
``time_reference``, CG-Bench's ``clue_intervals``, a JSONL row's ``evidence_spans``), with
the union of the spans the answer cites against the union of the evidence spans
(``time_spans``):

- *hit rate*: the share of those questions whose cited spans overlap the evidence at all;
- *mIoU*: the mean intersection over union of the two unions (CG-Bench's measure);
- *recall at IoU 0.3 / 0.5*: the share whose IoU reaches the threshold;
- *accuracy among grounded*: of the scored questions that hit, the share answered right
  (is the answer right when it looks in the right place?), and *right and grounded*: the
  share of all scored evidence questions both right and hit (CG-Bench's accuracy@IoU
  counts this way, with its IoU threshold in place of a hit).

An answer that cites nothing is a miss with IoU 0, not left out; a failed question cites
nothing. Leaving them out would let a method raise its hit rate by citing only when it is
sure. The evidence spans scored are the ones clipped to the video; what was done to fit
them (spans ordered, clipped, dropped past the end; time references left unread) is
tallied per run by ``evidence_tally``, so the report says it. Every function here is pure
over records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from videotapestry.eval.records import ResultRecord
from videotapestry.eval.scoring import Accuracy, is_correct, is_scored
from videotapestry.time_spans import iou, overlaps

#: The IoU thresholds recall is reported at.
IOU_THRESHOLDS = (0.3, 0.5)


@dataclass(frozen=True)
class GroundingScore:
    """One question's cited spans against its evidence."""

    hit: bool
    iou: float
    cited: bool


def score(record: ResultRecord) -> GroundingScore | None:
    """The record's grounding; None when it is not scored for grounding (no evidence
    spans, or never run)."""
    if not record.finished or not record.evidence_spans:
        return None
    cited = record.cited_spans if record.status == "answered" else []
    return GroundingScore(
        hit=overlaps(cited, record.evidence_spans),
        iou=iou(cited, record.evidence_spans),
        cited=bool(cited),
    )


@dataclass(frozen=True)
class Grounding:
    """A variant's grounding over its finished questions with evidence spans."""

    #: Finished questions with evidence spans: every rate below is over these.
    questions: int = 0
    #: Of those, how many cited nothing (failed ones included).
    uncited: int = 0
    hits: int = 0
    iou_sum: float = 0.0
    #: Questions whose IoU reached each threshold of ``IOU_THRESHOLDS``, in order.
    at_iou: tuple[int, ...] = (0,) * len(IOU_THRESHOLDS)
    #: Right among the scored questions that hit.
    accuracy_grounded: Accuracy = field(default_factory=Accuracy)
    #: Right and hit among all scored questions with evidence.
    right_and_grounded: Accuracy = field(default_factory=Accuracy)

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.questions if self.questions else None

    @property
    def miou(self) -> float | None:
        return self.iou_sum / self.questions if self.questions else None

    def recall(self, threshold: float) -> float | None:
        if not self.questions:
            return None
        return self.at_iou[IOU_THRESHOLDS.index(threshold)] / self.questions

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "uncited": self.uncited,
            "hits": self.hits,
            "hit_rate": self.hit_rate,
            "miou": self.miou,
            **{f"recall_at_{t}": self.recall(t) for t in IOU_THRESHOLDS},
            "accuracy_grounded": self.accuracy_grounded.to_dict(),
            "right_and_grounded": self.right_and_grounded.to_dict(),
        }


def grounding(records: Iterable[ResultRecord]) -> Grounding:
    """The grounding of ``records`` (one per question: the latest, as the caller chose)."""
    questions = uncited = hits = 0
    iou_sum = 0.0
    at_iou = [0] * len(IOU_THRESHOLDS)
    hit_scored = right_hit = scored = 0
    for record in records:
        got = score(record)
        if got is None:
            continue
        questions += 1
        uncited += int(not got.cited)
        hits += int(got.hit)
        iou_sum += got.iou
        for index, threshold in enumerate(IOU_THRESHOLDS):
            at_iou[index] += int(got.iou >= threshold)
        if is_scored(record):
            scored += 1
            hit_scored += int(got.hit)
            right_hit += int(got.hit and is_correct(record))
    return Grounding(
        questions=questions,
        uncited=uncited,
        hits=hits,
        iou_sum=iou_sum,
        at_iou=tuple(at_iou),
        accuracy_grounded=Accuracy(correct=right_hit, total=hit_scored),
        right_and_grounded=Accuracy(correct=right_hit, total=scored),
    )


def grounding_by(
    records: Iterable[ResultRecord], groups: Callable[[ResultRecord], Iterable[str]]
) -> dict[str, Grounding]:
    """Grounding per group (``groups(record)`` names a record's groups; a record counts in
    every group it belongs to), for the groups holding a question with evidence."""
    members: dict[str, list[ResultRecord]] = {}
    for record in records:
        if score(record) is None:
            continue
        for group in dict.fromkeys(groups(record)):
            members.setdefault(group, []).append(record)
    return {group: grounding(chosen) for group, chosen in sorted(members.items())}


@dataclass(frozen=True)
class EvidenceTally:
    """What a run's loaders and runner did to the benchmark's evidence times, per question
    (once, whatever the number of variants): spans given end first and put in order, spans
    clipped at the video's end, spans dropped for starting past it, and the questions whose
    time reference could not be read (they have no evidence spans)."""

    reversed: int = 0
    clipped: int = 0
    past_end: int = 0
    #: Ids of the questions whose time reference was unreadable, in first-seen order.
    unreadable: tuple[str, ...] = ()

    @property
    def noted(self) -> bool:
        return bool(self.reversed or self.clipped or self.past_end or self.unreadable)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reversed_spans_ordered": self.reversed,
            "spans_clipped": self.clipped,
            "spans_dropped_past_end": self.past_end,
            "unreadable_time_references": len(self.unreadable),
            "unreadable_question_ids": list(self.unreadable),
        }


def evidence_tally(records: Iterable[ResultRecord]) -> EvidenceTally:
    """The tally over ``records``: each question counted once, with the most any of its
    records noted (an answered record may clip further, to the probed video's duration)."""
    most: dict[str, tuple[int, int, int, bool]] = {}
    for record in records:
        notes = record.evidence_notes
        ordered, clipped, dropped, unread = most.get(record.question_id, (0, 0, 0, False))
        most[record.question_id] = (
            max(ordered, notes.reversed),
            max(clipped, notes.clipped),
            max(dropped, notes.past_end),
            unread or notes.unreadable is not None,
        )
    return EvidenceTally(
        reversed=sum(counts[0] for counts in most.values()),
        clipped=sum(counts[1] for counts in most.values()),
        past_end=sum(counts[2] for counts in most.values()),
        unreadable=tuple(qid for qid, counts in most.items() if counts[3]),
    )
