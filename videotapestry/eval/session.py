"""One evaluation from its request to its summary: what ``videotapestry eval`` and a served
eval job both do, so a run started from the web app is the run the command would make.

An ``EvalSpec`` names everything a run depends on (benchmark, files, variants, how failures
are treated); ``select_questions`` turns it into the questions asked; ``run_evaluation``
opens (or resumes) the run directory and answers them with the answerer it is given (this
process, or Ray workers: the caller picks, since executors sit above this layer);
``summarize`` gives each variant's figures. A run killed part-way is resumed by calling
``run_evaluation`` again with the same spec: finished records are kept, none asked twice.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from videotapestry.errors import ConfigError, QuestionError
from videotapestry.eval.grounding import grounding
from videotapestry.eval.run_reader import RunInputs, RunSelection
from videotapestry.eval.run_writer import RunDirectory, new_run_info
from videotapestry.eval.runner import (
    EvalRunner,
    Inputs,
    RunnerOptions,
    RunOutcome,
    check_variants,
)
from videotapestry.eval.scoring import is_correct, is_scored
from videotapestry.question import check_question_length

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.answering import Answerer
    from videotapestry.eval.questions import EvalQuestion
    from videotapestry.eval.records import ResultRecord


@dataclass(frozen=True)
class EvalSpec:
    """An evaluation as asked for. Paths are the caller's to check (a server confines them to
    its roots first); ``mode`` and ``videos is None`` (no observation) are part of the run's
    identity like the config."""

    benchmark: str
    annotations: Path
    memories: Path
    out: Path
    #: How the questions are answered: variants, questions in flight, failures, builds.
    options: RunnerOptions
    #: None answers from the memories alone (no frame or speech observation).
    videos: Path | None = None
    subtitles: Path | None = None
    mode: Literal["mc", "open"] = "mc"
    duration: str | None = None
    ids: frozenset[str] = field(default_factory=frozenset)
    limit: int | None = None
    force: bool = False
    #: The command line (or request) recorded in ``run.json``.
    command: tuple[str, ...] = ()
    #: The run directory this run repeats (``eval --rerun``), recorded in ``run.json``.
    rerun_of: Path | None = None

    @property
    def variants(self) -> tuple[str, ...]:
        return self.options.variants

    @property
    def no_video(self) -> bool:
        return self.videos is None


@dataclass(frozen=True)
class VariantSummary:
    """One variant's figures over the selected questions (what ``eval`` prints)."""

    variant: str
    right: int
    graded: int
    answered: int
    failed: int
    skipped: int
    fallback: int
    degraded: int
    #: Answered with a warning (a made-up citation): no loss of the method, counted apart.
    warned: int
    grounding_hit_rate: float | None
    grounding_miou: float | None
    grounded_questions: int

    @property
    def accuracy(self) -> float | None:
        return self.right / self.graded if self.graded else None

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "accuracy": self.accuracy}


def select_questions(spec: EvalSpec) -> list[EvalQuestion]:
    """The benchmark's questions the spec selects (its duration group, ids, first N)."""
    from videotapestry.eval.datasets import LoadOptions, load_benchmark

    questions = load_benchmark(
        spec.benchmark, spec.annotations, LoadOptions(duration=spec.duration, mode=spec.mode)
    )
    if spec.ids:
        questions = _only(questions, spec.ids)
    if spec.limit is not None:
        if spec.limit < 0:
            raise ConfigError(f"--limit must not be negative, got {spec.limit}")
        questions = questions[: spec.limit]
    if not questions:  # an empty run would exit 0 having answered nothing
        raise ConfigError(f"--limit {spec.limit} selects no question; nothing to run")
    return questions


def _only(questions: Sequence[EvalQuestion], wanted: Collection[str]) -> list[EvalQuestion]:
    known = {q.id for q in questions}
    unknown = sorted(qid for qid in wanted if qid not in known)
    if unknown:
        raise ConfigError(
            f"--ids: {len(unknown)} id(s) not in the benchmark's questions, e.g. {unknown[0]!r}"
        )
    return [q for q in questions if q.id in wanted]


def with_variants(spec: EvalSpec, default: str) -> EvalSpec:
    """The spec with its variants checked, ``default`` (the config's variant) when it names
    none."""
    variants = check_variants(spec.variants or [default])
    return replace(spec, options=replace(spec.options, variants=variants))


def check_question_lengths(questions: Sequence[EvalQuestion], max_chars: int) -> None:
    """Refuse the run when a selected question is longer than ``max_chars`` (config
    ``question.max_chars``), naming it, before the run directory is made or anything asked:
    a run that recorded it as a failure would have filled its traces with it first."""
    for question in questions:
        try:
            check_question_length(question.question, question.options, max_chars=max_chars)
        except QuestionError as exc:
            raise QuestionError(f"question {question.id!r} of the benchmark: {exc}") from None


def check_spec(spec: EvalSpec) -> None:
    """What no run of ``spec`` could do, refused before anything is opened."""
    if spec.no_video and spec.options.build_missing:
        raise ConfigError("--build-missing builds memories from the videos; not with --no-video")
    if spec.no_video and spec.subtitles is not None:  # read only when the video is observed
        raise ConfigError(
            "--subtitles is the speech of the videos, heard only while observing them; with "
            "--no-video the answers come from the memories alone: drop one of the two"
        )
    if spec.options.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {spec.options.concurrency}")


async def run_evaluation(
    vt: VideoTapestry,
    spec: EvalSpec,
    questions: Sequence[EvalQuestion],
    *,
    answerer: Answerer | None = None,
    on_record: Callable[[ResultRecord], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
) -> tuple[Path, RunOutcome]:
    """Answer ``questions`` into the spec's run directory (created, or resumed when it was
    made by the same method); the directory and the outcome."""
    check_spec(spec)
    check_question_lengths(questions, vt.config.question.max_chars)
    info = new_run_info(
        benchmark=spec.benchmark,
        annotations=spec.annotations,
        variants=spec.variants,
        config=vt.config,
        prompts=vt.prompts,
        command=spec.command,
        no_video=spec.no_video,
        mode=spec.mode,
        selection=RunSelection(
            duration=spec.duration,
            ids=sorted(spec.ids),
            limit=spec.limit,
            question_ids=[question.id for question in questions],
        ),
        inputs=RunInputs(
            videos=_absolute(spec.videos),
            memories=_absolute(spec.memories) or "",
            subtitles=_absolute(spec.subtitles),
        ),
        rerun_of=_absolute(spec.rerun_of),
    )
    run_dir = RunDirectory.open(spec.out, info, force=spec.force)
    annotations = spec.annotations
    inputs = Inputs(
        videos=spec.videos,
        memories=spec.memories,
        subtitles=spec.subtitles,
        annotations_dir=annotations if annotations.is_dir() else annotations.parent,
    )
    try:
        runner = EvalRunner(
            vt,
            run_dir,
            inputs,
            spec.options,
            on_record=on_record,
            on_plan=on_plan,
            answerer=answerer,
        )
        outcome = await runner.run(questions)
    finally:
        run_dir.close()
    return run_dir.path, outcome


def _absolute(path: Path | None) -> str | None:
    return None if path is None else str(path.expanduser().resolve())


def write_outputs(run_dir: Path, benchmark: str, outcome: RunOutcome) -> list[Path]:
    """The report and, for EgoSchema, the server's submission file per variant
    (``{q_uid: option index}``, the only way to score its hidden answers); the files written.
    A report that cannot be written is an error the caller shows: the records stand."""
    from videotapestry.eval.datasets.egoschema import write_egoschema_submission
    from videotapestry.eval.report import write_report

    written: list[Path] = []
    write_report(run_dir)
    written.append(run_dir / "report.md")
    if benchmark == "egoschema":
        for variant in outcome.variants:
            path = run_dir / f"egoschema_submission_{variant}.json"
            write_egoschema_submission(outcome.of_variant(variant), path, variant=variant)
            written.append(path)
    return written


def summarize(outcome: RunOutcome) -> list[VariantSummary]:
    """Each variant's accuracy, counts and grounding over the run's selected questions."""
    summaries = []
    for variant in outcome.variants:
        records = outcome.of_variant(variant)
        graded = [r for r in records if is_scored(r)]
        grounded = grounding(records)
        summaries.append(
            VariantSummary(
                variant=variant,
                right=sum(1 for r in graded if is_correct(r)),
                graded=len(graded),
                answered=sum(r.status == "answered" for r in records),
                failed=sum(r.status == "failed" for r in records),
                skipped=sum(r.status == "skipped" for r in records),
                fallback=sum(r.fallback for r in records),
                degraded=sum(bool(r.degraded) for r in records if r.status == "answered"),
                warned=sum(bool(r.warnings) for r in records if r.status == "answered"),
                grounding_hit_rate=grounded.hit_rate,
                grounding_miou=grounded.miou,
                grounded_questions=grounded.questions,
            )
        )
    return summaries


__all__ = [
    "EvalSpec",
    "VariantSummary",
    "check_question_lengths",
    "check_spec",
    "run_evaluation",
    "select_questions",
    "summarize",
    "with_variants",
    "write_outputs",
]
