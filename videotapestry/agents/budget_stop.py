"""The anytime answer: a level cut short by the question's budget (SPEC §17).

When ``ModelSession`` refuses a refining call (``BudgetReached``), the level in progress is
closed with its candidates' stored texts, as the levels above handed them down, and the
descent stops there: the Answer agent reads the composite memory of the levels that
finished plus these stored texts. What the cut level had observed before the refusal is
lost with it (its rewrites were not made), and the levels below it never run; the
``budget_reached`` degradation names both, so a capped answer is never read as the method's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from videotapestry.agents.context import RunContext
from videotapestry.agents.focus import focus_memories
from videotapestry.agents.level_protocol import super_texts
from videotapestry.agents.skim import skim_memories
from videotapestry.agents.state import (
    AGENT_NAMES,
    SINGLE_AGENT_NAME,
    Degradation,
    HandoffEntry,
    Level,
    LevelOutcome,
    QuestionInput,
)
from videotapestry.llm.budget import BudgetReached

#: The levels of the method, top down; a cut level skips the ones after it.
LEVELS: tuple[Level, ...] = ("super", "macro", "subgraph")

LEVEL_WORDS: dict[Level, str] = {
    "super": "the Super level (Overview agent)",
    "macro": "the Macro level (Skim agent)",
    "subgraph": "the Subgraph level (Focus agent)",
}


async def within_budget(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    turn: Awaitable[LevelOutcome],
    *,
    instruction_in: str | None = None,
) -> LevelOutcome:
    """The level's own outcome, or, when the budget refused one of its calls, the level
    closed at the budget (``stopped_at_budget``)."""
    try:
        return await turn
    except BudgetReached as reached:
        return stopped_at_budget(
            ctx, level, question, candidates, reached, instruction_in=instruction_in
        )


async def decided_within_budget(
    outcome: LevelOutcome, decide: Callable[[], Awaitable[LevelOutcome]]
) -> LevelOutcome:
    """The Focus decision, or ``outcome`` undecided when the budget refuses it. The decision
    can only stop, so the answer does not depend on it; its absence is still recorded."""
    if any(d.kind == "budget_reached" for d in outcome.degraded):
        return outcome  # the level was cut: there is nothing to decide over
    try:
        return await decide()
    except BudgetReached as reached:
        lost = Degradation(
            kind="budget_reached",
            level=outcome.level,
            what="the Focus decision was not made (it can only stop; the answer does not read it)",
            why=reached.reason,
        )
        return outcome.model_copy(update={"degraded": [*outcome.degraded, lost]})


async def controller_within_budget(
    ctx: RunContext,
    question: QuestionInput,
    turn: Awaitable[tuple[list[LevelOutcome], list[HandoffEntry]]],
) -> tuple[list[LevelOutcome], list[HandoffEntry]]:
    """The single agent's levels, or, when the budget refused a call, the stored Super
    scaffold: the controller's own steps so far are lost with the refusal."""
    try:
        return await turn
    except BudgetReached as reached:
        supers = [s.id for s in ctx.memory.super_events()]
        outcome = stopped_at_budget(ctx, "super", question, supers, reached)
        stop = HandoffEntry(agent=SINGLE_AGENT_NAME, level="super", instruction=None, stop=True)
        return [outcome], [stop]


def stopped_at_budget(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    reached: BudgetReached,
    *,
    instruction_in: str | None = None,
) -> LevelOutcome:
    """The level as it stands at its budget: candidates with their stored texts, STOP."""
    texts = _stored_texts(ctx, level, question, candidates, instruction_in)
    skipped = [LEVEL_WORDS[lv] for lv in LEVELS[LEVELS.index(level) + 1 :]]
    what = f"refining stopped in {LEVEL_WORDS[level]} before its {reached.role} call; " + (
        f"not run: {', '.join(skipped)}" if skipped else "no level below it"
    )
    ctx.report(level=level, step="budget", why=reached.reason)
    return LevelOutcome(
        level=level,
        agent=AGENT_NAMES[level],
        candidate_ids=list(candidates),
        instruction_in=instruction_in,
        refined=dict(texts),
        static=dict(texts),
        stop=True,
        reason=f"budget reached: {reached.reason}",
        degraded=[Degradation(kind="budget_reached", level=level, what=what, why=reached.reason)],
    )


def _stored_texts(
    ctx: RunContext,
    level: Level,
    question: QuestionInput,
    candidates: list[str],
    instruction_in: str | None,
) -> dict[str, str]:
    """What the level would have shown its agent before any observation."""
    if level == "super":
        return {i: text for i, text in super_texts(ctx.memory).items() if i in candidates}
    if level == "macro":
        return skim_memories(ctx, candidates).texts
    return focus_memories(ctx, candidates, question, instruction_in).texts
