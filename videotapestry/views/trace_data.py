"""One answered question as the HTML view reads it, from a live ``Result`` or a saved trace.

The two sources hold the same story in different shapes (objects in memory, JSON on disk);
the view reads one typed record so that what a notebook shows and what ``inspect`` writes
from the saved file cannot drift apart. Traces saved before the video and node times were
recorded still load: their node times are read back from the composite memory's headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from videotapestry.agents.state import Degradation, HandoffEntry, LevelOutcome
from videotapestry.errors import VideoTapestryError
from videotapestry.result import Result, read_trace
from videotapestry.trace import TraceEvent
from videotapestry.views.composite import times_from_memory_text


@dataclass(frozen=True)
class QuestionTrace:
    question_id: str
    run_id: str
    question: str
    options: list[str]
    answer: str
    reasoning: str
    answer_source: str
    variant: str
    memory_text: str
    memory_tokens: int
    levels: list[LevelOutcome]
    handoff: list[HandoffEntry]
    degraded: list[Degradation]
    #: ``UsageSummary.to_dict()``: a saved trace holds it in this form.
    usage: dict[str, Any]
    events: list[TraceEvent] = field(default_factory=list)
    observation_disabled: str | None = None
    reassembled_from: str | None = None
    elapsed_s: float = 0.0
    memory_source: str | None = None
    video_path: str | None = None
    video_fingerprint: str | None = None
    video_duration_s: float | None = None
    node_times: dict[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, result: Result) -> QuestionTrace:
        duration, node_times = result.video_duration_s, dict(result.node_times)
        if not node_times:
            parsed_duration, node_times = times_from_memory_text(
                result.memory_text, examined_ids(result.levels)
            )
            duration = duration or parsed_duration
        return cls(
            question_id=result.question_id,
            run_id=result.run_id,
            question=result.question,
            options=list(result.options),
            answer=result.answer,
            reasoning=result.reasoning,
            answer_source=result.answer_source,
            variant=result.variant,
            memory_text=result.memory_text,
            memory_tokens=result.memory_tokens,
            levels=list(result.levels),
            handoff=list(result.handoff),
            degraded=list(result.degraded),
            usage=result.usage.to_dict(),
            events=result.trace.events,
            observation_disabled=result.observation_disabled,
            reassembled_from=result.reassembled_from,
            elapsed_s=result.elapsed_s,
            memory_source=result.memory_source,
            video_path=result.video_path,
            video_fingerprint=result.video_fingerprint,
            video_duration_s=duration,
            node_times=node_times,
        )


def examined_ids(levels: Sequence[LevelOutcome]) -> set[str]:
    return {node for outcome in levels for node in (*outcome.candidate_ids, *outcome.refined)}


def load_question_trace(path: str | Path) -> QuestionTrace:
    """A trace saved by ``Result.save_trace``; a clear error for anything else."""
    data = read_trace(path)
    try:
        summary = data["result"]
        video = data.get("video") or {}
        node_times = {
            node: (float(span[0]), float(span[1]))
            for node, span in (data.get("node_times") or {}).items()
        }
        duration = video.get("duration_s")
        levels = [LevelOutcome.model_validate(item) for item in data["levels"]]
        if not node_times:
            parsed_duration, node_times = times_from_memory_text(
                data.get("memory_text", ""), examined_ids(levels)
            )
            duration = duration or parsed_duration
        return QuestionTrace(
            question_id=summary["question_id"],
            run_id=summary.get("run_id", ""),
            question=summary["question"],
            options=list(summary["options"]),
            answer=summary["answer"],
            reasoning=summary.get("reasoning", ""),
            answer_source=summary.get("answer_source", ""),
            variant=summary.get("variant", ""),
            memory_text=data.get("memory_text", ""),
            memory_tokens=summary.get("memory_tokens", 0),
            levels=levels,
            handoff=[HandoffEntry.model_validate(item) for item in data["handoff"]],
            degraded=[Degradation.model_validate(d) for d in summary.get("degraded", [])],
            usage=summary.get("usage") or {},
            events=[TraceEvent.model_validate(event) for event in data.get("events", [])],
            observation_disabled=summary.get("observation_disabled"),
            reassembled_from=summary.get("reassembled_from"),
            elapsed_s=summary.get("elapsed_s", 0.0),
            memory_source=data.get("memory_source"),
            video_path=video.get("path"),
            video_fingerprint=data.get("video_fingerprint"),
            video_duration_s=duration,
            node_times=node_times,
        )
    except (KeyError, TypeError, ValueError, IndexError, ValidationError) as exc:
        problem = " ".join(str(exc).split())[:300]
        raise VideoTapestryError(
            f"trace {path} is damaged or incomplete ({type(exc).__name__}: {problem}); rerun the "
            "question to save a new one"
        ) from None
