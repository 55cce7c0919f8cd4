"""The Single Agent ablation (paper Table 3(a)): one controller instead of three agents.

The paper replaces the scale-aligned Overview, Skim and Focus agents "with one controller
under the same model- and tool-call budgets". Here that controller sees the whole hierarchy
in one context (every SuperEvent, every MacroEvent, and the evidence of each MacroEvent it
opened) and, step by step, chooses what to look at (frame grids over a long window, single
frames, transcript windows), what to rewrite and which MacroEvents to open, until it
finishes or its budget is spent. Its budgets are the three levels' combined ones: at most
``agents.single_agent.max_steps`` planning calls (the planning and decision calls of the
three agents, the Overview's anchor call among them, so the anchor call, when made, leaves
one controller step fewer) and 3 x ``agents.level_limits`` tool calls.

The tools, the anchors and locator hints, the evidence selection (PACE-Mem when a MacroEvent
is opened), the Super scaffold (evidence linking, the protected set, the compression of every
other SuperEvent, the verbatim transcript placement) and the final assembly are the method's
own; only the organization into scale-aligned agents is gone. The outcome is expressed as
the three levels' outcomes, so ``assemble`` builds the composite memory exactly as for the
full method.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from videotapestry.agents.citations import node_sources, observation_refs
from videotapestry.agents.context import LevelBudget, RunContext
from videotapestry.agents.focus import focus_memories
from videotapestry.agents.level_protocol import (
    LevelLog,
    call_or_fallback,
    clean,
    labelled_text,
    level_variables,
    memories_text,
    rewrite_nodes,
    super_texts,
    window_move_text,
)
from videotapestry.agents.overview import (
    SuperEvidence,
    link_super_evidence,
    locator_hints,
    locator_text,
    refine_supers,
    toward_question_window,
)
from videotapestry.agents.relative_time import look_in_window, meets_window, question_windows
from videotapestry.agents.rules import is_global_question, protected_set
from videotapestry.agents.state import (
    SINGLE_AGENT_NAME,
    EvidenceRef,
    HandoffEntry,
    Level,
    LevelCalls,
    LevelOutcome,
    Observation,
    QuestionInput,
)
from videotapestry.agents.tools import observe_frames, observe_overview_grids, observe_speech
from videotapestry.config import LevelLimits
from videotapestry.contracts.method import ControllerStep
from videotapestry.memory import MultiAnchorResult
from videotapestry.memory.prompt_text import serialize_root
from videotapestry.timecode import format_range
from videotapestry.video import asr_windows, observation_windows, visual_window

LEVELS_COVERED = 3


@dataclass
class _Controller:
    """What the controller has seen and written so far."""

    texts: dict[str, str]
    static: dict[str, str]
    opened: list[str] = field(default_factory=list)
    touched_macros: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    #: Nodes (keys of ``texts``) the update tool judged irrelevant and compressed.
    compressed: set[str] = field(default_factory=set)
    trajectory: list[str] = field(default_factory=list)
    handoff: list[HandoffEntry] = field(default_factory=list)
    selections: dict[str, dict] = field(default_factory=dict)
    #: SuperEvent ids each observation's step named (by source id), for evidence linking.
    named: dict[str, list[str]] = field(default_factory=dict)
    #: The Super scaffold as last refined: the links it rests on and each node's sources.
    super_links: SuperEvidence | None = None
    super_sources: dict[str, list[EvidenceRef]] = field(default_factory=dict)

    def source_id(self, kind: str) -> str:
        prefix = "V" if kind == "visual" else "A"
        return f"{prefix}{sum(o.kind == kind for o in self.observations) + 1}"


def controller_steps(max_steps: int, anchor_calls: int) -> int:
    """Controller calls a question may make: ``max_steps`` counts every planning call the
    three agents would make, and the Overview's anchor call is one of them, so the anchor
    calls already made come off it (else the ablation would get one call more than the
    agents it is compared with)."""
    return max(0, max_steps - anchor_calls)


def combined_limits(limits: LevelLimits) -> LevelLimits:
    return LevelLimits(
        max_observations=limits.max_observations * LEVELS_COVERED,
        max_updates=limits.max_updates * LEVELS_COVERED,
        max_calls=limits.max_calls * LEVELS_COVERED,
    )


async def run_controller(
    ctx: RunContext, question: QuestionInput
) -> tuple[list[LevelOutcome], list[HandoffEntry]]:
    config = ctx.config
    memory = ctx.memory
    limits = combined_limits(config.agents.level_limits)
    budget = LevelBudget(limits)
    log = LevelLog("controller")
    static = super_texts(memory)
    static |= {m.id: labelled_text(m.label, m.summary) for m in memory.macro_events()}
    state = _Controller(texts=dict(static), static=dict(static))
    located: MultiAnchorResult | None = None
    anchors: list[str] = []
    anchor_source = "none"
    refines = ctx.visual_enabled or ctx.asr_enabled or ctx.updates_enabled
    if refines and not is_global_question(question.question, question.options):
        # The Overview agent's anchors and locator hints, from the same call and budget.
        located, anchors, anchor_source = await locator_hints(ctx, question, budget, log)
    max_steps = controller_steps(config.agents.single_agent.max_steps, budget.locators)
    steps = 0
    finished = False
    while steps < max_steps and not finished:
        steps += 1
        ctx.report(level="controller", step=f"step {steps}", agent=SINGLE_AGENT_NAME)
        step, ok = await call_or_fallback(
            ctx,
            "controller",
            "controller",
            ControllerStep,
            ControllerStep(action="finish"),
            level="controller",
            log=log,
            **question.prompt_variables(),
            video_duration=round(ctx.duration_s, 1),
            global_summary=serialize_root(memory).text,
            locator_results=locator_text(located, question.hints),
            hierarchy=_hierarchy_text(ctx, state),
            trajectory="\n".join(state.trajectory),
            limits={**limits.model_dump(), "max_steps": max_steps},
            left={
                "steps": max_steps - steps + 1,
                "observations": limits.max_observations - budget.observations,
                "updates": limits.max_updates - budget.updates,
                "calls": budget.left(),
            },
            min_window_s=config.agents.overview.min_window_s,
            max_frames=config.agents.focus.max_frames,
            max_asr_windows=config.asr.max_windows,
            asr_min_s=config.asr.min_window_s,
            asr_max_s=config.asr.max_window_s,
        )
        finished = await _act(ctx, question, step, state, budget, log) or not ok
    if not finished:
        log.note(f"the controller used all {max_steps} steps without finishing")
    if state.super_links is None:
        # No update of the Super level was asked for: the program still enforces the
        # scaffold around whatever evidence was linked, as at the Overview level.
        await _refine_super_scaffold(ctx, question, state, log, call_update=False)
    state.handoff.append(
        HandoffEntry(
            agent=SINGLE_AGENT_NAME,
            level="subgraph" if state.opened else "super",
            instruction=None,
            stop=True,
        )
    )
    calls = LevelCalls(
        observations=budget.observations, updates=budget.updates, locators=budget.locators
    )
    plan = {"controller_steps": steps, "anchors": anchors, "anchor_source": anchor_source}
    return _outcomes(ctx, state, calls, log, plan), state.handoff


async def _refine_super_scaffold(
    ctx: RunContext,
    question: QuestionInput,
    state: _Controller,
    log: LevelLog,
    *,
    call_update: bool,
    planned_instruction: str = "",
) -> None:
    """The Overview level's Super scaffold over the controller's Super-level observations.

    Linking, protection and compression are the full method's (``overview.refine_supers``);
    with nothing linked the stored texts are kept, as there. ``planned_instruction`` is the
    controller's own wording of the update, its plan under
    ``agents.overview.update_instruction: plan``.
    """
    supers = ctx.memory.super_events()
    ids = [s.id for s in supers]
    spans = {s.id: (s.time_range.start, s.time_range.end) for s in supers}
    looks = [o for o in state.observations if o.level == "super"]
    links = link_super_evidence(ids, spans, [(o, state.named.get(o.source_id, [])) for o in looks])
    state.super_links = links
    if not ctx.updates_enabled or not links.evidence_ids:
        if ctx.updates_enabled:
            log.note("no observation is linked to any SuperEvent; original texts kept")
        return
    static = {i: state.static[i] for i in ids}
    refined, state.super_sources = await refine_supers(
        ctx,
        question,
        static,
        links,
        state.observations,
        log,
        agent=SINGLE_AGENT_NAME,
        call_update=call_update,
        planned_instruction=planned_instruction,
    )
    state.texts |= refined


async def _act(
    ctx: RunContext,
    question: QuestionInput,
    step: ControllerStep,
    state: _Controller,
    budget: LevelBudget,
    log: LevelLog,
) -> bool:
    """Carry out one action; True when the controller is done."""
    memory = ctx.memory
    instruction = clean(step.instruction)
    known = [i for i in step.memory_ids if i in state.texts or i in state.opened]
    unknown = [i for i in step.memory_ids if i not in known]
    if unknown:
        state.trajectory.append(f"ignored unknown ids {unknown}")
    if step.action == "finish":
        state.trajectory.append("finish")
        return True
    if step.action == "expand":
        macros = _macro_targets(ctx, known)
        new = [m for m in macros if m not in state.opened]
        if not new:
            state.trajectory.append("expand: no new MacroEvent to open")
            return False
        opened = focus_memories(ctx, new, question, instruction or None)
        for macro_id in new:
            state.opened.append(macro_id)
            state.texts[f"evidence:{macro_id}"] = opened.texts[macro_id]
            state.static[f"evidence:{macro_id}"] = opened.texts[macro_id]
            if macro_id not in state.touched_macros:
                state.touched_macros.append(macro_id)
        if opened.selection:
            state.selections[",".join(new)] = opened.selection
        state.handoff.append(
            HandoffEntry(
                agent=SINGLE_AGENT_NAME, level="macro", instruction=instruction or None, stop=False
            )
        )
        state.trajectory.append(f"expand {new}: evidence shown in the hierarchy")
        return False
    if step.action in ("observe_visual", "observe_asr"):
        if step.action == "observe_visual" and not ctx.visual_enabled:
            state.trajectory.append("observe_visual: visual observation is not available")
            return False
        if step.action == "observe_asr" and not ctx.asr_enabled:
            if ctx.asr_lost:
                log.degrade("asr_lost", "ASR observation", ctx.asr_lost)
            state.trajectory.append("observe_asr: the transcript is not available")
            return False
        if not budget.spend("observation"):
            state.trajectory.append(f"{step.action}: the observation budget is spent")
            return False
        observation = await _observe(ctx, step, state, instruction, known, question, log)
        state.named[observation.source_id] = [
            i for i in known if ctx.memory.node(_display_id(i)).kind == "SuperEvent"
        ]
        state.observations.append(observation)
        log.lost_observation(observation)
        result = observation.result if observation.succeeded else f"failed ({observation.error})"
        windows = ", ".join(format_range(s, e) for s, e in observation.windows)
        state.trajectory.append(
            f"{observation.source_id} {observation.kind} observation [{windows}]: {result}"
        )
        return False
    # update
    targets = _update_targets(ctx, known, step.level)
    if not ctx.updates_enabled or not targets:
        state.trajectory.append("update: nothing to rewrite")
        return False
    if not budget.spend("update"):
        state.trajectory.append("update: the update budget is spent")
        return False
    level: Level = step.level or _level_of(ctx, targets[0])
    if level == "super":
        # The whole Super scaffold is rewritten at once, as by the Overview agent's update.
        await _refine_super_scaffold(
            ctx, question, state, log, call_update=True, planned_instruction=instruction
        )
        state.trajectory.append("update (super): the Super scaffold was refined")
        return False
    rewritten = await rewrite_nodes(
        ctx,
        {_display_id(t): state.texts[t] for t in targets},
        state.observations,
        log=log,
        level=level,
        variables=level_variables(SINGLE_AGENT_NAME, level, question, None),
        update_instruction=instruction,
    )
    written = []
    for target in targets:
        node_id = _display_id(target)
        if node_id in rewritten.texts:
            state.texts[target] = rewritten.texts[node_id]
            if node_id in rewritten.compressed:
                state.compressed.add(target)
            else:
                state.compressed.discard(target)
            written.append(node_id)
            if memory.node(node_id).kind == "MacroEvent" and node_id not in state.touched_macros:
                state.touched_macros.append(node_id)
    state.trajectory.append(f"update ({level}): rewrote {written or 'nothing'}")
    return False


async def _observe(
    ctx: RunContext,
    step: ControllerStep,
    state: _Controller,
    instruction: str,
    ids: list[str],
    question: QuestionInput,
    log: LevelLog,
) -> Observation:
    """One observation of the step's ranges. A question relative to now ("in the last 2
    minutes") is looked at inside its window, as the levels of the method look: a listening
    or a grid look that misses it is placed on it, frames are kept to the named nodes' time
    inside it; either move is a warning (``log.moved_to_window``)."""
    config = ctx.config
    duration = ctx.duration_s
    ranges = list(step.time_ranges)
    if step.action == "observe_asr" or step.mode != "frames":
        ranges = toward_question_window(ranges, question.hints, log)
    if step.action == "observe_asr":
        fallback = visual_window(ranges, duration, min_span_s=0.0)
        windows = asr_windows(
            ranges,
            duration,
            fallback,
            max_windows=config.asr.max_windows,
            min_span_s=config.asr.min_window_s,
            max_span_s=config.asr.max_window_s,
        )
        observation, _ = await observe_speech(
            ctx, windows, instruction or "Report what is said.", source_id=state.source_id("asr")
        )
        return observation
    source = state.source_id("visual")
    if step.mode == "frames":
        spans = [_span(ctx, _display_id(i)) for i in ids] or [(0.0, duration)]
        asked = question_windows(question.hints)
        if asked and not any(meets_window(span, a) for span in spans for a in asked):
            spans = list(asked)  # the nodes named lie outside it
        look = look_in_window(ranges, spans, asked)
        windows = observation_windows(ranges, list(look.intervals), duration_s=duration)
        if look.moved:
            moved = ranges if look.placed else look.outside
            log.moved_to_window(
                "the planned look", window_move_text(moved, windows, look.placed, asked)
            )
        level: Level = step.level if step.level in ("macro", "subgraph") else "macro"
        return await observe_frames(
            ctx,
            windows,
            instruction or "Describe what is visible.",
            level=level,
            agent=SINGLE_AGENT_NAME,
            source_id=source,
        )
    window = visual_window(ranges, duration, min_span_s=config.agents.overview.min_window_s)
    return await observe_overview_grids(
        ctx,
        window,
        instruction or "Describe what is visible.",
        agent=SINGLE_AGENT_NAME,
        source_id=source,
    )


def _outcomes(
    ctx: RunContext,
    state: _Controller,
    calls: LevelCalls,
    log: LevelLog,
    plan: dict[str, object],
) -> list[LevelOutcome]:
    """The controller's memory as the three levels' outcomes, for ``assemble``."""
    memory = ctx.memory
    super_ids = [s.id for s in memory.super_events()]
    super_refined = {i: state.texts[i] for i in super_ids}
    evidence_ids = state.super_links.evidence_ids if state.super_links else []
    refs = observation_refs(state.observations)

    def sources(keys: dict[str, str], level: Level) -> dict[str, list[EvidenceRef]]:
        """Node id → its sources, for the nodes (keys of ``state.texts``) the controller
        rewrote."""
        return {
            node_id: node_sources(
                memory, node_id, level, refs, rewritten=key not in state.compressed
            )
            for node_id, key in keys.items()
            if state.texts[key] != state.static[key]
        }

    common = {"agent": SINGLE_AGENT_NAME, "notes": [], "degraded": []}
    outcomes = [
        LevelOutcome(
            level="super",
            candidate_ids=super_ids,
            plan=plan,
            observations=state.observations,
            refined=super_refined,
            static={i: state.static[i] for i in super_ids},
            evidence_ids=evidence_ids,
            protected_ids=protected_set(super_ids, evidence_ids),
            selected_ids=_parents(ctx, state.touched_macros),
            stop=not state.touched_macros,
            calls=calls,
            sources=state.super_sources,
            **{**common, "notes": log.notes, "degraded": log.degraded, "warnings": log.warnings},
        )
    ]
    if state.touched_macros:
        macros = sorted(state.touched_macros, key=lambda m: memory.time_range(m).start)
        outcomes.append(
            LevelOutcome(
                level="macro",
                candidate_ids=macros,
                refined={m: state.texts[m] for m in macros},
                static={m: state.static[m] for m in macros},
                evidence_ids=[m for m in macros if state.texts[m] != state.static[m]],
                selected_ids=list(state.opened),
                stop=not state.opened,
                sources=sources({m: m for m in macros}, "macro"),
                **common,
            )
        )
    if state.opened:
        outcomes.append(
            LevelOutcome(
                level="subgraph",
                candidate_ids=list(state.opened),
                refined={m: state.texts[f"evidence:{m}"] for m in state.opened},
                static={m: state.static[f"evidence:{m}"] for m in state.opened},
                evidence_selection=state.selections or None,
                stop=True,
                sources=sources({m: f"evidence:{m}" for m in state.opened}, "subgraph"),
                **common,
            )
        )
    return outcomes


def _hierarchy_text(ctx: RunContext, state: _Controller) -> str:
    memory = ctx.memory
    lines = []
    for super_event in memory.super_events():
        lines.append(memories_text(ctx, {super_event.id: state.texts[super_event.id]}))
        for macro in memory.macro_events(super_event.id):
            lines.append("  " + memories_text(ctx, {macro.id: state.texts[macro.id]}))
            evidence = state.texts.get(f"evidence:{macro.id}")
            if evidence:
                lines += [f"    {line}" for line in evidence.splitlines()]
    return "\n".join(lines)


def _macro_targets(ctx: RunContext, ids: list[str]) -> list[str]:
    """MacroEvents named directly, or every MacroEvent of a named SuperEvent."""
    targets: list[str] = []
    for node_id in ids:
        kind = ctx.memory.node(_display_id(node_id)).kind
        children = list(ctx.memory.child_ids(node_id)) if kind == "SuperEvent" else [node_id]
        targets += [c for c in children if c not in targets and ctx.memory.subgraph(c).nodes]
    return targets


def _update_targets(ctx: RunContext, ids: list[str], level: str | None) -> list[str]:
    """Ids to rewrite, all of one level (``level``, else the first id's level)."""
    if not ids:
        return []
    wanted = level or _level_of(ctx, ids[0])
    keys = [
        f"evidence:{i}" if wanted == "subgraph" and not i.startswith("evidence:") else i
        for i in ids
    ]
    return [k for k in keys if _level_of(ctx, k) == wanted]


def _level_of(ctx: RunContext, node_id: str) -> Level:
    if node_id.startswith("evidence:"):
        return "subgraph"
    return "super" if ctx.memory.node(node_id).kind == "SuperEvent" else "macro"


def _display_id(node_id: str) -> str:
    return node_id.removeprefix("evidence:")


def _span(ctx: RunContext, node_id: str) -> tuple[float, float]:
    time_range = ctx.memory.time_range(node_id)
    return (time_range.start, time_range.end)


def _parents(ctx: RunContext, macro_ids: list[str]) -> list[str]:
    parents: list[str] = []
    for macro_id in macro_ids:
        parent = ctx.memory.parent(macro_id)
        if parent is not None and parent.id not in parents:
            parents.append(parent.id)
    return parents
