"""What the model layer costs on top of the raw openai SDK (not a test; prints figures).

Against the bundled fake server with zero latency, so only client-side work is measured:
request building, JSON-schema generation, cache keys (hashing image bytes), SQLite, usage and
trace bookkeeping. Figures are per call, as ratios against the raw SDK in the same run.

Then the event loop's side: 16 observations of 20 grids each sent at once (an eval's first
wave of Overview observations), by the raw SDK on the loop that awaits them and by the model
service (whose OpenAI-compatible client builds and sends requests on a loop thread of its
own), with the worst lag of a 5 ms ticker on the awaiting loop.

    python bench/bench_client_overhead.py [--calls 200] [--wave 16] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import tempfile
import time

import numpy as np
import openai
from benchkit import smoke
from PIL import Image

from videotapestry.config import load_config
from videotapestry.contracts.method import FinalAnswer, VisualObservation
from videotapestry.images import ImagePart
from videotapestry.llm import ModelService
from videotapestry.prompts import PromptRegistry
from videotapestry.testing import FakeOpenAIServer, FakeReply

REPLY = {"reasoning": "r", "answer": "A", "observation_result": "o"}
#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--calls", "10", "--wave", "2")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^median ms per call over \d+ text calls / \d+ calls with 50 images",
    r"^ +text +50 images$",
    r"^raw openai SDK +\d",
    r"^ModelService, cache off +\d",
    r"^ModelService, cache hit +\d",
    r"^overhead ratio \(ours / raw\): text ",
    r"observations of 20 grids .* sent at once: worst lag of the awaiting loop ",
)


def frames(count: int, side: int = 768, *, detail: int = 1) -> list[ImagePart]:
    """Noise images; ``detail`` > 1 makes blocks of that many pixels (smaller JPEGs)."""
    rng = np.random.default_rng(0)
    parts = []
    for index in range(count):
        coarse = rng.integers(0, 255, (side * 9 // 16 // detail, side // detail, 3), np.uint8)
        pixels = coarse.repeat(detail, axis=0).repeat(detail, axis=1)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
        parts.append(ImagePart(buffer.getvalue(), f"frame {index}", (float(index),)))
    return parts


async def per_call(make_call, calls: int) -> float:
    timings = []
    for index in range(calls):
        started = time.perf_counter()
        await make_call(index)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


async def main(calls: int, wave: int) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")
    registry = PromptRegistry()
    images = frames(50)
    image_mb = sum(len(p.jpeg) for p in images) / 1e6
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.on(None, lambda _: FakeReply.json(REPLY))
        raw = openai.AsyncOpenAI(base_url=server.base_url, api_key=os.environ["OPENAI_API_KEY"])

        def prompt(index: int):
            return registry.render(
                "final_answer",
                question=f"q{index}",
                options=["A. a", "B. b"],
                handoff_trace="",
                memory="m" * 4000,
            )

        async def raw_call(index: int, with_images: bool = False) -> None:
            await raw_chat(raw, prompt(index), images if with_images else [])

        def service(cache: bool) -> ModelService:
            return ModelService(
                load_config(
                    overrides=[
                        f"models.default.base_url={server.base_url}",
                        "models.default.harness_headers=true",
                        f"cache.enabled={str(cache).lower()}",
                        f"cache.path={tmp}/cache.sqlite",
                    ]
                )
            )

        nocache, cached = service(False), service(True)
        session_a, session_b = nocache.session(), cached.session()

        raw_text = await per_call(lambda i: raw_call(i), calls)
        ours_text = await per_call(
            lambda i: session_a.complete_json("answer", prompt(i), FinalAnswer), calls
        )
        await per_call(lambda i: session_b.complete_json("answer", prompt(i), FinalAnswer), calls)
        hit_text = await per_call(
            lambda i: session_b.complete_json("answer", prompt(i), FinalAnswer), calls
        )
        few = max(10, calls // 10)
        raw_img = await per_call(lambda i: raw_call(i, True), few)
        obs = registry.render(
            "visual_observation",
            agent_name="Skim Agent",
            memory_level="macro",
            observation_instruction="look",
            image_notes=[p.label for p in images],
        )
        ours_img = await per_call(
            lambda i: session_a.complete_json("observation", obs, VisualObservation, images), few
        )
        await session_b.complete_json("observation", obs, VisualObservation, images)
        hit_img = await per_call(
            lambda i: session_b.complete_json("observation", obs, VisualObservation, images), few
        )
        grids = frames(20, side=1344, detail=8)  # ~ a grid's JPEG size
        grids_mb = sum(len(p.jpeg) for p in grids) / 1e6
        raw_wave = await worst_lag(lambda i: raw_chat(raw, obs, grids), wave)
        ours_wave = await worst_lag(
            lambda i: session_a.complete_json("observation", obs, VisualObservation, grids), wave
        )
        await raw.close()
        await nocache.aclose()
        await cached.aclose()

    print(
        f"median ms per call over {calls} text calls / {few} calls with 50 images "
        f"({image_mb:.1f} MB of JPEG)"
    )
    print(f"{'':34}{'text':>10}{'50 images':>12}")
    print(f"{'raw openai SDK':34}{raw_text:>10.2f}{raw_img:>12.2f}")
    print(f"{'ModelService, cache off':34}{ours_text:>10.2f}{ours_img:>12.2f}")
    print(f"{'ModelService, cache hit':34}{hit_text:>10.2f}{hit_img:>12.2f}")
    print(
        f"overhead ratio (ours / raw): text {ours_text / raw_text:.2f}x, "
        f"images {ours_img / raw_img:.2f}x; cache hit vs raw: text "
        f"{hit_text / raw_text:.2f}x, images {hit_img / raw_img:.2f}x"
    )
    print(
        f"{wave} observations of 20 grids ({grids_mb:.1f} MB of JPEG each) sent at once: "
        f"worst lag of the awaiting loop {raw_wave[0]:.0f} ms with the raw SDK on it, "
        f"{ours_wave[0]:.0f} ms through the model service ({raw_wave[0] / ours_wave[0]:.1f}x); "
        f"wall {raw_wave[1]:.2f} s and {ours_wave[1]:.2f} s"
    )


async def raw_chat(raw: openai.AsyncOpenAI, prompt, images: list[ImagePart]) -> None:
    """One JSON call through the raw SDK: the prompt's text, then ``images`` as data URLs."""
    content: object = prompt.user
    if images:
        content = [{"type": "text", "text": prompt.user}] + [
            {"type": "image_url", "image_url": {"url": p.data_url()}} for p in images
        ]
    await raw.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": content},
        ],
        response_format={"type": "json_object"},
    )


async def worst_lag(make_call, count: int) -> tuple[float, float]:
    """(worst lag in ms of a 5 ms ticker on this loop, wall s) while ``count`` calls run."""
    lags: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - started - 0.005)

    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    await asyncio.gather(*(make_call(i) for i in range(count)))
    wall = time.perf_counter() - started
    done.set()
    await ticker
    return max(lags) * 1000, wall


if __name__ == "__main__":
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--wave", type=int, default=16, help="observations sent at once")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.wave))
