"""Per-question cost of the VideoTapestry method (not a test; prints figures).

A 60-minute synthetic memory (12 SuperEvents x 10 MacroEvents, 2,520 subgraph nodes), the
60-minute 640x360 H.264 benchmark video (long GOPs; generated once into bench/.cache/ by
bench_video_sampling.py's helper), an hour of subtitles (one line every 8 s) so the ASR path
runs, and the scripted model on the fake OpenAI-compatible server. ``--minutes`` changes the
three lengths.

1. Framework overhead per question with a zero-latency server: everything but model time
   (frame decoding, grids, JPEG encoding, retrieval, prompts, HTTP), with the top costs from
   cProfile. Goal: <= 1.5 s.
2. With 1.0 s injected latency per call (``--latency``): wall time against the lower bound
   of (calls on the critical path) x 1.0 s, goal <= 1.08x (issue 22), with the frame prefetch
   (``agents.prefetch_frames``) off and on in the same run, each on a cold frame cache (the
   first question on this video; the process warm: embedder and memory loaded) and then on
   the cache that question left (a further question); with ``--proxy`` or
   ``--critical-proxy`` also with the prefetch on from the memory directory holding the
   video's frame proxy. The critical path is counted from the
   trace: the longest chain of model calls each starting after the one before it ended.
   Frame-cache hits and the prefetch's frames (planned / decoded / used by the observation)
   are printed with it.
3. Per variant: calls, calls on the critical path, images, prompt/completion tokens (the fake
   server's estimate: chars/4 + 85 per image) and composite-memory tokens (the paper: ~4.4k
   for the full method).
   refined_super_only and refined_paths_only are answered from the full variant's exploration
   (``VideoTapestry.areanswer``): one Answer call each, as in the paper's Appendix C.

5. With ``--only-decoding`` (or ``--decoding``: after the others): framework overhead of the
   first question on a video no earlier question decoded (memory loaded, frame cache empty)
   apart from a further question on the same video, with ``video.frame_reuse`` 0 (exact
   frames only) and 0.25, with ``video.decode_workers`` 2, and from the frame proxy, as
   ratios within this run.
4. With ``--proxy`` (or ``--proxy-only``): the same questions with and without the frame
   proxy (``builder.frame_proxy``), alternating, frame and render caches off: decoding per
   question.

    python bench/bench_method.py [--questions 3] [--gop 250] [--repeats 1] [--skip-overhead]
        [--skip-variants] [--proxy | --proxy-only | --only-decoding] [--critical-proxy]
        [--decoding] [--minutes 60] [--latency 1.0] [--smoke]

``--smoke`` runs every section (1 to 5) on a 15-second video (a keyframe a second) at 0.02 s
per call.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import statistics
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench_video_sampling import long_video
from benchkit import cache_dir, smoke

from videotapestry.api import VideoTapestry
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.memory import save_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.memories import synthetic_memory
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import FrameCache, RenderCache

REANSWERED = "  (reanswer: Answer call only)"
#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = (
    "--minutes", "0.25", "--gop", "25", "--questions", "1", "--latency", "0.02", "--proxy",
    "--decoding",
)  # fmt: skip
SMOKE_FIGURES: tuple[str, ...] = (
    r"^1\. framework overhead per question \(zero-latency fake server\), ",
    r"^   first question \(loads the embedder, memory, embeddings, packs clips\): ",
    r"^   steady state: mean .* over \d+ questions; HTTP round trips ",
    r"^   overhead excluding model time: .* \(goal <= 1\.5 s\)",
    r"^   where the time goes \(seconds per question",
    r"^ +\S+ s  model calls \(HTTP, JSON, cache, trace\)$",
    r"^2\. with \S+ s latency per call, ",
    r"^   prefetch +frames +calls +critical +wall s +ratio +cache hits ",
    r"^   off +cold +\d",
    r"^   on +cached +\d",
    r"^   on\+proxy +cold +\d",
    r"^   mean ratio, prefetch on\+proxy, cached frames: ",
    r"^3\. per question, by variant",
    r"^   variant +calls +critical +images +prompt tok ",
    r"^   full +\d",
    r"^   refined_paths_only +\d",
    r"^   direct +\d",
    r"^4\. frame proxy vs original, \d+ questions each",
    r"^   original +wall .* s/question, decoding ",
    r"^   proxy +wall .* s/question, decoding ",
    r"^   decoding \S+x faster with the proxy, question wall .* same answers and image counts: ",
    r"^5\. decoding shared \(overhead = wall less HTTP",
    r"^   frame_reuse=0 \(exact frames\), threads +first question on the video ",
    r"^   frame_reuse=0\.25, decode_workers=2 +first question on the video ",
    r"^   frame proxy \(builder\.frame_proxy\), threads +first question on the video ",
    r"^   goals: first <= 0\.75 s, further <= 0\.4 s",
)
OPTIONS = ["A. the red umbrella", "B. the score card", "C. the laptop", "D. the trophy"]
QUESTIONS = [
    "What does Tom Hale pick up at the stadium?",
    "Which object does Chef Maria Lopez inspect in the kitchen?",
    "What is shown on the sign at the train platform?",
    "Who hands over the blue backpack?",
]
VARIANTS = (
    "full",
    "wo_visual",
    "wo_asr",
    "append_only",
    "single_agent",
    "static_memory",
    "refined_super_only",
    "refined_paths_only",
    "direct",
)


def inputs(gop: int, minutes: float = 60) -> tuple[Path, Path, Path]:
    return method_memory(minutes), long_video(minutes, gop=gop), method_subtitles(minutes)


def method_supers(minutes: float = 60) -> int:
    """SuperEvents in ``method_memory(minutes)``: 12 for an hour, fewer for a quick run."""
    return max(2, round(minutes / 5))


def method_memory(minutes: float = 60) -> Path:
    """The synthetic memory of a ``minutes``-long video (written once): SuperEvents of
    5 minutes, each of MacroEvents of 30 s (12 x 10 for an hour; at least 2 x 1)."""
    memory_dir = cache_dir("method", f"memory_{minutes:g}min")
    if not (memory_dir / "manifest.json").exists():
        memory = synthetic_memory(
            duration_s=minutes * 60,
            supers=method_supers(minutes),
            macros_per_super=max(1, round(minutes / 6)),
            fingerprint=None,
        )
        save_memory(memory, memory_dir)
    return memory_dir


def method_subtitles(minutes: float = 60) -> Path:
    """``hour_subtitles`` for a ``minutes``-long video, in the cache (written once)."""
    name = "hour.srt" if minutes == 60 else f"subtitles_{minutes:g}min.srt"
    path = cache_dir("method", name)
    path.parent.mkdir(parents=True, exist_ok=True)
    return hour_subtitles(path, round(minutes * 60))


def hour_subtitles(path: Path, seconds: int = 3600) -> Path:
    """An hour (``seconds``) of subtitles at ``path`` (written once): a short line every 8 s."""
    if not path.exists():
        blocks = []
        for n, start in enumerate(range(0, seconds, 8), 1):
            blocks.append(
                f"{n}\n{_srt_time(start)} --> {_srt_time(start + 3)}\n"
                f"Line {n}: someone talks about the oven.\n"
            )
        path.write_text("\n".join(blocks), encoding="utf-8")
    return path


class PhaseTimer:
    """Wall time spent inside chosen functions, on any thread (frames decode off the loop)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def wrap(self, owner: object, name: str, label: str) -> None:
        original = getattr(owner, name)
        timer = self

        if asyncio.iscoroutinefunction(original):

            @functools.wraps(original)
            async def timed_async(*args, **kwargs):
                started = time.perf_counter()
                try:
                    return await original(*args, **kwargs)
                finally:
                    timer.add(label, time.perf_counter() - started)

            setattr(owner, name, timed_async)
            return

        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.add(label, time.perf_counter() - started)

        setattr(owner, name, timed)

    def add(self, label: str, seconds: float) -> None:
        with self._lock:
            self.seconds[label] += seconds


def install_timers() -> PhaseTimer:
    from videotapestry.agents import focus, overview
    from videotapestry.embeddings import SentenceTransformerEmbedder
    from videotapestry.llm.service import ModelSession
    from videotapestry.memory import MemoryLocator
    from videotapestry.prompts import PromptRegistry

    timer = PhaseTimer()
    from videotapestry.video import frame_workers

    # An observation's frames are sampled, decoded and encoded by ``render_frames``, which
    # looks these up in its own module (in-process; decode workers are not timed here).
    timer.wrap(frame_workers, "decode_indices", "decode frames (all observations)")
    timer.wrap(frame_workers, "overview_images", "grids + JPEG (Overview)")
    timer.wrap(frame_workers, "frame_images", "resize + label + JPEG (Skim/Focus)")
    timer.wrap(focus, "select_focus_evidence", "PACE-Mem selection (Focus)")
    timer.wrap(overview, "question_anchors", "anchor extraction (regex fallback)")
    timer.wrap(MemoryLocator, "locate", "multi-anchor locator")
    timer.wrap(SentenceTransformerEmbedder, "embed", "query embedding")
    timer.wrap(PromptRegistry, "render", "prompt rendering")
    timer.wrap(ModelSession, "complete_json", "model calls (HTTP, JSON, cache, trace)")
    return timer


def _srt_time(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d},000"


def make_vt(
    server: FakeOpenAIServer, embedder, variant: str = "full", *extra: str, prefetch: bool = True
) -> VideoTapestry:
    return VideoTapestry(
        overrides=[
            f"models.default.base_url={server.base_url}",
            "models.default.harness_headers=true",
            "cache.enabled=false",
            "asr.source=subtitles",
            f"variant={variant}",
            *extra,
            f"agents.prefetch_frames={str(prefetch).lower()}",
        ],
        embedder=embedder,
    )


def proxy_memory(memory_dir: Path, video: Path) -> Path:
    """A copy of the bench memory whose directory also holds ``video``'s frame proxy
    (written once by bench_frame_proxy.py's helper, linked here)."""
    from bench_frame_proxy import ensure_proxy

    from videotapestry.video import PROXY_FILE, PROXY_MANIFEST

    proxies, _ = ensure_proxy(video)
    target = memory_dir.with_name(f"{memory_dir.name}_proxy_{video.stem}")
    if not (target / "manifest.json").exists():
        shutil.copytree(memory_dir, target, dirs_exist_ok=True)
    for name in (PROXY_FILE, PROXY_MANIFEST):
        (target / name).unlink(missing_ok=True)
        (target / name).symlink_to(proxies / name)
    return target


#: Section 4's overrides: no decoded frames and no rendered observations kept (a render
#: cache hit would skip the decoding the section measures).
NO_CACHES = ("video.frame_cache_mb=0", "video.render_cache_mb=0")


def compare_proxy(args, embedder, memory_dir: Path, video: Path, subs: Path) -> None:
    """4. Per question, the original against the frame proxy, alternating in one process,
    with the frame and render caches off so that every question decodes its frames."""
    with_proxy = proxy_memory(memory_dir, video)
    decode = "decode frames (all observations)"
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        vts = {
            "original": make_vt(server, embedder, "full", *NO_CACHES),
            "proxy": make_vt(server, embedder, "full", *NO_CACHES),
        }
        memories = {"original": memory_dir, "proxy": with_proxy}

        async def run():
            for label, vt in vts.items():  # warm: embedder, memory, packed clips
                await ask(vt, video, memories[label], subs, QUESTIONS[0])
            timer = install_timers()
            figures = {label: ([], []) for label in vts}
            answers = {label: [] for label in vts}
            for index in range(args.questions):
                question = QUESTIONS[(index + 1) % len(QUESTIONS)]
                for label, vt in vts.items():
                    before = timer.seconds.get(decode, 0.0)
                    started = time.perf_counter()
                    result = await ask(vt, video, memories[label], subs, question)
                    figures[label][0].append(time.perf_counter() - started)
                    figures[label][1].append(timer.seconds.get(decode, 0.0) - before)
                    notes = {e.name for e in result.trace.events if e.kind == "note"}
                    assert ("frame_proxy" in notes) == (label == "proxy"), notes
                    answers[label].append((result.answer, result.usage.images))
            for vt in vts.values():
                await vt.aclose()
            return figures, answers

        figures, answers = asyncio.run(run())
    print(f"4. frame proxy vs original, {args.questions} questions each, alternating, frame "
          "and render caches off (decoding = all observations' decode_indices)")  # fmt: skip
    for label, (walls, decodes) in figures.items():
        print(f"   {label:<9} wall {statistics.mean(walls):6.2f} s/question, decoding "
              f"{statistics.mean(decodes):6.2f} s/question")  # fmt: skip
    ratio = statistics.mean(figures["original"][1]) / statistics.mean(figures["proxy"][1])
    walls = statistics.mean(figures["original"][0]) / statistics.mean(figures["proxy"][0])
    print(f"   decoding {ratio:.1f}x faster with the proxy, question wall {walls:.2f}x; "
          f"same answers and image counts: {answers['original'] == answers['proxy']}")  # fmt: skip


def critical_path_calls(result) -> int:
    """The longest chain of the result's model calls in which each starts after the one
    before it ended (calls in flight together count once): the calls a question must wait
    for one after another, so (this count) x (latency per call) bounds its wall time."""
    spans = sorted(
        (e.started_at + e.duration_s, e.started_at)
        for e in result.trace.events
        if e.kind == "model_call"
    )
    chain, last_end = 0, float("-inf")
    for end, start in spans:  # earliest end first: the longest chain of disjoint intervals
        if start >= last_end - 1e-3:
            chain, last_end = chain + 1, end
    return chain


def prefetch_figures(result) -> tuple[int, int, int]:
    """(planned, decoded, used) frames of the result's prefetches, summed over levels."""
    notes = [e.output for e in result.trace.events if e.name == "frames_prefetched"]
    return tuple(sum(n[key] for n in notes) for key in ("planned", "decoded", "used"))  # type: ignore[return-value]


async def ask(vt: VideoTapestry, video: Path, memory: Path, subs: Path, question: str):
    return await vt.aanswer(video, memory, question, OPTIONS, subtitle_path=subs)


def latency_run(
    embedder, video: Path, memory_dir: Path, subs: Path, *, prefetch: bool, latency: float = 1.0
):
    """Two questions at ``latency`` (1.0) s per call, the process warm (a zero-latency
    question first loads the memory): the first on a cold frame cache, the second on what the
    first decoded. Yields (cache state, wall seconds, result, frame-cache hits of that
    question)."""
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        vt = make_vt(server, embedder, prefetch=prefetch)

        async def run() -> list[tuple[str, float, object, int]]:
            rows = []
            try:
                await ask(vt, video, memory_dir, subs, QUESTIONS[0])  # warm: memory loaded
                vt.frames = FrameCache(vt.config.video.frame_cache_mb * 2**20)
                vt.renders = RenderCache(vt.config.video.render_cache_mb * 2**20)
                server.latency_s = latency
                for cache_state, question in (("cold", QUESTIONS[1]), ("cached", QUESTIONS[2])):
                    server.reset()
                    server.on(None, ScriptedModel())
                    hits = vt.frames.stats.hits
                    started = time.perf_counter()
                    result = await ask(vt, video, memory_dir, subs, question)
                    wall = time.perf_counter() - started
                    rows.append((cache_state, wall, result, vt.frames.stats.hits - hits))
            finally:
                await vt.aclose()
            return rows

        yield from asyncio.run(run())


#: The decoding settings section 5 compares: (label, overrides).
DECODING = (
    ("frame_reuse=0 (exact frames), threads", ("video.frame_reuse=0",)),
    (
        "  the same, unreferenced frames decoded",
        ("video.frame_reuse=0", "video.skip_unreferenced=false"),
    ),
    ("  the same, no render cache", ("video.frame_reuse=0", "video.render_cache_mb=0")),
    ("frame_reuse=0.25, threads", ("video.frame_reuse=0.25",)),
    ("frame_reuse=0.25, decode_workers=2", ("video.frame_reuse=0.25", "video.decode_workers=2")),
)
#: The row of section 5 that reads the memory directory holding the video's frame proxy.
PROXY_ROW = ("frame proxy (builder.frame_proxy), threads", ("video.frame_reuse=0",))


def decoding_overheads(
    server: FakeOpenAIServer, embedder, video: Path, memory: Path, subs: Path, further: int
) -> list[tuple[str, float, float, int]]:
    """(label, first-question overhead, mean further-question overhead, frames decoded) per
    setting of ``DECODING``; overhead is wall time less the fake server's HTTP time."""
    rows = []
    settings = [(label, overrides, memory) for label, overrides in DECODING]
    settings.append((*PROXY_ROW, proxy_memory(memory, video)))
    for label, overrides, folder in settings:
        vt = make_vt(server, embedder, "full", *overrides)

        async def run(vt: VideoTapestry = vt, memory: Path = folder) -> tuple[float, list[float]]:
            try:
                await ask(vt, video, memory, subs, QUESTIONS[-1])  # loads the memory
                vt.frames = FrameCache(vt.config.video.frame_cache_mb * 2**20)
                vt.renders = RenderCache(vt.config.video.render_cache_mb * 2**20)
                if vt.frame_workers is not None:
                    vt.frame_workers.close()  # their frame caches go with them
                overheads = []
                for index in range(1 + further):
                    started = time.perf_counter()
                    result = await ask(vt, video, memory, subs, QUESTIONS[index % 3])
                    overheads.append(time.perf_counter() - started - result.usage.latency_s)
                return overheads[0], overheads[1:]
            finally:
                await vt.aclose()

        first, rest = asyncio.run(run())
        rows.append((label, first, statistics.mean(rest), vt.frames.stats.misses))
    return rows


def print_decoding(rows: list[tuple[str, float, float, int]], further: int) -> None:
    print(f"5. decoding shared (overhead = wall less HTTP; {further} further questions; "
          "decode_workers keep their own caches, so in-process misses show 0)")  # fmt: skip
    base_first, base_rest = rows[0][1], rows[0][2]
    for label, first, rest, misses in rows:
        print(f"   {label:<40} first question on the video {first:.2f} s "
              f"({first / base_first:.2f}x), a further one {rest:.2f} s "
              f"({rest / base_rest:.2f}x); frame cache misses {misses}")  # fmt: skip
    print("   goals: first <= 0.75 s, further <= 0.4 s")


def decoding(args, embedder, memory_dir: Path, video: Path, subs: Path) -> None:
    """5. Decoding shared: each setting's first and further questions, zero latency."""
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        print_decoding(
            decoding_overheads(server, embedder, video, memory_dir, subs, args.questions),
            args.questions,
        )


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument(
        "--gop",
        type=int,
        default=250,
        help="keyframe interval of the 60-minute video in frames (250 = 10 s, the worst case)",
    )
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="also compare per-question decoding with the frame proxy (builder.frame_proxy)",
    )
    parser.add_argument(
        "--proxy-only", action="store_true", help="only the frame proxy comparison (section 4)"
    )
    parser.add_argument(
        "--critical-proxy",
        action="store_true",
        help="section 2 also reads the memory directory holding the frame proxy",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="latency runs per prefetch setting (alternated)"
    )
    parser.add_argument(
        "--skip-overhead", action="store_true", help="skip part 1 (zero-latency overhead)"
    )
    parser.add_argument(
        "--skip-variants", action="store_true", help="skip part 3 (per-variant usage)"
    )
    parser.add_argument(
        "--only-decoding", action="store_true", help="section 5 only (after a warm-up question)"
    )
    parser.add_argument("--decoding", action="store_true", help="also section 5, after the others")
    parser.add_argument(
        "--minutes", type=float, default=60.0, help="the video's and the memory's length"
    )
    parser.add_argument(
        "--latency", type=float, default=1.0, help="seconds per model call in section 2"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    memory_dir, video, subs = inputs(args.gop, args.minutes)
    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )
    if args.proxy_only:
        compare_proxy(args, embedder, memory_dir, video, subs)
        return
    if args.only_decoding:
        decoding(args, embedder, memory_dir, video, subs)
        return

    if not args.skip_overhead:
        with FakeOpenAIServer() as server:
            server.on(None, ScriptedModel())
            vt = make_vt(server, embedder)

            async def overhead() -> tuple[float, list[float], list, dict[str, float]]:
                started = time.perf_counter()
                first = await ask(vt, video, memory_dir, subs, QUESTIONS[0])
                first_s = time.perf_counter() - started
                walls, results = [], [first]
                timer = install_timers()
                for index in range(args.questions):
                    question = QUESTIONS[(index + 1) % len(QUESTIONS)]
                    started = time.perf_counter()
                    results.append(await ask(vt, video, memory_dir, subs, question))
                    walls.append(time.perf_counter() - started)
                await vt.aclose()
                return first_s, walls, results, dict(timer.seconds)

            first_s, walls, results, phases = asyncio.run(overhead())
            model_s = statistics.mean(r.usage.latency_s for r in results[1:])
            print(f"1. framework overhead per question (zero-latency fake server), {video.name}")
            print(f"   first question (loads the embedder, memory, embeddings, packs clips): "
                  f"{first_s:.2f} s")  # fmt: skip
            print(f"   steady state: mean {statistics.mean(walls):.2f} s, median "
                  f"{statistics.median(walls):.2f} s over {len(walls)} questions; HTTP round trips "
                  f"to the fake server {model_s:.2f} s of it")  # fmt: skip
            print(f"   overhead excluding model time: {statistics.mean(walls) - model_s:.2f} s "
                  "(goal <= 1.5 s)")  # fmt: skip
            print("   where the time goes (seconds per question; model calls include their prompt")
            print("   encoding, HTTP, parsing and bookkeeping):")
            for label, seconds in sorted(phases.items(), key=lambda kv: -kv[1]):
                print(f"     {seconds / len(walls):6.3f} s  {label}")

    print(f"2. with {args.latency} s latency per call, {video.name} (load from other processes "
          "inflates")  # fmt: skip
    print("   the CPU parts; compare the rows of this run with each other)")
    print(f"   {'prefetch':<9}{'frames':<8}{'calls':>6}{'critical':>9}{'wall s':>8}{'ratio':>7}"
          f"{'cache hits':>11}  prefetched planned/decoded/used")  # fmt: skip
    # (label, prefetch, memory directory): the original video, then its frame proxy.
    settings = [("off", False, memory_dir), ("on", True, memory_dir)]
    if args.proxy or args.critical_proxy:
        settings.append(("on+proxy", True, proxy_memory(memory_dir, video)))
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _ in range(args.repeats):
        for label, prefetch, memory in settings:
            for cache_state, wall, result, hits in latency_run(
                embedder, video, memory, subs, prefetch=prefetch, latency=args.latency
            ):
                critical = critical_path_calls(result)
                ratio = wall / (critical * args.latency)
                ratios[(label, cache_state)].append(ratio)
                planned, decoded, used = prefetch_figures(result)
                print(f"   {label:<9}{cache_state:<8}{result.usage.calls:>6}"
                      f"{critical:>9}{wall:>8.2f}{ratio:>7.3f}{hits:>11}  "
                      f"{planned}/{decoded}/{used}")  # fmt: skip
    for (label, cache_state), values in ratios.items():
        print(f"   mean ratio, prefetch {label}, {cache_state} frames: "
              f"{statistics.mean(values):.3f} over {len(values)} (goal <= 1.08)")  # fmt: skip

    if not args.skip_variants:
        with FakeOpenAIServer() as server:
            server.on(None, ScriptedModel())
            print("3. per question, by variant")
            print(f"   {'variant':<20}{'calls':>6}{'critical':>9}{'images':>8}{'prompt tok':>12}"
                  f"{'compl tok':>11}{'memory tok':>12}  levels")  # fmt: skip
            explored = None
            for variant in VARIANTS:
                vt = make_vt(server, embedder, variant)

                async def one(vt: VideoTapestry = vt, variant: str = variant, full=explored):
                    try:
                        if variant.startswith("refined_") and full is not None:
                            return await vt.areanswer(full, variant)
                        return await ask(vt, video, memory_dir, subs, QUESTIONS[2])
                    finally:
                        await vt.aclose()

                r = asyncio.run(one())
                if variant == "full":
                    explored = r
                u = r.usage
                print(f"   {variant:<20}{u.calls:>6}{critical_path_calls(r):>9}{u.images:>8}"
                      f"{u.prompt_tokens:>12}"
                      f"{u.completion_tokens:>11}{r.memory_tokens:>12}  "
                      f"{'/'.join(r.levels_visited) or '-'}"
                      f"{REANSWERED if r.reassembled_from else ''}")  # fmt: skip
    if args.proxy:
        compare_proxy(args, embedder, memory_dir, video, subs)
    if args.decoding:
        decoding(args, embedder, memory_dir, video, subs)


if __name__ == "__main__":
    main()
