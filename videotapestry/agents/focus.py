"""The Focus agent: the Subgraph level, over the leaf evidence of the selected MacroEvents.

A candidate memory is the evidence under one selected MacroEvent (its id is that
MacroEvent's id). PACE-Mem chooses which clips of evidence are shown, in chronological
order (``agents.focus.evidence: selected_clips``), or the whole local subgraph is shown, as
in the paper (``whole_subgraphs``). The planned frame ranges are intersected with the
MacroEvents' intervals, as in the paper (``agents.focus.frame_windows: candidates``), or with
the chosen clips' windows (``selected_clips``). From there it follows the level protocol
like the Skim agent, in two steps (``refine_focus``: plan, observe, rewrite; then
``decide_focus``): its decision always stops, as the Subgraph is the last level, so the
graph makes it alongside the Answer agent.
"""

from __future__ import annotations

import asyncio

from videotapestry.agents.context import RunContext
from videotapestry.agents.level_protocol import (
    LevelMemories,
    decide_level,
    macro_event,
    refine_level,
)
from videotapestry.agents.relative_time import (
    Span,
    choose_in_window,
    meets_window,
    question_windows,
)
from videotapestry.agents.state import LevelOutcome, QuestionInput
from videotapestry.memory.prompt_text import node_line, relation_line
from videotapestry.retrieval import focus_query_text, select_focus_evidence


def focus_memories(
    ctx: RunContext, macro_ids: list[str], question: QuestionInput, instruction: str | None
) -> LevelMemories:
    """The evidence under each selected MacroEvent, chronological, with relations.

    With ``agents.focus.evidence: selected_clips`` PACE-Mem chooses it, and every selected
    MacroEvent that has evidence is represented (``evidence.focus_scope``); without node
    embeddings (no embedder configured) every subgraph node is shown, a documented fallback
    that costs tokens but loses nothing. ``whole_subgraphs`` always shows every node. The
    intervals are where the planned frame ranges may fall (``agents.focus.frame_windows``).

    A question relative to now (``relative_time``) is shown the evidence inside its window:
    each MacroEvent's chosen evidence is kept to the nodes the window overlaps, or placed on
    them when none was chosen there (``_evidence_in_window``), and chosen clips outside it
    give way to the MacroEvent's own interval, which the level then cuts to the window.
    """
    memory = ctx.memory
    settings_focus = ctx.config.agents.focus
    chosen: dict[str, list[str]] = {m: [] for m in macro_ids}
    clip_windows: dict[str, list[tuple[float, float]]] = {m: [] for m in macro_ids}
    selection = None
    selects = settings_focus.evidence == "selected_clips"
    if selects and ctx.evidence is not None and ctx.embedder is not None:
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
            clip_windows[macro_id] = list(evidence.windows)
    else:
        for macro_id in macro_ids:
            chosen[macro_id] = [n.id for n in memory.subgraph(macro_id).nodes]
    asked = question_windows(question.hints)
    notes: list[str] = []
    texts = {}
    intervals: dict[str, list[tuple[float, float]]] = {}
    for macro_id in macro_ids:
        macro = macro_event(memory, macro_id)
        if asked:
            chosen[macro_id] = _evidence_in_window(ctx, macro_id, chosen[macro_id], asked, notes)
            clip_windows[macro_id] = [
                w for w in clip_windows[macro_id] if any(meets_window(w, a) for a in asked)
            ]
        node_ids = sorted(chosen[macro_id], key=lambda i: memory.time_range(i).start)
        own = [(macro.time_range.start, macro.time_range.end)]
        by_clips = settings_focus.frame_windows == "selected_clips"
        intervals[macro_id] = (clip_windows[macro_id] or own) if by_clips else own
        lines = [f"Evidence under {macro_id} ({macro.label}):"]
        lines += [f"- {node_line(memory.node(i))}" for i in node_ids] or ["- (none selected)"]
        relations = [
            r for r in memory.subgraph(macro_id).relations if {r.source, r.target} <= set(node_ids)
        ]
        if relations:
            lines.append("Relations:")
            lines += [f"- {relation_line(r)}" for r in relations]
        texts[macro_id] = "\n".join(lines)
    return LevelMemories(texts, intervals, selection, tuple(notes))


def _evidence_in_window(
    ctx: RunContext, macro_id: str, chosen: list[str], asked: list[Span], notes: list[str]
) -> list[str]:
    """``chosen`` (the evidence under ``macro_id`` shown to the Focus agent) after the
    question's window (``relative_time.choose_in_window``): PACE-Mem chose it for the
    question's words, not its time, so evidence outside the window is not shown. A change is
    a note of the level (the agent chose nothing here; its look is recorded apart)."""
    spans = {
        n.id: (n.time_range.start, n.time_range.end) for n in ctx.memory.subgraph(macro_id).nodes
    }
    choice = choose_in_window(chosen, spans, asked)
    if choice.placed:
        notes.append(
            f"no evidence chosen under {macro_id} lies in the time the question names; "
            f"shown instead: its {len(choice.chosen)} node(s) there"
        )
    elif choice.outside:
        notes.append(
            f"{len(choice.outside)} evidence node(s) under {macro_id} outside the time the "
            "question names were not shown"
        )
    return list(choice.chosen)


async def refine_focus(
    ctx: RunContext, question: QuestionInput, candidates: list[str], *, instruction_in: str | None
) -> LevelOutcome:
    """The Focus level planned, observed and rewritten, its decision still to come.

    Everything the Answer agent reads from this level is here: its decision can only stop
    (the Subgraph is the last level, so the stop is forced and the selection and
    instruction are cleared), which is why the graph runs it alongside the Answer agent.
    """
    refined = await refine_level(
        ctx,
        "subgraph",
        question,
        candidates,
        # The query's embedding and PACE-Mem's selection run in a thread, off the event loop.
        await asyncio.to_thread(focus_memories, ctx, candidates, question, instruction_in),
        instruction_in=instruction_in,
        always_observe=False,
    )
    return refined.outcome


async def decide_focus(
    ctx: RunContext, question: QuestionInput, outcome: LevelOutcome, *, is_global: bool
) -> LevelOutcome:
    """The Focus decision over ``refine_focus``'s outcome; it always stops, so its fallback
    selection is never used and every candidate stands in for it."""
    return await decide_level(
        ctx, outcome, question, is_global=is_global, fallback_ids=outcome.candidate_ids
    )
