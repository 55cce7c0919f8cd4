"""One line of a run's ``results.jsonl``: what the reports and ``compare`` read back.

A record is small and self-contained (gold letter, reference answer, evidence spans,
categories and duration bucket copied from the question) so that a report never needs the
annotations again, and a run directory copied to another machine still reports and
compares. Every field added since the first records has a default, so records written
before it existed still load (as answers that cited nothing and were not judged).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from videotapestry.agents.state import FORMER_DEGRADATIONS
from videotapestry.eval.questions import EvalQuestion, EvidenceNotes

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
    #: Of ``prompt_tokens``, those the provider served from its prefix cache.
    cached_prompt_tokens: int = 0
    #: Of ``completion_tokens``, those spent on hidden reasoning.
    reasoning_tokens: int = 0


#: The name a record gives the offline profile's judge: a rule (key terms and embedding
#: agreement), not a language model, so its verdicts are approximate.
OFFLINE_JUDGE = "offline"


class Judgement(BaseModel):
    """A judge model's verdict on a free-form answer against the reference answer.

    ``judge`` names who judged: the judge role's model, or ``offline`` for the offline
    profile's approximate rule. ``correct`` is None when the judge gave no verdict (its
    call failed: ``error`` says why); such an answer is counted, not scored.
    """

    model_config = ConfigDict(extra="ignore")

    judge: str
    correct: bool | None = None
    score: float | None = None
    reasoning: str = ""
    error: str | None = None
    #: The judge's own calls, kept apart from the question's (judging is not the method).
    usage: RecordUsage = Field(default_factory=RecordUsage)

    @property
    def approximate(self) -> bool:
        return self.judge == OFFLINE_JUDGE


class ResultRecord(BaseModel):
    """A question's outcome under one variant.

    ``status`` is ``answered`` (there is a letter, maybe degraded or guessed), ``failed``
    (an error; ``error`` says which) or ``skipped`` (never run because the run stopped).
    Only answered and failed records count as finished: a rerun asks skipped ones again.
    ``fallback`` is True when the letter is a guess (the Answer agent gave none usable);
    ``degraded`` lists the kinds of every degradation (SPEC §7a), ``warnings`` the kinds of
    what is worth knowing but lost nothing of the method (a made-up citation). A free-form
    question has no letters (``prediction`` and ``gold`` are None): ``answer_text`` is the
    answer and ``judgement`` the judge's verdict against ``reference_answer``.
    ``cited_spans`` are the union of the spans the answer's citations cite (empty: it cited
    nothing), scored against the benchmark's ``evidence_spans`` where it gives some.
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
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    usage: RecordUsage = Field(default_factory=RecordUsage)
    elapsed_s: float = 0.0
    memory_tokens: int = 0
    #: The trace file, relative to the run directory.
    trace: str | None = None
    #: Set on records of variants reassembled from another variant's exploration.
    reassembled_from: str | None = None
    #: The answer in words (a free-form answer, or the chosen option's text).
    answer_text: str = ""
    #: The reference a free-form answer is judged against, copied from the question.
    reference_answer: str | None = None
    judgement: Judgement | None = None
    #: Union of the answer's cited spans, merged and sorted (seconds).
    cited_spans: list[tuple[float, float]] = Field(default_factory=list)
    #: Where the benchmark says the evidence is (seconds), copied from the question and
    #: clipped to the video (the benchmark's duration, or the probed one when answered).
    evidence_spans: list[tuple[float, float]] = Field(default_factory=list)
    #: What was done to those spans to fit the video, and an unreadable time reference.
    evidence_notes: EvidenceNotes = Field(default_factory=EvidenceNotes)

    @model_validator(mode="before")
    @classmethod
    def _former_degradations_as_warnings(cls, data: Any) -> Any:
        """A record written while a made-up citation was a degradation lists it under
        ``degraded``; it is read as the warning it now is (so an older run's clean answers
        are counted clean, as a rerun would count them)."""
        if not isinstance(data, dict) or not isinstance(data.get("degraded"), list):
            return data
        warnings = data.get("warnings", [])
        former = [isinstance(k, str) and k in FORMER_DEGRADATIONS for k in data["degraded"]]
        if not any(former) or not isinstance(warnings, list):
            return data
        pairs = list(zip(data["degraded"], former, strict=True))
        return {
            **data,
            "degraded": [kind for kind, was in pairs if not was],
            "warnings": [*warnings, *(k for k, was in pairs if was and k not in warnings)],
        }

    @property
    def finished(self) -> bool:
        return self.status != "skipped"

    @property
    def key(self) -> tuple[str, str]:
        return (self.variant, self.question_id)

    @property
    def free_form(self) -> bool:
        """Asked without options: judged against a reference, not scored by letter."""
        return self.gold is None and self.reference_answer is not None

    @classmethod
    def for_question(
        cls,
        question: EvalQuestion,
        variant: str,
        *,
        video_duration_s: float | None = None,
        **fields: Any,
    ) -> ResultRecord:
        """The record of ``question`` under ``variant``; ``video_duration_s`` (the probed
        video's, when it was answered) clips its evidence spans further
        (``EvalQuestion.within_video``)."""
        question = question.within_video(video_duration_s)
        prediction = fields.get("prediction")
        judgement = fields.get("judgement")
        if question.free_form:
            correct = None if judgement is None else judgement.correct
        else:
            correct = (
                None
                if prediction is None or question.answer is None
                else prediction == question.answer
            )
        return cls(
            question_id=question.id,
            variant=variant,
            video_id=question.video_id,
            gold=question.answer,
            correct=correct,
            categories=list(question.categories),
            duration_group=question.duration_group,
            reference_answer=question.reference_answer if question.free_form else None,
            evidence_spans=list(question.evidence_spans),
            evidence_notes=question.evidence_notes,
            **fields,
        )

    def to_json_line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False)
