"""The LangGraph wiring of VideoTapestry (Algorithm 1). This file only wires.

    START → overview ─┬─ stop ───────────────┐
                      └→ skim ─┬─ stop ──────┤
                               └→ focus ─────┴→ assemble ─┬→ answer ──────→ END
                                                          └→ focus_decide → END (after focus)

    single controller (single_agent):  START → controller → assemble → answer → END
    no method (direct):                START → direct → END

The Focus decision can only stop (the stop is forced at the Subgraph level and clears the
selection and instruction), so nothing the Answer agent reads depends on it: ``focus``
plans, observes and rewrites, and ``focus_decide`` makes the level's one decision while the
Answer agent runs, one call fewer on the critical path; its outcome replaces the undecided
one in ``levels``.

Nodes are thin async functions of ``(state, runtime)``; the work is in ``videotapestry.agents``.
The non-serializable run context (memory, video, model session) arrives as LangGraph's run
context, so the state holds only JSON-able models and any LangGraph checkpointer can store
it; ``sqlite_checkpointer`` builds a SQLite one that knows our state types.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from videotapestry.agents.answer import run_answer_agent, run_direct_answer
from videotapestry.agents.budget_stop import (
    controller_within_budget,
    decided_within_budget,
    within_budget,
)
from videotapestry.agents.citations import citable
from videotapestry.agents.context import RunContext
from videotapestry.agents.focus import decide_focus, refine_focus
from videotapestry.agents.level_protocol import LevelAgent
from videotapestry.agents.overview import run_overview
from videotapestry.agents.rules import is_global_question
from videotapestry.agents.single_agent import run_controller
from videotapestry.agents.skim import run_skim
from videotapestry.agents.state import (
    AnswerOutcome,
    Citation,
    Degradation,
    EvidenceRef,
    HandoffEntry,
    ImageRef,
    Level,
    LevelCalls,
    LevelOutcome,
    MomentHint,
    Observation,
    QAState,
    QuestionInput,
)
from videotapestry.assemble import assemble
from videotapestry.baselines.direct import direct_frame_refs, direct_frames
from videotapestry.variants import FULL, variant_named

#: Our state types, allowed through LangGraph's msgpack checkpoint serializer.
STATE_TYPES = (
    AnswerOutcome,
    Citation,
    Degradation,
    EvidenceRef,
    HandoffEntry,
    ImageRef,
    LevelCalls,
    LevelOutcome,
    MomentHint,
    Observation,
    QuestionInput,
)


def checkpoint_serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(
        allowed_msgpack_modules=[(t.__module__, t.__name__) for t in STATE_TYPES]
    )


@contextlib.asynccontextmanager
async def sqlite_checkpointer(path: str | Path) -> AsyncIterator[Any]:
    """An async SQLite checkpointer for ``build_graph`` (resume or inspect a run later)."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(path)) as conn:
        yield AsyncSqliteSaver(conn, serde=checkpoint_serializer())


def _context(runtime: Runtime[RunContext]) -> RunContext:
    ctx = runtime.context
    with contextlib.suppress(RuntimeError):  # outside a streaming run there is no writer
        ctx.stream = get_stream_writer()
    return ctx


def _finish_level(ctx: RunContext, outcome: LevelOutcome, *, report: bool = True) -> dict[str, Any]:
    if outcome.level == "super":
        children = [c for s in outcome.selected_ids for c in ctx.memory.child_ids(s)]
    else:
        children = list(outcome.selected_ids)
    stop = outcome.stop or not children
    entry = HandoffEntry(
        agent=outcome.agent, level=outcome.level, instruction=outcome.instruction_out, stop=stop
    )
    if report:
        ctx.report(level=outcome.level, step="done", stop=stop, selected=outcome.selected_ids)
    return {
        "levels": [outcome],
        "handoff": [entry],
        "candidates": [] if stop else children,
        "instruction": None if stop else outcome.instruction_out,
        "stopped": stop,
    }


async def overview_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    question = state["question"]
    is_global = state.get("is_global")
    if is_global is None:
        is_global = is_global_question(question.question, question.options)
    supers = [s.id for s in ctx.memory.super_events()]
    outcome = await within_budget(
        ctx, "super", question, supers, run_overview(ctx, question, is_global=is_global)
    )
    return {"is_global": is_global, **_finish_level(ctx, outcome)}


async def skim_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await _level_node(run_skim, "macro", state, runtime)


async def focus_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """The Focus level up to its decision, which ``focus_decide`` makes (it can only stop)."""
    ctx = _context(runtime)
    question, candidates = state["question"], list(state.get("candidates", []))
    instruction = state.get("instruction")
    outcome = await within_budget(
        ctx,
        "subgraph",
        question,
        candidates,
        refine_focus(ctx, question, candidates, instruction_in=instruction),
        instruction_in=instruction,
    )
    stopped = outcome.model_copy(update={"stop": True})
    return _finish_level(ctx, stopped, report=False)


async def focus_decide_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    [outcome] = [o for o in state.get("levels", []) if o.level == "subgraph"]
    decided = await decided_within_budget(
        outcome,
        lambda: decide_focus(
            ctx, state["question"], outcome, is_global=bool(state.get("is_global"))
        ),
    )
    ctx.report(level="subgraph", step="done", stop=True, selected=decided.selected_ids)
    return {"levels": [decided]}


async def _level_node(
    agent: LevelAgent, level: Level, state: QAState, runtime: Runtime[RunContext]
) -> dict[str, Any]:
    ctx = _context(runtime)
    question, candidates = state["question"], list(state.get("candidates", []))
    instruction = state.get("instruction")
    turn = agent(
        ctx,
        question,
        candidates,
        instruction_in=instruction,
        is_global=bool(state.get("is_global")),
    )
    outcome = await within_budget(
        ctx, level, question, candidates, turn, instruction_in=instruction
    )
    return _finish_level(ctx, outcome)


async def controller_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    question = state["question"]
    levels, handoff = await controller_within_budget(ctx, question, run_controller(ctx, question))
    ctx.report(level="controller", step="done", levels=[o.level for o in levels])
    return {"levels": levels, "handoff": handoff, "stopped": True, "candidates": []}


async def assemble_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    composite = assemble(
        ctx.memory,
        state.get("levels", []),
        state.get("handoff", []),
        variant=ctx.variant.name,
        macros_shown=ctx.config.agents.composite_macros,
        citations=ctx.config.answer.citations,
    )
    ctx.report(level="assemble", step="assemble", memory_tokens=composite.tokens)
    return {
        "memory_text": composite.text,
        "memory_tokens": composite.tokens,
        "handoff_text": composite.handoff_trace,
    }


async def answer_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    ctx.report(level="answer", step="answer")
    question = state["question"]
    answer = await run_answer_agent(
        ctx.session,
        ctx.prompts,
        question=question,
        memory=state["memory_text"],
        handoff_trace=state.get("handoff_text", ""),
        evidence=citable(state.get("levels", [])),
        nodes=ctx.memory,
        citations=ctx.config.answer.citations,
    )
    return {"answer": answer}


async def direct_node(state: QAState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = _context(runtime)
    question = state["question"]
    ctx.report(level="answer", step="direct")
    frames = await direct_frames(ctx)
    answer = await run_direct_answer(
        ctx.session,
        ctx.prompts,
        question=question,
        frames=frames,
        frame_refs=direct_frame_refs(frames, ctx.duration_s),
        video_duration=ctx.duration_s,
        nodes=ctx.memory,
        citations=ctx.config.answer.citations,
    )
    return {"answer": answer}


def _answer(state: QAState) -> list[str]:
    """The Answer agent, and the Focus decision beside it when the Focus level ran."""
    focused = any(o.level == "subgraph" for o in state.get("levels", []))
    return ["answer", "focus_decide"] if focused else ["answer"]


def _after(next_level: str) -> Callable[[QAState], str]:
    def route(state: QAState) -> str:
        return "assemble" if state.get("stopped") or not state.get("candidates") else next_level

    return route


def build_graph(
    *, variant: str = FULL.name, checkpointer: Any = None, **compile_options: Any
) -> Any:
    """The compiled graph: ``ainvoke``/``astream`` it with ``context=RunContext(...)``.

    Which nodes there are is the variant's (``videotapestry.variants``): the Direct baseline
    has no method, the single-agent ablation one controller for the three agents.
    ``compile_options`` go to ``StateGraph.compile`` (e.g. ``interrupt_before=["focus"]``).
    """
    row = variant_named(variant)
    graph = StateGraph(QAState, context_schema=RunContext)
    if not row.method:
        graph.add_node("direct", direct_node)
        graph.add_edge(START, "direct")
        graph.add_edge("direct", END)
        return graph.compile(checkpointer=checkpointer, **compile_options)
    if row.single_controller:
        graph.add_node("controller", controller_node)
        graph.add_node("assemble", assemble_node)
        graph.add_node("answer", answer_node)
        graph.add_edge(START, "controller")
        graph.add_edge("controller", "assemble")
        graph.add_edge("assemble", "answer")
        graph.add_edge("answer", END)
        return graph.compile(checkpointer=checkpointer, **compile_options)
    graph.add_node("overview", overview_node)
    graph.add_node("skim", skim_node)
    graph.add_node("focus", focus_node)
    graph.add_node("focus_decide", focus_decide_node)
    graph.add_node("assemble", assemble_node)
    graph.add_node("answer", answer_node)
    graph.add_edge(START, "overview")
    graph.add_conditional_edges("overview", _after("skim"), ["skim", "assemble"])
    graph.add_conditional_edges("skim", _after("focus"), ["focus", "assemble"])
    graph.add_edge("focus", "assemble")
    graph.add_conditional_edges("assemble", _answer, ["answer", "focus_decide"])
    graph.add_edge("answer", END)
    graph.add_edge("focus_decide", END)
    return graph.compile(checkpointer=checkpointer, **compile_options)
