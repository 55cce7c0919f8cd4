"""Throughput of the eval runner (not a test; prints figures).

100 questions over 10 synthetic 60-minute memories (12 SuperEvents x 10 MacroEvents, 2,520
subgraph nodes each, embedded once and cached in bench/.cache/eval/), each video the
60-minute 640x360 H.264 benchmark video (one file under ten names), an hour of subtitles so
the ASR path runs, and the scripted model on the fake OpenAI-compatible server with 1 s of
injected latency per call. The server runs in its own process so that its JSON work does
not share the runner's interpreter lock. The runner answers with ``--concurrency 16``.

Figures:
- wall time of ``EvalRunner.run`` (memory loading included; the embedder is loaded first);
- the ideal: sum over questions of their critical-path calls x 1 s / 16. A question's
  critical-path calls are the longest chain of its model calls in which each call starts
  after the one before it ended, read from the call intervals in its saved trace (calls
  made together, like an observation's visual and ASR halves, overlap and count once; the
  greedy earliest-end choice finds the longest such chain). With every question of the same
  length the packing cannot be perfect: ceil(100 / 16) = 7 waves of questions, so even a
  free runner is 7 / 6.25 = 1.12x the ideal; that bound is printed too;
- the ratio (goal <= 1.2x), the peak RSS of the process (and how much the run added), the
  CPU time the run used, and how long the event loop was blocked (lag of a 50 ms ticker).
  With ``video.decode_workers`` the workers' RSS is sampled by the ticker and added (the
  process's own peak is printed too). Their CPU time is not counted: forkserver workers are
  the fork server's children, not this process's, so the CPU figure is this process's own.

``--compare KEY=VALUE`` runs the eval again with that override added (repeatable), against
the same fake server in the same process, and prints the figures side by side as ratios.

    PYTHONPATH=. python bench/bench_eval.py [--questions 100] [--videos 10] [--concurrency 16]
        [--video benchmark --compare video.decode_workers=2] [--stalls] [--minutes 60] [--smoke]

``--minutes`` changes the videos' and memories' length (60), for a quick run.

``--stalls`` also prints where the event loop's thread was while the loop was late (stack
samples every 5 ms), to find work that blocks it, and the samples of the three longest late
stretches apart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import multiprocessing
import os
import resource
import shutil
import statistics
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

from bench_method import hour_subtitles, method_supers
from bench_video_sampling import long_video
from benchkit import cache_dir, smoke

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = (
    "--minutes", "1", "--questions", "2", "--videos", "1", "--concurrency", "2",
    "--latency", "0.05", "--stalls", "--compare", "video.frame_reuse=0",
)  # fmt: skip
SMOKE_FIGURES: tuple[str, ...] = (
    r"^== base: ",
    r"^\d+ questions over \d+ \S+-minute memories \(light video\), concurrency \d+, ",
    r"^  answered \d+, right \d+, failed \d+, degraded \d+",
    r"^  model calls per question: mean .*; critical path: mean ",
    r"^  wall .* s; ideal .* \(sum of critical-path calls x ",
    r"^  packing bound with equal questions: ",
    r"^  CPU time of the run ",
    r"^  event loop lag \(50 ms ticker\): p50 ",
    r"^  garbage collector: gen 0 ",
    r"^  its full passes \(gen 2\) at: ",
    r"^  objects in reference cycles at the end of the run: ",
    r"^  peak RSS .* \(before the run ",
    r"^  peak RSS with the frame workers \(sampled every tick\) ",
    r"^  loop stalls: \d+ samples of 5 ms",
    r"^  innermost frames:",
    r"^  stacks:",
    r"^== video\.frame_reuse=0: ",
    r"^fake server requests, all runs: \d+",
    r"^side by side \(ratio to base, same process, same server\):",
    r"^  video\.frame_reuse=0 +wall/ideal ",
)
TITLES = [
    "The lighthouse keeper", "A bakery at dawn", "Harbour of lanterns", "The glass orchard",
    "Night train to Lund", "The copper mine", "Winter at the observatory", "A tailor's ledger",
    "The river ferry", "Salt and saffron",
]  # fmt: skip


def serve(latency: float, ready, stop) -> None:
    """The fake server with the scripted model, in its own process until ``stop`` is set."""
    from videotapestry.testing import FakeOpenAIServer
    from videotapestry.testing.scripted import ScriptedModel

    with FakeOpenAIServer(latency_s=latency) as server:
        server.on(None, ScriptedModel())
        ready.put(server.base_url)
        stop.wait()
        ready.put(len(server.requests))


def light_video(minutes: float = 60) -> Path:
    """60 minutes at 2 fps and 320x180, a keyframe every 5 s: the method's full path
    (frames, grids, JPEGs, images in requests) at a small fraction of the decoding cost."""
    from videotapestry.testing.media import make_h264_video
    from videotapestry.video import probe

    path = cache_dir("eval", f"light_{minutes:g}min_320x180_2fps.mp4")
    try:
        probe(path)
    except Exception:
        print(f"generating {path.name} (one-off, cached) ...", flush=True)
        make_h264_video(path, minutes * 60, fps=2.0, size=(320, 180), gop_frames=10)
    return path


def inputs(
    videos: int, questions: int, source: str, gop: int, minutes: float = 60
) -> tuple[Path, Path, Path, Path]:
    """(annotations, videos dir, memories dir, subtitles dir), made once and cached; the
    videos and memories ``minutes`` long."""
    from videotapestry.config import EmbeddingConfig
    from videotapestry.embeddings import SentenceTransformerEmbedder
    from videotapestry.memory import ensure_embeddings, is_native_memory, save_memory
    from videotapestry.testing.memories import synthetic_memory
    from videotapestry.video import fingerprint

    cache = cache_dir("eval")
    cache.mkdir(parents=True, exist_ok=True)
    video = light_video(minutes) if source == "light" else long_video(minutes, gop=gop)
    length = "" if minutes == 60 else f"_{minutes:g}min"  # the names of the 60-minute runs
    video_dir = cache / f"videos_{source}{length}"
    memory_dir, subtitle_dir = cache / f"memories_{source}{length}", cache / f"subs{length}"
    for folder in (video_dir, memory_dir, subtitle_dir):
        folder.mkdir(parents=True, exist_ok=True)
    embedder = None
    print_ = fingerprint(video)
    for n in range(videos):
        link = video_dir / f"v{n}.mp4"
        if not link.exists():
            link.symlink_to(video)
        target = memory_dir / f"v{n}"
        if (
            is_native_memory(target)
            and json.loads((target / "manifest.json").read_text()).get("video_fingerprint")
            == print_
        ):
            continue
        shutil.rmtree(target, ignore_errors=True)
        embedder = embedder or SentenceTransformerEmbedder(
            EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
        )
        memory = synthetic_memory(
            duration_s=minutes * 60,
            supers=method_supers(minutes),
            macros_per_super=max(1, round(minutes / 6)),
            seed=n,
            fingerprint=print_,
            title=TITLES[n % len(TITLES)],
        )
        print(f"embedding memory v{n} (one-off, cached) ...", flush=True)
        save_memory(ensure_embeddings(memory, embedder), target)
    hour_subtitles(subtitle_dir / "hour.srt", round(minutes * 60))
    annotations = cache / f"questions_{questions}x{videos}.jsonl"
    with annotations.open("w", encoding="utf-8") as handle:
        for n in range(questions):
            v = n % videos
            others = [t for t in TITLES if t != TITLES[v]][v % 7 : v % 7 + 3]
            options = [TITLES[v], *others]
            shift = n % 4  # the right title at each letter in turn
            options = options[shift:] + options[:shift]
            row = {
                "id": f"q{n:03d}",
                "video": f"v{v}.mp4",
                "question": f"Which title does this video carry (question {n})?",
                "options": options,
                "answer": "ABCD"[options.index(TITLES[v])],
                "subtitles": "hour.srt",
            }
            handle.write(json.dumps(row) + "\n")
    return annotations, video_dir, memory_dir, subtitle_dir


def critical_path_calls(trace: dict) -> int:
    """The longest chain of model calls each starting after the previous one ended."""
    spans = sorted(
        (e["started_at"] + e["duration_s"], e["started_at"])
        for e in trace["events"]
        if e["kind"] == "model_call"
    )
    chain, last_end = 0, -math.inf
    for end, start in spans:
        if start >= last_end:
            chain, last_end = chain + 1, end
    return chain


def peak_rss_mb() -> float:
    """The process's high-water RSS (VmHWM), which ``clear_peak`` can reset."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def clear_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


class GcPauses:
    """Time spent in the cyclic garbage collector, by generation (it stops every thread)."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.full: list[tuple[float, float]] = []  # (seconds since start, pause) of gen 2
        self._started = 0.0
        self._origin = time.perf_counter()

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            pause = time.perf_counter() - self._started
            self.pauses[info["generation"]].append(pause)
            if info["generation"] == 2:
                self.full.append((self._started - self._origin, pause))

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def rss_mb(pid: int | str = "self") -> float:
    """A process's current RSS (VmRSS), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class LoopLag:
    """A 50 ms ticker: how late it wakes is how long the loop was busy with other work.
    Every tick also samples the RSS of the process plus its frame workers (``workers``)."""

    def __init__(self, workers=None) -> None:
        self.lags: list[float] = []
        self.worst: list[tuple[float, float]] = []  # (lag, seconds since start)
        self._task: asyncio.Task | None = None
        self._workers = workers
        self.peak_total_mb = 0.0
        self.peak_workers_mb = 0.0

    async def _tick(self) -> None:
        origin = time.perf_counter()
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.05)
            lag = time.perf_counter() - started - 0.05
            self.lags.append(lag)
            self.worst = sorted([*self.worst, (lag, started - origin)], reverse=True)[:3]
            workers = sum(rss_mb(pid) for pid in self._workers.pids()) if self._workers else 0.0
            self.peak_workers_mb = max(self.peak_workers_mb, workers)
            self.peak_total_mb = max(self.peak_total_mb, rss_mb() + workers)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._tick())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class StallSampler:
    """Where the event loop's thread is while the loop is late (``--stalls``).

    A 10 ms ticker on the loop stamps the time; a watchdog thread samples the loop thread's
    stack every 5 ms while the last stamp is over 30 ms old. A stack blocked in the
    interpreter lock shows the line that waits for it, so the samples name both the loop's
    own slow callbacks and the places where it queued behind other threads."""

    def __init__(self) -> None:
        self.samples: Counter[tuple[str, ...]] = Counter()
        self.innermost: Counter[str] = Counter()
        # one late stretch of the loop: (its length, seconds since start, its stack samples)
        self.episodes: list[tuple[float, float, Counter[tuple[str, ...]]]] = []
        self._origin = self._stamp = time.perf_counter()
        self._done = threading.Event()
        self._loop_thread = threading.get_ident()
        self._task: asyncio.Task | None = None
        self._watch = threading.Thread(target=self._watchdog, daemon=True)

    async def _tick(self) -> None:
        while True:
            self._stamp = time.perf_counter()
            await asyncio.sleep(0.01)

    def _watchdog(self) -> None:
        late_since, episode = None, Counter()
        while not self._done.wait(0.005):
            now = time.perf_counter()
            if now - self._stamp < 0.03:
                if late_since is not None:
                    self.episodes.append((now - late_since, late_since - self._origin, episode))
                    self.episodes = sorted(self.episodes, key=lambda e: -e[0])[:3]
                    late_since, episode = None, Counter()
                continue
            late_since = self._stamp if late_since is None else late_since
            frame = sys._current_frames().get(self._loop_thread)
            if frame is None:
                continue
            stack = [
                f
                for f in traceback.extract_stack(frame)
                if "asyncio" not in f.filename and "selectors" not in f.filename
            ]
            ours = [f for f in stack[:-3] if "videotapestry" in f.filename][-3:]
            names = tuple(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in ours)
            inner = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in stack[-3:]]
            names = (*names, "..", *inner)
            self.samples[names] += 1
            self.innermost[names[-1]] += 1
            episode[names] += 1

    def start(self) -> None:
        self._loop_thread = threading.get_ident()
        self._task = asyncio.ensure_future(self._tick())
        self._watch.start()

    def stop(self) -> None:
        self._done.set()
        if self._task is not None:
            self._task.cancel()

    def report(self, top: int = 12) -> None:
        total = sum(self.samples.values())
        print(f"  loop stalls: {total} samples of 5 ms with the loop over 30 ms late")
        print("  innermost frames:")
        for name, n in self.innermost.most_common(top):
            print(f"    {n:5d} {name}")
        print("  stacks:")
        for names, n in self.samples.most_common(top):
            print(f"    {n:5d} " + " <- ".join(reversed(names)))
        for length, at, episode in self.episodes:
            print(f"  a late stretch of {1000 * length:.0f} ms at {at:.1f} s, its stacks:")
            for names, n in episode.most_common(4):
                print(f"    {n:5d} " + " <- ".join(reversed(names)))


def eval_overrides(base_url: str) -> list[str]:
    """The config of every benchmarked eval run: the fake server, no cache, subtitles for
    speech, the packaged embedder, and room for every question's calls at once."""
    return [
        f"models.default.base_url={base_url}",
        "models.default.harness_headers=true",
        "models.default.timeout_s=60",
        "models.max_concurrency_per_endpoint=64",
        "cache.enabled=false",
        "asr.source=subtitles",
        "embedding.model=packaged:all-MiniLM-L6-v2",
        "embedding.query_prompt_name=null",
    ]


async def run_eval(
    args, overrides, base_url: str, annotations: Path, videos: Path, memories: Path, subs
):
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.datasets import load_benchmark
    from videotapestry.eval.run_writer import RunDirectory, new_run_info
    from videotapestry.eval.runner import EvalRunner, Inputs, RunnerOptions

    vt = VideoTapestry(
        overrides=[
            *eval_overrides(base_url),
            *overrides,
        ]
    )
    vt.embedder.embed(["warm up"], query=True)  # the model load is not the runner's
    questions = load_benchmark("jsonl", annotations)
    run = cache_dir("eval", "run")
    shutil.rmtree(run, ignore_errors=True)
    info = new_run_info(
        benchmark="jsonl",
        annotations=annotations,
        variants=["full"],
        config=vt.config,
        prompts=vt.prompts,
        no_video=videos is None,
    )
    run_dir = RunDirectory.open(run, info)
    runner = EvalRunner(
        vt,
        run_dir,
        Inputs(videos=videos, memories=memories, subtitles=subs),
        RunnerOptions(concurrency=args.concurrency, freeze_loaded_objects=True),
    )
    lag = LoopLag(vt.frame_workers)
    stalls = StallSampler() if args.stalls else None
    clear_peak()
    before_mb = peak_rss_mb()
    cpu_before = time.process_time()
    lag.start()
    if stalls is not None:
        stalls.start()
    started = time.perf_counter()
    with GcPauses() as pauses:
        outcome = await runner.run(questions)
    wall = time.perf_counter() - started
    full_passes = pauses.full
    # What the run left in reference cycles (frozen with the memories or not; the runner
    # unfreezes at its end): the bound on what freezing could have kept alive.
    left_in_cycles = gc.collect()
    lag.stop()
    if stalls is not None:
        stalls.stop()
        stalls.report()
    cpu = time.process_time() - cpu_before
    peak_mb = peak_rss_mb()
    await vt.aclose()
    run_dir.close()
    gc_figures = (pauses.pauses, full_passes, left_in_cycles)
    return outcome, wall, cpu, before_mb, peak_mb, lag, gc_figures, run


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--videos", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument(
        "--video",
        choices=("none", "light", "benchmark"),
        default="light",
        help="none: answer from the memories alone (eval --no-video: no frame or speech work, "
        "so the runner's own overhead shows); light: 60 min at 2 fps, 320x180; benchmark: the "
        "60-minute 640x360 25 fps H.264 video of bench_method",
    )
    parser.add_argument("--gop", type=int, default=100, help="keyframe interval (benchmark video)")
    parser.add_argument(
        "--stalls",
        action="store_true",
        help="sample the event loop thread's stack while the loop is late, and print where",
    )
    parser.add_argument(
        "--minutes", type=float, default=60.0, help="the videos' and memories' length"
    )
    parser.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run again with these overrides (space-separated) added, and print the runs "
        "side by side",
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    source = "light" if args.video == "none" else args.video
    annotations, videos, memories, subs = inputs(
        args.videos, args.questions, source, args.gop, args.minutes
    )
    if args.video == "none":
        videos = None

    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(args.latency, ready, stop), daemon=True)
    server.start()
    base_url = ready.get(timeout=120)
    settings = [("base", list(args.override))]
    settings += [(extra, [*args.override, *extra.split()]) for extra in args.compare]
    summary = []
    try:
        for label, overrides in settings:
            print(f"== {label}: {' '.join(overrides) or 'default config'}", flush=True)
            figures = asyncio.run(
                run_eval(args, overrides, base_url, annotations, videos, memories, subs)
            )
            summary.append((label, report(args, *figures)))
    finally:
        stop.set()
        requests = ready.get(timeout=30)
        server.join(timeout=10)
    print(f"fake server requests, all runs: {requests}")
    if len(summary) > 1:
        base = summary[0][1]
        print("side by side (ratio to base, same process, same server):")
        for label, row in summary:
            print(f"  {label:<32} wall/ideal {row['ratio']:.3f} "
                  f"({row['ratio'] / base['ratio']:.2f}x), "
                  f"max loop lag {row['lag_ms']:.0f} ms ({row['lag_ms'] / base['lag_ms']:.2f}x), "
                  f"CPU per question (this process) {row['cpu_q']:.2f} s, peak RSS with workers "
                  f"{row['rss_mb']:.0f} MB ({row['rss_mb'] / base['rss_mb']:.2f}x)")  # fmt: skip


def report(args, outcome, wall, cpu, before_mb, peak_mb, lag, pauses, run) -> dict[str, float]:
    """Print one run's figures; return the ones compared side by side."""
    records = list(outcome.records.values())
    answered = [r for r in records if r.status == "answered"]
    paths = [critical_path_calls(json.loads((run / r.trace).read_text())) for r in answered]
    calls = [r.usage.calls for r in answered]
    ideal = sum(paths) * args.latency / args.concurrency
    waves = math.ceil(len(answered) / args.concurrency)
    bound = waves * max(paths, default=0) * args.latency
    print(f"{len(records)} questions over {args.videos} {args.minutes:g}-minute memories "
          f"({args.video} video), concurrency {args.concurrency}, {args.latency:g} s per "
          "call")  # fmt: skip
    print(f"  answered {len(answered)}, right {sum(bool(r.correct) for r in answered)}, "
          f"failed {len(outcome.failed)}, degraded {len(outcome.degraded)}")  # fmt: skip
    print(f"  model calls per question: mean {statistics.mean(calls):.1f}; critical path: "
          f"mean {statistics.mean(paths):.2f}, "
          f"min {min(paths)}, max {max(paths)}")  # fmt: skip
    print(
        f"  wall {wall:.1f} s; ideal {ideal:.1f} s (sum of critical-path calls x "
        f"{args.latency:g} s / {args.concurrency}); ratio {wall / ideal:.3f} (goal <= 1.2)"
    )
    print(f"  packing bound with equal questions: {waves} waves x {max(paths)} calls = "
          f"{bound:.1f} s ({bound / ideal:.3f}x ideal); wall / bound "
          f"{wall / bound:.3f}")  # fmt: skip
    print(f"  CPU time of the run {cpu:.1f} s ({cpu / len(records):.2f} s per question, "
          f"{cpu / wall:.2f} cores busy on average; load average before the run "
          f"{os.getloadavg()[0]:.1f})")  # fmt: skip
    lags = lag.lags
    lags_sorted = sorted(lags)
    print(f"  event loop lag (50 ms ticker): p50 {1000 * statistics.median(lags):.1f} ms, "
          f"p99 {1000 * lags_sorted[int(0.99 * (len(lags) - 1))]:.0f} ms, max "
          f"{1000 * max(lags):.0f} ms, total {sum(lags):.1f} s; worst at "
          + ", ".join(f"{t:.0f} s ({1000 * lagged:.0f} ms)" for lagged, t in lag.worst)
    )  # fmt: skip
    pauses, full_passes, left_in_cycles = pauses
    print("  garbage collector: " + ", ".join(
        f"gen {g} {len(p)}x, {sum(p):.2f} s (max {1000 * max(p, default=0):.0f} ms)"
        for g, p in pauses.items()))  # fmt: skip
    print("  its full passes (gen 2) at: " + ", ".join(
        f"{at:.0f} s ({1000 * pause:.0f} ms)" for at, pause in full_passes))  # fmt: skip
    print(f"  objects in reference cycles at the end of the run: {left_in_cycles}")
    print(f"  peak RSS {peak_mb:.0f} MB (before the run {before_mb:.0f} MB, with the "
          f"embedder loaded; the run added {peak_mb - before_mb:.0f} MB)")  # fmt: skip
    total_mb = max(peak_mb, lag.peak_total_mb)
    print(f"  peak RSS with the frame workers (sampled every tick) {total_mb:.0f} MB; the "
          f"workers together at most {lag.peak_workers_mb:.0f} MB")  # fmt: skip
    return {
        "ratio": wall / ideal,
        "lag_ms": 1000 * max(lags),
        "cpu_q": cpu / len(records),
        "rss_mb": total_mb,
    }


if __name__ == "__main__":
    main()
