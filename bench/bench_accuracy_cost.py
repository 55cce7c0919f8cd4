"""Accuracy against cost on a 30-minute video of brief facts, offline model (not a test).

The fact video and its memory of ``bench/bench_offline_vs_direct.py`` (cached in
bench/.cache/); every question is answered by the full method uncapped, by the
``static_memory`` and ``direct`` variants, and by the full method under per-question call
budgets (``budget.max_calls``, SPEC §17; the full method makes 14 calls a question
here). Prints each row's accuracy, mean calls, prompt tokens and seconds per question, how
many answers a budget cut (``budget_reached``) and whether it is on the Pareto front by
mean prompt tokens per question (the offline model is priced at $0), then the same points
as the ``eval --budgets`` table (``accuracy_cost.md``) and plot, whose cost axis is dollars
whenever every row is priced.

    python bench/bench_accuracy_cost.py [--minutes 30] [--count 24] [--concurrency 2]
        [--questions N] [--smoke]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from benchkit import cache_dir, smoke  # noqa: E402

from videotapestry.eval.cost_sweep import (  # noqa: E402
    CostPoint,
    draw_cost_plot,
    front_of,
    render_cost_table,
)
from videotapestry.eval.scoring import Accuracy  # noqa: E402
from videotapestry.testing.fact_bench import (  # noqa: E402
    VariantRun,
    bench_arguments,
    compare_on_bench_video,
)

#: The full method's per-question call budgets (it makes 14 calls a question uncapped here).
CALL_BUDGETS = (4, 8, 12)
#: Row name → (variant, budget label, config overrides).
ROWS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "full": ("full", "none", ("variant=full",)),
    "static_memory": ("static_memory", "none", ("variant=static_memory",)),
    "direct": ("direct", "none", ("variant=direct",)),
    **{
        f"full calls={n}": ("full", f"calls={n}", ("variant=full", f"budget.max_calls={n}"))
        for n in CALL_BUDGETS
    },
}

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "1.5", "--count", "4", "--questions", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: facts_\S+, \d+ questions, \S+ s to write",
    r"^build: \S+ s, \d+ model calls",
    r"^row +accuracy +right +calls +prompt tok +s/q +budget cut +front$",
    r"^full +\d+\.\d% +\d+/\d+ +\d+\.\d +[\d,]+ +\d+\.\d +0 ",
    r"^static_memory +\d+\.\d% +\d+/\d+ ",
    r"^direct +\d+\.\d% +\d+/\d+ ",
    r"^full calls=4 +\d+\.\d% +\d+/\d+ +\d+\.\d +[\d,]+ +\d+\.\d +\d+ ",
    r"^full calls=12 +\d+\.\d% +\d+/\d+ ",
    r"^\| Variant \| Budget \| Accuracy \(%\) \|",
    r"^\| full \| calls=8 \| ",
    r"^plot: ",
)


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def cost_point(variant: str, budget: str, run: VariantRun) -> CostPoint:
    results = [a.result for a in run.answered if a.result is not None]
    return CostPoint(
        variant=variant,
        budget=budget,
        accuracy=Accuracy(sum(a.right for a in run.answered), len(run.answered)),
        questions=len(run.answered),
        calls=mean([r.usage.calls for r in results]),
        prompt_tokens=mean([r.usage.prompt_tokens for r in results]),
        cost_usd=mean([r.usage.cost_usd for r in results]),
        unpriced_questions=sum(r.usage.unpriced_calls > 0 for r in results),
    )


def budget_cut(run: VariantRun) -> int:
    """Answers degraded by ``budget_reached``."""
    return sum(
        a.result is not None and any(d.kind == "budget_reached" for d in a.result.degraded)
        for a in run.answered
    )


def main() -> None:
    smoke(SMOKE_ARGS)
    args = bench_arguments(__doc__.split("\n\n")[0])
    video, comparison = compare_on_bench_video(
        cache_dir(), args, rows={name: overrides for name, (_, _, overrides) in ROWS.items()}
    )
    runs = [comparison.runs[name] for name in ROWS]
    points = [cost_point(v, b, run) for (v, b, _), run in zip(ROWS.values(), runs, strict=True)]
    front = front_of(points)  # on prompt tokens: the offline model is priced at $0
    print("cost axis: mean prompt tokens per question (the offline model is priced at 0)")
    print(
        f"{'row':<15} {'accuracy':>8} {'right':>6} {'calls':>6} {'prompt tok':>10} "
        f"{'s/q':>6} {'budget cut':>10} {'front':>5}"
    )
    for i, (name, run, p) in enumerate(zip(ROWS, runs, points, strict=True)):
        failed = sum(a.failure is not None for a in run.answered)
        print(
            f"{name:<15} {p.accuracy.value or 0.0:>8.1%} "
            f"{f'{p.accuracy.correct}/{p.accuracy.total}':>6} "
            f"{p.calls or 0.0:>6.1f} {p.prompt_tokens or 0.0:>10,.0f} "
            f"{run.mean_question_s:>6.1f} {budget_cut(run):>10d} {'*' if i in front else '':>5}"
            + (f"  ({failed} failed)" if failed else "")
        )
    print()
    print(render_cost_table(points), end="")
    plot = cache_dir(f"{video.path.stem}.accuracy_cost.png")
    problem = draw_cost_plot(points, plot)
    print(f"plot: {problem or plot}")


if __name__ == "__main__":
    main()
