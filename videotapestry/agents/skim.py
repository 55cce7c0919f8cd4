"""The Skim agent: the Macro level, over the MacroEvents of the selected SuperEvents.

It follows the level protocol (``level_protocol.run_level``) over each candidate
MacroEvent's label and summary, and may look anywhere inside the candidates' time ranges.
Unlike the Focus agent it looks whenever the question is not global, whatever its plan says
(SPEC §5).
"""

from __future__ import annotations

from videotapestry.agents.context import RunContext
from videotapestry.agents.level_protocol import (
    LevelMemories,
    labelled_text,
    macro_event,
    run_level,
)
from videotapestry.agents.state import LevelOutcome, QuestionInput


def skim_memories(ctx: RunContext, macro_ids: list[str]) -> LevelMemories:
    """Each MacroEvent's label and summary; frames may come from anywhere inside it."""
    texts, intervals = {}, {}
    for macro_id in macro_ids:
        macro = macro_event(ctx.memory, macro_id)
        texts[macro_id] = labelled_text(macro.label, macro.summary)
        intervals[macro_id] = [(macro.time_range.start, macro.time_range.end)]
    return LevelMemories(texts, intervals)


async def run_skim(
    ctx: RunContext,
    question: QuestionInput,
    candidates: list[str],
    *,
    instruction_in: str | None,
    is_global: bool,
) -> LevelOutcome:
    return await run_level(
        ctx,
        "macro",
        question,
        candidates,
        skim_memories(ctx, candidates),
        instruction_in=instruction_in,
        is_global=is_global,
        always_observe=not is_global,
    )
