"""Accuracy against cost (SPEC §17): one eval run per budget, one table and plot over all.

``eval --budgets calls=6,calls=10,none`` answers the same questions under each budget in a
run directory of its own (``RUN/budget-calls6``, ...; the budget is in each one's config,
so each resumes and is compared like any run), then writes ``RUN/accuracy_cost.md`` and
``accuracy_cost.png``: every (variant, budget) as accuracy against mean cost per question,
with the points no other point beats on both marked as the Pareto front. Cost is dollars
when every point is priced (and not all at zero), else mean prompt tokens, since an
unpriced dollar figure would be a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from videotapestry.errors import ConfigError
from videotapestry.eval.metrics import Accuracy, unpriced_text
from videotapestry.eval.report import build_report
from videotapestry.files import write_atomic

#: ``--budgets`` keys and the ``budget`` settings they set.
BUDGET_KEYS = {
    "calls": "max_calls",
    "tokens": "max_prompt_tokens",
    "usd": "max_usd",
    "seconds": "max_seconds",
}
COST_TABLE = "accuracy_cost.md"
COST_PLOT = "accuracy_cost.png"


@dataclass(frozen=True)
class BudgetPoint:
    """One budget of a sweep: its label (its run directory's name) and config overrides."""

    label: str
    overrides: tuple[str, ...]

    def run_dir(self, sweep: Path) -> Path:
        return sweep / f"budget-{self.label}"


def parse_budgets(text: str) -> list[BudgetPoint]:
    """``calls=6,calls=10+usd=0.05,none`` → budget points; ``none`` is the method uncapped."""
    points: list[BudgetPoint] = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        if entry == "none":
            points.append(BudgetPoint("none", ()))
            continue
        overrides, label = [], []
        for part in entry.split("+"):
            key, _, value = part.partition("=")
            if key not in BUDGET_KEYS or not value:
                known = ", ".join(f"{k}=N" for k in BUDGET_KEYS)
                raise ConfigError(f"--budgets: {part!r} is not one of {known} or none")
            try:
                number = float(value)
            except ValueError:
                raise ConfigError(f"--budgets: {part!r} needs a number") from None
            if number <= 0:
                raise ConfigError(f"--budgets: {part!r} must be above 0")
            overrides.append(f"budget.{BUDGET_KEYS[key]}={value}")
            label.append(f"{key}{value}")
        points.append(
            BudgetPoint(re.sub(r"[^A-Za-z0-9.-]+", "_", "-".join(label)), tuple(overrides))
        )
    labels = [p.label for p in points]
    if not points or len(set(labels)) != len(labels):
        raise ConfigError(f"--budgets needs distinct budgets, got {text!r}")
    return points


@dataclass(frozen=True)
class CostPoint:
    variant: str
    budget: str
    accuracy: Accuracy
    questions: int
    calls: float | None
    prompt_tokens: float | None
    cost_usd: float | None
    unpriced_questions: int


def cost_points(runs: Mapping[str, Path]) -> list[CostPoint]:
    """Every variant of every budget's run (budget label → run directory)."""
    points = []
    for budget, run in runs.items():
        for name, metrics in build_report(run).variants.items():
            u = metrics.usage
            points.append(
                CostPoint(
                    variant=name,
                    budget=budget,
                    accuracy=metrics.accuracy,
                    questions=u.questions,
                    calls=u.calls,
                    prompt_tokens=u.prompt_tokens,
                    cost_usd=u.cost_usd_mean,
                    unpriced_questions=u.unpriced_questions,
                )
            )
    return points


def pareto_front(points: Sequence[tuple[float, float]]) -> set[int]:
    """Indices of the (cost, accuracy) points no other point beats: none costs no more and
    is no less accurate while being strictly better on one of the two."""
    front = set()
    for i, (cost, acc) in enumerate(points):
        beaten = any(
            c <= cost and a >= acc and (c < cost or a > acc)
            for j, (c, a) in enumerate(points)
            if j != i
        )
        if not beaten:
            front.add(i)
    return front


def cost_axis(points: Sequence[CostPoint]) -> tuple[str, list[float | None]]:
    """Dollars per question when every point is priced and some cost anything, else prompt
    tokens per question (a model priced at zero, the offline one, would put every point at
    $0 and leave accuracy alone to decide the front)."""
    priced = points and all(p.cost_usd is not None and not p.unpriced_questions for p in points)
    if priced and any(p.cost_usd for p in points):
        return "mean cost per question (USD)", [p.cost_usd for p in points]
    return "mean prompt tokens per question", [p.prompt_tokens for p in points]


def front_of(points: Sequence[CostPoint]) -> set[int]:
    """Indices of ``points`` on the Pareto front, on ``cost_axis``' cost."""
    return _front(points, cost_axis(points)[1])


def _front(points: Sequence[CostPoint], costs: Sequence[float | None]) -> set[int]:
    placed: list[tuple[int, tuple[float, float]]] = [
        (i, (cost, p.accuracy.percent))
        for i, (p, cost) in enumerate(zip(points, costs, strict=True))
        if cost is not None and p.accuracy.percent is not None
    ]
    front = pareto_front([xy for _, xy in placed])
    return {placed[k][0] for k in front}


def render_cost_table(points: Sequence[CostPoint]) -> str:
    axis, costs = cost_axis(points)
    front = _front(points, costs)
    lines = [
        "# Accuracy against cost",
        "",
        f"Cost axis: {axis}. * marks the Pareto front: no other row is at least as accurate "
        "for no more cost.",
        "",
        "| Variant | Budget | Accuracy (%) | Right/graded | Calls | Prompt tokens | Cost (USD) "
        "| Front |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, p in enumerate(points):
        acc = "–" if p.accuracy.percent is None else f"{p.accuracy.percent:.1f}"
        dollars = (
            unpriced_text(p.unpriced_questions)
            if p.unpriced_questions or p.cost_usd is None
            else f"{p.cost_usd:.4f}"
        )
        lines.append(
            f"| {p.variant} | {p.budget} | {acc} | {p.accuracy.correct}/{p.accuracy.total} "
            f"| {_num(p.calls, 1)} | {_num(p.prompt_tokens, 0)} | {dollars} "
            f"| {'*' if i in front else ''} |"
        )
    return "\n".join(lines) + "\n"


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def draw_cost_plot(points: Sequence[CostPoint], target: Path) -> str | None:
    """The plot at ``target``; the reason instead when it cannot be drawn."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return "matplotlib is not installed: pip install 'videotapestry[plot]'"
    axis, costs = cost_axis(points)
    front = _front(points, costs)
    figure = Figure(figsize=(6.5, 4.5))
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    for variant in dict.fromkeys(p.variant for p in points):
        xs, ys, labels = [], [], []
        for p, cost in zip(points, costs, strict=True):
            if p.variant == variant and cost is not None and p.accuracy.percent is not None:
                xs.append(cost)
                ys.append(p.accuracy.percent)
                labels.append(p.budget)
        ax.plot(xs, ys, marker="o", linestyle=":", label=variant)
        for x, y, label in zip(xs, ys, labels, strict=True):
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    marked = sorted(
        (cost, acc)
        for i in front
        if (cost := costs[i]) is not None and (acc := points[i].accuracy.percent) is not None
    )
    if marked:
        ax.step(
            [x for x, _ in marked], [y for _, y in marked], where="post", color="black",
            linewidth=1, label="Pareto front",
        )  # fmt: skip
    ax.set_xlabel(axis)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy against cost")
    ax.legend(loc="best", fontsize="small")
    figure.set_layout_engine("constrained")
    try:
        figure.savefig(target, dpi=120)
    except (OSError, ValueError, RuntimeError) as exc:
        return f"the plot could not be saved to {target}: {exc}"
    return None


def write_accuracy_cost(sweep: Path, runs: Mapping[str, Path]) -> list[Path]:
    """``accuracy_cost.md`` and the plot in ``sweep``; the files written."""
    points = cost_points(runs)
    table = sweep / COST_TABLE
    write_atomic(table, render_cost_table(points))
    written = [table]
    if draw_cost_plot(points, sweep / COST_PLOT) is None:
        written.append(sweep / COST_PLOT)
    return written
