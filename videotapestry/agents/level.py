"""Steps every level agent shares: planning with a fallback, the update call, the decision.

Each model step degrades instead of failing the question: a plan that cannot be obtained
becomes the documented default plan, a failed update keeps the original texts, a failed
decision is validated as an empty one (which falls back to evidence-linked ids). Every
fallback leaves a note and a ``Degradation`` in the level's ``LevelLog``, so the result says
what was lost; errors that no fallback can help (a refused key, an unknown model) are not
caught here and stop the question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel

from videotapestry.agents.context import RunContext
from videotapestry.agents.options import strip_option_steering
from videotapestry.agents.rules import ValidatedDecision, validate_decision
from videotapestry.agents.state import (
    Degradation,
    DegradationKind,
    Level,
    Observation,
    QuestionInput,
)
from videotapestry.contracts.method import Decision
from videotapestry.errors import ModelCallError
from videotapestry.memory.prompt_text import clock_range
from videotapestry.memory.types import TimeRange

T = TypeVar("T", bound=BaseModel)

DEFAULT_INSTRUCTIONS: dict[Level, str] = {
    "super": (
        "Examine the MacroEvents of the selected stages for the specific people, actions, "
        "objects and on-screen text the question depends on."
    ),
    "macro": (
        "Found: candidate events in the selected MacroEvents; still need to verify: the exact "
        "details the question asks about."
    ),
    "subgraph": "",
}

PLANNING_ROLES: dict[Level, str] = {"super": "overview", "macro": "skim", "subgraph": "focus"}


class LevelLog:
    """What one level noted on its way and what it lost (degradations)."""

    def __init__(self, level: str) -> None:
        self.level = level
        self.notes: list[str] = []
        self.degraded: list[Degradation] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def degrade(self, kind: DegradationKind, what: str, why: str) -> None:
        self.degraded.append(Degradation(kind=kind, level=self.level, what=what, why=why))
        self.notes.append(f"{what}: {why}")

    def lost_observation(self, observation: Observation) -> None:
        """Record a failed observation tool call (frames, transcript or the model call)."""
        if observation.error is not None:
            kind: DegradationKind = "visual_lost" if observation.kind == "visual" else "asr_lost"
            what = f"{observation.kind} observation {observation.source_id}"
            self.degrade(kind, what, observation.error)


async def call_or_fallback(
    ctx: RunContext,
    role: str,
    prompt_name: str,
    output_model: type[T],
    fallback: T,
    *,
    level: Level,
    log: LevelLog,
    images: Sequence = (),
    **variables: object,
) -> tuple[T, bool]:
    """One structured call; on a recoverable failure the ``fallback`` and a degradation.

    Returns (value, ok). Errors that would repeat on every call are re-raised.
    """
    prompt = ctx.prompts.render(prompt_name, **variables)
    try:
        return (
            await ctx.session.complete_json(role, prompt, output_model, images, level=level),
            True,
        )
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        log.degrade("call_fallback", f"{prompt_name} call", f"{exc}; the fallback was used")
        return fallback, False


def level_variables(
    agent: str, level: Level, question: QuestionInput, instruction_in: str | None
) -> dict[str, object]:
    """Template variables every Skim/Focus/decision prompt shares."""
    return {
        "agent_name": agent,
        "memory_level": level,
        "question": question.question,
        "options": question.options,
        "upstream_instruction": instruction_in or "",
    }


def labelled_text(label: str, text: str) -> str:
    """A SuperEvent's or MacroEvent's memory text: its label, then its description."""
    return f"{label}: {text}" if label else text


def clean(text: str) -> str:
    """Memory text as stored: option-steering sentences removed."""
    return strip_option_steering(text or "").strip()


def line_for(node_id: str, time_range: TimeRange, text: str) -> str:
    return f"{node_id} [{clock_range(time_range)}] {text}"


def memories_text(ctx: RunContext, texts: Mapping[str, str]) -> str:
    """The level's memories as prompt lines: id, time range, current text."""
    return "\n".join(
        line_for(node_id, ctx.memory.time_range(node_id), text) for node_id, text in texts.items()
    )


def observation_sources(observations: Sequence[Observation]) -> str:
    """Each successful observation once, by source id (the update prompt refers to them)."""
    blocks = []
    for obs in observations:
        if not obs.succeeded:
            continue
        kind = "visual" if obs.kind == "visual" else "transcript"
        windows = ", ".join(clock_range(TimeRange(start=s, end=e)) for s, e in obs.windows)
        block = f"{obs.source_id} ({kind}; {windows}): {obs.result.strip()}"
        if obs.uncertainty.strip():
            block += f"\n  uncertain: {obs.uncertainty.strip()}"
        blocks.append(block)
    return "\n".join(blocks) or "(no observations)"


def update_requests_json(requests: Sequence[Mapping[str, object]]) -> str:
    return json.dumps(list(requests), ensure_ascii=False, indent=1)


async def decide(
    ctx: RunContext,
    *,
    level: Level,
    agent: str,
    question: QuestionInput,
    instruction_in: str | None,
    memories: str,
    trajectory: str,
    is_global: bool,
    current_ids: Sequence[str],
    fallback_ids: Sequence[str],
    log: LevelLog,
) -> ValidatedDecision:
    """One decision call, validated in code (SPEC §5); at Subgraph the stop is then forced."""
    ids_with_children = [i for i in current_ids if _has_children(ctx, level, i)]
    decision, ok = await call_or_fallback(
        ctx,
        "decision",
        "decision",
        Decision,
        Decision(),
        level=level,
        log=log,
        **level_variables(agent, level, question, instruction_in),
        memories=memories,
        trajectory=trajectory,
    )
    validated = validate_decision(
        decision if ok else None,
        level=level,
        is_global=is_global,
        current_ids=list(current_ids),
        ids_with_children=ids_with_children,
        fallback_ids=list(fallback_ids),
        default_instruction=DEFAULT_INSTRUCTIONS[level],
    )
    log.notes.extend(validated.notes)
    return validated


def _has_children(ctx: RunContext, level: Level, node_id: str) -> bool:
    if level == "super":
        return bool(ctx.memory.child_ids(node_id))
    if level == "macro":
        return bool(ctx.memory.subgraph(node_id).nodes)
    return False
