"""Variants of the method on a fact video, all with the offline model.

Shared by ``bench/bench_offline_vs_direct.py`` and ``tests/test_offline_vs_direct.py`` so
the figure the bench prints is the one the test asserts on. The memory is built once; the
variants then answer every question in the same run, with one embedder and one offline
``Perception`` (its OCR cache is keyed by picture, so sharing it saves time without letting
one variant see what the other read: each still has to be sent the frames).

``evaluate_fact_video`` (``bench/bench_grounding.py``) asks the questions through the eval
runner instead, as a benchmark whose evidence is each fact's on-screen span: its records
are scored, judged and grounded by exactly the code ``videotapestry eval`` reports with.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from videotapestry.api import BatchResults, QuestionItem, VideoTapestry
from videotapestry.config import load_config
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.report import write_report
from videotapestry.eval.run_writer import RunDirectory, new_run_info
from videotapestry.eval.runner import EvalRunner, Inputs, RunnerOptions, RunOutcome
from videotapestry.llm.client import default_client_factories
from videotapestry.llm.service import ModelService
from videotapestry.offline import OfflineClientFactory
from videotapestry.offline.perception import Perception
from videotapestry.result import QuestionFailure, Result
from videotapestry.testing.fact_videos import FactQuestion, FactVideo, make_fact_video
from videotapestry.variants import DIRECT, FULL

VARIANTS = (FULL.name, DIRECT.name)
#: The benchmark name and the one category of a fact video's eval questions.
BENCHMARK = "facts"
ON_SCREEN = "on_screen"


def bench_arguments(description: str) -> argparse.Namespace:
    """The options of the fact-video benches: the video (``--minutes``, ``--count`` facts,
    ``--seed``), the questions asked (``--questions``: the first N, all by default; each
    question's wrong options are other facts' codes, so a video needs 4 facts) and the
    questions in flight (``--concurrency``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--questions", type=int, default=None, help="ask only the first N")
    parser.add_argument("--concurrency", type=int, default=2)
    return parser.parse_args()


def bench_video(cache: Path, args: argparse.Namespace) -> FactVideo:
    """The video of ``bench_arguments`` in ``cache``, named by its minutes, facts and seed
    (``facts_30min_24_s11.mp4``), so its memory can be kept beside it; with the questions
    ``--questions`` asks."""
    name = f"facts_{args.minutes:g}min_{args.count}_s{args.seed}"
    cache.mkdir(parents=True, exist_ok=True)
    video = make_fact_video(
        cache / f"{name}.mp4", duration_s=args.minutes * 60, count=args.count, seed=args.seed
    )
    return replace(video, questions=video.questions[: args.questions])


@dataclass(frozen=True)
class Answered:
    question: FactQuestion
    answer: str  # "" when the question failed
    elapsed_s: float
    result: Result | None
    failure: str | None = None

    @property
    def right(self) -> bool:
        return self.answer == self.question.answer


@dataclass
class VariantRun:
    variant: str
    answered: list[Answered]
    wall_s: float  # the whole batch, with its concurrency

    @property
    def accuracy(self) -> float:
        return sum(a.right for a in self.answered) / len(self.answered)

    @property
    def mean_question_s(self) -> float:
        return sum(a.elapsed_s for a in self.answered) / len(self.answered)


@dataclass
class Comparison:
    build_s: float
    build_calls: int  # model calls the build made (0: everything from its checkpoints)
    runs: dict[str, VariantRun] = field(default_factory=dict)


@dataclass(frozen=True)
class OfflineModels:
    """One embedder and one offline ``Perception`` for every facade of a bench run."""

    embedder: Embedder
    perception: Perception

    @classmethod
    def load(cls, embedder: Embedder | None = None) -> OfflineModels:
        if embedder is None:
            embedder = SentenceTransformerEmbedder(load_config(profile="offline").embedding)
        return cls(embedder, Perception(embedder=embedder))


def offline_facade(*overrides: str, models: OfflineModels) -> VideoTapestry:
    config = load_config(profile="offline", overrides=list(overrides))
    factory = OfflineClientFactory(models.perception)
    service = ModelService(
        config, client_factories={**default_client_factories(), "offline": factory}
    )
    return VideoTapestry(config, service=service, embedder=models.embedder)


def build_fact_memory(
    fact_video: FactVideo, memory_dir: str | Path, models: OfflineModels
) -> tuple[float, int]:
    """Build (or resume) the video's memory with the offline profile: (seconds, model calls
    made; 0 when everything came from its checkpoints)."""
    builder = offline_facade(models=models)
    started = time.perf_counter()
    build = builder.build_memory(fact_video.path, memory_dir)
    usage = build.report.usage
    calls = int(usage.get("calls", 0)) - int(usage.get("cached_calls", 0))
    return time.perf_counter() - started, calls


def compare_offline_variants(
    fact_video: FactVideo,
    memory_dir: str | Path,
    *,
    variants: Sequence[str] = VARIANTS,
    concurrency: int = 2,
    embedder: Embedder | None = None,
    rows: Mapping[str, Sequence[str]] | None = None,
) -> Comparison:
    """Build (or resume) the memory, then answer every question with each variant.

    ``rows`` (row name → config overrides, e.g. ``{"full calls=8": ("variant=full",
    "budget.max_calls=8")}``) replaces ``variants`` when given: each row is answered with
    its overrides and kept in ``runs`` under its name."""
    models = OfflineModels.load(embedder)
    build_s, build_calls = build_fact_memory(fact_video, memory_dir, models)
    comparison = Comparison(build_s=build_s, build_calls=build_calls)
    items = [
        QuestionItem(fact_video.path, memory_dir, q.question, q.options, question_id=q.id)
        for q in fact_video.questions
    ]
    if rows is None:
        rows = {variant: (f"variant={variant}",) for variant in variants}
    for name, overrides in rows.items():
        vt = offline_facade(*overrides, models=models)

        async def run(vt: VideoTapestry = vt) -> BatchResults:
            try:
                return await vt.abatch(items, concurrency=concurrency)
            finally:
                await vt.aclose()

        started = time.perf_counter()
        outcomes = asyncio.run(run())
        wall = time.perf_counter() - started
        answered = []
        for question, outcome in zip(fact_video.questions, outcomes, strict=True):
            if isinstance(outcome, QuestionFailure):
                answered.append(
                    Answered(question, "", 0.0, None, f"{outcome.error_type}: {outcome.error}")
                )
            else:
                answered.append(Answered(question, outcome.answer, outcome.elapsed_s, outcome))
        comparison.runs[name] = VariantRun(name, answered, wall)
    return comparison


def compare_on_bench_video(
    cache: Path, args: argparse.Namespace, *, rows: Mapping[str, Sequence[str]] | None = None
) -> tuple[FactVideo, Comparison]:
    """What a fact bench script does first: write (or reuse) the video of ``args`` in
    ``cache``, build its memory beside it and answer every question with each row
    (``compare_offline_variants``), printing the video's and the build's figure lines."""
    started = time.perf_counter()
    video = bench_video(cache, args)
    print(f"video: {video.path.name}, {len(video.questions)} questions, "
          f"{time.perf_counter() - started:.1f} s to write")  # fmt: skip
    comparison = compare_offline_variants(
        video, cache / f"{video.path.stem}.memory", concurrency=args.concurrency, rows=rows
    )
    print(f"build: {comparison.build_s:.1f} s, {comparison.build_calls} model calls")
    return video, comparison


def fact_eval_questions(fact_video: FactVideo, *, free_form: bool = False) -> list[EvalQuestion]:
    """The video's questions as an eval benchmark's, each with its fact's on-screen span as
    the evidence: with their options (scored by letter) or, ``free_form``, the same question
    without options, judged against the fact's code."""
    return [
        EvalQuestion(
            id=q.id,
            benchmark=BENCHMARK,
            video_id=fact_video.path.stem,
            video=fact_video.path.name,
            question=q.question,
            options=[] if free_form else list(q.options),
            answer=None if free_form else q.answer,
            reference_answer=q.fact.code if free_form else None,
            categories=[ON_SCREEN],
            duration_s=fact_video.duration_s,
            evidence_spans=[(q.fact.start_s, q.fact.end_s)],
        )
        for q in fact_video.questions
    ]


@dataclass(frozen=True)
class FactEval:
    """One eval run of a fact video's questions: ``mode`` is ``mc`` or ``open``."""

    mode: str
    run_dir: Path
    outcome: RunOutcome
    wall_s: float


def evaluate_fact_video(
    fact_video: FactVideo,
    memories: Path,
    run_dir: Path,
    models: OfflineModels,
    *,
    variants: Sequence[str],
    free_form: bool = False,
    concurrency: int = 2,
) -> FactEval:
    """Answer the questions with ``variants`` into ``run_dir`` through the eval runner (its
    records, judgements, traces and ``report.md``), from the memory at ``memories/<video
    stem>``. A run directory already holding records of the same run is resumed."""
    mode = "open" if free_form else "mc"
    questions = fact_eval_questions(fact_video, free_form=free_form)
    vt = offline_facade(models=models)
    info = new_run_info(
        benchmark=BENCHMARK,
        annotations=fact_video.path,
        variants=variants,
        config=vt.config,
        prompts=vt.prompts,
        mode=mode,
    )
    run = RunDirectory.open(run_dir, info)
    inputs = Inputs(videos=fact_video.path.parent, memories=memories)
    runner = EvalRunner(
        vt, run, inputs, RunnerOptions(variants=tuple(variants), concurrency=concurrency)
    )

    async def answer() -> RunOutcome:
        try:
            return await runner.run(questions)
        finally:
            await vt.aclose()

    started = time.perf_counter()
    try:
        outcome = asyncio.run(answer())
    finally:
        vt.service.close()
        run.close()
    wall = time.perf_counter() - started
    write_report(run.path)
    return FactEval(mode, run.path, outcome, wall)
