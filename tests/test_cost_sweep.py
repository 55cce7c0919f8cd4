"""Accuracy against cost (``eval --budgets``): parsing, the Pareto front and the table."""

from __future__ import annotations

import pytest

from videotapestry.errors import ConfigError
from videotapestry.eval.cost_sweep import (
    CostPoint,
    cost_axis,
    front_of,
    pareto_front,
    parse_budgets,
    render_cost_table,
)
from videotapestry.eval.metrics import Accuracy


def test_budgets_parse_to_labels_and_config_overrides() -> None:
    points = parse_budgets("calls=6, calls=10+usd=0.05 ,none")
    assert [p.label for p in points] == ["calls6", "calls10-usd0.05", "none"]
    assert points[1].overrides == ("budget.max_calls=10", "budget.max_usd=0.05")
    assert points[2].overrides == ()


@pytest.mark.parametrize("text", ["calls", "steps=3", "calls=x", "calls=0", "none,none", ""])
def test_a_bad_budget_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ConfigError, match="--budgets"):
        parse_budgets(text)


def test_the_pareto_front_keeps_only_points_nothing_beats() -> None:
    # (cost, accuracy): 1 beats 3 (cheaper, as accurate); 2 and 0 trade cost for accuracy;
    # 4 ties 0 exactly and is kept with it.
    points = [(1.0, 50.0), (2.0, 60.0), (3.0, 70.0), (2.5, 60.0), (1.0, 50.0)]
    assert pareto_front(points) == {0, 1, 2, 4}
    assert pareto_front([]) == set()


def point(variant: str, budget: str, right: int, usd: float | None, tokens: float) -> CostPoint:
    return CostPoint(
        variant=variant,
        budget=budget,
        accuracy=Accuracy(correct=right, total=10),
        questions=10,
        calls=6.0,
        prompt_tokens=tokens,
        cost_usd=usd,
        unpriced_questions=0 if usd is not None else 10,
    )


def test_the_table_marks_the_front_on_dollars_when_every_point_is_priced() -> None:
    points = [
        point("full", "none", 8, 0.05, 20_000),
        point("full", "calls6", 6, 0.01, 5_000),
        point("static_memory", "none", 5, 0.02, 4_000),  # dearer and worse than calls6
    ]
    axis, costs = cost_axis(points)
    assert axis.startswith("mean cost per question (USD)") and costs == [0.05, 0.01, 0.02]
    rows = [line for line in render_cost_table(points).splitlines() if line.startswith("| ")]
    marks = {row.split("|")[1].strip() + "/" + row.split("|")[2].strip(): row for row in rows[1:]}
    assert marks["full/none"].rstrip(" |").endswith("*")
    assert marks["full/calls6"].rstrip(" |").endswith("*")
    assert not marks["static_memory/none"].rstrip(" |").endswith("*")


def test_an_unpriced_point_moves_the_axis_to_prompt_tokens_and_says_unpriced() -> None:
    points = [point("full", "none", 8, None, 20_000), point("full", "calls6", 6, 0.01, 5_000)]
    axis, costs = cost_axis(points)
    assert axis == "mean prompt tokens per question" and costs == [20_000, 5_000]
    assert "unpriced (10 questions)" in render_cost_table(points)


def test_points_all_priced_at_zero_are_placed_by_prompt_tokens() -> None:
    """The offline model costs $0: dollars would tie every point and leave accuracy alone to
    pick the front, so the full method's dearer 100% would hide the cheaper one."""
    points = [point("full", "none", 10, 0.0, 10_000), point("full", "calls8", 10, 0.0, 6_000)]
    axis, _ = cost_axis(points)
    assert axis == "mean prompt tokens per question"
    assert front_of(points) == {1}
