"""A whole eval run's budget (``eval --max-usd`` / ``--max-calls``, SPEC §17).

What a run has spent is the sum over its latest record of every question, those kept
from earlier invocations included, so a run stopped at its budget and resumed with a
larger one stops at the larger total, not at the sum of both. A judge's calls are part of
the bill. Questions in flight when the budget is reached finish and are kept: the cap is
checked between questions, so a run can pass it by what those questions spend.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from videotapestry.eval.records import ResultRecord


@dataclass(frozen=True)
class RunBudget:
    max_usd: float | None = None
    max_calls: int | None = None

    @property
    def limited(self) -> bool:
        return self.max_usd is not None or self.max_calls is not None


@dataclass(frozen=True)
class RunSpent:
    calls: int
    usd: float
    #: Records whose cost is unknown (an unpriced model): their dollars are not in ``usd``.
    unpriced: int


def run_spent(records: Iterable[ResultRecord]) -> RunSpent:
    calls, usd, unpriced = 0, 0.0, 0
    for record in records:
        parts = [record.usage]
        if record.judgement is not None:
            parts.append(record.judgement.usage)
        for usage in parts:
            calls += usage.calls
            if usage.cost_usd is None:
                unpriced += int(usage.calls > 0)
            else:
                usd += usage.cost_usd
    return RunSpent(calls=calls, usd=usd, unpriced=unpriced)


def run_budget_reason(budget: RunBudget, spent: RunSpent) -> str | None:
    """Why the run must not start another question, or None while it may."""
    if budget.max_calls is not None and spent.calls >= budget.max_calls:
        return f"its budget of {budget.max_calls} calls was reached ({spent.calls} made)"
    if budget.max_usd is not None and spent.usd >= budget.max_usd:
        return f"its budget of ${budget.max_usd:g} was reached (${spent.usd:.4f} spent)"
    return None
