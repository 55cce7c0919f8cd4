"""Where builds and evaluation questions run: ``local`` (default) or ``ray`` (SPEC §11).

    from videotapestry.executors import BuildJob, build_memories
    outcomes = build_memories("configs/my.yaml", [BuildJob(Path("a.mp4"), Path("mem/a"))],
                              executor="ray")

The choice is ``executor.kind`` in the config, ``--executor`` on the command line, or an
executor object given here. Ray is imported only when the Ray executor is used.

A library question's per-video runs go where the facade's config says too::

    with open_library(vt, "my-library") as library:
        result = library.answer("Where is the door code shown?")
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from videotapestry.config import Config, load_config
from videotapestry.errors import ConfigError
from videotapestry.executors.base import BuildJob, BuildOutcome, Executor, OnJob, OnOutcome
from videotapestry.executors.local import LocalExecutor

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry
    from videotapestry.library import Library

__all__ = [
    "BuildJob",
    "BuildOutcome",
    "Executor",
    "LocalExecutor",
    "build_memories",
    "make_executor",
    "open_library",
]

ExecutorName = Literal["local", "ray"]


def make_executor(config: Config, kind: ExecutorName | str | None = None) -> Executor:
    """The executor ``kind`` names (default: ``config.executor.kind``), set up from config."""
    chosen = kind or config.executor.kind
    if chosen == "local":
        return LocalExecutor()
    if chosen == "ray":
        from videotapestry.executors.ray_executor import RayExecutor, import_ray

        import_ray()  # a missing extra is an error now, not after the first video
        return RayExecutor(config.executor.ray)
    raise ConfigError(f"unknown executor {chosen!r}; choose local or ray")


def build_memories(
    config: Config | str | Path | None,
    jobs: Sequence[BuildJob],
    *,
    executor: Executor | ExecutorName | None = None,
    restart: bool = False,
    progress: bool = False,
    on_start: OnJob | None = None,
    on_outcome: OnOutcome | None = None,
) -> list[BuildOutcome]:
    """Build many videos' memories with one config; one outcome per job, in job order."""
    resolved = config if isinstance(config, Config) else load_config(config)
    runner = (
        make_executor(resolved, executor)
        if executor is None or isinstance(executor, str)
        else executor
    )
    return runner.build_memories(
        resolved,
        jobs,
        restart=restart,
        progress=progress,
        on_start=on_start,
        on_outcome=on_outcome,
    )


@contextlib.contextmanager
def open_library(
    vt: VideoTapestry,
    path: str | Path,
    *,
    max_videos: int = 3,
    executor: Executor | ExecutorName | None = None,
) -> Iterator[Library]:
    """``vt.library(path)`` with each candidate video's run on ``executor`` (default: the
    config's ``executor.kind``): in this process, or one Ray task per video. A Ray session
    the library started ends with the context."""
    runner = (
        make_executor(vt.config, executor)
        if executor is None or isinstance(executor, str)
        else executor
    )
    with runner.library_answerer(vt) as answer_video:
        yield vt.library(path, max_videos=max_videos, answer_video=answer_video)
