"""The ``budget`` section: what one question may spend before it answers with what it has.

The paper's method has no budget: each level's decision alone ends the descent. A budget
is a cap a researcher sets to bound a bill or a wait (SPEC §17). A question that reaches it
stops refining where it is and the Answer agent answers from the composite memory
assembled so far, recorded as a ``budget_reached`` degradation, so a capped run is never
mistaken for the method. Every limit is off (null) by default.
"""

from __future__ import annotations

from pydantic import Field

from videotapestry.config.base import StrictModel


class BudgetConfig(StrictModel):
    """Per-question caps on the refining calls (the answer call is always made)."""

    max_calls: int | None = Field(
        None,
        ge=1,
        description="model calls per question, the answer's included: refining stops while "
        "one call is left for the Answer agent (1: answer from the stored memory)",
    )
    max_prompt_tokens: int | None = Field(
        None,
        ge=1,
        description="prompt tokens per question: no refining call starts once the finished "
        "calls have sent this many (the answer call may pass it)",
    )
    max_usd: float | None = Field(
        None,
        gt=0,
        description="dollars per question from `pricing`: no refining call starts once the "
        "finished calls cost this much (a model without a price cannot be capped by it)",
    )
    max_seconds: float | None = Field(
        None,
        gt=0,
        description="seconds per question from its first call: no refining call starts after",
    )

    @property
    def limited(self) -> bool:
        return any(
            v is not None
            for v in (self.max_calls, self.max_prompt_tokens, self.max_usd, self.max_seconds)
        )
