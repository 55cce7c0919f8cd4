"""What answering a question produces: ``Result``, its saved trace, and batch outcomes.

A result carries everything needed to see how the answer was reached (levels, composite
memory, trace, usage), everything that made the run differ from the method (``degraded``)
and what a reader should know about the answer that is no such loss (``warnings``: a cited
id that names nothing). Its saved trace is complete enough to reassemble the same
exploration under another memory variant later (``load_exploration`` →
``VideoTapestry.reanswer``), which is how the paper's Table 3(b) compares final memories
over one fixed exploration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from videotapestry.agents.state import (
    FORMER_DEGRADATIONS,
    AnswerOutcome,
    Citation,
    Degradation,
    HandoffEntry,
    LevelOutcome,
    QuestionInput,
    ResultWarning,
)
from videotapestry.errors import VideoTapestryError
from videotapestry.files import parse_json, write_atomic
from videotapestry.images import ImagePart
from videotapestry.llm.usage import UsageSummary
from videotapestry.trace import Trace, TraceEvent

if TYPE_CHECKING:
    from videotapestry.assemble import CompositeMemory
    from videotapestry.llm.service import ModelSession
    from videotapestry.memory import VideoMemory

TRACE_FORMAT = 2


@dataclass
class Result:
    """One answered question, with everything needed to see how the answer was reached."""

    question_id: str
    question: str
    options: list[str]
    answer: str
    reasoning: str
    answer_source: str
    variant: str
    memory_text: str
    memory_tokens: int
    handoff_trace: str
    levels: list[LevelOutcome]
    trace: Trace
    usage: UsageSummary
    prompt_hashes: dict[str, str]
    observation_disabled: str | None = None
    elapsed_s: float = 0.0
    images: list[ImagePart] = field(default_factory=list, repr=False)
    #: What made this run differ from the method (SPEC §7a); empty for a faithful run.
    degraded: list[Degradation] = field(default_factory=list)
    #: What to know about the answer that is no loss of the method (a made-up citation).
    warnings: list[ResultWarning] = field(default_factory=list)
    #: The answer in words: a free-form question's answer, or the chosen option's text.
    answer_text: str = ""
    #: The claims of the answer with the evidence each cites (moments of the video).
    citations: list[Citation] = field(default_factory=list)
    #: A follow-up in the user's words when its "that" was resolved (``question`` is then
    #: the resolved text the agents were given); empty otherwise.
    asked: str = ""
    #: False when the answer was not asked to cite (``answer.citations: false``).
    citations_asked: bool = True
    handoff: list[HandoffEntry] = field(default_factory=list)
    #: Identifies the exploration; a reanswered result keeps its exploration's id.
    run_id: str = ""
    #: Set on results of ``reanswer``: the run whose exploration was reused.
    reassembled_from: str | None = None
    memory_source: str | None = None
    video_fingerprint: str | None = None
    #: The video the agents saw (absolute path) and its duration, for pictures of the run.
    video_path: str | None = None
    video_duration_s: float | None = None
    #: Time ranges (seconds) of the memory nodes the levels examined, for the same pictures.
    node_times: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: A live memory's version the question read (SPEC §16): ``version``, ``covered_s``,
    #: ``ended``, ``source`` and ``text`` ("live memory covering 00:00-03:20 (still
    #: recording)"); None for a memory of a finished video.
    memory_covers: dict[str, Any] | None = None
    #: Draws this result for notebooks (``_repr_html_``). The API hands it the trace page's
    #: fragment: the views read results, so a result cannot import them.
    html_view: Callable[[Result], str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_run(
        cls,
        exploration: Exploration,
        final_memory: CompositeMemory,
        answer: AnswerOutcome,
        session: ModelSession,
        *,
        variant: str,
        memory: VideoMemory,
        prompt_hashes: Mapping[str, str],
        elapsed_s: float,
        reassembled_from: str | None = None,
        observation_disabled: str | None = None,
        images: Sequence[ImagePart] = (),
        warnings: Sequence[ResultWarning] = (),
        html_view: Callable[[Result], str] | None = None,
    ) -> Result:
        """The result of answering ``exploration``'s question from ``final_memory``.

        A question answered from the start and a finished exploration answered again under
        another final memory (``reanswer``) are the same story told with different parts,
        so both are built here. ``variant`` names the final memory (for a run from the
        start, the config's variant); ``memory`` is where the nodes the levels examined are
        looked up; ``session`` holds the model calls this answer made. A fallback answer
        is added to the exploration's degradations; the ``warnings`` of its setup (the
        memory's replaced vectors) come first, then each level's (a look moved onto the
        question's window), then cited ids that name no evidence.
        """
        question = exploration.question
        return cls(
            question_id=question.question_id,
            question=question.question,
            options=question.options,
            answer=answer.letter,
            reasoning=answer.reasoning,
            answer_source=answer.source,
            variant=variant,
            memory_text=final_memory.text,
            memory_tokens=final_memory.tokens,
            handoff_trace=final_memory.handoff_trace,
            levels=list(exploration.levels),
            trace=session.trace,
            usage=session.usage.summary(),
            prompt_hashes=dict(prompt_hashes),
            observation_disabled=observation_disabled,
            elapsed_s=elapsed_s,
            images=list(images),
            degraded=[*exploration.degraded, *_answer_degradation(answer)],
            warnings=[
                *warnings,
                *(w for level in exploration.levels for w in level.warnings),
                *_answer_warnings(answer),
            ],
            answer_text=answer.text,
            citations=list(answer.citations),
            citations_asked=answer.citations_asked,
            asked=question.asked,
            handoff=list(exploration.handoff),
            run_id=exploration.run_id,
            reassembled_from=reassembled_from,
            memory_source=exploration.memory_source,
            video_fingerprint=exploration.video_fingerprint,
            video_path=exploration.video_path,
            video_duration_s=exploration.video_duration_s,
            node_times=_node_times(memory, exploration.levels),
            html_view=html_view,
        )

    @property
    def levels_visited(self) -> list[str]:
        return [outcome.level for outcome in self.levels]

    @property
    def is_degraded(self) -> bool:
        return bool(self.degraded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "run_id": self.run_id,
            "question": self.question,
            "options": self.options,
            "answer": self.answer,
            "reasoning": self.reasoning,
            "answer_source": self.answer_source,
            "variant": self.variant,
            "levels_visited": self.levels_visited,
            "memory_tokens": self.memory_tokens,
            "handoff_trace": self.handoff_trace,
            "usage": self.usage.to_dict(),
            "prompt_hashes": self.prompt_hashes,
            "observation_disabled": self.observation_disabled,
            "degraded": [d.model_dump(mode="json") for d in self.degraded],
            "warnings": [w.model_dump(mode="json") for w in self.warnings],
            "answer_text": self.answer_text,
            "citations": [c.model_dump(mode="json") for c in self.citations],
            "citations_asked": self.citations_asked,
            "asked": self.asked,
            "reassembled_from": self.reassembled_from,
            "memory_covers": self.memory_covers,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def save_trace(self, path: str | Path) -> Path:
        """The whole story of this question as one JSON file (written atomically)."""
        path = Path(path)
        payload = {
            "format": TRACE_FORMAT,
            "result": self.to_dict(),
            "memory_text": self.memory_text,
            "memory_source": self.memory_source,
            "video_fingerprint": self.video_fingerprint,
            "video": {"path": self.video_path, "duration_s": self.video_duration_s},
            "node_times": {node: list(span) for node, span in self.node_times.items()},
            "levels": [outcome.model_dump(mode="json") for outcome in self.levels],
            "handoff": [entry.model_dump(mode="json") for entry in self.handoff],
            "events": json.loads(self.trace.to_json()),
        }
        write_atomic(path, json.dumps(payload, ensure_ascii=False, indent=1))
        return path

    def _repr_html_(self) -> str | None:
        """The notebook view: the same picture ``inspect TRACE --html`` draws, from the
        images this result kept (no video is decoded here); None without a view."""
        return self.html_view(self) if self.html_view is not None else None


def _node_times(
    memory: VideoMemory, levels: Sequence[LevelOutcome]
) -> dict[str, tuple[float, float]]:
    """Where the nodes each level weighed lie in the video: the root, candidates, selections."""
    ids = [memory.root.id]
    for outcome in levels:
        ids += [*outcome.candidate_ids, *outcome.selected_ids, *outcome.protected_ids]
    return {
        node_id: (memory.time_range(node_id).start, memory.time_range(node_id).end)
        for node_id in dict.fromkeys(ids)
        if node_id in memory
    }


def _answer_degradation(answer: AnswerOutcome) -> list[Degradation]:
    lost = []
    if answer.source == "fallback" and answer.letter:
        why = answer.error or f"no option letter in the reply {answer.raw_answer[:80]!r}"
        what = f"answer letter (the first option, {answer.letter}, is a guess)"
        lost.append(Degradation(kind="answer_fallback", level="answer", what=what, why=why))
    elif answer.source == "fallback":
        why = answer.error or "the reply holds no answer"
        what = "answer (a free-form question left unanswered)"
        lost.append(Degradation(kind="answer_fallback", level="answer", what=what, why=why))
    return lost


def _answer_warnings(answer: AnswerOutcome) -> list[ResultWarning]:
    if not answer.invalid_citations:
        return []
    return [
        ResultWarning(
            kind="citation_invalid",
            level="answer",
            what=f"citations of {', '.join(answer.invalid_citations)}",
            why="the ids name no frame, transcript line or memory node; they were dropped",
        )
    ]


@dataclass(frozen=True)
class Exploration:
    """What a run's levels found for its question, and where: everything of a result but
    its final memory and answer. A saved trace holds enough of it to reanswer it."""

    question: QuestionInput
    levels: list[LevelOutcome]
    handoff: list[HandoffEntry]
    variant: str
    run_id: str
    memory_source: str | None
    video_fingerprint: str | None
    degraded: list[Degradation]
    video_path: str | None = None
    video_duration_s: float | None = None

    @classmethod
    def of(cls, result: Result) -> Exploration:
        return cls(
            question=QuestionInput(
                question=result.question, options=result.options, question_id=result.question_id
            ),
            levels=list(result.levels),
            handoff=list(result.handoff),
            variant=result.variant,
            run_id=result.run_id,
            memory_source=result.memory_source,
            video_fingerprint=result.video_fingerprint,
            degraded=[d for d in result.degraded if d.level != "answer"],
            video_path=result.video_path,
            video_duration_s=result.video_duration_s,
        )


def read_trace(path: str | Path) -> dict[str, Any]:
    """The JSON of a trace saved by ``Result.save_trace``, checked to be one this version
    reads; a clear error otherwise (missing file, not JSON, another format)."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise VideoTapestryError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    data = parse_json(text, f"trace {path}", VideoTapestryError)
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT or "handoff" not in data:
        raise VideoTapestryError(
            f"{path} is not a trace this version reads (saved by an older version, or not a "
            "trace saved by `ask`); rerun the question to save a new one"
        )
    return data


class _SavedSummary(BaseModel):
    """The ``result`` object of a saved trace, typed: a hand-edited value of the wrong kind
    is named here rather than failing deep inside the view or the Answer agent."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    question: str
    options: list[str]
    answer: str
    reasoning: str = ""
    answer_source: str = ""
    variant: str = ""
    memory_tokens: int = 0
    handoff_trace: str = ""
    usage: dict[str, Any] = Field(default_factory=dict)
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    observation_disabled: str | None = None
    elapsed_s: float = 0.0
    degraded: list[Degradation] = Field(default_factory=list)
    warnings: list[ResultWarning] = Field(default_factory=list)
    answer_text: str = ""
    citations: list[Citation] = Field(default_factory=list)
    asked: str = ""
    citations_asked: bool = True
    run_id: str = ""
    reassembled_from: str | None = None
    memory_covers: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _former_degradations_as_warnings(cls, data: Any) -> Any:
        """A trace saved while a made-up citation was a degradation lists it under
        ``degraded``; it is read as the warning it now is."""
        if not isinstance(data, dict) or not isinstance(data.get("degraded"), list):
            return data
        warnings = data.get("warnings", [])
        if not isinstance(warnings, list):
            return data  # named by validation
        degraded = data["degraded"]
        moved = [d for d in degraded if isinstance(d, dict) and _former(d.get("kind"))]
        if not moved:
            return data
        kept = [d for d in degraded if not any(d is m for m in moved)]
        return {**data, "degraded": kept, "warnings": [*warnings, *moved]}


def _former(kind: object) -> bool:
    return isinstance(kind, str) and kind in FORMER_DEGRADATIONS


class _SavedVideo(BaseModel):
    path: str | None = None
    duration_s: float | None = None


class _SavedTrace(BaseModel):
    """What ``Result.save_trace`` writes, as ``load_result`` requires it: a trace with no
    level is a partial one, and nothing is answered or drawn from it."""

    model_config = ConfigDict(extra="ignore")

    result: _SavedSummary
    memory_text: str = ""
    memory_source: str | None = None
    video_fingerprint: str | None = None
    video: _SavedVideo = Field(default_factory=_SavedVideo)
    node_times: dict[str, tuple[float, float]] = Field(default_factory=dict)
    levels: list[LevelOutcome] = Field(min_length=1)
    handoff: list[HandoffEntry]
    events: list[TraceEvent] = Field(default_factory=list)


def validation_problems(exc: ValidationError, *, prefix: str = "", limit: int = 3) -> str:
    """``field.path: what is wrong`` for the first few problems of ``exc``."""
    errors = exc.errors()
    shown = [
        f"{'.'.join([prefix] * bool(prefix) + [str(part) for part in error['loc']]) or '(top)'}"
        f": {error['msg']}"
        for error in errors[:limit]
    ]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(shown) + more


def load_result(path: str | Path) -> Result:
    """A result read back from the trace ``Result.save_trace`` wrote (without the images,
    which a trace never holds); a clear error naming the field for a file that is not one,
    is partial or was edited into something else."""
    data = read_trace(path)
    try:
        saved = _SavedTrace.model_validate(data)
    except ValidationError as exc:
        raise VideoTapestryError(
            f"trace {path} fails validation: {validation_problems(exc)}; rerun the question "
            "to save a new one"
        ) from None
    summary = saved.result
    try:
        # The summary's own field types check a saved count (``to_dict``'s keys mapped back).
        usage = TypeAdapter(UsageSummary).validate_python(
            asdict(UsageSummary.from_dict(summary.usage))
        )
    except ValidationError as exc:
        raise VideoTapestryError(
            f"trace {path} fails validation: {validation_problems(exc, prefix='result.usage')}; "
            "rerun the question to save a new one"
        ) from None
    trace = Trace()
    for event in saved.events:
        trace.add(event)
    return Result(
        question_id=summary.question_id,
        question=summary.question,
        options=summary.options,
        answer=summary.answer,
        reasoning=summary.reasoning,
        answer_source=summary.answer_source,
        variant=summary.variant,
        memory_text=saved.memory_text,
        memory_tokens=summary.memory_tokens,
        handoff_trace=summary.handoff_trace,
        levels=saved.levels,
        trace=trace,
        usage=usage,
        prompt_hashes=summary.prompt_hashes,
        observation_disabled=summary.observation_disabled,
        elapsed_s=summary.elapsed_s,
        degraded=summary.degraded,
        warnings=summary.warnings,
        answer_text=summary.answer_text,
        citations=summary.citations,
        asked=summary.asked,
        citations_asked=summary.citations_asked,
        handoff=saved.handoff,
        run_id=summary.run_id,
        reassembled_from=summary.reassembled_from,
        memory_source=saved.memory_source,
        video_fingerprint=saved.video_fingerprint,
        video_path=saved.video.path,
        video_duration_s=saved.video.duration_s,
        node_times=saved.node_times,
        memory_covers=summary.memory_covers,
    )


def load_exploration(path: str | Path) -> Exploration:
    """Read a trace saved by ``Result.save_trace`` back into an ``Exploration``."""
    return Exploration.of(load_result(path))


@dataclass(frozen=True)
class QuestionFailure:
    """A batch question that has no answer: its error, or why it was never run."""

    question_id: str
    error: str
    error_type: str
    #: True when the error would repeat for every question (the batch was stopped).
    fatal: bool = False
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "error": self.error,
            "error_type": self.error_type,
            "fatal": self.fatal,
            "skipped": self.skipped,
        }


class BatchResults(list):
    """``abatch``'s outcomes in input order: a ``Result`` or a ``QuestionFailure`` each.

    ``stopped`` holds the message of the error that stopped the batch (an error that would
    repeat for every question), or None when every question was attempted.
    """

    stopped: str | None = None

    @property
    def results(self) -> list[Result]:
        return [item for item in self if isinstance(item, Result)]

    @property
    def failures(self) -> list[QuestionFailure]:
        return [item for item in self if isinstance(item, QuestionFailure)]
