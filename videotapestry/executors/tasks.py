"""The units of work themselves, the same whichever executor runs them (no Ray here).

A Ray worker calls these functions with pickled arguments; the local executor calls the
async ones in its own event loop. Keeping one code path means a build on a cluster is the
ordinary build, with the ordinary checkpoints, and gives the same memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry.config import Config
from videotapestry.errors import VideoTapestryError
from videotapestry.executors.base import BuildJob, BuildOutcome

if TYPE_CHECKING:
    from memory_builders.builder import MemoryBuilder
    from videotapestry.agents.state import MomentHint
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.answering import QuestionFiles, VariantOutcome
    from videotapestry.eval.questions import EvalQuestion
    from videotapestry.result import Exploration, Result


async def build_job(
    builder: MemoryBuilder, job: BuildJob, *, restart: bool = False
) -> BuildOutcome:
    """Build (or resume) one job with ``builder``; errors of ours become the outcome."""
    from memory_builders.report import BuildError, BuildStoppedError

    try:
        result = await builder.abuild(
            job.video,
            job.out,
            subtitles=job.subtitles,
            export_memdreamer=job.export_memdreamer,
            restart=restart,
            force=job.force,
        )
    except VideoTapestryError as exc:  # BuildError, or a video/config/ASR problem
        return BuildOutcome(
            job,
            error=str(exc),
            error_type=type(exc).__name__,
            stopped=isinstance(exc, BuildStoppedError),
            exception=exc,
        )
    except OSError as exc:  # a read-only or vanished output folder, a path through a file
        error = BuildError(
            f"cannot build {job.video} into {job.out}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
        )
        return BuildOutcome(job, error=str(error), error_type=type(error).__name__, exception=error)
    return BuildOutcome(job, report=result.report)


def build_in_worker(config: Config, job: BuildJob) -> BuildOutcome:
    """One video in a fresh builder, for a worker process (one Ray task per video).

    A retried task calls this again with the same job: the builder finds the checkpoints the
    killed attempt left in ``job.out`` and repeats no finished clip.
    """
    import asyncio

    from memory_builders.builder import MemoryBuilder
    from memory_builders.progress import BuildProgress

    builder = MemoryBuilder(config, progress=BuildProgress(enabled=False))

    async def run() -> BuildOutcome:
        try:
            return await build_job(builder, job)
        finally:
            await builder.service.aclose()

    try:
        outcome = asyncio.run(run())
    finally:
        builder.service.close()
    outcome.exception = None  # the message and type travel; exception objects may not
    return outcome


#: A worker process's facade for the config it was last sent (its embedder loads once).
_WORKER_FACADE: dict[str, VideoTapestry] = {}


def answer_video_in_worker(
    config: Config,
    video: str | None,
    memory: str,
    question: str,
    options: Sequence[str],
    hints: Sequence[MomentHint],
) -> tuple[int, Result]:
    """One library candidate's run (the method on one video, its search hits as hints), for a
    worker process: (this process's id, the run's ``Result``). The facade, and so the
    embedding model, stays for the process's next video; the memory is forgotten after."""
    import os

    from videotapestry.api import VideoTapestry

    key = config.model_dump_json()
    vt = _WORKER_FACADE.get(key)
    if vt is None:
        _WORKER_FACADE.clear()
        vt = _WORKER_FACADE[key] = VideoTapestry(config)
    try:
        result = vt.run_sync(vt.answer_candidate(video, memory, question, options, hints))
    finally:
        vt.release_memory(memory)
    return os.getpid(), result


def portable_config(config: Config) -> Config:
    """``config`` with its relative paths made absolute, for a worker started elsewhere."""

    def absolute(value: str | None, *, must_exist: bool = False) -> str | None:
        if not value:
            return value
        path = Path(value).expanduser()
        if path.is_absolute() or (must_exist and not path.exists()):
            return value
        return str(path.absolute())

    data = config.model_dump()
    data["cache"]["path"] = absolute(config.cache.path)
    data["asr"]["cache_dir"] = absolute(config.asr.cache_dir)
    data["prompts"]["override_dir"] = absolute(config.prompts.override_dir)
    # Model names or local directories: only an existing directory is a path.
    data["asr"]["whisper_model"] = absolute(config.asr.whisper_model, must_exist=True)
    data["embedding"]["model"] = absolute(config.embedding.model, must_exist=True)
    return Config.model_validate(data)


class EvalWorker:
    """Inside a Ray actor: one ``VideoTapestry`` (so one embedder and one Whisper) answering
    the question groups the driver sends it, up to the actor's concurrency at once, with the
    same local answerer the local executor uses. It writes nothing: its outcomes go back to
    the driver, which alone appends to the run directory."""

    def __init__(self, config: Config, variants: tuple[str, ...], concurrency: int) -> None:
        from videotapestry.api import VideoTapestry
        from videotapestry.eval.answering import LocalAnswerer

        self.vt = VideoTapestry(config)
        self.answerer = LocalAnswerer(self.vt, variants, concurrency=concurrency)
        self.answerer.open()

    async def ready(self) -> int:
        """Up, with the embedding model loaded (before any question queues behind it)."""
        import os

        await self.answerer.warm_up()
        return os.getpid()

    async def answer(
        self,
        question: EvalQuestion,
        variants: tuple[str, ...],
        prepared: QuestionFiles,
        saved: Exploration | None,
    ) -> list[VariantOutcome]:
        outcomes: list[VariantOutcome] = []

        async def emit(outcome: VariantOutcome) -> None:
            outcomes.append(outcome)

        await self.answerer.answer(question, variants, prepared, saved, emit)
        return outcomes

    async def release(self, memory: Path) -> None:
        self.answerer.release(memory)
