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

This module is imported only when the Ray executor is chosen; it needs the ``[ray]`` extra.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from videotapestry.config import Config, RayConfig, RayResources
from videotapestry.errors import OptionalDependencyError, VideoTapestryError
from videotapestry.executors.base import (
    BuildJob,
    BuildOutcome,
    OnJob,
    OnOutcome,
    discard_checkpoints,
)

#: Ray's process title for a build task is ``ray::<this><video file name>``.
BUILD_TASK_PREFIX = "videotapestry-build:"
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


@contextlib.contextmanager
def ray_session(settings: RayConfig) -> Iterator[Any]:
    """Ray, initialized: joins the one already initialized in this process (a notebook, a
    test's cluster) and leaves it running, or connects (``address``) and disconnects after."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
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
        from videotapestry.executors.work import build_in_worker, portable_config

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


class _VideoBar:
    """The driver's one progress bar: videos done, with the model calls and cost so far."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.bar: Any = None
        self.calls = 0
        self.cost = 0.0
        self.unpriced = False
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
            usage = outcome.report.usage or {}
            self.calls += int(usage.get("calls", 0))
            self.cost += float(usage.get("cost_usd", 0.0) or 0.0)
            self.unpriced = self.unpriced or bool(usage.get("unpriced_calls"))
        if self.bar is not None:
            cost = "?" if self.unpriced else f"${self.cost:.3f}"
            self.bar.set_postfix_str(f"calls {self.calls}, {cost}", refresh=False)
            self.bar.update(1)

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.close()
