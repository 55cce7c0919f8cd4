"""The Ray executor against the local one (not a test; prints figures). Issue 14.

A Ray instance on 127.0.0.1 with 2 CPUs (this machine's), the fake OpenAI-compatible server
with 0.5 s of latency injected into every call, and the real builder / eval runner.

1. Builds: four 10-minute generated videos (320x180, a new scene every 30 s; generated
   once into bench/.cache/), the scripted builder model answering from the prompt text.
   Wall time with the local executor (one video after another in one event loop), and with
   the Ray executor at 1 and 2 videos in flight (``executor.ray.build.parallel``); Ray's
   own cost per task: an empty task's round trip, and what a task pays that the local
   executor pays once (a fresh builder: the embedding model loaded again).
2. Eval: 100 questions over synthetic memories, the local executor against the Ray
   executor (``eval --executor ray``): wall time and peak memory (resident set of the
   driver, plus the Ray processes for Ray, sampled every 0.2 s).

    python bench/bench_ray.py [--part build|eval|both] [--videos 4] [--minutes 10] [--smoke]

``--latency``, ``--eval-videos`` and ``--eval-minutes`` change the call latency (0.5 s) and
the eval's memories (10 of 60 minutes), for a quick run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_builder import cheap_model
from bench_eval import eval_overrides
from benchkit import cache_dir, smoke

from videotapestry.config import Config, load_config
from videotapestry.executors import BuildJob, LocalExecutor
from videotapestry.executors.ray_executor import RayExecutor
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_scenes, make_test_video
from videotapestry.testing.ray_cluster import local_ray_cluster
from videotapestry.testing.scripted_builder import offline_build_overrides

LATENCY_S = 0.5
#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = (
    "--videos", "1", "--minutes", "0.5", "--questions", "2", "--eval-videos", "1",
    "--eval-minutes", "1", "--latency", "0.05",
)  # fmt: skip
SMOKE_FIGURES: tuple[str, ...] = (
    r"^Ray instance: 2 CPUs on 127\.0\.0\.1; machine: ",
    r"^1\. builds: \d+ videos, .* calls per video, ",
    r"^  local executor \(one after another\) +wall ",
    r"^  Ray, 1 video\(s\) in flight +wall ",
    r"^  Ray, 2 video\(s\) in flight +wall ",
    r"^  Ray's own cost per task: empty task round trip ",
    r"^2\. eval: \d+ questions over \d+ synthetic ",
    r"^  local executor +wall .* answered \d+ \(right \d+\), peak memory ",
    r"^  Ray, 2 workers x 4 +wall .* answered \d+ \(right \d+\), peak memory ",
)
KEY = "sk-bench-ray-0123456789abcdef"


# --------------------------------------------------------------------------- memory use


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def _tree(pid: int) -> list[int]:
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in _children(parent)]
        tree += frontier
    return tree


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        return ""


class PeakMemory:
    """Peak of the summed resident set of a driver process and, with ``ray_root``, of every
    Ray process below that one (the eval workers, and apart Ray's own: raylet, GCS, idle
    workers), sampled every ``interval_s``."""

    def __init__(
        self,
        driver: int,
        *,
        ray_root: int | None = None,
        exclude: tuple[int, ...] = (),
        interval_s: float = 0.2,
    ) -> None:
        self.driver = driver
        self.ray_root = ray_root
        self.exclude = {*exclude, driver}
        self.interval_s = interval_s
        self.peak_mb = 0.0
        self.at_peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            parts = {
                "driver": _rss_mb(self.driver),
                "eval workers": 0.0,
                "Ray's own processes": 0.0,
            }
            if self.ray_root is not None:
                for pid in _tree(self.ray_root)[1:]:
                    if pid in self.exclude:
                        continue
                    kind = "eval workers" if "EvalWorker" in _title(pid) else "Ray's own processes"
                    parts[kind] += _rss_mb(pid)
            total = sum(parts.values())
            if total > self.peak_mb:
                self.peak_mb, self.at_peak = total, parts
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------- the server


def _serve(factory: Callable[..., Any], args: tuple, latency_s: float, pipe: Any) -> None:
    with FakeOpenAIServer(latency_s=latency_s) as server:
        server.on(None, factory(*args))
        pipe.send(server.base_url)
        pipe.recv()  # until told to stop
        pipe.send(len(server.requests))


class ServerProcess:
    """The fake server in a process of its own: in the driver's process its handler threads
    would share the driver's interpreter lock with the local executor's builds (and not with
    Ray's workers), which would favour Ray."""

    def __init__(self, factory: Callable[..., Any], *args: Any, latency_s: float) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(factory, args, latency_s, child), daemon=True
        )
        self.base_url = ""
        self.requests = 0
        self.pid = 0

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.pid = self._process.pid or 0
        self.base_url = self._pipe.recv()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pipe.send("stop")
        self.requests = self._pipe.recv()
        self._process.join(timeout=30)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


# --------------------------------------------------------------------------- 1. builds


def bench_videos(count: int, minutes: float) -> list[Path]:
    folder = cache_dir("ray-videos")
    paths = []
    for k in range(count):
        path = folder / f"tour{k}-{minutes:g}min.mp4"
        if not path.is_file():
            make_test_video(path, minutes * 60, fps=4, size=(320, 180), scene_s=30)
        paths.append(path)
    return paths


def build_config(base_url: str, *overrides: str) -> Config:
    return load_config(
        overrides=offline_build_overrides(
            base_url,
            "cache.enabled=false",  # every run makes every call
            "builder.ocr.engine=none",
            "builder.concurrency=8",
            "models.max_concurrency_per_endpoint=16",
            *overrides,
        )
    )


def noop(x: int) -> int:
    return x


def fresh_builder_s(config: Config) -> float:
    """Inside a task: what making the task's own builder costs (service, embedder)."""
    from memory_builders.builder import MemoryBuilder

    started = time.perf_counter()
    builder = MemoryBuilder(config)
    builder.embedder.embed(["load the model"])
    builder.service.close()
    return time.perf_counter() - started


def bench_builds(videos: list[Path], work: Path, latency: float = LATENCY_S) -> None:
    import ray

    scenes = make_scenes(max(_duration_min(v) for v in videos) * 60, 30.0)
    with ServerProcess(cheap_model, scenes, latency_s=latency) as server:
        config = build_config(server.base_url)

        def jobs(tag: str) -> list[BuildJob]:
            return [BuildJob(v, work / tag / v.stem) for v in videos]

        def run(executor: Any, tag: str) -> float:
            outcomes, wall = timed(lambda: executor.build_memories(config, jobs(tag)))
            assert all(o.status == "complete" for o in outcomes), [o.error for o in outcomes]
            return wall

        local = run(LocalExecutor(), "local")
        ray_walls = {}
        for parallel in (1, 2):
            settings = config.executor.ray.model_copy(deep=True)
            settings.build.parallel = parallel
            ray_walls[parallel] = run(RayExecutor(settings), f"ray{parallel}")

        remote_noop = ray.remote(noop)
        ray.get(remote_noop.remote(0))  # a warm worker
        _, noop_s = timed(lambda: [ray.get(remote_noop.remote(k)) for k in range(50)])
        builder_s = ray.get(ray.remote(fresh_builder_s).remote(config))
    calls = server.requests // 3  # three builds of every video

    minutes = sum(_duration_min(v) for v in videos)
    print(
        f"\n1. builds: {len(videos)} videos, {minutes:.0f} video-minutes, {calls // len(videos)} "
        f"calls per video, {latency} s latency per call, builder.concurrency 8"
    )
    print(f"  local executor (one after another)  wall {local:7.1f} s")
    for parallel, wall in ray_walls.items():
        print(
            f"  Ray, {parallel} video(s) in flight          wall {wall:7.1f} s  "
            f"({local / wall:.2f}x local)"
        )
    print(
        f"  Ray's own cost per task: empty task round trip {noop_s / 50 * 1000:.1f} ms; a "
        f"fresh builder in the task (embedding model loaded again) {builder_s:.2f} s; "
        f"(Ray 1 in flight - local) / videos = {(ray_walls[1] - local) / len(videos):+.2f} s"
    )


def _duration_min(path: Path) -> float:
    from videotapestry.video import probe

    return probe(path).duration_s / 60


# --------------------------------------------------------------------------- 2. eval


def scripted_model() -> Any:
    from videotapestry.testing.scripted import ScriptedModel

    return ScriptedModel()


def eval_once(
    base_url: str, data: tuple, ray_address: str | None, concurrency: int, results: Any
) -> None:
    """In a fresh process (the driver): one run into a fresh run directory, on Ray when
    ``ray_address`` is given; puts its figures into ``results``."""
    import asyncio

    os.environ["OPENAI_API_KEY"] = KEY
    ray_workers = 2 if ray_address else None
    if ray_address:
        import ray

        ray.init(address=ray_address, log_to_driver=False)

    from videotapestry.api import VideoTapestry
    from videotapestry.eval.datasets import load_benchmark
    from videotapestry.eval.run_writer import RunDirectory, new_run_info
    from videotapestry.eval.runner import EvalRunner, Inputs, RunnerOptions

    annotations, videos, memories, subtitles, work = data
    vt = VideoTapestry(
        overrides=[
            *eval_overrides(base_url),
            f"executor.ray.eval.workers={ray_workers or 1}",
        ]
    )
    questions = load_benchmark("jsonl", annotations)
    run = work / ("eval-ray" if ray_workers else "eval-local")
    info = new_run_info(
        benchmark="jsonl", annotations=annotations, variants=["full"], config=vt.config,
        prompts=vt.prompts,
    )  # fmt: skip
    run_dir = RunDirectory.open(run, info)
    inputs = Inputs(videos=videos, memories=memories, subtitles=subtitles)
    options = RunnerOptions(concurrency=concurrency)

    async def go(answerer: Any) -> Any:
        runner = EvalRunner(vt, run_dir, inputs, options, answerer=answerer)
        try:
            return await runner.run(questions)
        finally:
            await vt.aclose()

    started = time.perf_counter()
    if ray_workers:
        executor = RayExecutor(vt.config.executor.ray)
        with executor.answerer(vt, ["full"], concurrency=concurrency) as answerer:
            outcome = asyncio.run(go(answerer))
    else:
        outcome = asyncio.run(go(None))
    wall = time.perf_counter() - started
    run_dir.close()
    answered = [r for r in outcome.records.values() if r.status == "answered"]
    results.put(
        {"wall": wall, "answered": len(answered), "right": sum(bool(r.correct) for r in answered)}
    )


def eval_in_a_process(
    base_url: str, data: tuple, ray_address: str | None, concurrency: int, server_pid: int
) -> dict:
    """``eval_once`` in a fresh driver process, its peak memory sampled from here."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(
        target=eval_once, args=(base_url, data, ray_address, concurrency, results)
    )
    child.start()
    ray_root = os.getpid() if ray_address else None
    with PeakMemory(child.pid or 0, ray_root=ray_root, exclude=(server_pid,)) as memory:
        figures = results.get(timeout=3000)
        child.join(timeout=60)
    return {**figures, "peak_mb": memory.peak_mb, "at_peak": memory.at_peak}


def bench_eval(
    questions: int,
    videos: int,
    work: Path,
    ray_address: str,
    latency: float = LATENCY_S,
    minutes: float = 60,
) -> None:
    from bench_eval import inputs

    annotations, video_dir, memory_dir, subtitle_dir = inputs(
        videos, questions, "light", 100, minutes
    )
    data = (annotations, video_dir, memory_dir, subtitle_dir, work)
    in_flight = 8
    with ServerProcess(scripted_model, latency_s=latency) as server:
        local = eval_in_a_process(server.base_url, data, None, in_flight, server.pid)
        ray = eval_in_a_process(server.base_url, data, ray_address, in_flight // 2, server.pid)
    print(
        f"\n2. eval: {questions} questions over {videos} synthetic {minutes:g}-minute memories "
        f"(light video, subtitles), {latency} s latency per call, {in_flight} questions in flight; "
        "each run in a fresh driver process"
    )
    for name, figures in (("local executor", local), ("Ray, 2 workers x 4", ray)):
        parts = ", ".join(f"{k} {v:.0f}" for k, v in figures["at_peak"].items() if v)
        print(
            f"  {name:<20} wall {figures['wall']:6.1f} s, answered {figures['answered']} "
            f"(right {figures['right']}), peak memory {figures['peak_mb']:.0f} MB ({parts})"
        )


# --------------------------------------------------------------------------- main


def main() -> int:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("build", "eval", "both"), default="both")
    parser.add_argument("--videos", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--eval-videos", type=int, default=10)
    parser.add_argument("--eval-minutes", type=float, default=60.0)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds per call")
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = KEY
    os.environ.pop("OPENAI_BASE_URL", None)
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    try:
        videos = bench_videos(args.videos, args.minutes) if args.part != "eval" else []
        with local_ray_cluster(2, env={"OPENAI_API_KEY": KEY}) as cluster:
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(
                f"Ray instance: 2 CPUs on 127.0.0.1; machine: {os.cpu_count()} CPUs, load "
                f"average {load} before the runs"
            )
            if args.part in ("build", "both"):
                bench_builds(videos, work, args.latency)
            if args.part in ("eval", "both"):
                bench_eval(
                    args.questions,
                    args.eval_videos,
                    work,
                    cluster.address,
                    args.latency,
                    args.eval_minutes,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
