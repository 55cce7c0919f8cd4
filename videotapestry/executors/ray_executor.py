"""The Ray executor: builds and evaluation questions spread over a Ray cluster (SPEC §11).

Builds: one Ray task per video, each running the ordinary builder into the video's output
directory. The output directories must be on storage every worker sees (one machine's disk
for a local Ray instance, a shared file system on a cluster), because that is where the
checkpoints live: when a worker dies, Ray runs the task again (``max_retries``) and the new
attempt resumes from them, repeating no finished clip. ``restart`` is applied by the driver
before the tasks start, so a retried attempt never discards what the killed one saved.

Resources per task come from ``executor.ray.build`` (CPUs, GPUs, memory); the driver keeps
at most ``parallel`` videos in flight, else as many as the cluster fits, and shows one bar
over the videos (the workers print no per-stage bars).

Library questions (SPEC §15, ``ask --library``): one Ray task per candidate video, running
the ordinary method in a worker process (``tasks.answer_video_in_worker``, which keeps its
facade and so its embedding model for the process's next video) and sending back the run's
``Result`` (answer, citations, levels, composite memory, usage); the driver composes the
answer from them as from runs made in its own process. The candidates' runs are in flight
together, each task reserving ``executor.ray.eval`` resources; every worker has its own model
service, so the per-endpoint limit bounds each run's calls. Ray starts (or is joined) at
the first run and is left as ``ray_session`` leaves it when the library's context ends.

Eval: ``workers`` Ray actors (``executor.ray.eval``: CPUs, GPUs, memory each; default as
many as the cluster's CPUs allow), each holding one ``VideoTapestry`` and so one embedder
and one Whisper, answering up to ``--concurrency`` questions at once. The driver keeps the
runner: it plans, resumes, stops early and alone appends to results.jsonl; it sends the
questions grouped by video, each video to one worker (which loads that memory once and
forgets it after the video's last question), and records each outcome as it comes back.
A worker that dies is restarted (``max_restarts``) and its unfinished questions are asked
again; the videos and memories must be on storage every worker sees, like builds' output.

This module is imported only when the Ray executor is chosen; it needs the ``[ray]`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.config import Config, RayConfig, RayEvalSettings, RayResources
from videotapestry.errors import OptionalDependencyError, VideoTapestryError
from videotapestry.executors.base import (
    BuildJob,
    BuildOutcome,
    OnJob,
    OnOutcome,
    discard_checkpoints,
)
from videotapestry.llm import UsageSummary

if TYPE_CHECKING:
    from videotapestry.agents.state import MomentHint
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.answering import Emit, QuestionFiles
    from videotapestry.eval.questions import EvalQuestion
    from videotapestry.result import Exploration, Result

#: Ray's process title for a build task is ``ray::<this><video file name>``.
BUILD_TASK_PREFIX = "videotapestry-build:"
#: How long the driver waits for new eval workers to start and load the embedding model.
WORKER_START_S = 600.0
#: How often the driver looks up from waiting (keeps Ctrl-C and progress responsive).
POLL_S = 0.5


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise OptionalDependencyError(
            "the Ray executor needs Ray: pip install 'videotapestry[ray]'"
        ) from None
    return ray


class RayClusterError(VideoTapestryError):
    """The Ray cluster cannot be reached or started."""


class RayRunError(VideoTapestryError):
    """A library candidate's run on Ray did not come back (its worker or node was lost)."""


@contextlib.contextmanager
def ray_session(settings: RayConfig) -> Iterator[Any]:
    """Ray, initialized: joins the one already initialized in this process (a notebook, a
    test's cluster) and leaves it running, or connects (``address``) and disconnects after."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if settings.address:
        check_reachable(settings.address)
    try:
        ray.init(
            address=settings.address,
            runtime_env=settings.runtime_env,
            log_to_driver=settings.log_to_driver,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = settings.address or "RAY_ADDRESS or a new local instance"
        raise RayClusterError(f"cannot start or join the Ray cluster ({where}): {exc}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once when nothing listens at a ``HOST:PORT`` address: Ray itself keeps
    retrying an unreachable cluster for minutes before it gives up."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit() or not host:
        return  # "auto", "local", or a ray:// client address: Ray's own checks apply
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise RayClusterError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); give the head "
            "node's address (its GCS port, 6379 unless changed) to --ray-address"
        ) from None


def task_options(resources: RayResources) -> dict[str, Any]:
    options: dict[str, Any] = {"num_cpus": resources.num_cpus, "num_gpus": resources.num_gpus}
    if resources.memory_gb is not None:
        options["memory"] = int(resources.memory_gb * 1024**3)
    return options


def describe_ray_error(ray: Any, exc: BaseException) -> tuple[str, str]:
    """(error type, one-line message) of a failed task: the task's own exception when it
    raised one (a bug, shown with its type), else what happened to its worker or object."""
    cause: BaseException = exc
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(exc.cause, BaseException):
        cause = exc.cause
    name = type(cause).__name__
    text = str(cause).strip()
    return name, f"{name}: {text.splitlines()[0]}" if text else name


def worker_lost(ray: Any, exc: BaseException) -> bool:
    """The task's process or node died (killed, out of memory), as opposed to it raising."""
    lost = (
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.OutOfMemoryError,
        ray.exceptions.ActorDiedError,
    )
    return isinstance(exc, lost)


class RayExecutor:
    name = "ray"

    def __init__(self, settings: RayConfig | None = None) -> None:
        self.settings = settings or RayConfig()

    def build_memories(
        self,
        config: Config,
        jobs: Sequence[BuildJob],
        *,
        restart: bool = False,
        progress: bool = False,
        on_start: OnJob | None = None,
        on_outcome: OnOutcome | None = None,
    ) -> list[BuildOutcome]:
        from memory_builders.report import BuildStoppedError
        from videotapestry.executors.tasks import build_in_worker, portable_config

        config = portable_config(config)
        jobs = [job.absolute() for job in jobs]
        if restart:  # here, once: a retried attempt must keep what the killed one saved
            for job in jobs:
                discard_checkpoints(job.out)
        settings = self.settings.build
        outcomes: dict[BuildJob, BuildOutcome] = {}
        with ray_session(self.settings) as ray, _VideoBar(len(jobs), progress) as bar:
            task = ray.remote(build_in_worker)
            config_ref = ray.put(config)
            queue = list(reversed(jobs))
            pending: dict[Any, BuildJob] = {}
            limit = settings.parallel or len(jobs)
            try:
                while queue or pending:
                    while queue and len(pending) < limit:
                        job = queue.pop()
                        ref = task.options(
                            **task_options(settings),
                            max_retries=settings.max_retries,
                            retry_exceptions=False,
                            name=BUILD_TASK_PREFIX + job.video.name,
                        ).remote(config_ref, job)
                        pending[ref] = job
                        if on_start is not None:
                            on_start(job)
                    done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
                    for ref in done:
                        job = pending.pop(ref)
                        outcome = self._collect(ray, ref, job, settings.max_retries)
                        if outcome.stopped:
                            raise BuildStoppedError(outcome.error or "the build stopped")
                        outcomes[job] = outcome
                        bar.add(outcome)
                        if on_outcome is not None:
                            on_outcome(outcome)
            finally:
                for ref in pending:  # stopped, interrupted or failed: free the cluster
                    ray.cancel(ref, force=True)
        return [outcomes[job] for job in jobs if job in outcomes]

    @contextlib.contextmanager
    def answerer(
        self, vt: VideoTapestry, variants: Sequence[str], *, concurrency: int
    ) -> Iterator[RayAnswerer]:
        """Eval workers on the cluster for one run (``EvalRunner(answerer=...)``)."""
        with ray_session(self.settings) as ray:
            answerer = RayAnswerer(
                ray, vt.config, tuple(variants), concurrency=concurrency, settings=self.settings
            )
            try:
                yield answerer
            finally:
                answerer.shutdown()

    @contextlib.contextmanager
    def library_answerer(self, vt: VideoTapestry) -> Iterator[RayVideoAnswerer]:
        """A library question's per-video runs as Ray tasks (``VideoTapestry.library``'s
        ``answer_video``); Ray starts at the first run."""
        answerer = RayVideoAnswerer(vt.config, self.settings)
        try:
            yield answerer
        finally:
            answerer.close()

    @staticmethod
    def _collect(ray: Any, ref: Any, job: BuildJob, retries: int) -> BuildOutcome:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as exc:
            error_type, message = describe_ray_error(ray, exc)
            if worker_lost(ray, exc):
                message = (
                    f"the worker building {job.video.name} was lost {retries + 1} times "
                    f"(executor.ray.build.max_retries={retries}): {message}"
                )
            return BuildOutcome(job, error=message, error_type=error_type)


class RayAnswerer:
    """The runner's answerer on Ray: question groups to eval workers, one video per worker."""

    group_by_video = True
    #: Memories load in the workers' processes, whose collector this process cannot freeze.
    freeze_loaded = False

    def __init__(
        self,
        ray: Any,
        config: Config,
        variants: tuple[str, ...],
        *,
        concurrency: int,
        settings: RayConfig,
    ) -> None:
        from videotapestry.executors.tasks import portable_config

        self.ray = ray
        self.config = portable_config(config)
        self.settings = settings
        eval_settings = settings.eval
        count = eval_settings.workers or _workers_that_fit(ray, eval_settings)
        self.slots = count * max(1, concurrency)
        self._count = count
        self._variants = variants
        self._concurrency = max(1, concurrency)
        self._workers: list[Any] = []
        self._home: dict[Path, int] = {}  # video memory -> the worker answering its questions
        self._busy = [0] * count
        self._config_ref: Any = None
        self._releases: list[Any] = []

    @property
    def workers(self) -> int:
        return self._count

    def open(self) -> None:
        """Start the workers and wait until each is up, so a worker that cannot start is an
        error now and not one failed record per question."""
        from videotapestry.executors.tasks import EvalWorker

        settings = self.settings.eval
        worker = self.ray.remote(EvalWorker).options(
            **task_options(settings),
            max_restarts=settings.max_restarts,
            max_task_retries=settings.max_restarts,
            max_concurrency=self._concurrency,
        )
        self._workers = [
            worker.remote(self.config, self._variants, self._concurrency)
            for _ in range(self._count)
        ]
        refs = [w.ready.remote() for w in self._workers]
        try:
            self.ray.get(refs, timeout=WORKER_START_S)
        except self.ray.exceptions.GetTimeoutError:
            raise RayClusterError(
                f"the Ray cluster did not start {len(refs)} eval worker(s) within "
                f"{WORKER_START_S:.0f} s; each asks for executor.ray.eval resources "
                f"({task_options(self.settings.eval)}) and the cluster may not have them"
            ) from None
        except self.ray.exceptions.RayError as exc:
            raise RayClusterError(
                f"an eval worker could not start: {describe_ray_error(self.ray, exc)[1]}"
            ) from None

    async def warm_up(self) -> None:
        """Nothing here: each worker loaded its models before ``open`` returned."""

    def close(self) -> None:
        """The run is over (the workers stay until ``shutdown``)."""

    def shutdown(self) -> None:
        if self._releases:  # let the last "forget this memory" calls land before the kill
            self.ray.wait(self._releases, num_returns=len(self._releases), timeout=5.0)
        for worker in self._workers:
            self.ray.kill(worker)
        self._workers = []

    def _worker_for(self, memory: Path) -> int:
        index = self._home.get(memory)
        if index is None:
            index = min(range(len(self._busy)), key=lambda k: (self._busy[k], k))
            self._home[memory] = index
        return index

    async def answer(
        self,
        question: EvalQuestion,
        variants: tuple[str, ...],
        prepared: QuestionFiles,
        saved: Path | Exploration | None,
        emit: Emit,
    ) -> None:
        from videotapestry.eval.answering import Failure, VariantOutcome
        from videotapestry.result import load_exploration
        from videotapestry.variants import variant_named

        index = self._worker_for(prepared.memory)
        self._busy[index] += 1
        try:
            if isinstance(saved, Path):  # the run directory is the driver's: send the content
                saved = await asyncio.to_thread(load_exploration, saved)
            portable = replace(
                prepared,
                video=prepared.video.absolute() if prepared.video else None,
                memory=prepared.memory.absolute(),
                subtitles=prepared.subtitles.absolute() if prepared.subtitles else None,
            )
            try:
                outcomes = await self._workers[index].answer.remote(
                    question, variants, portable, saved
                )
            except self.ray.exceptions.RayError as exc:
                error_type, message = describe_ray_error(self.ray, exc)
                failure = Failure(
                    error_type=error_type,
                    message=f"the Ray worker answering this question was lost: {message}",
                    ours=True,
                )
                outcomes = [
                    VariantOutcome(
                        v, failure=failure, reassembled_from=variant_named(v).reassembled_from
                    )
                    for v in variants
                ]
        finally:
            self._busy[index] -= 1
        for outcome in outcomes:
            await emit(outcome)

    async def build_memory(self, video: Path, memory: Path, subtitles: Path | None) -> None:
        """``--build-missing``: the video's build as a Ray task, like ``build-memory``."""
        from memory_builders.report import BuildError, BuildStoppedError
        from videotapestry.executors.tasks import build_in_worker

        settings = self.settings.build
        job = BuildJob(video, memory, subtitles).absolute()
        if self._config_ref is None:
            self._config_ref = self.ray.put(self.config)
        ref = (
            self.ray.remote(build_in_worker)
            .options(
                **task_options(settings),
                max_retries=settings.max_retries,
                retry_exceptions=False,
                name=BUILD_TASK_PREFIX + video.name,
            )
            .remote(self._config_ref, job)
        )
        try:
            outcome: BuildOutcome = await ref
        except self.ray.exceptions.RayError as exc:
            raise BuildError(describe_ray_error(self.ray, exc)[1]) from None
        if outcome.stopped:
            raise BuildStoppedError(outcome.error or "the build stopped")
        if outcome.error is not None:
            raise BuildError(outcome.error)

    def release(self, memory: Path) -> None:
        index = self._home.pop(memory, None)
        if index is not None and self._workers:
            self._releases.append(self._workers[index].release.remote(memory.absolute()))


#: Ray's process title for a library candidate's run is ``ray::<this><memory folder name>``.
LIBRARY_TASK_PREFIX = "videotapestry-library:"


class RayVideoAnswerer:
    """The library's ``answer_video`` on Ray: each call one task, its ``Result`` returned."""

    def __init__(self, config: Config, settings: RayConfig) -> None:
        from videotapestry.executors.tasks import portable_config

        self.config = portable_config(config)
        self.settings = settings
        #: The worker process of each run, in the order the runs finished (logs, tests).
        self.worker_pids: list[int] = []
        self._session = contextlib.ExitStack()
        self._ray: Any = None
        self._task: Any = None
        self._config_ref: Any = None

    def _start(self) -> Any:
        if self._ray is None:
            from videotapestry.executors.tasks import answer_video_in_worker

            ray = self._session.enter_context(ray_session(self.settings))
            self._task = ray.remote(answer_video_in_worker)
            self._config_ref = ray.put(self.config)
            self._ray = ray
        return self._ray

    async def __call__(
        self,
        video: str | None,
        memory: str,
        question: str,
        options: Sequence[str],
        hints: Sequence[MomentHint],
    ) -> Result:
        ray = self._start()
        settings = self.settings.eval
        memory = str(Path(memory).absolute())  # the worker's working directory may differ
        ref = self._task.options(
            **task_options(settings),
            max_retries=settings.max_restarts,
            retry_exceptions=False,
            name=LIBRARY_TASK_PREFIX + Path(memory).name,
        ).remote(
            self._config_ref,
            str(Path(video).absolute()) if video else None,
            memory,
            question,
            list(options),
            list(hints),
        )
        try:
            pid, result = await ref
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, BaseException):
                raise exc.cause from None  # the run's own error, as a local run raises it
            raise RayRunError(describe_ray_error(ray, exc)[1]) from None
        except ray.exceptions.RayError as exc:
            raise RayRunError(
                f"the Ray worker answering over {Path(memory).name} was lost "
                f"{settings.max_restarts + 1} times (executor.ray.eval.max_restarts="
                f"{settings.max_restarts}): {describe_ray_error(ray, exc)[1]}"
            ) from None
        self.worker_pids.append(pid)
        return result

    def close(self) -> None:
        """Leave Ray as ``ray_session`` found it (disconnect when this answerer joined)."""
        self._session.close()
        self._ray = None


def _workers_that_fit(ray: Any, settings: RayEvalSettings) -> int:
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    if settings.num_cpus <= 0:
        return max(1, int(cpus))
    return max(1, int(cpus // settings.num_cpus))


class _VideoBar:
    """The driver's one progress bar: videos done, with the model calls and cost so far."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.bar: Any = None
        self.usage = UsageSummary()
        self.started = time.perf_counter()

    def __enter__(self) -> _VideoBar:
        if self.enabled:
            import sys

            from tqdm import tqdm

            self.bar = tqdm(
                total=self.total, desc="videos", unit="video", file=sys.stderr, leave=True
            )
        return self

    def add(self, outcome: BuildOutcome) -> None:
        if outcome.report is not None:
            self.usage.merge(UsageSummary.from_dict(outcome.report.usage or {}))
        if self.bar is not None:
            self.bar.set_postfix_str(
                f"calls {self.usage.calls}, {self.usage.cost_text(3)}", refresh=False
            )
            self.bar.update(1)

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.close()
