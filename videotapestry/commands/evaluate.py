"""``videotapestry eval``: a benchmark's questions answered into a resumable run directory.

Exit status: 0 every selected question answered; 1 some question failed (or was skipped);
2 a usage or configuration error, or the run stopped early on an error that would repeat
for every question (the message is printed); 3 all answered, but some answer lost part of
the method (a fallback, lost ASR or frames; ``--allow-degraded`` turns 3 into 0). The status
describes the run directory's records for the selected questions, so rerunning a finished
run gives the same status without asking anything.

``--rerun RUN`` is another thing: it repeats a finished run from its ``run.json`` into a new
directory (``eval/rerun.py``), for someone checking that the run's numbers come back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry.commands.common import (
    EXIT_BUDGET,
    EXIT_DEGRADED,
    EXIT_ERROR,
    AddConfigOptions,
    add_executor_options,
    executor_overrides,
    facade,
    interrupted,
)
from videotapestry.errors import ConfigError, VideoTapestryError
from videotapestry.variants import VARIANTS

if TYPE_CHECKING:
    from videotapestry.config import Config
    from videotapestry.eval.questions import EvalQuestion
    from videotapestry.eval.records import ResultRecord
    from videotapestry.eval.runner import RunnerOptions, RunOutcome
    from videotapestry.eval.session import EvalSpec

EXIT_FAILED = 1

VARIANT_HELP = (
    "comma-separated variants to run (repeatable): "
    + ", ".join(v.name for v in VARIANTS if v.reassembled_from is None)
    + "; "
    + " and ".join(v.name for v in VARIANTS if v.reassembled_from is not None)
    + " are reassembled from full's exploration (one Answer call each; full must be in the "
    "list). Default: the config's variant"
)


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    from videotapestry.eval.datasets import MODES, loaders

    parser = subparsers.add_parser(
        "eval",
        help="answer a benchmark's questions into a resumable run directory",
        description="Answer a benchmark's questions (Video-MME, LVBench, LongVideoBench, "
        "EgoSchema, CG-Bench or a generic JSONL) with the method and its variants. Each finished "
        "question is one line of RUN/results.jsonl, its trace in RUN/traces/<variant>/. "
        "Rerunning the same command skips finished questions and asks again those that "
        "failed or were skipped (use --keep-failed to keep failures); a RUN made with "
        "another config or prompt set is refused unless --force. --limit, --ids and "
        "--concurrency may change between reruns (a larger --limit extends the run). "
        "--rerun RUN repeats a finished run from its run.json into a new directory: its "
        "questions, its config and its recorded prompt texts.",
        epilog="exit status: 0 all answered, 1 some failed or skipped, 3 some answer "
        "degraded, 2 usage/config error or the run stopped early (the reason is printed)",
    )
    parser.add_argument(
        "--benchmark", choices=sorted(loaders()), help="the benchmark (needed unless --rerun)"
    )
    parser.add_argument(
        "--annotations",
        metavar="PATH",
        help="the benchmark's annotation file, or the directory holding its files (needed "
        "unless --rerun, where it says where the run's annotations are on this machine)",
    )
    parser.add_argument(
        "--rerun",
        metavar="RUN",
        help="repeat the run RUN from its run.json into a new directory (--output, default "
        "RUN-rerun-<time>): the same questions, config and prompt texts (written to "
        "NEW/prompts/); a recorded prompt that differs from today's shipped one is named on "
        "stderr. --annotations, --videos, --memories and --subtitles relocate its files; -o "
        "may change only settings that do not decide answers (base_url, timeouts, the cache)",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the normalized questions, one JSON object a line, and exit (needs no "
        "videos, memories or key)",
    )
    parser.add_argument("--duration", help="a benchmark's duration group, e.g. long")
    parser.add_argument(
        "--mode",
        choices=MODES,
        help="mc (default): the questions with their options, scored by letter; open: asked "
        "in words without options, each answer scored against the reference answer by the "
        "judge role (CG-Bench's open-ended mode; for jsonl, a row's reference_answer or its "
        "gold option's text). Grounding is scored in both. Part of the run's identity",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="the first N selected questions")
    parser.add_argument(
        "--ids",
        action="append",
        default=[],
        metavar="ID,...",
        help="only these question ids (comma-separated, repeatable; @FILE reads one a line)",
    )
    parser.add_argument("--videos", metavar="DIR", help="videos, named as the benchmark does")
    parser.add_argument(
        "--memories", metavar="DIR", help="one memory directory per video: DIR/<video stem>/"
    )
    parser.add_argument(
        "--subtitles",
        metavar="DIR",
        help="the benchmark's subtitle files; sets asr.source=subtitles (without it, "
        "subtitle files are looked up next to the annotations and used only when the "
        "config says asr.source=subtitles)",
    )
    parser.add_argument(
        "--no-video",
        action="store_true",
        help="answer from the memories alone (no frame or speech observation; --videos is "
        "then not needed). Part of the run's identity",
    )
    parser.add_argument(
        "--out", "--output", metavar="RUN", help="the run directory (new, or one to resume)"
    )
    parser.add_argument(
        "--variant", action="append", default=[], metavar="V,...", help=VARIANT_HELP
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="questions in flight (default 4; with --executor ray, per worker)",
    )
    add_executor_options(
        parser,
        executor_help="where questions are answered: local (this process, default) or ray "
        "(workers on a Ray cluster, each answering whole videos; needs the [ray] extra, and "
        "videos and memories on storage every worker sees). Results are written here either way",
    )
    parser.add_argument(
        "--build-missing",
        action="store_true",
        help="build a missing memory (once per video) instead of recording the question failed",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="continue a RUN made with another config or prompt set (its finished records "
        "are kept; run.json lists the change under 'amended')",
    )
    parser.add_argument(
        "--keep-failed",
        action="store_true",
        help="do not ask failed questions again (by default a rerun retries them: most "
        "failures are transient or fixed since; those failing before any model call get a "
        "new line only when their outcome changes)",
    )
    parser.add_argument(
        "--stop-after",
        type=int,
        default=3,
        metavar="K",
        help="stop when the first K finished questions of a variant all failed with the "
        "same error, on two videos or more (default 3; 0 never). A non-recoverable model "
        "error (refused key, unknown model, unreachable server) always stops the run",
    )
    parser.add_argument(
        "--allow-degraded",
        action="store_true",
        help=f"exit 0 instead of {EXIT_DEGRADED} when some answer lost part of the method",
    )
    parser.add_argument(
        "--max-usd",
        type=float,
        metavar="USD",
        help="the whole run's budget in dollars (from `pricing`, the records kept from earlier "
        f"invocations included): no question starts past it; exit {EXIT_BUDGET}, and the "
        "same command with a larger budget asks the rest. Per question: -o budget.max_usd=",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help="the whole run's budget in model calls (judge calls included), as --max-usd",
    )
    parser.add_argument(
        "--budgets",
        metavar="B,...",
        help="accuracy against cost: answer the questions once per per-question budget "
        "(calls=N, tokens=N, usd=X, seconds=S, joined with + for several, or none), each in "
        "RUN/budget-<label>/, then write RUN/accuracy_cost.md and .png with the Pareto front",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.eval.session import check_spec, select_questions

    if args.rerun:
        return _rerun(args)
    if not (args.benchmark and args.annotations):
        raise ConfigError("eval needs --benchmark and --annotations (or --rerun RUN)")
    spec = _spec(args)
    questions = select_questions(spec)
    if args.list:
        for question in questions:
            print(question.to_json_line())
        return 0
    needed = ("memories", "out") if args.no_video else ("videos", "memories", "out")
    missing = [flag for flag in needed if not getattr(args, flag)]
    if missing:
        raise ConfigError(
            "eval needs " + ", ".join(f"--{flag}" for flag in missing) + " (or --list)"
        )
    check_spec(spec)
    if args.budgets:
        return _sweep(args, spec, questions)
    try:
        return asyncio.run(_evaluate(args, spec, questions))
    except KeyboardInterrupt:
        return interrupted("every finished question is saved, run the same command again to resume")


def _spec(args: argparse.Namespace) -> EvalSpec:
    """The run the options describe (paths as given; ``--list`` needs only the first two)."""
    from videotapestry.eval.session import EvalSpec

    return EvalSpec(
        benchmark=args.benchmark,
        annotations=Path(args.annotations).expanduser(),
        memories=_path(args.memories) or Path(),
        out=_path(args.out) or Path(),
        options=_options(args),
        videos=None if args.no_video else _path(args.videos),
        subtitles=_path(args.subtitles),
        mode=args.mode or "mc",
        duration=args.duration,
        ids=frozenset(_ids(args.ids)),
        limit=args.limit,
        force=args.force,
        command=_command(args),
    )


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _command(args: argparse.Namespace) -> tuple[str, ...]:
    return ("videotapestry", *getattr(args, "argv", sys.argv[1:]))


def _options(args: argparse.Namespace) -> RunnerOptions:
    """How questions are answered: the same flags for a new run and a rerun."""
    from videotapestry.eval.run_budget import RunBudget
    from videotapestry.eval.runner import RunnerOptions

    return RunnerOptions(
        variants=tuple(v for value in args.variant for v in value.split(",")),
        concurrency=args.concurrency,
        build_missing=args.build_missing,
        retry_failed=not args.keep_failed,
        stop_after_same_failures=args.stop_after,
        freeze_loaded_objects=True,
        budget=RunBudget(max_usd=args.max_usd, max_calls=args.max_calls),
    )


#: Flags that choose what a run asks and with which method: a rerun takes them from the
#: run's run.json, so giving one with --rerun is refused rather than ignored.
RERUN_FIXED = {
    "benchmark": "--benchmark",
    "duration": "--duration",
    "mode": "--mode",
    "limit": "--limit",
    "ids": "--ids",
    "variant": "--variant",
    "no_video": "--no-video",
    "config": "--config",
    "profile": "--profile",
    "prompts_dir": "--prompts-dir",
    "force": "--force",
}


def _rerun(args: argparse.Namespace) -> int:
    """``eval --rerun RUN``: the run repeated into a new directory (``eval/rerun.py``)."""
    from videotapestry.eval import rerun as reruns
    from videotapestry.eval.run_reader import read_run_info
    from videotapestry.eval.session import check_spec, select_questions

    given = [flag for dest, flag in RERUN_FIXED.items() if getattr(args, dest, None)]
    if given:
        raise ConfigError(
            f"--rerun takes the questions and the method from the run's run.json; drop "
            f"{', '.join(given)}"
        )
    source = Path(args.rerun).expanduser()
    relocation = reruns.Relocation(
        annotations=_path(args.annotations),
        videos=_path(args.videos),
        memories=_path(args.memories),
        subtitles=_path(args.subtitles),
    )
    if args.list:
        info = reruns.recorded_run(source)
        spec = reruns.rerun_spec(info, source, Path(), _options(args), relocation)
        for question in select_questions(spec):
            print(question.to_json_line())
        return 0
    plan = reruns.prepare(source, _path(args.out), [*args.override, *executor_overrides(args)])
    for note in plan.notes:
        print(f"videotapestry: rerun: {note}", file=sys.stderr)
    spec = reruns.rerun_spec(
        plan.info, source, plan.out, _options(args), relocation, command=_command(args)
    )
    questions = select_questions(spec)
    check_spec(spec)
    try:
        status = asyncio.run(_evaluate(args, spec, questions, config=plan.config))
    except KeyboardInterrupt:
        return interrupted(
            f"every finished question is saved; run `videotapestry eval --rerun {source} "
            f"--output {plan.out}` again to resume"
        )
    for line in reruns.repeat_differences(plan.info, read_run_info(plan.out)):
        print(f"videotapestry: rerun: {line}", file=sys.stderr)
    print(f"compare with the run repeated: videotapestry compare {source} {plan.out}")
    return status


def _ids(values: Sequence[str]) -> set[str]:
    ids: set[str] = set()
    for value in values:
        if value.startswith("@"):
            path = Path(value[1:])
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ConfigError(f"--ids {value}: {exc.strerror or exc}") from None
            ids.update(line.strip() for line in lines if line.strip())
        else:
            ids.update(part.strip() for part in value.split(",") if part.strip())
    return ids


def _sweep(args: argparse.Namespace, spec: EvalSpec, questions: list[EvalQuestion]) -> int:
    """One run per budget of ``--budgets``, then the accuracy-cost table over them; the
    worst exit status of the runs."""
    from dataclasses import replace

    from videotapestry.eval.cost_sweep import parse_budgets, write_accuracy_cost

    points = parse_budgets(args.budgets)
    runs: dict[str, Path] = {}
    statuses = []
    for point in points:
        run_dir = point.run_dir(spec.out)
        print(f"== budget {point.label}: {run_dir}", file=sys.stderr, flush=True)
        try:
            status = asyncio.run(
                _evaluate(args, replace(spec, out=run_dir), questions, budget=point.overrides)
            )
        except KeyboardInterrupt:
            return interrupted("every finished question is saved, run the same command again")
        statuses.append(status)
        runs[point.label] = run_dir
    for path in write_accuracy_cost(spec.out, runs):
        print(f"accuracy against cost: {path}")
    return max(statuses, default=0)


async def _evaluate(
    args: argparse.Namespace,
    spec: EvalSpec,
    questions: list[EvalQuestion],
    *,
    config: Config | None = None,
    budget: Sequence[str] = (),
) -> int:
    """Answer ``questions`` with the options' config, or with ``config`` (a rerun's)."""
    from videotapestry.eval.session import run_evaluation, with_variants
    from videotapestry.executors import make_executor

    if config is not None:
        from videotapestry.api import VideoTapestry

        vt = VideoTapestry(config)
    else:
        subtitles = ["asr.source=subtitles"] if args.subtitles else []
        vt = facade(args, *subtitles, *executor_overrides(args), *budget)
    spec = with_variants(spec, vt.config.variant)
    limit = vt.config.models.max_concurrency_per_endpoint
    if args.concurrency > limit:
        print(
            f"videotapestry: note: --concurrency {args.concurrency} questions share at most "
            f"{limit} model calls in flight per endpoint (models.max_concurrency_per_endpoint; "
            f"-o models.max_concurrency_per_endpoint={args.concurrency} to raise it)",
            file=sys.stderr,
        )
    bar = _Progress(enabled=not args.quiet)
    executor = make_executor(vt.config)
    try:
        with executor.answerer(vt, spec.variants, concurrency=args.concurrency) as answerer:
            run_dir, outcome = await run_evaluation(
                vt,
                spec,
                questions,
                answerer=answerer,
                on_record=bar.update,
                on_plan=bar.start,
            )
    finally:
        bar.close()
        await vt.aclose()
        vt.service.close()
    _write_outputs(run_dir, spec.benchmark, outcome)
    return _summary(outcome, run_dir, allow_degraded=args.allow_degraded)


class _Progress:
    """A tqdm bar on stderr over the questions this invocation asks."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.counts = {"answered": 0, "failed": 0, "skipped": 0}

    def start(self, units: int, reused: int) -> None:
        if reused:
            print(f"resuming: {reused} finished record(s) kept, {units} to run", file=sys.stderr)
        if self.enabled and units:
            from tqdm import tqdm

            self.bar = tqdm(total=units, desc="eval", unit="q", file=sys.stderr, leave=True)

    def update(self, record: ResultRecord) -> None:
        self.counts[record.status] += 1
        if self.bar is not None:
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _write_outputs(run_dir: Path, benchmark: str, outcome: RunOutcome) -> None:
    from videotapestry.eval.session import write_outputs

    try:
        written = write_outputs(run_dir, benchmark, outcome)
    except (VideoTapestryError, OSError) as exc:  # the records stand without a report
        print(f"videotapestry: note: no report written: {exc}", file=sys.stderr)
        return
    for path in written:
        variant = path.stem.removeprefix("egoschema_submission_")
        label = "report" if path.name == "report.md" else f"EgoSchema submission ({variant})"
        print(f"{label}: {path}")


def _summary(outcome: RunOutcome, run_dir: Path, *, allow_degraded: bool) -> int:
    """Accuracy per variant on stdout; the exit status of the run's records."""
    from videotapestry.eval.grounding import evidence_tally
    from videotapestry.eval.session import summarize

    for figures in summarize(outcome):
        accuracy = (
            f"{100 * figures.right / figures.graded:.1f}% ({figures.right}/{figures.graded})"
            if figures.graded
            else "-"
        )
        counts = {
            "answered": figures.answered,
            "failed": figures.failed,
            "skipped": figures.skipped,
            "fallback": figures.fallback,
            "degraded": figures.degraded,
            "warned": figures.warned,
        }
        detail = ", ".join(f"{k} {v}" for k, v in counts.items())
        if figures.grounding_hit_rate is not None and figures.grounding_miou is not None:
            detail += (
                f", grounding hit rate {100 * figures.grounding_hit_rate:.1f}% mIoU "
                f"{figures.grounding_miou:.3f} ({figures.grounded_questions} with evidence)"
            )
        print(f"{figures.variant:<20} accuracy {accuracy:<18} {detail}")
    print(f"results: {run_dir / 'results.jsonl'}; traces: {run_dir / 'traces'}")
    tally = evidence_tally(outcome.records.values())
    if tally.noted:
        print(
            f"evidence times fitted to the videos: {tally.reversed} reversed span(s) ordered, "
            f"{tally.clipped} clipped at a video's end, {tally.past_end} dropped past it, "
            f"{len(tally.unreadable)} time reference(s) unreadable (see the report)"
        )
    if outcome.torn_lines:
        print("(the torn last line of an interrupted run was dropped)", file=sys.stderr)
    if outcome.budget_reached:
        print(
            f"videotapestry: the run stopped: {outcome.stopped}; {len(outcome.skipped)} "
            "question(s) not asked, every finished record kept. The same command with a "
            "larger --max-usd / --max-calls asks only the rest",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    if outcome.stopped:
        print(f"videotapestry: error: the run stopped early: {outcome.stopped}", file=sys.stderr)
        return EXIT_ERROR
    if outcome.failed or outcome.skipped:
        shown = outcome.failed[:3]
        for record in shown:
            print(
                f"  failed {record.variant} {record.question_id}: {record.error}", file=sys.stderr
            )
        print(
            f"videotapestry: {len(outcome.failed)} question(s) failed, "
            f"{len(outcome.skipped)} skipped; rerun the same command to retry them",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if outcome.degraded and not allow_degraded:
        print(
            f"videotapestry: {len(outcome.degraded)} answer(s) lost part of the method (see "
            f"the report); exiting with status {EXIT_DEGRADED}, --allow-degraded accepts them",
            file=sys.stderr,
        )
        return EXIT_DEGRADED
    return 0
