"""The protocol every level agent follows: plan, observe, rewrite, decide (Algorithm 2).

The Skim (Macro) and Focus (Subgraph) agents follow it exactly: one shared protocol,
different memories. ``run_level`` is that protocol; ``skim`` and ``focus`` only say which
memories a level shows and where its frames may come from. The Overview agent (Super) keeps
the same steps with observation and update calls of its own, and takes the shared ones from
here: planning with a fallback, the update call, the validated decision, the level's log.

Plan → observe (when planned, or when the level always looks) over the planned ranges
intersected with the candidates' intervals, up to 50 single frames → rewrite the requested
nodes (ids, parents and times never change; a missing or invalid rewrite keeps the original
text) → one decision.

Each model step degrades instead of failing the question: a plan that cannot be obtained
becomes the documented default plan, a failed update keeps the original texts, a failed
decision is validated as an empty one (which falls back to evidence-linked ids). Every
fallback leaves a note and a ``Degradation`` in the level's ``LevelLog``, so the result says
what was lost; errors that no fallback can help (a refused key, an unknown model) are not
caught here and stop the question.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypedDict, TypeVar

from pydantic import BaseModel

from videotapestry.agents.citations import node_sources, observation_refs
from videotapestry.agents.context import LevelBudget, RunContext
from videotapestry.agents.options import strip_option_steering
from videotapestry.agents.prefetch import FramePrefetch, prefetching
from videotapestry.agents.relative_time import (
    Span,
    choose_in_window,
    look_in_window,
    question_windows,
)
from videotapestry.agents.rules import (
    ValidatedDecision,
    rank_by_overlap,
    tiny_summary,
    validate_decision,
)
from videotapestry.agents.state import (
    AGENT_NAMES,
    Degradation,
    DegradationKind,
    EvidenceRef,
    Level,
    LevelCalls,
    LevelOutcome,
    Observation,
    QuestionInput,
    ResultWarning,
)
from videotapestry.agents.tools import level_frame_indices, level_frame_settings, observe_frames
from videotapestry.contracts.method import Decision, LevelPlan, LevelUpdate, NodeRewrite
from videotapestry.errors import MemoryNodeNotFoundError, ModelCallError, VideoError
from videotapestry.memory import VideoMemory
from videotapestry.memory.prompt_text import clock_range, serialize_root
from videotapestry.memory.types import MacroEvent, TimeRange
from videotapestry.timecode import format_range
from videotapestry.video import TimeWindow, observation_windows

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
    """What one level noted on its way, what it lost (degradations) and what a reader should
    know that is no loss (warnings)."""

    def __init__(self, level: str) -> None:
        self.level = level
        self.notes: list[str] = []
        self.degraded: list[Degradation] = []
        self.warnings: list[ResultWarning] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def moved_to_window(self, what: str, why: str) -> None:
        """Record that code moved ``what`` (a look, a selection) onto the window the question
        names: a warning on the result, not a loss, so it never passes quietly and never
        makes the run degraded."""
        self.warnings.append(
            ResultWarning(kind="moved_to_question_window", level=self.level, what=what, why=why)
        )
        self.notes.append(f"{what}: {why}")

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
    level: str,
    log: LevelLog,
    **variables: object,
) -> tuple[T, bool]:
    """One structured call; on a recoverable failure the ``fallback`` and a degradation.

    ``level`` is where the trace files the call: a memory level, or ``controller`` for the
    single-agent ablation. Returns (value, ok). Errors that would repeat on every call are
    re-raised.
    """
    prompt = ctx.prompts.render(prompt_name, **variables)
    try:
        return await ctx.session.complete_json(role, prompt, output_model, level=level), True
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        log.degrade("call_fallback", f"{prompt_name} call", f"{exc}; the fallback was used")
        return fallback, False


class LevelVariables(TypedDict):
    """Template variables every Skim/Focus/decision prompt shares."""

    agent_name: str
    memory_level: Level
    question: str
    options: list[str]
    earlier_turns: list[str]
    upstream_instruction: str


def level_variables(
    agent: str, level: Level, question: QuestionInput, instruction_in: str | None
) -> LevelVariables:
    return {
        "agent_name": agent,
        "memory_level": level,
        "question": question.question,
        "options": question.options,
        "earlier_turns": question.prompt_variables()["earlier_turns"],
        "upstream_instruction": instruction_in or "",
    }


def labelled_text(label: str, text: str) -> str:
    """A SuperEvent's or MacroEvent's memory text: its label, then its description."""
    return f"{label}: {text}" if label else text


def super_texts(memory: VideoMemory) -> dict[str, str]:
    """Each SuperEvent's stored text, as the Super level shows it before any observation."""
    return {s.id: labelled_text(s.label, s.description) for s in memory.super_events()}


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
    """Each observation that found something, once, by source id (the update prompt refers
    to them); one that found nothing is no source, so the update tool never reads it."""
    blocks = []
    for obs in observations:
        if not obs.bears_evidence:
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
    old_memories: str = "",
) -> ValidatedDecision:
    """One decision call, validated in code (SPEC §5); at Subgraph the stop is then forced.

    ``old_memories`` (the candidates' stored texts) is shown only when not empty: with
    ``agents.decision_context: full``, as the paper's decision reads them."""
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
        old_memories=old_memories,
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
    return selection_in_window(ctx, validated, question, ids_with_children, log)


def selection_in_window(
    ctx: RunContext,
    validated: ValidatedDecision,
    question: QuestionInput,
    ids_with_children: Sequence[str],
    log: LevelLog,
) -> ValidatedDecision:
    """The validated selection kept to the nodes the question's window overlaps, or placed on
    them when it has none there (``relative_time.choose_in_window``): the next level's
    candidates are the children of this selection, so a level that selected elsewhere would
    leave the levels below nothing inside the window to look at. Only nodes with children
    can be placed on; without a window, ``validated`` as it is."""
    windows = question_windows(question.hints)
    if not windows or not validated.selected_ids:
        return validated
    spans = {
        i: (ctx.memory.time_range(i).start, ctx.memory.time_range(i).end) for i in ids_with_children
    }
    choice = choose_in_window(validated.selected_ids, spans, windows)
    if not choice.moved:
        return validated
    before = validated.selected_ids if choice.placed else choice.outside
    log.moved_to_window(
        "the decision's selection", window_move_text(before, choice.chosen, choice.placed, windows)
    )
    return dataclasses.replace(validated, selected_ids=choice.chosen)


def window_move_text(
    moved: Sequence[str | Span], now: Sequence[str | Span], placed: bool, windows: Sequence[Span]
) -> str:
    """Why a choice moved: what lay outside the question's window, and what it is now (the
    text of a ``moved_to_question_window`` warning)."""
    asked = ", ".join(format_range(a, b) for a, b in windows)
    how, now_is = ("lay", "placed on") if placed else ("reached", "kept to")
    return (
        f"{_listed(moved)} {how} outside the time the question names ({asked}); "
        f"{now_is} {_listed(now)}"
    )


def _listed(items: Sequence[str | Span]) -> str:
    return ", ".join(item if isinstance(item, str) else format_range(*item) for item in items)


def level_record(
    plans: Mapping[str, Mapping[str, Any]],
    observations: Sequence[Observation],
    update: str,
) -> str:
    """The level's trajectory as the paper's decision reads it (H^ℓ, Algorithm 2 line 15):
    every plan by name (its keys as returned, the planner's thought without steering), every
    observation with its windows and result or failure, then what the update changed.

    The decision judges where the evidence is; the plan says what the level set out to find
    and the update which nodes took the observations, which the refined texts alone do not
    tell it."""
    lines = []
    for name, plan in plans.items():
        shown = {
            k: clean(v) if k == "thought" and isinstance(v, str) else v for k, v in plan.items()
        }
        lines.append(f"{name}: {json.dumps(shown, ensure_ascii=False)}")
    for obs in observations:
        windows = ", ".join(clock_range(TimeRange(start=s, end=e)) for s, e in obs.windows)
        if obs.succeeded:
            what = obs.result.strip()
            if obs.uncertainty.strip():
                what += f" (uncertain: {obs.uncertainty.strip()})"
        else:
            what = f"failed ({obs.error or 'empty result'})"
        lines.append(f"{obs.source_id} {obs.kind} observation [{windows}]: {what}")
    lines.append(update)
    return "\n".join(lines)


def update_record(
    static: Mapping[str, str],
    refined: Mapping[str, str],
    *,
    made: bool,
    protected: Sequence[str] = (),
) -> str:
    """One line of ``level_record``: which memories the level's update rewrote and which
    kept their stored text (at Super, which were protected: stored text kept, evidence
    added); ``made`` says whether an update took place at all."""
    changed = [i for i in static if refined.get(i, static[i]) != static[i]]
    if not made and not changed:
        return "update: none made; every memory keeps its stored text"
    kept = [i for i in static if i not in changed]
    line = f"update: rewrote {changed}; stored text kept for {kept}"
    if protected:
        line += f"; protected (stored text kept, evidence added): {list(protected)}"
    return line


def _has_children(ctx: RunContext, level: Level, node_id: str) -> bool:
    if level == "super":
        return bool(ctx.memory.child_ids(node_id))
    if level == "macro":
        return bool(ctx.memory.subgraph(node_id).nodes)
    return False


def macro_event(memory: VideoMemory, macro_id: str) -> MacroEvent:
    """The MacroEvent ``macro_id`` names; a candidate of another kind is a wiring error."""
    node = memory.node(macro_id)
    if not isinstance(node, MacroEvent):
        raise MemoryNodeNotFoundError(f"{macro_id!r} is a {node.kind}, not a MacroEvent")
    return node


# --------------------------------------------------------------------------- the protocol


@dataclass(frozen=True)
class LevelMemories:
    """What a level shows: each candidate's text, and the time intervals it may look at.

    ``selection`` is the evidence selection behind the texts (PACE-Mem at Focus), kept for
    the trace; ``notes`` what choosing them noted (evidence left out of a question's window).
    """

    texts: dict[str, str]
    intervals: dict[str, list[tuple[float, float]]]
    selection: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


class LevelAgent(Protocol):
    """A Skim or Focus agent's turn, as the graph calls it: the candidates and the
    instruction the level above handed down, and whether the question is global."""

    async def __call__(
        self,
        ctx: RunContext,
        question: QuestionInput,
        candidates: list[str],
        *,
        instruction_in: str | None,
        is_global: bool,
    ) -> LevelOutcome: ...


async def run_level(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    memories: LevelMemories,
    *,
    instruction_in: str | None,
    is_global: bool,
    always_observe: bool,
) -> LevelOutcome:
    """One level agent's turn over its candidates' ``memories``: ``refine_level``, then
    ``decide_level``.

    ``always_observe`` makes the level look even when its plan does not ask to (the Skim
    agent on a question that is not global).
    """
    refined = await refine_level(
        ctx,
        level,
        question,
        candidates,
        memories,
        instruction_in=instruction_in,
        always_observe=always_observe,
    )
    return await decide_level(
        ctx, refined.outcome, question, is_global=is_global, fallback_ids=refined.fallback_ids
    )


@dataclass(frozen=True)
class RefinedLevel:
    """A level planned, observed and rewritten, not yet decided: its outcome (no selection,
    no stop flag yet) and the ids its decision falls back to (those the observation windows
    overlap most, else every candidate)."""

    outcome: LevelOutcome
    fallback_ids: list[str]


async def refine_level(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    memories: LevelMemories,
    *,
    instruction_in: str | None,
    always_observe: bool,
) -> RefinedLevel:
    """Plan, observe and rewrite (Algorithm 2, lines 1-15) over the candidates' ``memories``."""
    config = ctx.config
    agent = AGENT_NAMES[level]
    budget = LevelBudget(config.agents.level_limits)
    static = dict(memories.texts)
    ctx.report(level=level, step="plan", agent=agent)
    log = LevelLog(level)
    log.notes.extend(memories.notes)

    observations: list[Observation] = []
    plan = LevelPlan()
    all_intervals = [span for spans in memories.intervals.values() for span in spans]
    # A question relative to now looks only at its window ("in the last 2 minutes"): the
    # candidates' intervals inside it are all the level may look at (the prefetch included).
    asked = question_windows(question.hints)
    all_intervals = list(look_in_window([], all_intervals, asked).intervals)
    windows: list[TimeWindow] = []
    ahead = _prefetch_plan(ctx, level, budget, all_intervals)
    async with prefetching(ctx.decoders, ahead) as prefetch:
        if ctx.updates_enabled or ctx.visual_enabled:
            plan, _ = await call_or_fallback(
                ctx,
                PLANNING_ROLES[level],
                "level_planning",
                LevelPlan,
                LevelPlan(observation_needed=True, update_memory_ids=list(candidates)),
                level=level,
                log=log,
                **level_variables(agent, level, question, instruction_in),
                global_summary=serialize_root(ctx.memory).text,
                memories=memories_text(ctx, static),
                trajectory="",  # one batch per level: nothing precedes the plan
                limits=config.agents.level_limits.model_dump(),
                max_frames=level_frame_settings(config, level).max_frames,
            )

        wants_look = plan.observation_needed or always_observe
        if ctx.visual_enabled and wants_look and budget.spend("observation"):
            windows = observation_windows(
                plan.time_ranges, all_intervals, duration_s=ctx.duration_s
            )
            look = look_in_window(plan.time_ranges, all_intervals, asked)
            if look.moved:
                moved = plan.time_ranges if look.placed else look.outside
                log.moved_to_window(
                    "the planned look", window_move_text(moved, windows, look.placed, asked)
                )
            instruction = clean(plan.observation_instruction) or (
                instruction_in or "Describe what is visible that bears on these events."
            )
            if prefetch is not None:
                await _settle(prefetch, ctx, windows, level)
            ctx.report(
                level=level, step="observe", tool="visual", windows=[list(w) for w in windows]
            )
            observation = await observe_frames(
                ctx, windows, instruction, level=level, agent=agent, source_id="V1"
            )
            observations.append(observation)
            log.lost_observation(observation)
    if prefetch is not None:
        ctx.session.trace.note("frames_prefetched", level=level, **asdict(prefetch.report()))

    refined = dict(static)
    sources: dict[str, list[EvidenceRef]] = {}
    if ctx.updates_enabled:
        # Algorithm 2 updates the valid requested ids, and only those.
        valid = set(candidates)
        targets = [i for i in dict.fromkeys(plan.update_memory_ids) if i in valid]
        ignored = [i for i in plan.update_memory_ids if i not in valid]
        if ignored:
            log.note(f"update ids that are not {level} candidates were ignored: {ignored}")
        if not targets:
            log.note("the plan requested no valid update id; no node was rewritten")
        elif budget.spend("update"):
            ctx.report(level=level, step="update", agent=agent)
            rewrites = await rewrite_nodes(
                ctx,
                {i: static[i] for i in targets},
                observations,
                log=log,
                level=level,
                variables=level_variables(agent, level, question, instruction_in),
            )
            refined |= rewrites.texts
            refs = observation_refs(observations)
            sources = {
                node_id: node_sources(
                    ctx.memory,
                    node_id,
                    level,
                    refs,
                    rewritten=node_id not in rewrites.compressed,
                    spans=memories.intervals.get(node_id),
                )
                for node_id in rewrites.texts
            }

    fallback = rank_by_overlap(_spans(memories), windows) if windows else []
    outcome = LevelOutcome(
        level=level,
        agent=agent,
        candidate_ids=list(candidates),
        instruction_in=instruction_in,
        plan=plan.model_dump(mode="json"),
        observations=observations,
        refined=refined,
        static=static,
        evidence_ids=[i for i in candidates if refined[i] != static[i]],
        evidence_selection=memories.selection,
        calls=LevelCalls(observations=budget.observations, updates=budget.updates),
        notes=log.notes,
        degraded=log.degraded,
        warnings=log.warnings,
        sources=sources,
    )
    return RefinedLevel(outcome, fallback or list(candidates))


async def decide_level(
    ctx: RunContext,
    outcome: LevelOutcome,
    question: QuestionInput,
    *,
    is_global: bool,
    fallback_ids: Sequence[str],
) -> LevelOutcome:
    """The level's one decision over what ``refine_level`` left (Algorithm 2, lines 16-18):
    ``outcome`` with its selection, instruction, stop flag and reason, and the decision's
    notes and degradations after the level's own."""
    level = outcome.level
    log = LevelLog(level)
    ctx.report(level=level, step="decide", agent=outcome.agent)
    full = ctx.config.agents.decision_context == "full"
    if full:
        trajectory = level_record(
            {"plan": outcome.plan},
            outcome.observations,
            update_record(outcome.static, outcome.refined, made=outcome.calls.updates > 0),
        )
    else:
        trajectory = "\n".join(
            f"visual observation: {o.result}" if o.succeeded else f"observation failed: {o.error}"
            for o in outcome.observations
        )
    decision = await decide(
        ctx,
        level=level,
        agent=outcome.agent,
        question=question,
        instruction_in=outcome.instruction_in,
        memories=memories_text(ctx, outcome.refined),
        old_memories=memories_text(ctx, outcome.static) if full else "",
        trajectory=trajectory,
        is_global=is_global,
        current_ids=outcome.candidate_ids,
        fallback_ids=fallback_ids,
        log=log,
    )
    return outcome.model_copy(
        update={
            "selected_ids": list(decision.selected_ids),
            "instruction_out": decision.instruction,
            "template_type": decision.template_type,
            "stop": decision.stop,
            "reason": decision.reason,
            "notes": [*outcome.notes, *log.notes],
            "degraded": [*outcome.degraded, *log.degraded],
            "warnings": [*outcome.warnings, *log.warnings],
        }
    )


@dataclass(frozen=True)
class Rewrites:
    """What an update call gave: each rewritten node's new text, and which of them it judged
    irrelevant (compressed to a tiny summary, resting on their stored node alone)."""

    texts: dict[str, str]
    compressed: frozenset[str] = frozenset()


async def rewrite_nodes(
    ctx: RunContext,
    texts: dict[str, str],
    observations: list[Observation],
    *,
    log: LevelLog,
    level: Level,
    variables: LevelVariables,
    update_instruction: str = "",
) -> Rewrites:
    """One update-tool call over ``texts`` (id → current text); the new texts it gave.

    The level agents pass what the paper's Update step reads (question, options, the
    upstream instruction, the old texts, the observations), never their planner's free-text
    thought; only the single-agent controller, whose update step is an action it words
    itself, passes ``update_instruction``.

    A node whose entry is unusable, missing or empty keeps its text (and the level log says
    so); rewrites of ids that were not asked for are ignored.
    """
    reply, _ = await call_or_fallback(
        ctx,
        "update",
        "level_update",
        LevelUpdate,
        LevelUpdate(updated_memories={}),
        level=level,
        log=log,
        **variables,
        update_instruction=update_instruction,
        memories=memories_text(ctx, texts),
        observations=observation_sources(observations),
    )
    rewritten: dict[str, str] = {}
    compressed: set[str] = set()
    for node_id in texts:
        rewrite = reply.updated_memories.get(node_id)
        if node_id in reply.rejected:
            log.degrade(
                "update_rejected",
                f"level_update entry {node_id}",
                f"{reply.rejected[node_id]}; its original text is kept",
            )
        elif text := rewritten_text(rewrite):
            rewritten[node_id] = text
            if rewrite is not None and rewrite.is_relevant is False:
                compressed.add(node_id)
        else:
            log.note(f"no valid rewrite for {node_id}; original text kept")
    unknown = sorted(set(reply.updated_memories) - set(texts))
    if unknown:
        log.note(f"rewrites for ids not requested were ignored: {unknown}")
    return Rewrites(rewritten, frozenset(compressed))


def rewritten_text(rewrite: NodeRewrite | None) -> str:
    """A node's new text: steering removed; an irrelevant node's summary cut to 10 chars."""
    if rewrite is None:
        return ""
    text = clean(rewrite.updated_text)
    if rewrite.is_relevant is False and text:
        return tiny_summary(text)
    return text


def _prefetch_plan(
    ctx: RunContext, level: Level, budget: LevelBudget, intervals: list[tuple[float, float]]
) -> Callable[[], list[int]] | None:
    """What the level's prefetch decodes while its plan is in flight: the frames of an
    observation of the candidates' whole intervals (``agents.prefetch_frames``); None when the
    level cannot look, or no frame cache would keep what it decodes (frames rendered in
    ``video.decode_workers`` processes use the workers' own caches)."""
    if not (
        ctx.config.agents.prefetch_frames
        and ctx.visual_enabled
        and ctx.frame_cache is not None
        and ctx.frame_workers is None
        and budget.allows("observation")
    ):
        return None
    fallback = observation_windows([], intervals, duration_s=ctx.duration_s)
    return (lambda: level_frame_indices(ctx, fallback, level)) if fallback else None


async def _settle(
    prefetch: FramePrefetch, ctx: RunContext, windows: Sequence[TimeWindow], level: Level
) -> None:
    """Narrow the prefetch to the frames the observation of ``windows`` reads and wait for
    them; when those cannot even be planned, stop it (the observation says why)."""
    try:
        needed = await asyncio.to_thread(level_frame_indices, ctx, windows, level)
    except VideoError:
        await prefetch.cancel()
        return
    await prefetch.narrow(needed)


def _spans(memories: LevelMemories) -> dict[str, tuple[float, float]]:
    return {
        node_id: (min(s for s, _ in spans), max(e for _, e in spans))
        for node_id, spans in memories.intervals.items()
    }
