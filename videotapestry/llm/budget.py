"""A question's budget (SPEC §17): checked before each refining call, never the answer's.

The check is a pure function of what the question's finished calls spent, the calls in
flight and the seconds since its first call, so it is tested without a model. The session
raises ``BudgetReached`` in place of a refining call the budget no longer allows; the graph
turns that into an anytime answer (``videotapestry.agents.budget_stop``). It is not a
``ModelCallError``: no fallback of a failed call may swallow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from videotapestry.config import BudgetConfig
from videotapestry.errors import VideoTapestryError
from videotapestry.llm.usage import UsageSummary
from videotapestry.variants import DIRECT_ROLE

#: The roles that make the answer: always called, so a capped question still answers. The
#: judge of an eval run is not the method and spends apart from the question.
ANSWERING_ROLES = frozenset({"answer", DIRECT_ROLE, "judge"})


class BudgetReached(VideoTapestryError):
    """A refining call was not made: the question reached ``budget.<limit>``."""

    def __init__(self, reason: str, *, role: str, level: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.role = role
        self.level = level


@dataclass(frozen=True)
class Spent:
    """What a question has spent when a call is about to start."""

    usage: UsageSummary
    in_flight: int
    elapsed_s: float


def budget_reason(budget: BudgetConfig, spent: Spent) -> str | None:
    """Why one more refining call would break ``budget``, or None when it may go.

    One call is kept for the Answer agent under ``max_calls``; calls in flight count as
    made. Tokens, dollars and seconds are compared with what finished calls spent, so a
    question can pass them by what its last refining call and its answer spend.
    """
    calls = spent.usage.calls + spent.in_flight
    if budget.max_calls is not None and calls + 2 > budget.max_calls:
        return (
            f"budget.max_calls={budget.max_calls}: {calls} calls made, the last one is kept "
            "for the answer"
        )
    if budget.max_prompt_tokens is not None and (
        spent.usage.prompt_tokens >= budget.max_prompt_tokens
    ):
        return (
            f"budget.max_prompt_tokens={budget.max_prompt_tokens}: "
            f"{spent.usage.prompt_tokens} prompt tokens sent"
        )
    if budget.max_usd is not None and spent.usage.cost_usd >= budget.max_usd:
        return f"budget.max_usd={budget.max_usd:g}: ${spent.usage.cost_usd:.4f} spent"
    if budget.max_seconds is not None and spent.elapsed_s >= budget.max_seconds:
        return f"budget.max_seconds={budget.max_seconds:g}: {spent.elapsed_s:.1f} s elapsed"
    return None
