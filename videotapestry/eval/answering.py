"""Answering one question's group of variants: the part of an eval that an executor places.

The runner (``eval/runner.py``) keeps everything that must happen once, on the driver:
planning and resume, early stop, and writing each record and trace to the run directory. It
hands each question's variants to an *answerer* and records what comes back. The local
answerer answers in this process; the Ray answerer (``executors/ray_executor.py``) sends the
group to a worker that runs this same local answerer, so both give the same records.

What crosses between them is plain data: a ``Result`` for an answered variant, a
``Failure`` (type, message, whether it must stop the run, the traceback of a bug) for a
failed one, since exception objects do not always survive pickling.
"""

from __future__ import annotations

import asyncio
import gc
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from videotapestry.errors import DiskFullError, ModelCallError, VideoTapestryError
from videotapestry.eval.questions import EvalQuestion
from videotapestry.llm.usage import spent_usage
from videotapestry.result import Exploration, Result, load_exploration
from videotapestry.trace import scrub
from videotapestry.variants import FULL, exploration_source, variant_named

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry


class RunStoppedError(VideoTapestryError):
    """The error type of skipped records: the run stopped before they started."""


@dataclass(frozen=True)
class QuestionFiles:
    """A question's checked inputs: its video (None with --no-video), memory and subtitles."""

    video: Path | None
    memory: Path
    subtitles: Path | None


@dataclass(frozen=True)
class Failure:
    """Why a variant of a question failed, as the runner records it."""

    error_type: str
    message: str
    #: One of our errors (else a bug of ours or a library's, logged with its traceback).
    ours: bool
    #: A model error every question would repeat (refused key, unknown model, ...).
    fatal: bool = False
    #: Not a failure of the question: the run stopped before it started.
    stopped: bool = False
    traceback: str | None = None
    #: The usage (``UsageSummary.to_dict()``) of the calls made before the failure.
    usage: dict | None = None

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        ours = isinstance(exc, VideoTapestryError)
        spent = spent_usage(exc)
        # Records and errors.log are kept and shared: no secret a message quotes goes in.
        return cls(
            error_type=type(exc).__name__,
            message=scrub(str(exc) if ours else f"{type(exc).__name__}: {exc}"),
            ours=ours,
            fatal=isinstance(exc, ModelCallError) and not exc.recoverable,
            stopped=isinstance(exc, RunStoppedError),
            traceback=None
            if ours
            else scrub("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))),
            usage=spent.to_dict() if spent is not None and spent.calls else None,
        )


@dataclass
class VariantOutcome:
    """One variant of one question, answered (``result``) or failed (``failure``)."""

    variant: str
    result: Result | None = None
    failure: Failure | None = None
    elapsed_s: float = 0.0
    reassembled_from: str | None = None


Emit = Callable[[VariantOutcome], Awaitable[None]]


class Answerer(Protocol):
    """Where question groups run. ``answer`` emits one outcome per variant it ran; when the
    full run of a group fails it emits no reassembly (the runner records those as inheriting
    the failure)."""

    #: Groups the runner keeps in flight at once.
    slots: int
    #: Dispatch a video's questions together (so a worker loads its memory once).
    group_by_video: bool
    #: Move each memory, once loaded in this process, out of the cyclic collector's reach
    #: (``RunnerOptions.freeze_loaded_objects``; the runner sets it).
    freeze_loaded: bool

    def open(self) -> None: ...

    async def warm_up(self) -> None:
        """Load the models every question needs before the first one starts."""
        ...

    async def answer(
        self,
        question: EvalQuestion,
        variants: tuple[str, ...],
        prepared: QuestionFiles,
        saved: Path | Exploration | None,
        emit: Emit,
    ) -> None: ...

    async def build_memory(self, video: Path, memory: Path, subtitles: Path | None) -> None: ...

    def release(self, memory: Path) -> None: ...

    def close(self) -> None: ...


class LocalAnswerer:
    """Answers in this process with one ``VideoTapestry`` per variant (``for_variant``: one
    model service, one embedder, one Whisper, each memory loaded once).

    Questions go out video by video: the ones in flight then share one or two videos'
    memories, readers and caches instead of every video's at once (bench_eval.py, 100
    questions over 10 videos asked round-robin: peak RSS 2.0 GB against 2.35-2.48, with the
    render cache rendering each job once for the questions in flight).
    """

    group_by_video = True

    def __init__(self, vt: VideoTapestry, variants: Sequence[str], *, concurrency: int) -> None:
        self.base = vt
        # A loaded memory is ~40k objects (2,520 subgraph nodes) in no reference cycle, so
        # frozen (``gc.freeze``) it is still freed by reference counting on release, and the
        # collector's full passes, which stop every thread, no longer walk it.
        self.freeze_loaded = False
        self.slots = max(1, concurrency)
        self._vts = {
            v: vt if v == vt.config.variant else vt.for_variant(v)
            for v in variants
            if variant_named(v).reassembled_from is None
        }
        self._loads: dict[Path, asyncio.Future] = {}
        self._loader: ThreadPoolExecutor | None = None

    def open(self) -> None:
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-load")

    async def warm_up(self) -> None:
        await asyncio.to_thread(self.base.embedder.embed, ["warm up"], query=True)
        for vt in self._vts.values():
            await asyncio.to_thread(vt.prepare)
        await self.base.service.warm_up()

    def close(self) -> None:
        if self._loader is not None:
            self._loader.shutdown(wait=False, cancel_futures=True)
            self._loader = None

    async def answer(
        self,
        question: EvalQuestion,
        variants: tuple[str, ...],
        prepared: QuestionFiles,
        saved: Path | Exploration | None,
        emit: Emit,
    ) -> None:
        if exploration_source(variants[0]) != FULL.name:
            await emit(await self._ask(question, variants[0], prepared))
            return
        source: Result | Path | Exploration | None = saved
        if FULL.name in variants:
            full = await self._ask(question, FULL.name, prepared)
            await emit(full)
            source = full.result
        if source is None:
            return
        reassembled = [v for v in variants if variant_named(v).reassembled_from is not None]
        outcomes = await asyncio.gather(
            *(self._reassemble(variant, source, prepared) for variant in reassembled)
        )
        for outcome in outcomes:
            await emit(outcome)

    async def build_memory(self, video: Path, memory: Path, subtitles: Path | None) -> None:
        await self.base.abuild_memory(video, memory, subtitles)

    def release(self, memory: Path) -> None:
        self._loads.pop(memory, None)
        self.base.release_memory(memory)

    async def _ask(
        self, question: EvalQuestion, variant: str, prepared: QuestionFiles
    ) -> VariantOutcome:
        vt = self._vts[variant]
        started = time.perf_counter()
        try:
            await self._load(prepared)
            result = await vt.aanswer(
                prepared.video,
                prepared.memory,
                question.question,
                # A free-form question is asked without options: answered in words.
                question.options or None,
                question_id=question.id,
                subtitle_path=prepared.subtitles,
                subtitle_offset_s=question.subtitle_offset_s,
                keep_images=False,
            )
        except DiskFullError:
            raise  # not the question's failure: nothing more can be saved (the run stops)
        except Exception as exc:  # one question's failure never loses the others
            return VariantOutcome(
                variant, failure=Failure.of(exc), elapsed_s=time.perf_counter() - started
            )
        return VariantOutcome(variant, result=result)

    async def _reassemble(
        self, variant: str, source: Result | Path | Exploration, prepared: QuestionFiles
    ) -> VariantOutcome:
        started = time.perf_counter()
        source_variant = variant_named(variant).reassembled_from
        try:
            await self._load(prepared)
            exploration = (
                await asyncio.to_thread(load_exploration, source)
                if isinstance(source, Path)
                else source
            )
            result = await self.base.areanswer(exploration, variant, memory=prepared.memory)
        except DiskFullError:
            raise
        except Exception as exc:
            return VariantOutcome(
                variant,
                failure=Failure.of(exc),
                elapsed_s=time.perf_counter() - started,
                reassembled_from=source_variant,
            )
        return VariantOutcome(variant, result=result, reassembled_from=source_variant)

    async def _load(self, prepared: QuestionFiles) -> None:
        """Load (parse, embed, pack) a memory off the event loop, once for all variants and
        questions of its video; ``aanswer`` then finds it loaded instead of blocking every
        question in flight while it loads. Loads run one at a time, in the order questions
        reach them: parsing is interpreter-bound, so parallel loads would only make the
        first question wait for all of them."""
        future = self._loads.get(prepared.memory)
        if future is None:
            loop = asyncio.get_running_loop()
            future = self._loads[prepared.memory] = loop.run_in_executor(
                self._loader, _load_memory, self.base, prepared, self.freeze_loaded
            )
        await asyncio.shield(future)


def _load_memory(vt: VideoTapestry, prepared: QuestionFiles, freeze: bool) -> None:
    from videotapestry.video import fingerprint

    video_fingerprint = fingerprint(prepared.video) if prepared.video is not None else None
    vt.load_memory(prepared.memory, video_fingerprint=video_fingerprint)
    if freeze:
        # The young generations first, so the questions' short-lived cycles are not frozen
        # with the memory (the runner unfreezes at the end of the run in any case).
        gc.collect(1)
        gc.freeze()
