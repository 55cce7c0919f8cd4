"""The executor seam: where many videos' builds (and an evaluation's questions) run.

A sweep is hundreds of videos and thousands of questions. One process's event loop hides
model latency, but decoding, OCR, ASR and embedding are CPU (or GPU) work that a cluster
spreads better. The work itself is the same everywhere, so an executor only decides *where*
each unit runs; what a unit does, and how a killed unit resumes, stays with the builder
(checkpoints in the output directory) and the eval runner (one line per finished question).

``local`` runs in this process (today's asyncio); ``ray`` runs on a Ray cluster
(``videotapestry.executors.ray_executor``, the ``[ray]`` extra). Nothing here imports Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from videotapestry.config import Config

if TYPE_CHECKING:
    from memory_builders.report import BuildReport
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.answering import Answerer
    from videotapestry.library.answering import AnswerVideo


@dataclass(frozen=True)
class BuildJob:
    """One memory to build: ``video`` into ``out`` (what ``build-memory`` takes per video)."""

    video: Path
    out: Path
    subtitles: Path | None = None
    export_memdreamer: Path | None = None
    #: Replace the memory of another video that ``out`` holds (``build-memory --force``).
    force: bool = False

    def absolute(self) -> BuildJob:
        """The same job with absolute paths, for a worker whose working directory differs."""
        return replace(
            self,
            video=self.video.absolute(),
            out=self.out.absolute(),
            subtitles=self.subtitles.absolute() if self.subtitles else None,
            export_memdreamer=(
                self.export_memdreamer.absolute() if self.export_memdreamer else None
            ),
        )


@dataclass
class BuildOutcome:
    """How one job ended: its report, or the error that kept it from finishing.

    ``stopped`` marks a ``BuildStoppedError`` (no key, unknown model, unreachable server):
    every further build would stop the same way, so executors stop the others too.
    """

    job: BuildJob
    report: BuildReport | None = None
    error: str | None = None
    error_type: str | None = None
    stopped: bool = False
    #: The original exception (local executor only; Ray sends the message and type).
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.report is not None and self.error is None

    @property
    def status(self) -> str:
        """complete | partial (clips failed or part of the video was lost) | failed (no memory)."""
        if self.report is None or self.error is not None:
            return "failed"
        return "partial" if self.report.partial else "complete"


OnJob = Callable[[BuildJob], None]
OnOutcome = Callable[[BuildOutcome], None]


class Executor(Protocol):
    """Runs work units somewhere; results come back to the caller as they finish."""

    name: str

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
        """Build every job's memory (resuming from its checkpoints); one outcome per job.

        A job that fails gives an outcome with its error and the others go on; a
        ``BuildStoppedError`` stops them all and is raised. ``restart`` discards each job's
        checkpoints first.
        """
        ...

    def answerer(
        self, vt: VideoTapestry, variants: Sequence[str], *, concurrency: int
    ) -> AbstractContextManager[Answerer]:
        """Where an eval's question groups run, for one run of ``EvalRunner``; ``vt`` is the
        driver's instance (its config is the workers' config). ``concurrency`` is questions
        in flight per worker."""
        ...

    def library_answerer(self, vt: VideoTapestry) -> AbstractContextManager[AnswerVideo | None]:
        """Where a library question's per-video runs go (``VideoTapestry.library``'s
        ``answer_video``), for as long as the context lasts; None: the facade's own runs,
        in this process."""
        ...


def discard_checkpoints(out: Path) -> None:
    """What ``restart`` means for one job: forget its checkpoints (the memory is rebuilt)."""
    from memory_builders.builder import BUILD_DIR
    from memory_builders.checkpoints import CheckpointStore

    CheckpointStore(out / BUILD_DIR).clear()
