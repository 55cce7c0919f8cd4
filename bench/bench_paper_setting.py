"""What the paper's exact setting costs beside the default one (not a test).

The sample video's shipped questions, answered with the offline model (the memory built once,
cached under the bench cache) under the default config and under ``--config paper``, the
same memory and model for both. Prints, per config, the answers right, and per question the
model calls, images, prompt and completion tokens (the Answer call's own beside them, which
citations change) and the composite memory's tokens. The offline model's tokens are estimates
(``videotapestry.tokens``) of what a real model would be sent, so the ratios hold for one.

    python bench/bench_paper_setting.py [--questions N] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from benchkit import cache_dir, smoke

from videotapestry.api import VideoTapestry
from videotapestry.config import load_config
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_memory_dir
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.result import Result

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--questions", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^memory: built in \S+ s",
    r"^default: \d+/\d+ right; per question: \S+ calls, \S+ images, \S+ prompt \+ \S+ "
    r"completion tokens \(answer call \S+ \+ \S+\), composite \S+ tokens",
    r"^paper: \d+/\d+ right; per question: ",
    r"^paper / default: calls \S+, images \S+, prompt tokens \S+, completion tokens \S+, "
    r"composite tokens \S+",
)
CONFIGS = ("default", "paper")


@dataclass(frozen=True)
class Costs:
    right: int
    asked: int
    calls: float
    images: float
    prompt: float
    completion: float
    answer_prompt: float
    answer_completion: float
    composite: float

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.right}/{self.asked} right; per question: {self.calls:.1f} calls, "
            f"{self.images:.1f} images, {self.prompt:,.0f} prompt + {self.completion:,.0f} "
            f"completion tokens (answer call {self.answer_prompt:,.0f} + "
            f"{self.answer_completion:,.0f}), composite {self.composite:,.0f} tokens"
        )


def costs(results: list[tuple[Result, str]]) -> Costs:
    """Per-question means of what ``results`` (each with its right letter) spent."""
    n = len(results)

    def mean(values: list[float]) -> float:
        return sum(values) / n

    answer = [r.usage.by_role.get("answer") for r, _ in results]
    return Costs(
        right=sum(r.answer == letter for r, letter in results),
        asked=n,
        calls=mean([r.usage.calls for r, _ in results]),
        images=mean([r.usage.images for r, _ in results]),
        prompt=mean([r.usage.prompt_tokens for r, _ in results]),
        completion=mean([r.usage.completion_tokens for r, _ in results]),
        answer_prompt=mean([a.prompt_tokens if a else 0 for a in answer]),
        answer_completion=mean([a.completion_tokens if a else 0 for a in answer]),
        composite=mean([r.memory_tokens for r, _ in results]),
    )


async def answer_all(
    config: str, questions: list[dict], memory_cache: Path, embedder: Embedder
) -> list[tuple[Result, str]]:
    video = sample_video_path()
    vt = VideoTapestry(
        None if config == "default" else config,
        profile="offline",
        # A reply cache of its own per config: nothing is answered from the other's calls.
        overrides=[f"cache.path={cache_dir('paper-setting', config, 'responses.sqlite')}"],
        embedder=embedder,
    )
    try:
        memory = demo_memory_dir(video, memory_cache)
        results = []
        for question in questions:
            result = await vt.aanswer(
                video, memory, question["question"], question["options"], question_id=question["id"]
            )
            results.append((result, question["answer"]))
        return results
    finally:
        await vt.aclose()


async def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=None, help="ask only the first N")
    args = parser.parse_args()
    questions = sample_questions()["questions"][: args.questions]
    memory_cache = cache_dir("paper-setting")
    started = time.perf_counter()
    # The memory is the same for both configs: built once with the default builder settings.
    # One embedder for every facade: the embedding model is the same, and loaded once.
    embedder = SentenceTransformerEmbedder(load_config(profile="offline").embedding)
    builder = VideoTapestry(profile="offline", embedder=embedder)
    try:
        video = sample_video_path()
        await builder.abuild_memory(video, demo_memory_dir(video, memory_cache), progress=False)
    finally:
        await builder.aclose()
    print(f"memory: built in {time.perf_counter() - started:.1f} s (cached after the first run)")
    measured = {}
    for config in CONFIGS:
        measured[config] = costs(await answer_all(config, questions, memory_cache, embedder))
        print(measured[config].line(config), flush=True)
    ours, paper = measured["default"], measured["paper"]

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b else "n/a"

    print(
        f"paper / default: calls {ratio(paper.calls, ours.calls)}, images "
        f"{ratio(paper.images, ours.images)}, prompt tokens {ratio(paper.prompt, ours.prompt)}, "
        f"completion tokens {ratio(paper.completion, ours.completion)}, composite tokens "
        f"{ratio(paper.composite, ours.composite)}"
    )


if __name__ == "__main__":
    asyncio.run(main())
