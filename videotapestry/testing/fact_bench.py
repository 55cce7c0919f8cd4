"""The full method against the Direct baseline on a fact video, both with the offline model.

Shared by ``bench/bench_offline_vs_direct.py`` and ``tests/test_offline_vs_direct.py`` so
the figure the bench prints is the one the test asserts on. The memory is built once; both
variants then answer every question in the same run, with one embedder and one offline
``Perception`` (its OCR cache is keyed by picture, so sharing it saves time without letting
one variant see what the other read: each still has to be sent the frames).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from videotapestry.api import BatchResults, QuestionItem, VideoTapestry
from videotapestry.config import load_config
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.llm.client import default_client_factories
from videotapestry.llm.service import ModelService
from videotapestry.offline import OfflineClientFactory
from videotapestry.offline.perception import Perception
from videotapestry.result import QuestionFailure, Result
from videotapestry.testing.fact_videos import FactQuestion, FactVideo
from videotapestry.variants import DIRECT, FULL

VARIANTS = (FULL.name, DIRECT.name)


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


def offline_facade(*overrides: str, embedder: Embedder, perception: Perception) -> VideoTapestry:
    config = load_config(profile="offline", overrides=list(overrides))
    factory = OfflineClientFactory(perception)
    service = ModelService(
        config, client_factories={**default_client_factories(), "offline": factory}
    )
    return VideoTapestry(config, service=service, embedder=embedder)


def compare_offline_variants(
    fact_video: FactVideo,
    memory_dir: str | Path,
    *,
    variants: Sequence[str] = VARIANTS,
    concurrency: int = 2,
    embedder: Embedder | None = None,
) -> Comparison:
    """Build (or resume) the memory, then answer every question with each variant."""
    if embedder is None:
        embedder = SentenceTransformerEmbedder(load_config(profile="offline").embedding)
    perception = Perception(embedder=embedder)
    builder = offline_facade(embedder=embedder, perception=perception)
    started = time.perf_counter()
    build = builder.build_memory(fact_video.path, memory_dir)
    usage = build.report.usage
    comparison = Comparison(
        build_s=time.perf_counter() - started,
        build_calls=int(usage.get("calls", 0)) - int(usage.get("cached_calls", 0)),
    )
    items = [
        QuestionItem(fact_video.path, memory_dir, q.question, q.options, question_id=q.id)
        for q in fact_video.questions
    ]
    for variant in variants:
        vt = offline_facade(f"variant={variant}", embedder=embedder, perception=perception)

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
        comparison.runs[variant] = VariantRun(variant, answered, wall)
    return comparison
