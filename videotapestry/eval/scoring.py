"""Whether one record counts, and whether it is right: the rules every table applies.

Kept apart from the tables (``metrics``, ``grounding``, ``compare``) so each of them scores
a question the same way:

- A multiple-choice question is scored when it finished (answered or failed) and has a
  gold letter, and is right when the predicted letter is the gold one. Correctness is
  recomputed from the letters rather than trusted from the record, so an edited or older
  record cannot disagree with its own letters.
- A free-form question (no gold letter, a reference answer) is right when the judge said
  so. A failed one is scored and wrong, like a failed multiple-choice question; an answered
  one the judge gave no verdict on (its call failed) is counted but not scored: the answer
  may be right, and calling it wrong would blame the method for the judge.
- Skipped questions were never run; they are never scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from videotapestry.eval.records import ResultRecord

#: The degradation kind that ``fallback`` already reports; not counted again as degraded.
ANSWER_FALLBACK = "answer_fallback"


@dataclass(frozen=True)
class Accuracy:
    correct: int = 0
    total: int = 0

    @property
    def value(self) -> float | None:
        return self.correct / self.total if self.total else None

    @property
    def percent(self) -> float | None:
        return None if self.value is None else 100.0 * self.value

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "total": self.total, "accuracy": self.value}


def is_judged(record: ResultRecord) -> bool:
    """A judge gave a verdict on this (free-form) answer."""
    return record.judgement is not None and record.judgement.correct is not None


def is_unjudged(record: ResultRecord) -> bool:
    """An answered free-form question with a reference that has no verdict."""
    return record.status == "answered" and record.free_form and not is_judged(record)


def is_scored(record: ResultRecord) -> bool:
    if not record.finished:
        return False
    if record.gold is not None:
        return True
    if record.reference_answer is None:
        return False
    return record.status == "failed" or is_judged(record)


def is_correct(record: ResultRecord) -> bool:
    """Right answer: by letter, or by the judge's verdict; a failed question is never right."""
    if record.status != "answered":
        return False
    if record.gold is not None:
        return record.prediction == record.gold
    return record.judgement is not None and record.judgement.correct is True


def is_guess(record: ResultRecord) -> bool:
    """The letter is a guess (the Answer agent gave none usable)."""
    return record.status == "answered" and (record.fallback or ANSWER_FALLBACK in record.degraded)


def is_degraded(record: ResultRecord) -> bool:
    """The method lost something other than the final letter (that is ``is_guess``)."""
    return any(kind != ANSWER_FALLBACK for kind in record.degraded)
