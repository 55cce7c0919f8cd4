"""The default executor: everything in this process's event loop, one video after another.

Model latency is hidden by the builder's own concurrency (``builder.concurrency`` calls in
flight per video); one builder, and so one embedding model, serves every video.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from videotapestry.config import Config
from videotapestry.executors.base import BuildJob, BuildOutcome, OnJob, OnOutcome

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry
    from videotapestry.embeddings import Embedder
    from videotapestry.eval.answering import LocalAnswerer


class LocalExecutor:
    name = "local"

    def __init__(self, *, embedder: Embedder | None = None) -> None:
        #: Shared with the caller (a ``VideoTapestry``, a test) instead of loading another.
        self.embedder = embedder

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
        return asyncio.run(
            self.abuild_memories(
                config,
                jobs,
                restart=restart,
                progress=progress,
                on_start=on_start,
                on_outcome=on_outcome,
            )
        )

    @contextlib.contextmanager
    def answerer(
        self, vt: VideoTapestry, variants: Sequence[str], *, concurrency: int
    ) -> Iterator[LocalAnswerer]:
        """Eval questions in this process (what ``EvalRunner`` uses when given none)."""
        from videotapestry.eval.answering import LocalAnswerer

        yield LocalAnswerer(vt, variants, concurrency=concurrency)

    @contextlib.contextmanager
    def library_answerer(self, vt: VideoTapestry) -> Iterator[None]:
        """None: a library question's per-video runs are the facade's own, in this process."""
        yield None

    async def abuild_memories(
        self,
        config: Config,
        jobs: Sequence[BuildJob],
        *,
        restart: bool = False,
        progress: bool = False,
        on_start: OnJob | None = None,
        on_outcome: OnOutcome | None = None,
    ) -> list[BuildOutcome]:
        """``build_memories`` in a running event loop."""
        from memory_builders.builder import MemoryBuilder
        from memory_builders.progress import BuildProgress
        from videotapestry.executors.tasks import build_job

        builder = MemoryBuilder(
            config, embedder=self.embedder, progress=BuildProgress(enabled=progress)
        )
        outcomes = []
        try:
            for job in jobs:
                if on_start is not None:
                    on_start(job)
                outcome = await build_job(builder, job, restart=restart)
                if outcome.stopped:
                    assert outcome.exception is not None
                    raise outcome.exception  # every further build would stop the same way
                outcomes.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
        finally:
            await builder.service.aclose()
            builder.service.close()
        return outcomes
