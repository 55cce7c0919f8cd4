"""How much of a video's prompts a provider's prefix cache could serve (not a test).

The sample video's shipped questions, asked one after another on one video with the offline
model (the memory built once, cached under the bench cache), once per variant, while every
request the model client is sent is recorded as it is sent (a client factory wrapping the
offline one; nothing of the service changes). Prints per variant and question the calls,
images, prompt tokens (the project's estimate: four characters a token, ``IMAGE_TOKENS`` an
image) and completion tokens, and the share of prompt tokens that repeat a prefix an earlier
call of the video already sent, under OpenAI's rule (prompts of 1,024 tokens or more, in
128-token steps) and vLLM's automatic prefix caching (16-token blocks)
(``videotapestry.llm.prefix_cache``). The first question meets a cold cache; the second and
later ones find the first's prompts in it, which is what prompt order (SPEC §17) wins.

    python bench/bench_prompt_cache.py [--questions N] [--variants full direct ...]
        [-o prompts.override_dir=DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field

from benchkit import cache_dir, smoke

from videotapestry.api import VideoTapestry
from videotapestry.config import ModelSettings, load_config
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_memory_dir
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.llm.client import ClientFactory, ModelClient, default_client_factories
from videotapestry.llm.prefix_cache import CallShare, PrefixShare, prefix_share
from videotapestry.llm.service import ModelService
from videotapestry.llm.types import ModelRequest, ModelResponse
from videotapestry.offline import OfflineClientFactory
from videotapestry.variants import VARIANTS as ALL_VARIANTS

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--questions", "2", "--variants", "full", "direct")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^memory: built in \S+ s",
    r"^variant full: \d+/\d+ right",
    r"^   question +calls +images +prompt tok +completion tok +openai +vllm",
    r"^   q1 \S+ +\d+ +\d+ +[\d,]+ +[\d,]+ +\d+\.\d% +\d+\.\d%",
    r"^   q2 \S+ +\d+ +\d+ +[\d,]+ +[\d,]+ +\d+\.\d% +\d+\.\d%",
    r"^   first question: openai \d+\.\d%, vllm \d+\.\d%; second and later: openai "
    r"\d+\.\d%, vllm \d+\.\d%",
    r"^   by prompt, second and later questions: \S+ \d+ calls [\d,]+ tok openai \d+\.\d% vllm ",
    r"^variant direct: \d+/\d+ right",
    r"^summary, second and later questions: ",
)
#: The variants that explore on their own (refined_*_only reassemble the full exploration:
#: the same calls but their Answer call).
VARIANTS = tuple(v.name for v in ALL_VARIANTS if v.reassembled_from is None)


@dataclass
class Recorder:
    """Every request sent to a client it made, in the order they were sent."""

    requests: list[ModelRequest] = field(default_factory=list)

    def factory(self, inner: ClientFactory) -> ClientFactory:
        def make(settings: ModelSettings) -> ModelClient:
            return RecordingClient(inner(settings), self)

        return make


class RecordingClient:
    """A model client that notes each request before passing it on."""

    def __init__(self, inner: ModelClient, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder
        self.endpoint = inner.endpoint
        self.in_process = getattr(inner, "in_process", False)
        self.revision = getattr(inner, "revision", None)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.recorder.requests.append(request)
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class Asked:
    id: str
    right: bool
    calls: int  # this question's requests: calls[start:stop] of the recorder
    start: int
    images: int
    completion: int


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


async def run_variant(
    variant: str,
    questions: list[dict],
    factory: OfflineClientFactory,
    embedder,
    overrides: list[str] = (),
) -> tuple[list[Asked], list[ModelRequest], PrefixShare]:
    """Ask ``questions`` in order with ``variant``: what each took, the requests sent, and
    their prefix shares."""
    recorder = Recorder()
    config = load_config(
        profile="offline", overrides=["cache.enabled=false", f"variant={variant}", *overrides]
    )
    service = ModelService(
        config,
        client_factories={**default_client_factories(), "offline": recorder.factory(factory)},
    )
    vt = VideoTapestry(config, service=service, embedder=embedder)
    video = sample_video_path()
    memory = demo_memory_dir(video, cache_dir("paper-setting"))
    asked = []
    try:
        for question in questions:
            start = len(recorder.requests)
            result = await vt.aanswer(
                video, memory, question["question"], question["options"], question_id=question["id"]
            )
            mine = recorder.requests[start:]
            asked.append(
                Asked(
                    id=question["id"],
                    right=result.answer == question["answer"],
                    calls=len(mine),
                    start=start,
                    images=sum(r.image_count for r in mine),
                    completion=result.usage.completion_tokens,
                )
            )
    finally:
        await vt.aclose()
        service.close()
    return asked, recorder.requests, prefix_share(recorder.requests)


def report(
    variant: str, asked: list[Asked], requests: list[ModelRequest], measured: PrefixShare
) -> PrefixShare:
    """Print the variant's table; returns the second and later questions' share."""
    right = sum(a.right for a in asked)
    print(f"variant {variant}: {right}/{len(asked)} right", flush=True)
    print(
        f"   {'question':<24} {'calls':>5} {'images':>6} {'prompt tok':>10} "
        f"{'completion tok':>14} {'openai':>7} {'vllm':>7}"
    )
    for number, one in enumerate(asked, 1):
        part = measured.part(one.start, one.start + one.calls)
        name = f"q{number} {one.id}"[:24]
        print(
            f"   {name:<24} {one.calls:>5} {one.images:>6} {part.tokens:>10,} "
            f"{one.completion:>14,} {pct(part.share('openai')):>7} {pct(part.share('vllm')):>7}"
        )
    first = measured.part(0, asked[0].calls)
    later = measured.part(asked[0].calls)
    print(
        f"   first question: openai {pct(first.share('openai'))}, vllm "
        f"{pct(first.share('vllm'))}; second and later: openai {pct(later.share('openai'))}, "
        f"vllm {pct(later.share('vllm'))}",
        flush=True,
    )
    by_prompt: dict[str, list[CallShare]] = {}
    for request, call in zip(requests[asked[0].calls :], later.calls, strict=True):
        by_prompt.setdefault(request.prompt_name or request.role, []).append(call)
    parts = []
    for name, calls in sorted(by_prompt.items(), key=lambda kv: -sum(c.tokens for c in kv[1])):
        part = PrefixShare(tuple(calls))
        parts.append(
            f"{name} {len(calls)} calls {part.tokens:,} tok openai "
            f"{pct(part.share('openai'))} vllm {pct(part.share('vllm'))}"
        )
    print("   by prompt, second and later questions: " + "; ".join(parts))
    return later


async def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=None, help="ask only the first N")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument(
        "-o",
        "--override",
        action="append",
        default=[],
        help="a config override for the questions (prompts.override_dir=DIR tries an order)",
    )
    args = parser.parse_args()
    questions = sample_questions()["questions"][: args.questions]
    if len(questions) < 2:
        raise SystemExit("--questions: at least 2 (the second question is the one measured)")
    started = time.perf_counter()
    embedder = SentenceTransformerEmbedder(load_config(profile="offline").embedding)
    # The sample's memory with the default builder settings, shared with bench_paper_setting.
    builder = VideoTapestry(profile="offline", embedder=embedder)
    try:
        video = sample_video_path()
        memory = demo_memory_dir(video, cache_dir("paper-setting"))
        await builder.abuild_memory(video, memory, progress=False)
    finally:
        await builder.aclose()
    print(f"memory: built in {time.perf_counter() - started:.1f} s (cached after the first run)")
    factory = OfflineClientFactory()  # one OCR engine and embedder for every variant
    later = {}
    for variant in args.variants:
        asked, requests, measured = await run_variant(
            variant, questions, factory, embedder, args.override
        )
        later[variant] = report(variant, asked, requests, measured)
    print(
        "summary, second and later questions: "
        + "; ".join(
            f"{v} openai {pct(s.share('openai'))} vllm {pct(s.share('vllm'))}"
            for v, s in later.items()
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
