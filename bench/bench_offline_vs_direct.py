"""The full method against Direct on a 30-minute video of brief facts (not a test).

A generated video shows ``--count`` facts (``DOCK 14 CODE 5831``), each for 8 s at a random
time, on coloured scenes (``videotapestry.testing.fact_videos``; cached in bench/.cache/ with
its memory). The memory is built once with the offline profile; then every question ("Which
code was shown for Dock 14?", the wrong options other facts' codes) is answered by the full
method and by the Direct baseline (50 uniform frames) in the same run, with the offline
model. Prints both accuracies, each question's answers and the time per question.

    python bench/bench_offline_vs_direct.py [--minutes 30] [--count 24] [--concurrency 2]
        [--questions N] [--smoke]

``--questions N`` asks only the first N questions (a question's options need 4 facts on
screen, so a quick run shows 4 and asks fewer).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from benchkit import cache_dir, smoke  # noqa: E402

from videotapestry.testing.fact_bench import (  # noqa: E402
    bench_arguments,
    compare_on_bench_video,
)

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "1.5", "--count", "4", "--questions", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: facts_\S+, \d+ questions, \S+ s to write",
    r"^build: \S+ s, \d+ model calls",
    r"^question +fact at +right +full +s +direct +s$",
    r"^\S+ +\d\d:\d\d +[A-E] ",
    r"^full +accuracy .* s per question, batch ",
    r"^direct +accuracy .* s per question, batch ",
)


def main() -> None:
    smoke(SMOKE_ARGS)
    args = bench_arguments(__doc__.split("\n\n")[0])
    _, comparison = compare_on_bench_video(cache_dir(), args)
    full, direct = comparison.runs["full"], comparison.runs["direct"]
    print(
        f"{'question':<10} {'fact at':>8} {'right':>5} {'full':>5} {'s':>6} {'direct':>6} {'s':>6}"
    )
    for f, d in zip(full.answered, direct.answered, strict=True):
        fact = f.question.fact
        at = f"{int(fact.start_s // 60):02d}:{int(fact.start_s % 60):02d}"
        print(
            f"{f.question.id:<10} {at:>8} {f.question.answer:>5} "
            f"{(f.answer or '-') + (' ' if f.right else 'x'):>5} {f.elapsed_s:>6.1f} "
            f"{(d.answer or '-') + (' ' if d.right else 'x'):>6} {d.elapsed_s:>6.1f}"
        )
        for failed in (f, d):
            if failed.failure:
                print(f"    failed: {failed.failure}")
    for run in (full, direct):
        print(
            f"{run.variant:<7} accuracy {run.accuracy:.1%} "
            f"({sum(a.right for a in run.answered)}/{len(run.answered)}), "
            f"{run.mean_question_s:.1f} s per question, batch {run.wall_s:.1f} s "
            f"(concurrency {args.concurrency})"
        )


if __name__ == "__main__":
    main()
