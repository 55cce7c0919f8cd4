"""What answering a question produces: ``Result``, its saved trace, and batch outcomes.

A result carries everything needed to see how the answer was reached (levels, composite
memory, trace, usage) and everything that made the run differ from the method
(``degraded``). Its saved trace is complete enough to reassemble the same exploration under
another memory variant later (``load_exploration`` → ``VideoTapestry.reanswer``), which is
how the paper's Table 3(b) compares final memories over one fixed exploration.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videotapestry.agents.state import Degradation, HandoffEntry, LevelOutcome, QuestionInput
from videotapestry.errors import VideoTapestryError
from videotapestry.llm.types import ImagePart
from videotapestry.llm.usage import UsageSummary
from videotapestry.trace import Trace

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
    handoff: list[HandoffEntry] = field(default_factory=list)
    #: Identifies the exploration; a reanswered result keeps its exploration's id.
    run_id: str = ""
    #: Set on results of ``reanswer``: the run whose exploration was reused.
    reassembled_from: str | None = None
    memory_source: str | None = None
    video_fingerprint: str | None = None

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
            "reassembled_from": self.reassembled_from,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def save_trace(self, path: str | Path) -> Path:
        """The whole story of this question as one JSON file (written atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": TRACE_FORMAT,
            "result": self.to_dict(),
            "memory_text": self.memory_text,
            "memory_source": self.memory_source,
            "video_fingerprint": self.video_fingerprint,
            "levels": [outcome.model_dump(mode="json") for outcome in self.levels],
            "handoff": [entry.model_dump(mode="json") for entry in self.handoff],
            "events": json.loads(self.trace.to_json()),
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
        return path

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>"
            f"<td>{html.escape(o.agent)}</td><td>{len(o.candidate_ids)}</td>"
            f"<td>{html.escape(', '.join(o.selected_ids) or ('STOP' if o.stop else '-'))}</td>"
            f"<td>{html.escape(o.instruction_out or '')}</td>"
            f"<td>{html.escape('; '.join(observation_summary(x) for x in o.observations))}</td>"
            "</tr>"
            for o in self.levels
        )
        images = "".join(
            f'<figure style="display:inline-block;margin:2px">'
            f'<img style="width:220px" src="data:image/jpeg;base64,'
            f'{base64.b64encode(image.jpeg).decode()}"/>'
            f"<figcaption style='font-size:10px'>{html.escape(image.label)}</figcaption></figure>"
            for image in self.images
        )
        usage = self.usage
        note = (
            f"<p><b>Observation disabled:</b> {html.escape(self.observation_disabled)}</p>"
            if self.observation_disabled
            else ""
        )
        degraded = "".join(f"<li>{html.escape(d.render())}</li>" for d in self.degraded)
        if degraded:
            note += f"<p><b>Degraded run:</b></p><ul>{degraded}</ul>"
        cost = f"${usage.cost_usd:.4f}" if usage.cost_known else "cost unknown"
        return (
            f"<div><h4>{html.escape(self.question)}</h4>"
            f"<p><b>Answer: {html.escape(self.answer)}</b> ({html.escape(self.answer_source)}) — "
            f"{html.escape(self.reasoning)}</p>{note}"
            "<table><tr><th>agent</th><th>candidates</th><th>selected</th>"
            f"<th>instruction</th><th>observations</th></tr>{rows}</table>"
            f"<p>{usage.calls} calls, {usage.images} images, {usage.prompt_tokens} prompt / "
            f"{usage.completion_tokens} completion tokens, {cost}, memory "
            f"≈{self.memory_tokens} tokens, variant {html.escape(self.variant)}</p>"
            f"<details><summary>Composite memory</summary><pre>{html.escape(self.memory_text)}"
            f"</pre></details><details><summary>Frames and grids seen ({len(self.images)})"
            f"</summary>{images}</details></div>"
        )


def observation_summary(obs: Any) -> str:
    windows = ", ".join(f"{s:.0f}-{e:.0f}s" for s, e in obs.windows)
    state = "ok" if obs.succeeded else f"failed: {obs.error}"
    return f"{obs.kind} [{windows}] {state}"


@dataclass(frozen=True)
class Exploration:
    """A finished run's exploration, as a saved trace holds it: enough to reanswer it."""

    question: QuestionInput
    levels: list[LevelOutcome]
    handoff: list[HandoffEntry]
    variant: str
    run_id: str
    memory_source: str | None
    video_fingerprint: str | None
    degraded: list[Degradation]

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
        )


def load_exploration(path: str | Path) -> Exploration:
    """Read a trace saved by ``Result.save_trace`` back into an ``Exploration``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise VideoTapestryError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise VideoTapestryError(f"trace {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT or "handoff" not in data:
        raise VideoTapestryError(
            f"{path} is not a trace this version can reanswer (saved by an older version, or "
            "not a trace); rerun the question to save a new one"
        )
    summary = data["result"]
    return Exploration(
        question=QuestionInput(
            question=summary["question"],
            options=summary["options"],
            question_id=summary["question_id"],
        ),
        levels=[LevelOutcome.model_validate(item) for item in data["levels"]],
        handoff=[HandoffEntry.model_validate(item) for item in data["handoff"]],
        variant=summary["variant"],
        run_id=summary.get("run_id", ""),
        memory_source=data.get("memory_source"),
        video_fingerprint=data.get("video_fingerprint"),
        degraded=[
            Degradation.model_validate(d)
            for d in summary.get("degraded", [])
            if d.get("level") != "answer"
        ],
    )


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
