"""The Skim (Macro) and Focus (Subgraph) agents: one shared protocol, different memories.

Plan → observe (when planned, and always at Macro for non-global questions) over the planned
ranges intersected with the candidates' intervals, up to 50 single frames → rewrite the
requested nodes (ids, parents and times never change; a missing or invalid rewrite keeps the
original text) → one decision.

At the Focus level a candidate memory is the leaf evidence under one selected MacroEvent (its
id is that MacroEvent's id). PACE-Mem chooses which clips of evidence are shown, in
chronological order, and the chosen clips' time ranges are where frames are sampled.
"""

from __future__ import annotations

from dataclasses import dataclass

from videotapestry.agents.context import LevelBudget, RunContext
from videotapestry.agents.level import (
    PLANNING_ROLES,
    LevelLog,
    call_or_fallback,
    clean,
    decide,
    labelled_text,
    level_variables,
    memories_text,
    observation_sources,
)
from videotapestry.agents.rules import rank_by_overlap, tiny_summary
from videotapestry.agents.state import (
    AGENT_NAMES,
    Level,
    LevelCalls,
    LevelOutcome,
    Observation,
    QuestionInput,
)
from videotapestry.agents.tools import observe_frames
from videotapestry.contracts.method import LevelPlan, LevelUpdate, NodeRewrite
from videotapestry.memory.prompt_text import node_line, relation_line, serialize_root
from videotapestry.retrieval import focus_query_text, select_focus_evidence
from videotapestry.video import TimeWindow, observation_windows


@dataclass(frozen=True)
class LevelMemories:
    """A level's candidate texts and the time intervals observation may look at."""

    texts: dict[str, str]
    intervals: dict[str, list[tuple[float, float]]]
    selection: dict | None = None


def macro_memories(ctx: RunContext, macro_ids: list[str]) -> LevelMemories:
    texts, intervals = {}, {}
    for macro_id in macro_ids:
        macro = ctx.memory.node(macro_id)
        texts[macro_id] = labelled_text(macro.label, macro.summary)
        intervals[macro_id] = [(macro.time_range.start, macro.time_range.end)]
    return LevelMemories(texts, intervals)


def focus_memories(
    ctx: RunContext, macro_ids: list[str], question: QuestionInput, instruction: str | None
) -> LevelMemories:
    """PACE-Mem's evidence under each selected MacroEvent, chronological, with relations.

    Every selected MacroEvent that has evidence is represented (``evidence.focus_scope``),
    and the chosen clips' windows are where the Focus agent's frames are sampled. Without
    node embeddings (no embedder configured) every subgraph node is shown: a documented
    fallback that costs tokens but loses nothing.
    """
    memory = ctx.memory
    chosen: dict[str, list[str]] = {m: [] for m in macro_ids}
    intervals: dict[str, list[tuple[float, float]]] = {m: [] for m in macro_ids}
    selection = None
    if ctx.evidence is not None and ctx.embedder is not None:
        settings = ctx.config.evidence
        query = focus_query_text(
            question.question,
            instruction,
            question.options,
            include_options=settings.query_options,
        )
        vector = ctx.embedder.embed([query], query=True)[0]
        focus = select_focus_evidence(vector, ctx.evidence, macro_ids, settings)
        selection = focus.to_dict()
        for macro_id, evidence in focus.macros.items():
            chosen[macro_id] = list(evidence.record_ids)
            intervals[macro_id] = list(evidence.windows)
    else:
        for macro_id in macro_ids:
            chosen[macro_id] = [n.id for n in memory.subgraph(macro_id).nodes]
    texts = {}
    for macro_id in macro_ids:
        macro = memory.node(macro_id)
        node_ids = sorted(chosen[macro_id], key=lambda i: memory.time_range(i).start)
        if not intervals[macro_id]:
            intervals[macro_id] = [(macro.time_range.start, macro.time_range.end)]
        lines = [f"Evidence under {macro_id} ({macro.label}):"]
        lines += [f"- {node_line(memory.node(i))}" for i in node_ids] or ["- (none selected)"]
        relations = [
            r for r in memory.subgraph(macro_id).relations if {r.source, r.target} <= set(node_ids)
        ]
        if relations:
            lines.append("Relations:")
            lines += [f"- {relation_line(r)}" for r in relations]
        texts[macro_id] = "\n".join(lines)
    return LevelMemories(texts, intervals, selection)


async def run_detail_level(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    *,
    instruction_in: str | None,
    is_global: bool,
) -> LevelOutcome:
    config = ctx.config
    agent = AGENT_NAMES[level]
    settings = config.agents.skim if level == "macro" else config.agents.focus
    budget = LevelBudget(config.agents.level_limits)
    memories = (
        macro_memories(ctx, candidates)
        if level == "macro"
        else focus_memories(ctx, candidates, question, instruction_in)
    )
    static = dict(memories.texts)
    ctx.report(level=level, step="plan", agent=agent)
    log = LevelLog(level)

    observations: list[Observation] = []
    plan = LevelPlan()
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
            max_frames=settings.max_frames,
        )

    all_intervals = [span for spans in memories.intervals.values() for span in spans]
    windows: list[TimeWindow] = []
    wants_look = plan.observation_needed or (level == "macro" and not is_global)
    if ctx.visual_enabled and wants_look and budget.spend("observation"):
        windows = observation_windows(plan.time_ranges, all_intervals, duration_s=ctx.duration_s)
        instruction = clean(plan.observation_instruction) or (
            instruction_in or "Describe what is visible that bears on these events."
        )
        ctx.report(level=level, step="observe", tool="visual", windows=[list(w) for w in windows])
        observation = await observe_frames(
            ctx, windows, instruction, level=level, agent=agent, source_id="V1"
        )
        observations.append(observation)
        log.lost_observation(observation)

    refined = dict(static)
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
            refined |= await rewrite_nodes(
                ctx,
                {i: static[i] for i in targets},
                observations,
                log=log,
                level=level,
                variables=level_variables(agent, level, question, instruction_in),
                update_instruction=clean(plan.thought),
            )

    ctx.report(level=level, step="decide", agent=agent)
    fallback = rank_by_overlap(_spans(memories), windows) if windows else []
    decision = await decide(
        ctx,
        level=level,
        agent=agent,
        question=question,
        instruction_in=instruction_in,
        memories=memories_text(ctx, refined),
        trajectory="\n".join(
            f"visual observation: {o.result}" if o.succeeded else f"observation failed: {o.error}"
            for o in observations
        ),
        is_global=is_global,
        current_ids=candidates,
        fallback_ids=fallback or list(candidates),
        log=log,
    )
    return LevelOutcome(
        level=level,
        agent=agent,
        candidate_ids=list(candidates),
        instruction_in=instruction_in,
        plan=plan.model_dump(mode="json"),
        observations=observations,
        refined=refined,
        static=static,
        evidence_ids=[i for i in candidates if refined[i] != static[i]],
        selected_ids=list(decision.selected_ids),
        instruction_out=decision.instruction,
        template_type=decision.template_type,
        stop=decision.stop,
        reason=decision.reason,
        evidence_selection=memories.selection,
        calls=LevelCalls(observations=budget.observations, updates=budget.updates),
        notes=log.notes,
        degraded=log.degraded,
    )


async def rewrite_nodes(
    ctx: RunContext,
    texts: dict[str, str],
    observations: list[Observation],
    *,
    log: LevelLog,
    level: Level,
    variables: dict[str, object],
    update_instruction: str,
) -> dict[str, str]:
    """One update-tool call over ``texts`` (id → current text); the new texts it gave.

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
    for node_id in texts:
        if node_id in reply.rejected:
            log.degrade(
                "update_rejected",
                f"level_update entry {node_id}",
                f"{reply.rejected[node_id]}; its original text is kept",
            )
        elif text := rewritten_text(reply.updated_memories.get(node_id)):
            rewritten[node_id] = text
        else:
            log.note(f"no valid rewrite for {node_id}; original text kept")
    unknown = sorted(set(reply.updated_memories) - set(texts))
    if unknown:
        log.note(f"rewrites for ids not requested were ignored: {unknown}")
    return rewritten


def rewritten_text(rewrite: NodeRewrite | None) -> str:
    """A node's new text: steering removed; an irrelevant node's summary cut to 10 chars."""
    if rewrite is None:
        return ""
    text = clean(rewrite.updated_text)
    if rewrite.is_relevant is False and text:
        return tiny_summary(text)
    return text


def _spans(memories: LevelMemories) -> dict[str, tuple[float, float]]:
    return {
        node_id: (min(s for s, _ in spans), max(e for _, e in spans))
        for node_id, spans in memories.intervals.items()
    }
