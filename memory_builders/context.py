"""What the stages of one build share: the builder's tools, the checkpoints, the report, the
worker threads, and the one way a stage asks a text model for JSON.

Stages are plain async functions of this context and of the outputs of the stages before
them, so the build driver can show them in order and a stage can be read on its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memory_builders.checkpoints import CheckpointStore, checkpointed, stage_key
from memory_builders.progress import BuildProgress
from memory_builders.report import (
    BuildReport,
    BuildStoppedError,
    Degradation,
    StageReport,
    Timings,
    usage_dict,
)
from videotapestry.config import Config
from videotapestry.contracts.builder import BUILDER_PROMPT_ROLES
from videotapestry.contracts.fields import RoleOutput
from videotapestry.embeddings import Embedder
from videotapestry.errors import (
    ImageLimitError,
    ModelAuthError,
    ModelCallError,
    ModelConnectionError,
    ModelRequestError,
    VideoTapestryError,
)
from videotapestry.llm import ModelService, ModelSession, UsageSummary
from videotapestry.memory import MANIFEST_FILE, VideoMemory, load_memory
from videotapestry.ocr import OcrEngine, OcrStats
from videotapestry.prompts import PromptRegistry, short_hash

#: Errors every further call would repeat: they stop the build at once.
FATAL_MODEL_ERRORS = (ModelAuthError, ModelConnectionError, ModelRequestError, ImageLimitError)

R = TypeVar("R", bound=RoleOutput)
T = TypeVar("T")


class BuildTools(Protocol):
    """The long-lived parts a ``MemoryBuilder`` lends to each of its builds."""

    config: Config
    prompts: PromptRegistry
    service: ModelService
    embedder: Embedder
    progress: BuildProgress
    ocr: OcrEngine | None


class BuildContext:
    """One build of one video into ``out``; its checkpoints live in ``build_dir``."""

    def __init__(self, tools: BuildTools, video: Path, out: Path, build_dir: Path) -> None:
        self.tools = tools
        self.config = tools.config
        self.settings = tools.config.builder
        self.video = video
        self.out = out
        self.build_dir = build_dir
        self.frames_dir = build_dir / "frames"
        self.store = CheckpointStore(build_dir)
        self.report = BuildReport(video=str(video), out=str(out))
        self.timings = Timings()
        self.ocr_stats = OcrStats()
        self._pool = ThreadPoolExecutor(
            max_workers=self.settings.cpu_workers, thread_name_prefix="builder-cpu"
        )
        self._sessions: list[ModelSession] = []
        #: A followed stream's identity (``follow``): it stands for the video's fingerprint,
        #: as the recording grows, and its stages key their checkpoints by how far it goes.
        self.live_identity: str | None = None
        #: The memory an earlier build of this video wrote (a followed memory's previous
        #: version), whose node vectors are reused where the texts are unchanged.
        self.earlier_out: Path = out
        #: This version ends the followed stream: its summaries are revised whatever the
        #: interval (``summary.revision_due``).
        self.live_final = True
        self._earlier: tuple[VideoMemory | None] | None = None
        tools.progress.usage = self  # the bars show this build's calls, tokens and cost

    def earlier_memory(self) -> VideoMemory | None:
        """The memory in ``earlier_out``, read once (blocking: call it off the event loop);
        None when there is none or it cannot be read (it is then built afresh)."""
        if self._earlier is None:
            memory = None
            if (self.earlier_out / MANIFEST_FILE).is_file():
                try:
                    memory = load_memory(self.earlier_out)
                except VideoTapestryError:
                    memory = None
            self._earlier = (memory,)
        return self._earlier[0]

    def summary(self) -> UsageSummary:
        """This build's model usage so far, over every stage (also the progress bars')."""
        total = UsageSummary()
        for session in self._sessions:
            for record in session.usage.records:
                total.add(record)
        return total

    @contextmanager
    def stage(self, name: str) -> Iterator[tuple[StageReport, ModelSession]]:
        """A stage's entry in the report, timed, with a model session of its own."""
        stage = self.report.stage(name)
        session = self.tools.service.session()
        self._sessions.append(session)
        started = time.perf_counter()
        try:
            yield stage, session
        finally:
            stage.wall_s += time.perf_counter() - started
            stage.usage = usage_dict(session.usage.summary())

    async def cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the build's worker threads (decoding, OCR, JPEG encoding)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def degraded(self, what: str, where: str, why: str) -> None:
        self.report.degradations.append(Degradation(what, where, why))

    def stopped(self, role: str, exc: ModelCallError) -> BuildStoppedError:
        settings = self.config.models.settings_for(role)
        return BuildStoppedError(
            f"build stopped at the first {role} call that failed (role {role}, model "
            f"{settings.model}): {exc}. Checkpoints are kept in {self.build_dir}; fix the "
            "configuration and run the same command again to resume"
        )

    def prompt_hash(self, name: str) -> str:
        return short_hash(self.tools.prompts.source(name))

    def model_identity(self, prompt: str) -> dict[str, Any]:
        """What of the model answering ``prompt`` can change its replies (for checkpoint keys)."""
        role = BUILDER_PROMPT_ROLES[prompt]
        settings = self.config.models.settings_for(role)
        identity = settings.model_dump(exclude={"timeout_s", "max_retries", "api_key_env"})
        revision = self.tools.service.revision_for(role)
        if revision is not None:
            identity["revision"] = revision
        return identity

    async def ask(
        self,
        session: ModelSession,
        prompt_name: str,
        schema: type[R],
        variables: dict[str, Any],
        *,
        checkpoint: str,
        key_parts: Sequence[Any],
        stage: StageReport,
        where: str,
    ) -> R | None:
        """One checkpointed text call; None (and a degradation) when it stays unusable."""
        key = stage_key(
            prompt_name, self.prompt_hash(prompt_name), self.model_identity(prompt_name), *key_parts
        )

        async def call() -> R | None:
            prompt = self.tools.prompts.render(prompt_name, **variables)
            role = BUILDER_PROMPT_ROLES[prompt_name]
            try:
                return await session.complete_json(role, prompt, schema, level=prompt_name)
            except FATAL_MODEL_ERRORS as exc:
                raise self.stopped(role, exc) from None
            except ModelCallError as exc:
                self.degraded(prompt_name, where, f"fallback used: {exc}")
                return None

        return await checkpointed(
            self.store,
            checkpoint,
            key,
            call,
            load=schema.model_validate,
            dump=lambda reply: reply.model_dump(mode="json"),
            tally=stage,
        )

    def finish_report(self, status: str, message: str = "") -> None:
        report = self.report
        report.status = status
        report.message = message
        timings = self.timings.to_json()
        timings["ocr_frames"] = self.ocr_stats.frames
        timings["ocr_frames_read"] = self.ocr_stats.read
        timings["ocr_detector_calls"] = self.ocr_stats.detected
        timings["ocr_boxes_recognized"] = self.ocr_stats.recognized
        timings["ocr_boxes_kept"] = self.ocr_stats.kept
        report.timings = timings
        report.usage = usage_dict(self.summary())


async def fan_out(items: Sequence[T], worker: Callable[[T], Awaitable[bool]], limit: int) -> None:
    """Run ``worker`` over ``items``: one at a time until one makes a model call (so an
    error every call would repeat is met once), then at most ``limit`` at a time. The
    worker answers whether it made a call."""
    index = 0
    while index < len(items):
        called = await worker(items[index])
        index += 1
        if called:
            break
    rest = items[index:]
    if not rest:
        return
    gate = asyncio.Semaphore(limit)

    async def guarded(item: T) -> None:
        async with gate:
            await worker(item)

    tasks = [asyncio.create_task(guarded(item)) for item in rest]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
