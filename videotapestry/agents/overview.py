"""The Overview agent: the Super level (Algorithm 2, lines 2-10 and 16-18).

Plan with locator hints → one continuous visual window (≥ min(600 s, duration)) seen as
up to 120 frames in 3x2 grids → ASR planning → up to three normalized transcript windows read
by a tool that never sees the question → evidence linked to SuperEvents by ids and time →
protected set (evidence-linked events and their neighbours) keeps its text and gains
[Visual] / [Transcript] / [Evidence]; every other SuperEvent is compressed → one decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from videotapestry.agents.citations import node_sources, observation_refs
from videotapestry.agents.context import LevelBudget, RunContext
from videotapestry.agents.level_protocol import (
    LevelLog,
    call_or_fallback,
    clean,
    decide,
    level_record,
    memories_text,
    observation_sources,
    super_texts,
    update_record,
    update_requests_json,
)
from videotapestry.agents.relative_time import QUESTION_WINDOW, question_windows
from videotapestry.agents.rules import (
    assign_lines_to_spans,
    clean_anchors,
    compose_protected_text,
    compress_text,
    link_by_overlap,
    protected_set,
    question_anchors,
    rank_by_overlap,
    transcript_follows_look,
)
from videotapestry.agents.state import (
    AGENT_NAMES,
    EvidenceRef,
    LevelCalls,
    LevelOutcome,
    MomentHint,
    Observation,
    QuestionInput,
)
from videotapestry.agents.tools import observe_overview_grids, observe_speech
from videotapestry.asr import TranscriptLine
from videotapestry.contracts.method import (
    AnchorPlan,
    AsrPlan,
    OverviewPlan,
    SuperMemoryUpdate,
    SuperUpdate,
)
from videotapestry.memory import MultiAnchorResult, VideoMemory
from videotapestry.memory.prompt_text import clock_range, serialize_root
from videotapestry.timecode import format_range
from videotapestry.video import asr_windows, visual_window

MAX_ANCHORS = 4


def locator_text(result: MultiAnchorResult | None, hints: Sequence[MomentHint] = ()) -> str:
    """The multi-anchor locator's answer in the compact form the planning prompt expects,
    then the window a question relative to now was resolved to (``relative_time``) and the
    moments a library search found (``hints``), numbered after the locator's own windows in
    the same form, so the locator's come first."""
    lines = _located_lines(result)
    groups = (
        ("question_window (the time the question asks about):", QUESTION_WINDOW),
        ("library_search_hits (where a search across videos found the question):", None),
    )
    for title, level in groups:
        shown = [h for h in hints if (h.level == QUESTION_WINDOW) == (level is not None)]
        if not shown:
            continue
        first = 1 + sum(1 for line in lines if line[:1].isdigit())
        lines.append(title)
        for number, hint in enumerate(shown, first):
            lines.append(
                f"{number}. {format_range(hint.start_s, hint.end_s)} "
                f"({hint.start_s:.0f}-{hint.end_s:.0f} s) {hint.level} {hint.text[:120]!r}"
            )
    return "\n".join(lines)


def toward_question_window(
    planned: Sequence[tuple[float, float]], hints: Sequence[MomentHint], log: LevelLog
) -> list[tuple[float, float]]:
    """The plan's ranges, or the window a question relative to now was resolved to ("in the
    last 2 minutes": ``relative_time``) when the plan looks nowhere near it: the question
    names that time outright, so the one continuous look is placed on it (and widened
    around it as any plan is); a plan that touches it is kept. A placed look is a
    ``moved_to_question_window`` warning, as the levels below record theirs
    (``level_protocol``)."""
    asked = question_windows(hints)
    if not asked or any(a <= e and s <= b for s, e in planned for a, b in asked):
        return list(planned)
    log.moved_to_window(
        "the planned look",
        "the plan looked away from the time the question names; the window is placed on "
        + ", ".join(format_range(a, b) for a, b in asked),
    )
    return asked


def _located_lines(result: MultiAnchorResult | None) -> list[str]:
    if result is None:
        return []
    lines = ["tool=multi_locator_compressed", f"anchors: {list(result.anchors)}"]
    lines.append("candidate_windows:" if result.candidate_windows else "candidate_windows: []")
    for number, window in enumerate(result.candidate_windows, 1):
        matches = "; ".join(
            f"{m.anchor} -> {m.hit.node_id} {m.hit.kind} {m.hit.label!r} "
            f"[{clock_range(m.hit.time_range)}] in {m.hit.super_id}"
            for m in window.matches
        )
        lines.append(
            f"{number}. [{clock_range(window.time_range)}] "
            f"({window.time_range.start:.0f}-{window.time_range.end:.0f} s) {matches}"
        )
    lines.append(f"unresolved_anchors: {list(result.unresolved_anchors)}")
    return lines


#: Tool calls the Overview level makes after anchoring: visual, ASR and one update.
_OVERVIEW_TOOL_CALLS = 3


async def locator_hints(
    ctx: RunContext, question: QuestionInput, budget: LevelBudget, log: LevelLog
) -> tuple[MultiAnchorResult | None, list[str], str]:
    """The Overview agent splits the target into atomic anchors and the locator searches them.

    The anchor call is a tool call of the level (it is skipped when the level's budget cannot
    also cover the observations and the update); without it, or when it fails or returns no
    usable anchor, the anchors come from the question's text (``question_anchors``).
    Returns (locator result, anchors, where the anchors came from).
    """
    if ctx.locator is None:
        return None, [], "none"
    anchors: list[str] = []
    source = "question text"
    if budget.left() > _OVERVIEW_TOOL_CALLS and budget.spend("locator"):
        ctx.report(level="super", step="anchors")
        reply, ok = await call_or_fallback(
            ctx,
            "overview",
            "locator_anchors",
            AnchorPlan,
            AnchorPlan(),
            level="super",
            log=log,
            **question.prompt_variables(),
            max_anchors=MAX_ANCHORS,
        )
        anchors = clean_anchors(reply.anchors, question.options, max_anchors=MAX_ANCHORS)
        if anchors:
            source = "overview agent"
        elif ok:
            log.note("the anchor call returned no usable anchor; anchors from the question text")
    if not anchors:
        anchors = question_anchors(question.question, max_anchors=MAX_ANCHORS)
    located = await asyncio.to_thread(ctx.locator.locate, anchors) if anchors else None
    return located, anchors, source


async def run_overview(
    ctx: RunContext, question: QuestionInput, *, is_global: bool
) -> LevelOutcome:
    config = ctx.config
    memory = ctx.memory
    agent = AGENT_NAMES["super"]
    supers = memory.super_events()
    ids = [s.id for s in supers]
    spans = {s.id: (s.time_range.start, s.time_range.end) for s in supers}
    static = super_texts(memory)
    log = LevelLog("super")
    budget = LevelBudget(config.agents.level_limits)
    duration = ctx.duration_s
    ctx.report(level="super", step="plan", agent=agent)

    refines = ctx.visual_enabled or ctx.asr_enabled or ctx.updates_enabled
    located: MultiAnchorResult | None = None
    anchors: list[str] = []
    anchor_source = "none"
    if refines and not is_global:
        located, anchors, anchor_source = await locator_hints(ctx, question, budget, log)
    plan = OverviewPlan(observation_instruction=_default_visual_instruction())
    if refines:  # static memory: nothing to plan, only the decision below
        plan, _ = await call_or_fallback(
            ctx,
            "overview",
            "overview_planning",
            OverviewPlan,
            OverviewPlan(observation_instruction=_default_visual_instruction()),
            level="super",
            log=log,
            **question.prompt_variables(),
            video_duration=round(duration, 1),
            observation_time_bounds=[0.0, round(duration, 1)],
            global_summary=serialize_root(memory).text,
            memories=memories_text(ctx, static),
            locator_results=locator_text(located, question.hints),
            trajectory="",  # one batch per level: nothing precedes the plan
            limits=config.agents.level_limits.model_dump(),
            min_window_s=config.agents.overview.min_window_s,
        )
    instruction = clean(plan.observation_instruction) or _default_visual_instruction()

    observations = []
    window = visual_window(
        toward_question_window(plan.time_ranges, question.hints, log),
        duration,
        min_span_s=config.agents.overview.min_window_s,
    )
    visual = None
    if ctx.visual_enabled and budget.spend("observation"):
        ctx.report(level="super", step="observe", tool="visual", window=list(window))
        visual = await observe_overview_grids(ctx, window, instruction, agent=agent)
        observations.append(visual)
        log.lost_observation(visual)

    speech = None
    transcript: list[TranscriptLine] = []
    asr_plan = AsrPlan(observation_instruction=instruction)
    asr_spans: list[tuple[float, float]] = []
    follows = transcript_follows_look(
        looked=visual is not None,
        look_succeeded=visual is not None and visual.succeeded,
        after_failed_look=config.agents.overview.asr_after_failed_look,
    )
    if ctx.asr_enabled and not follows:
        log.note(
            "no transcript was planned or read: the visual look failed and the transcript "
            "only follows a successful one (agents.overview.asr_after_failed_look: false)"
        )
    elif ctx.asr_enabled and budget.allows("observation"):
        ctx.report(level="super", step="plan_asr", agent=agent)
        asr_plan, _ = await call_or_fallback(
            ctx,
            "overview",
            "asr_planning",
            AsrPlan,
            AsrPlan(observation_instruction=instruction),
            level="super",
            log=log,
            **question.prompt_variables(),
            video_duration=round(duration, 1),
            visual_window=[round(window.start_s, 1), round(window.end_s, 1)],
            visual_observation=visual.result if visual is not None else "",
            memories=memories_text(ctx, static),
            max_windows=config.asr.max_windows,
            min_window_s=config.asr.min_window_s,
            max_window_s=config.asr.max_window_s,
        )
        windows = asr_windows(
            asr_plan.time_ranges,
            duration,
            window,
            max_windows=config.asr.max_windows,
            min_span_s=config.asr.min_window_s,
            max_span_s=config.asr.max_window_s,
        )
        asr_spans = [(w.start_s, w.end_s) for w in windows]
        budget.spend("observation")
        ctx.report(level="super", step="observe", tool="asr", windows=[list(w) for w in windows])
        speech, transcript = await observe_speech(
            ctx, windows, clean(asr_plan.observation_instruction) or instruction
        )
        observations.append(speech)
        log.lost_observation(speech)
        if speech.unmatched_evidence:
            log.note(
                f"{len(speech.unmatched_evidence)} quoted transcript line(s) matched no line "
                "at their stated time and were dropped"
            )
    elif ctx.asr_lost:
        log.degrade("asr_lost", "ASR observation", ctx.asr_lost)

    links = link_super_evidence(
        ids,
        spans,
        [
            (obs, named)
            for obs, named in (
                (visual, plan.candidate_memory_ids),
                (speech, asr_plan.candidate_memory_ids),
            )
            if obs is not None
        ],
    )
    evidence_ids = links.evidence_ids
    protected = protected_set(ids, evidence_ids)

    refined = dict(static)
    sources: dict[str, list[EvidenceRef]] = {}
    if ctx.updates_enabled and not evidence_ids:
        # Compressing every SuperEvent around no evidence would leave a scaffold worse than
        # the static memory: keep the stored texts and say why.
        reason = _nothing_linked_reason(visual, speech, ctx)
        log.note(f"no observation is linked to any SuperEvent ({reason}); original texts kept")
        ctx.session.trace.note("super_scaffold_kept", reason=reason)
    elif ctx.updates_enabled:
        refined, sources = await refine_supers(
            ctx,
            question,
            static,
            links,
            observations,
            log,
            agent=agent,
            call_update=budget.spend("update"),
            planned_instruction=clean(plan.observation_instruction),
        )

    ctx.report(level="super", step="decide", agent=agent)
    fallback_ids = evidence_ids or rank_by_overlap(spans, [window])
    full = config.agents.decision_context == "full"
    trajectory = _trajectory(observations)
    if full:
        plans = {"visual plan": plan.model_dump(mode="json")}
        if ctx.asr_enabled and asr_spans:
            plans["asr plan"] = asr_plan.model_dump(mode="json")
        trajectory = level_record(
            plans,
            observations,
            update_record(
                static,
                refined,
                made=budget.updates > 0,
                protected=protected if refined != static else (),
            ),
        )
    decision = await decide(
        ctx,
        level="super",
        agent=agent,
        question=question,
        instruction_in=None,
        memories=memories_text(ctx, refined),
        old_memories=memories_text(ctx, static) if full else "",
        trajectory=trajectory,
        is_global=is_global,
        current_ids=ids,
        fallback_ids=fallback_ids,
        log=log,
    )
    return LevelOutcome(
        level="super",
        agent=agent,
        candidate_ids=ids,
        plan={
            "visual": plan.model_dump(mode="json"),
            "asr": asr_plan.model_dump(mode="json"),
            "visual_window": [window.start_s, window.end_s],
            "asr_windows": [list(w) for w in asr_spans],
            "anchors": anchors,
            "anchor_source": anchor_source,
            "locator": locator_text(located, question.hints),
        },
        observations=observations,
        refined=refined,
        static=static,
        evidence_ids=evidence_ids,
        protected_ids=protected,
        selected_ids=list(decision.selected_ids),
        instruction_out=decision.instruction,
        template_type=decision.template_type,
        stop=decision.stop,
        reason=decision.reason,
        calls=LevelCalls(
            observations=budget.observations, updates=budget.updates, locators=budget.locators
        ),
        notes=log.notes + ([f"transcript lines read: {len(transcript)}"] if speech else []),
        degraded=log.degraded,
        warnings=log.warnings,
        sources=sources,
    )


@dataclass(frozen=True)
class SuperEvidence:
    """Which SuperEvents the Super-level observations concern (SPEC §5).

    ``visual`` and ``transcript`` are the ids linked to a visual or a transcript observation
    that found something, in time order; ``lines`` the verbatim transcript lines placed on
    each SuperEvent by their own timestamps; ``by_source`` the ids each observation (by its
    source id) is linked to, which the update call's source refs name.
    """

    order: tuple[str, ...]
    visual: tuple[str, ...]
    transcript: tuple[str, ...]
    lines: Mapping[str, Sequence[TranscriptLine]]
    by_source: Mapping[str, tuple[str, ...]]

    @property
    def evidence_ids(self) -> list[str]:
        return _ordered(list(self.order), [*self.visual, *self.transcript])


def link_super_evidence(
    ids: Sequence[str],
    spans: Mapping[str, tuple[float, float]],
    observations: Sequence[tuple[Observation, Sequence[str]]],
) -> SuperEvidence:
    """Link each observation that found something to the SuperEvents its planner named
    (``observations`` pairs it with those ids) and to those its windows overlap; a
    transcript's quoted lines also link the SuperEvents their timestamps fall in. An
    observation that failed or found nothing (no speech, no quoted line) links nothing."""
    order = list(ids)
    valid = set(order)
    visual: list[str] = []
    transcript: list[str] = []
    lines: dict[str, list[TranscriptLine]] = {i: [] for i in order}
    by_source: dict[str, tuple[str, ...]] = {}
    for obs, named in observations:
        if not obs.bears_evidence:
            continue
        linked = [i for i in named if i in valid] + link_by_overlap(spans, obs.windows)
        if obs.kind == "asr":
            quoted = [TranscriptLine(s, e, t) for s, e, t in obs.evidence_lines]
            placed = assign_lines_to_spans(quoted, spans)
            for node_id, node_lines in placed.items():
                lines[node_id] = [*lines.get(node_id, []), *node_lines]
            linked += [i for i, node_lines in placed.items() if node_lines]
        (visual if obs.kind == "visual" else transcript).extend(linked)
        by_source[obs.source_id] = tuple(_ordered(order, linked))
    return SuperEvidence(
        tuple(order),
        tuple(_ordered(order, visual)),
        tuple(_ordered(order, transcript)),
        lines,
        by_source,
    )


async def refine_supers(
    ctx: RunContext,
    question: QuestionInput,
    static: Mapping[str, str],
    links: SuperEvidence,
    observations: Sequence[Observation],
    log: LevelLog,
    *,
    agent: str,
    call_update: bool,
    planned_instruction: str = "",
) -> tuple[dict[str, str], dict[str, list[EvidenceRef]]]:
    """The Super scaffold around the linked evidence: protected SuperEvents keep their text and
    gain their evidence parts, every other one is compressed (SPEC §5), with or without the
    update call (``call_update``: the level's budget allowed it). Returns (texts, sources).

    ``planned_instruction`` is what the plan asked the look to find, the update's shared
    instruction under ``agents.overview.update_instruction: plan``."""
    ids = list(static)
    protected = protected_set(ids, links.evidence_ids)
    updates: dict[str, SuperMemoryUpdate] = {}
    rejected: dict[str, str] = {}
    if call_update:
        ctx.report(level="super", step="update", agent=agent)
        requests = [
            {
                "memory_id": i,
                "time_range": clock_range(ctx.memory.time_range(i)),
                "old_memory_text": static[i],
                "source_refs": [src for src, linked in links.by_source.items() if i in linked],
            }
            for i in ids
        ]
        reply, _ = await call_or_fallback(
            ctx,
            "update",
            "super_update",
            SuperUpdate,
            SuperUpdate(updated_memories={}),
            level="super",
            log=log,
            **question.prompt_variables(),
            previous_instruction="",
            update_instruction=super_update_instruction(
                ctx.config.agents.overview.update_instruction, planned_instruction
            ),
            observation_sources=observation_sources(observations),
            update_requests=update_requests_json(requests),
        )
        updates, rejected = reply.updated_memories, reply.rejected
        for memory_id, problem in rejected.items():
            log.degrade(
                "update_rejected",
                f"super_update entry {memory_id}",
                f"{problem}; its original text is kept",
            )
    refined = {
        i: _refine_super(
            static[i],
            updates.get(i),
            rejected=i in rejected,
            protected=i in protected,
            visual=i in links.visual,
            transcript=i in links.transcript,
            evidence=[
                f"{format_range(line.start_s, line.end_s)} {line.text}"
                for line in links.lines.get(i, [])
            ],
        )
        for i in ids
    }
    sources = _super_sources(
        ctx.memory, ids, protected, links.visual, links.lines, observation_refs(observations)
    )
    return refined, sources


#: The Super update's shared instruction under ``agents.overview.update_instruction: fixed``.
FIXED_SUPER_UPDATE_INSTRUCTION = (
    "Add the observed facts to the SuperEvents the sources concern; summarize the others in "
    "one or two sentences."
)


def super_update_instruction(source: Literal["fixed", "plan"], planned: str) -> str:
    """The one update_instruction every request of the Super update shares.

    ``plan``: the instruction the Overview agent's plan gave its look (self-contained and
    free of the options, as its prompt requires), so the update tool weighs the sources
    toward what the level set out to find; the paper's update reads the plan. ``fixed``, or
    a plan without an instruction: the sentence stating the update's job."""
    if source == "plan" and planned.strip():
        return planned.strip()
    return FIXED_SUPER_UPDATE_INSTRUCTION


def _super_sources(
    memory: VideoMemory,
    ids: Sequence[str],
    protected: Collection[str],
    visual_linked: Collection[str],
    evidence_by_super: Mapping[str, Sequence[TranscriptLine]],
    refs: Sequence[EvidenceRef],
) -> dict[str, list[EvidenceRef]]:
    """What each SuperEvent's new text rests on: a protected one, its stored node with the
    frames of the visual observation linked to it and the transcript lines the program gave
    it; a compressed one, its stored node alone."""
    sources = {}
    for node_id in ids:
        lines = {(line.start_s, line.end_s, line.text) for line in evidence_by_super[node_id]}
        linked = [
            ref
            for ref in refs
            if (ref.kind == "frame" and node_id in visual_linked)
            or (ref.kind == "transcript_line" and (ref.start_s, ref.end_s, ref.text) in lines)
        ]
        sources[node_id] = node_sources(
            memory, node_id, "super", linked, rewritten=node_id in protected
        )
    return sources


def _nothing_linked_reason(
    visual: Observation | None, speech: Observation | None, ctx: RunContext
) -> str:
    parts = []
    if visual is None:
        disabled = f": {ctx.observation_disabled}" if ctx.observation_disabled else ""
        parts.append(f"no visual observation{disabled}")
    elif not visual.succeeded:
        parts.append(f"visual observation failed: {visual.error or 'empty result'}")
    if speech is None:
        parts.append("no transcript observation")
    elif not speech.succeeded:
        parts.append(f"transcript observation failed: {speech.error or 'empty result'}")
    elif not speech.found:
        parts.append(f"transcript observation found nothing: {speech.result}")
    return "; ".join(parts) or "the observations overlap no SuperEvent"


def _default_visual_instruction() -> str:
    return (
        "Describe the people, actions, objects, on-screen text and scene changes visible in "
        "these frames, with the timestamps at which they appear."
    )


def _ordered(order: list[str], ids: list[str]) -> list[str]:
    wanted = set(ids)
    return [i for i in order if i in wanted]


def _trajectory(observations: list[Observation]) -> str:
    return "\n".join(
        f"{obs.kind} observation {obs.source_id}: "
        + (obs.result.strip() if obs.succeeded else f"failed ({obs.error})")
        for obs in observations
    )


def _refine_super(
    original: str,
    update: SuperMemoryUpdate | None,
    *,
    rejected: bool,
    protected: bool,
    visual: bool,
    transcript: bool,
    evidence: list[str],
) -> str:
    """Protected: original + evidence parts. Others: the tool's summary, or a first sentence.

    The protected set is enforced here whatever the tool said: a protected node never loses
    its text, an unprotected one is compressed, and a modality's part is only taken from the
    tool when that modality's source was linked to the node. A node whose update entry was
    unusable (``rejected``) keeps its original text; the program's verbatim evidence lines
    still go to a protected one.
    """
    if rejected:
        update = None
    if protected:
        return compose_protected_text(
            original,
            visual=clean(update.visual_observation) if update and visual else "",
            transcript=clean(update.asr_observation) if update and transcript else "",
            evidence=evidence,
        )
    if rejected:
        return original
    summary = clean(update.irrelevant_summary) if update else ""
    return summary or compress_text(original)
