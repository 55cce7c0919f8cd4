"""Answers you can check, measured: accuracy, grounding and what citing costs (not a test).

A generated video shows ``--count`` facts (``DOCK 14 CODE 5831``), each on screen for 8 s
at a random time (``videotapestry.testing.fact_videos``; silent, so every fact is on screen
only; cached in bench/.cache/ with its memory, built once with the offline profile). Every
question is asked twice through the eval runner, with the offline model, by the full
method, static memory and Direct: with its four options ("Which code was shown on screen
for Dock 14?", the wrong options other facts' codes), and free-form (the same question, no
options), judged against the code by the offline judge. Each record's cited spans are
scored against the fact's on-screen span by eval's grounding (hit rate, mIoU, recall at
IoU 0.3/0.5). Then, from the full method's traces, what citing adds per question: model
calls (the Answer agent's one call carries the citations) and prompt tokens (its prompt
rendered again with and without the citation parts, counted as the offline client bills).
Prints the tables; the two run directories (records, traces, report.md) stay in the cache.

    python bench/bench_grounding.py [--minutes 30] [--count 24] [--concurrency 2]
        [--questions N] [--smoke]

``--questions N`` asks only the first N questions (as in bench_offline_vs_direct.py).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from benchkit import cache_dir, smoke  # noqa: E402

from videotapestry.eval.grounding import IOU_THRESHOLDS, score  # noqa: E402
from videotapestry.eval.metrics import VariantMetrics, metrics_by_variant  # noqa: E402
from videotapestry.eval.records import ResultRecord  # noqa: E402
from videotapestry.eval.scoring import Accuracy, is_correct  # noqa: E402
from videotapestry.prompts import PromptRegistry  # noqa: E402
from videotapestry.testing.citation_cost import (  # noqa: E402
    CostSummary,
    schema_tokens,
    summarize,
    trace_costs,
)
from videotapestry.testing.fact_bench import (  # noqa: E402
    FactEval,
    OfflineModels,
    bench_arguments,
    bench_video,
    build_fact_memory,
    evaluate_fact_video,
)
from videotapestry.variants import DIRECT, FULL, STATIC_MEMORY  # noqa: E402

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "1.5", "--count", "4", "--questions", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: facts_\S+, \S+ min, \d+ facts on screen",
    r"^memory: \S+ s to build or reuse, \d+ model calls",
    r"^mc: \d+ s for \d+ questions x 3 variants",
    r"^open: \d+ s for \d+ questions x 3 variants",
    r"^ +on screen +full +static_memory +direct ",
    r"^\S+ +\d\d:\d\d-\d\d:\d\d ",
    r"^multiple-choice accuracy ",
    r"^free-form correct \(offline judge\) ",
    r"^grounding hit rate \(mc\) ",
    r"^mIoU \(free-form\) ",
    r"^recall@IoU \S+ \(free-form\) ",
    r"^answers citing nothing \(mc\) ",
    r"^right among grounded \(free-form\) ",
    r"^s per question \(mc\) ",
    r"^model calls per question \(free-form\) ",
    r"^prompt tokens per question \(free-form\) ",
    r"^\(free-form verdicts by the offline judge, an approximate rule: \d+ judged\)",
    r"^what citing adds per question \(Answer agent's call",
    r"^variant +mode +n +calls +extra +answer prompt ",
    r"^full +mc +\d",
    r"^static_memory +open +\d",
    r"^calls: the question's model calls",
    r"^an endpoint in json_schema mode is sent the reply schema too ",
)
VARIANTS = (FULL.name, STATIC_MEMORY.name, DIRECT.name)
#: The variants that answer with the Answer agent's prompt, whose citation cost is measured.
ANSWER_AGENT = (FULL.name, STATIC_MEMORY.name)


def main() -> None:
    smoke(SMOKE_ARGS)
    args = bench_arguments(__doc__.split("\n\n")[0])
    started = time.perf_counter()
    video = bench_video(cache_dir(), args)
    name = video.path.stem
    print(f"video: {video.path.name}, {args.minutes:g} min, {len(video.facts)} facts on screen "
          f"8 s each (silent: no spoken facts), {time.perf_counter() - started:.1f} s to "
          "write")  # fmt: skip
    models = OfflineModels.load()
    memories = cache_dir("memories")
    build_s, build_calls = build_fact_memory(video, memories / video.path.stem, models)
    print(f"memory: {build_s:.1f} s to build or reuse, {build_calls} model calls")
    runs = []
    for free_form in (False, True):
        run_dir = cache_dir("runs", f"{name}_{'open' if free_form else 'mc'}")
        shutil.rmtree(run_dir, ignore_errors=True)  # fresh figures, never a resumed run
        runs.append(
            evaluate_fact_video(
                video,
                memories,
                run_dir,
                models,
                variants=VARIANTS,
                free_form=free_form,
                concurrency=args.concurrency,
            )
        )
        print(
            f"{runs[-1].mode}: {runs[-1].wall_s:.0f} s for {len(video.questions)} questions x "
            f"{len(VARIANTS)} variants (concurrency {args.concurrency}), {run_dir}"
        )
    print()
    print_questions(runs)
    print()
    print_figures(runs)
    print()
    print_costs(runs)


def print_questions(runs: list[FactEval]) -> None:
    """Each question: right or wrong per mode and variant, and its IoU (open mode)."""
    header = "".join(f"{v:>15}" for v in VARIANTS)
    print(f"{'':<8} {'on screen':<11}{header}   (right: multiple choice, free-form; IoU free-form)")
    by_question: dict[str, dict[str, tuple[ResultRecord, ResultRecord]]] = {}
    for (variant, qid), record in runs[0].outcome.records.items():
        by_question.setdefault(qid, {})[variant] = (record, runs[1].outcome.records[(variant, qid)])
    for qid, pair in by_question.items():
        span = pair[FULL.name][0].evidence_spans[0]
        cells = []
        for variant in VARIANTS:
            choice, words = pair[variant]
            got = score(words)
            iou = f"{got.iou:.2f}" if got is not None else "-"
            cells.append(f"{_mark(choice)} {_mark(words)} {iou:>4}".rjust(15))
        print(f"{qid:<8} {_clock(span[0])}-{_clock(span[1])}{''.join(cells)}")
        for variant in VARIANTS:
            for record in pair[variant]:
                if record.status != "answered":
                    print(f"    {variant} {record.status}: {record.error}")


def print_figures(runs: list[FactEval]) -> None:
    tables = [metrics_by_variant(e.outcome.records.values(), e.outcome.variants) for e in runs]
    mc, open_ = tables
    width = max(len(v) for v in VARIANTS) + 2
    print(f"{'':<40}" + "".join(f"{v:>{width}}" for v in VARIANTS))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:<40}" + "".join(f"{v:>{width}}" for v in values))

    row("multiple-choice accuracy", [_acc(mc[v]) for v in VARIANTS])
    row("free-form correct (offline judge)", [_acc(open_[v]) for v in VARIANTS])
    for mode, table in (("mc", mc), ("free-form", open_)):
        g = {v: table[v].grounding for v in VARIANTS}
        row(f"grounding hit rate ({mode})", [_pct(g[v].hit_rate) for v in VARIANTS])
        row(f"mIoU ({mode})", [_num(g[v].miou) for v in VARIANTS])
        for t in IOU_THRESHOLDS:
            row(f"recall@IoU {t} ({mode})", [_pct(g[v].recall(t)) for v in VARIANTS])
        row(f"answers citing nothing ({mode})", [f"{g[v].uncited}/{g[v].questions}" for v in g])
        row(f"right among grounded ({mode})", [_frac(g[v].accuracy_grounded) for v in VARIANTS])
    for mode, table in (("mc", mc), ("free-form", open_)):
        row(f"s per question ({mode})", [_num(table[v].usage.latency_s.mean, 1) for v in VARIANTS])
        row(f"model calls per question ({mode})", [_num(table[v].usage.calls, 1) for v in VARIANTS])
        row(
            f"prompt tokens per question ({mode})",
            [_num(table[v].usage.prompt_tokens, 0) for v in VARIANTS],
        )
    judged = sum(r.judgement is not None for r in runs[1].outcome.records.values())
    print(f"(free-form verdicts by the offline judge, an approximate rule: {judged} judged)")


def print_costs(runs: list[FactEval]) -> None:
    """What citing adds to the Answer agent's call, per question, from the traces."""
    registry = PromptRegistry()
    print("what citing adds per question (Answer agent's call; tokens at 4 characters, as the "
          "offline client bills them)")  # fmt: skip
    print(f"{'variant':<14} {'mode':<5} {'n':>3} {'calls':>6} {'extra':>6} {'answer prompt':>13} "
          f"{'+cite':>6} {'(refs)':>6} {'+% answer':>9} {'+% all':>7} {'+reply':>6}")  # fmt: skip
    for variant in ANSWER_AGENT:
        for run in runs:
            records = [
                r
                for r in run.outcome.of_variant(variant)
                if r.status == "answered" and r.trace is not None
            ]
            costs = trace_costs([run.run_dir / r.trace for r in records if r.trace], registry)
            billed = sum(c.answer_prompt_tokens != c.answer_prompt_tokens_billed for c in costs)
            s = summarize(costs)
            note = f"  ({billed} billed otherwise)" if billed else ""
            print(_cost_line(variant, run.mode, s) + note)
    print("calls: the question's model calls; extra: answer calls beyond one (repairs), in total")
    cited, uncited = schema_tokens()
    print(f"an endpoint in json_schema mode is sent the reply schema too (not billed offline): "
          f"{cited} tokens, {uncited} without citations")  # fmt: skip


def _cost_line(variant: str, mode: str, s: CostSummary) -> str:
    return (
        f"{variant:<14} {mode:<5} {s.questions:>3} {s.calls:>6.1f} {s.extra_calls:>6} "
        f"{s.answer_prompt_tokens:>13.0f} {s.added_prompt_tokens:>6.0f} {s.refs_line_tokens:>6.0f} "
        f"{s.added_share_of_answer:>9.1%} {s.added_share_of_question:>7.1%} "
        f"{s.added_reply_tokens:>6.0f}"
    )


def _mark(record: ResultRecord) -> str:
    return "+" if is_correct(record) else "x"


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


def _acc(metrics: VariantMetrics) -> str:
    return _frac(metrics.accuracy)


def _frac(a: Accuracy) -> str:
    return "-" if a.value is None else f"{a.value:.0%} ({a.correct}/{a.total})"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
