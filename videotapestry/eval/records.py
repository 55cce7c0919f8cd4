"""One line of a run's ``results.jsonl``: what the reports and ``compare`` read back.

A record is small and self-contained (gold letter, categories and duration bucket copied
from the question) so that a report never needs the annotations again, and a run directory
copied to another machine still reports and compares.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from videotapestry.eval.questions import EvalQuestion

Status = Literal["answered", "failed", "skipped"]


class RecordUsage(BaseModel):
    """Per-question usage, flattened from ``UsageSummary`` (cost None when unpriced)."""

    model_config = ConfigDict(extra="ignore")

    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    images: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    latency_s: float = 0.0


class ResultRecord(BaseModel):
    """A question's outcome under one variant.

    ``status`` is ``answered`` (there is a letter, maybe degraded or guessed), ``failed``
    (an error; ``error`` says which) or ``skipped`` (never run because the run stopped).
    Only answered and failed records count as finished: a rerun asks skipped ones again.
    ``fallback`` is True when the letter is a guess (the Answer agent gave none usable);
    ``degraded`` lists the kinds of every degradation (SPEC §7a).
    """

    model_config = ConfigDict(extra="ignore")

    question_id: str
    variant: str
    video_id: str
    status: Status
    prediction: str | None = None
    gold: str | None = None
    correct: bool | None = None
    categories: list[str] = Field(default_factory=list)
    duration_group: str | None = None
    answer_source: str | None = None
    fallback: bool = False
    degraded: list[str] = Field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    usage: RecordUsage = Field(default_factory=RecordUsage)
    elapsed_s: float = 0.0
    memory_tokens: int = 0
    #: The trace file, relative to the run directory.
    trace: str | None = None
    #: Set on records of variants reassembled from another variant's exploration.
    reassembled_from: str | None = None

    @property
    def finished(self) -> bool:
        return self.status != "skipped"

    @property
    def key(self) -> tuple[str, str]:
        return (self.variant, self.question_id)

    @classmethod
    def for_question(cls, question: EvalQuestion, variant: str, **fields: Any) -> ResultRecord:
        prediction = fields.get("prediction")
        correct = (
            None if prediction is None or question.answer is None else prediction == question.answer
        )
        return cls(
            question_id=question.id,
            variant=variant,
            video_id=question.video_id,
            gold=question.answer,
            correct=correct,
            categories=list(question.categories),
            duration_group=question.duration_group,
            **fields,
        )

    def to_json_line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False)
