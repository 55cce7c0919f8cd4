"""The memory builder: a raw video in, a MemDreamer-style hierarchical memory out (SPEC §4).

Stages, each checkpointed in ``<out>/build/`` under a key of its inputs:

1. probe and fingerprint the video;
2. one decoding pass (``scan``): shot cuts and the kept frames; clips from the cuts;
3. the transcript of the whole video (Whisper or the given subtitles), beside the scan;
4. per clip, concurrently: OCR of its kept frames and one perception call;
5. MacroEvent boundaries (sliding window over captions), then per MacroEvent its subgraph
   and one call for its label, summary and relations;
6. entity unification; 7. SuperEvents and the root; 8. embeddings, then the memory is
   written with its manifest, transcript and build report.

Failures: a clip whose frames cannot be decoded or whose reply stays unusable after the
repair retry is recorded and left out (the memory is then *partial*); above
``builder.max_failed_share`` failed clips the build stops. A model error that every call
would repeat (no key, unknown model, unreachable server, a rejected parameter) stops the
build at the first call that meets it. Either way the checkpoints stay, and running the same
command again resumes. Failed clips are tried again on a rerun; the response cache makes
a deterministic failure free to repeat.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memory_builders import entities as unification
from memory_builders import macro as macros
from memory_builders import summary as stages
from memory_builders.checkpoints import CheckpointStore, stage_key
from memory_builders.progress import BuildProgress
from memory_builders.report import (
    BUILDER_VERSION,
    BuildError,
    BuildReport,
    BuildStoppedError,
    ClipFailure,
    Degradation,
    Timings,
    TooManyFailuresError,
    usage_dict,
)
from memory_builders.scan import KeptFrame, ScanResult, frames_present, load_frame, scan_video
from memory_builders.segmentation import ClipSpan, plan_clips
from memory_builders.transcript import TranscriptResult, make_transcript, transcript_plan
from videotapestry.asr import format_transcript, lines_in_windows
from videotapestry.asr.stored import TRANSCRIPT_FILE
from videotapestry.config import Config, load_config
from videotapestry.contracts.builder import (
    BUILDER_PROMPT_ROLES,
    ClipPerception,
    EntityMergeDecisions,
    MacroBoundaries,
    MacroDetails,
    RootSummary,
    SuperStages,
)
from videotapestry.contracts.fields import RoleOutput
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.errors import (
    ImageLimitError,
    ModelAuthError,
    ModelCallError,
    ModelConnectionError,
    ModelRequestError,
    NoDecodableFramesError,
    StructuredOutputError,
    VideoTapestryError,
)
from videotapestry.files import write_json_atomic
from videotapestry.images import ImagePart
from videotapestry.llm.service import ModelService, ModelSession
from videotapestry.llm.usage import UsageSummary
from videotapestry.memory import (
    MANIFEST_FILE,
    Clip,
    EntityNode,
    MacroEvent,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
    VideoMemory,
    ensure_embeddings,
    load_memory,
    new_manifest,
    save_memory,
)
from videotapestry.memory.prompt_text import clock, clock_range, node_line
from videotapestry.memory.types import EntityGroup
from videotapestry.ocr import (
    OcrEngine,
    OcrStats,
    TextSpan,
    frames_to_read,
    make_ocr_engine,
    read_texts,
)
from videotapestry.prompts import PromptRegistry, short_hash
from videotapestry.timecode import format_timestamp
from videotapestry.video import probe
from videotapestry.video.encoding import encode_jpeg, frame_images
from videotapestry.video.grids import pack_grids
from videotapestry.video.reader import Frame, VideoInfo

log = logging.getLogger("memory_builders")

T = TypeVar("T", bound=RoleOutput)

#: Errors every further call would repeat: they stop the build at once.
FATAL_MODEL_ERRORS = (ModelAuthError, ModelConnectionError, ModelRequestError, ImageLimitError)
BUILD_DIR = "build"
REPORT_FILE = "build_report.json"


@dataclass
class BuildResult:
    memory: VideoMemory
    report: BuildReport
    path: Path

    @property
    def partial(self) -> bool:
        return self.report.partial


class MemoryBuilder:
    """Builds memories with one config; reusable for many videos (``build_many``)."""

    def __init__(
        self,
        config: Config | str | Path | None = None,
        *,
        service: ModelService | None = None,
        embedder: Embedder | None = None,
        prompts: PromptRegistry | None = None,
        progress: BuildProgress | None = None,
        ocr_engine: OcrEngine | str | None = "config",
    ) -> None:
        self.config = config if isinstance(config, Config) else load_config(config)
        self.prompts = prompts or PromptRegistry(self.config.prompts.override_dir)
        self.service = service or ModelService(self.config)
        self.embedder = embedder or SentenceTransformerEmbedder(self.config.embedding)
        self.progress = progress or BuildProgress(enabled=False)
        self.ocr = (
            make_ocr_engine(self.config.builder.ocr) if ocr_engine == "config" else ocr_engine
        )

    def build(
        self,
        video: str | Path,
        out: str | Path,
        *,
        subtitles: str | Path | None = None,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
    ) -> BuildResult:
        """Synchronous ``abuild`` (for scripts; in a notebook, ``await abuild(...)``)."""

        async def run() -> BuildResult:
            try:
                return await self.abuild(
                    video,
                    out,
                    subtitles=subtitles,
                    restart=restart,
                    export_memdreamer=export_memdreamer,
                )
            finally:
                await self.service.aclose()

        return asyncio.run(run())

    async def abuild(
        self,
        video: str | Path,
        out: str | Path,
        *,
        subtitles: str | Path | None = None,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
    ) -> BuildResult:
        run = _BuildRun(
            self,
            Path(video),
            Path(out),
            Path(subtitles) if subtitles else None,
            restart=restart,
            export_dir=Path(export_memdreamer) if export_memdreamer else None,
        )
        return await run.execute()


def create_builder(
    config: Config,
    *,
    service: ModelService,
    embedder: Embedder,
    prompts: PromptRegistry,
    progress: bool = False,
) -> MemoryBuilder:
    """The ``videotapestry.memory_builders`` entry point: how ``VideoTapestry.build_memory``
    gets a builder that shares its config, models, embedder and prompts."""
    return MemoryBuilder(
        config,
        service=service,
        embedder=embedder,
        prompts=prompts,
        progress=BuildProgress(enabled=progress),
    )


# --------------------------------------------------------------------------- one build


class _BuildRun:
    def __init__(
        self,
        builder: MemoryBuilder,
        video: Path,
        out: Path,
        subtitles: Path | None,
        *,
        restart: bool,
        export_dir: Path | None,
    ) -> None:
        self.b = builder
        self.config = builder.config
        self.settings = builder.config.builder
        self.video = video
        self.out = out
        self.subtitles = subtitles
        self.restart = restart
        self.export_dir = export_dir
        self.build_dir = out / BUILD_DIR
        self.frames_dir = self.build_dir / "frames"
        self.store = CheckpointStore(self.build_dir)
        self.report = BuildReport(video=str(video), out=str(out))
        self.timings = Timings()
        self.pool = ThreadPoolExecutor(
            max_workers=self.settings.cpu_workers, thread_name_prefix="builder-cpu"
        )
        self.info: VideoInfo
        self.scan: ScanResult
        self.scan_key = ""
        self.transcript: TranscriptResult
        self.transcript_key = ""
        self.clips: list[ClipSpan] = []
        self.records: dict[str, dict[str, Any] | None] = {}
        self.ocr_spans: dict[str, list[TextSpan]] = {}
        self.drafts: list[macros.MacroDraft] = []
        self.details: dict[str, MacroDetails | None] = {}
        self.groups: list[EntityGroup] = []
        self.plans: list[stages.StagePlan] = []
        self.root_summary: RootSummary | None = None
        self.ocr_stats = OcrStats()
        self.frames_ready = False
        self._frames_lock = asyncio.Lock()
        self._sessions: list[ModelSession] = []
        builder.progress.usage = self  # the bars show this build's calls, tokens and cost

    def summary(self) -> UsageSummary:
        """This build's model usage so far, over every stage (also the progress bars')."""
        total = UsageSummary()
        for session in self._sessions:
            for record in session.usage.records:
                total.add(record)
        return total

    # ------------------------------------------------------------------ driver

    async def execute(self) -> BuildResult:
        started = time.perf_counter()
        self._prepare_directory()
        try:
            await self._probe()
            await asyncio.gather(self._scan_stage(), self._transcript_stage())
            self._clip_stage()
            await self._perception_stage()
            await self._macro_stage()
            await self._entity_stage()
            await self._super_stage()
            await self._root_stage()
            memory = self._assemble()
            memory = await self._embed(memory)
            self.report.wall_s = time.perf_counter() - started
            self._finish_report("partial" if self.report.failures else "complete")
            memory = self._write(memory)
        except VideoTapestryError as exc:  # BuildError, or a video/config/ASR problem
            self.report.wall_s = time.perf_counter() - started
            self._finish_report("stopped", str(exc))
            self._write_stop_report()
            raise
        finally:
            self.pool.shutdown(wait=False, cancel_futures=True)
        return BuildResult(memory, self.report, self.out)

    def _prepare_directory(self) -> None:
        out = self.out
        if out.exists() and not out.is_dir():
            raise BuildError(f"cannot build into {out}: it is a file, not a directory")
        if out.is_dir() and any(out.iterdir()):
            ours = self.build_dir.is_dir() or (out / MANIFEST_FILE).is_file()
            if not ours:
                raise BuildError(
                    f"refusing to build into {out}: the directory is not empty and holds no "
                    "build; choose a new or empty directory"
                )
        if self.restart:
            self.store.clear()
        self.build_dir.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _stage(self, name: str):
        stage = self.report.stage(name)
        session = self.b.service.session()
        self._sessions.append(session)
        started = time.perf_counter()
        try:
            yield stage, session
        finally:
            stage.wall_s += time.perf_counter() - started
            stage.usage = usage_dict(session.usage.summary())

    async def _cpu(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    # ------------------------------------------------------------------ 1-3: probe, scan, asr

    async def _probe(self) -> None:
        with self._stage("probe"), self.timings.measure("probe"):
            self.info = await asyncio.to_thread(probe, self.video)
        self.report.duration_s = self.info.duration_s
        self.report.fingerprint = self.info.fingerprint

    async def _scan_stage(self) -> None:
        settings = self.settings.scan
        self.scan_key = stage_key("scan", self.info.fingerprint, settings.model_dump())
        with self._stage("scan") as (stage, _):
            data = self.store.get("scan", self.scan_key)
            if data is not None:
                # The kept frames may have been deleted after a complete build; they are
                # decoded again only if a clip still needs them (_ensure_frames).
                self.scan = ScanResult.from_json(data)
                self.frames_ready = frames_present(self.frames_dir, self.scan.frames)
                stage.reused = 1
                return
            self.scan = await self._run_scan()
            self.store.put("scan", self.scan_key, self.scan.to_json())
            stage.computed = 1

    async def _run_scan(self) -> ScanResult:
        if self.frames_dir.exists():
            shutil.rmtree(self.frames_dir)
        bar = self.b.progress.stage("scan", round(self.info.duration_s), unit="s")
        try:
            scan = await asyncio.to_thread(
                scan_video,
                self.info,
                self.settings.scan,
                self.frames_dir,
                progress=lambda t: bar.set_done(round(t)),
            )
        finally:
            bar.close()
        for name, seconds in scan.timings.items():
            self.timings.add(f"scan_{name.removesuffix('_s')}", seconds)
        self.frames_ready = True
        return scan

    async def _ensure_frames(self) -> None:
        async with self._frames_lock:
            if self.frames_ready:
                return
            again = await self._run_scan()
            if [f.to_json() for f in again.frames] != [f.to_json() for f in self.scan.frames]:
                raise BuildError(
                    f"scanning {self.video} again gave other frames than its checkpoint; "
                    "rerun with --restart"
                )

    async def _transcript_stage(self) -> None:
        with self._stage("transcript") as (stage, _):
            plan = transcript_plan(self.config, self.info, self.subtitles)
            self.transcript_key = stage_key("transcript", self.info.fingerprint, plan)
            data = self.store.get("transcript", self.transcript_key)
            if data is not None:
                self.transcript = TranscriptResult.from_json(data)
                stage.reused = 1
            else:
                with self.timings.measure("asr"):
                    self.transcript = await asyncio.to_thread(
                        make_transcript, self.config, self.info, plan
                    )
                if self.transcript.problem is None:
                    self.store.put("transcript", self.transcript_key, self.transcript.to_json())
                stage.computed = 1
        if self.transcript.problem:
            self._degraded("transcript", "whole video", self.transcript.problem)

    def _clip_stage(self) -> None:
        bounds = self.settings.clips
        self.clips = plan_clips(
            self.info.duration_s, self.scan.cuts, min_s=bounds.min_s, max_s=bounds.max_s
        )
        self.report.clips = len(self.clips)
        for message in self.scan.errors[-3:]:
            self._degraded("frames", "scan", message)

    # ------------------------------------------------------------------ 4: perception

    def _prompt_hash(self, name: str) -> str:
        return short_hash(self.b.prompts.source(name))

    def _model_identity(self, prompt: str) -> dict[str, Any]:
        role = BUILDER_PROMPT_ROLES[prompt]
        settings = self.config.models.settings_for(role)
        identity = settings.model_dump(exclude={"timeout_s", "max_retries", "api_key_env"})
        revision = self.b.service.revision_for(role)
        if revision is not None:
            identity["revision"] = revision
        return identity

    def _clip_frames(self, clip: ClipSpan) -> list[KeptFrame]:
        last = clip.end_s >= self.info.duration_s - 1e-6
        return [
            f
            for f in self.scan.frames
            if clip.start_s <= f.timestamp_s < clip.end_s or (last and f.timestamp_s == clip.end_s)
        ]

    async def _perception_stage(self) -> None:
        total = len(self.clips)
        with self._stage("perception") as (stage, session):
            bar = self.b.progress.stage("perception", total)
            limit = asyncio.Semaphore(self.settings.concurrency)

            async def one(clip: ClipSpan) -> bool:
                called = await self._perceive(clip, session, stage, limit)
                bar.update()
                return called

            try:
                await self._fan_out(
                    self.clips, one, self.settings.concurrency + 2 * self.settings.cpu_workers
                )
            finally:
                bar.close()
        self._check_failures(final=True)

    async def _fan_out(
        self,
        items: Sequence[Any],
        worker: Callable[[Any], Awaitable[bool]],
        limit: int,
    ) -> None:
        """Run ``worker`` over ``items``: sequentially until one makes a model call (so an
        error every call would repeat is met once), then at most ``limit`` at a time."""
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

        async def guarded(item: Any) -> None:
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

    def _ocr_key(self, clip: ClipSpan) -> str:
        engine = getattr(self.b.ocr, "version", getattr(self.b.ocr, "name", "none"))
        return stage_key(
            "ocr", self.scan_key, clip.start_s, clip.end_s, self.settings.ocr.model_dump(), engine
        )

    def _perception_key(self, clip: ClipSpan, transcript: str, ocr_lines: str) -> str:
        return stage_key(
            "perception",
            self.scan_key,
            clip.id,
            clip.start_s,
            clip.end_s,
            self.settings.perception.model_dump(),
            self.config.images.model_dump(),
            self._prompt_hash("builder_clip"),
            self._model_identity("builder_clip"),
            transcript,
            ocr_lines,
        )

    def _clip_transcript(self, clip: ClipSpan) -> str:
        lines = lines_in_windows(self.transcript.lines, [(clip.start_s, clip.end_s)])
        text = format_transcript(lines)
        cap = self.settings.perception.max_transcript_chars
        return text if len(text) <= cap else text[:cap].rsplit("\n", 1)[0] + "\n[...]"

    async def _perceive(
        self, clip: ClipSpan, session: ModelSession, stage: Any, limit: asyncio.Semaphore
    ) -> bool:
        """One clip; returns whether a model call was made."""
        frames = self._clip_frames(clip)
        if not frames:
            if self.scan.errors:
                why = self.scan.errors[-1]
            elif self.scan.decoded_until_s < clip.start_s:
                why = (
                    f"the frames end at {self.scan.decoded_until_s:.2f} s although the file "
                    f"says {self.info.duration_s:.2f} s: truncated?"
                )
            else:
                why = "the decoder returned none"
            self._fail(
                clip,
                "frames",
                f"no frame between {clip.start_s:.2f} and {clip.end_s:.2f} s could be decoded "
                f"({why})",
            )
            return False
        loaded: dict[int, np.ndarray] = {}
        try:
            spans = self._stored_ocr(clip)
            if spans is None:
                await self._ensure_frames()
                spans = await self._cpu(self._clip_ocr, clip, frames, loaded)
        except NoDecodableFramesError as exc:
            self._fail(clip, "frames", str(exc))
            return False
        self.ocr_spans[clip.id] = spans
        transcript = self._clip_transcript(clip)
        ocr_lines = "\n".join(f"[{clock(s.start_s)}-{clock(s.end_s)}] {s.text}" for s in spans)
        key = self._perception_key(clip, transcript, ocr_lines)
        cached = self.store.get(f"perception/{clip.id}", key)
        if cached is not None:
            self.records[clip.id] = cached
            stage.reused += 1
            return False
        try:
            await self._ensure_frames()
            images, notes = await self._cpu(self._clip_images, clip, frames, loaded)
        except NoDecodableFramesError as exc:
            self._fail(clip, "frames", str(exc))
            return False
        prompt = self.b.prompts.render(
            "builder_clip",
            clip_id=clip.id,
            clip_start=format_timestamp(clip.start_s),
            clip_end=format_timestamp(clip.end_s),
            video_duration=format_timestamp(self.info.duration_s),
            image_notes=notes,
            transcript=transcript,
            ocr_lines=ocr_lines,
        )
        async with limit:
            try:
                reply = await session.complete_json(
                    "builder_clip", prompt, ClipPerception, images, level="clip"
                )
            except StructuredOutputError as exc:
                self._fail(
                    clip,
                    "perception",
                    f"reply unusable after one repair retry: {exc.validation_error}",
                )
                return True
            except FATAL_MODEL_ERRORS as exc:
                raise self._stopped("builder_clip", exc) from None
            except ModelCallError as exc:
                self._fail(clip, "perception", str(exc))
                return True
        record = normalize_perception(reply, clip, [f.timestamp_s for f in frames])
        self.store.put(f"perception/{clip.id}", key, record)
        self.records[clip.id] = record
        stage.computed += 1
        return True

    def _loader(self, loaded: dict[int, np.ndarray]) -> Callable[[KeptFrame], np.ndarray]:
        def load(frame: KeptFrame) -> np.ndarray:
            if frame.index not in loaded:
                with self.timings.measure("frames_load"):
                    loaded[frame.index] = load_frame(self.frames_dir, frame)
            return loaded[frame.index]

        return load

    def _stored_ocr(self, clip: ClipSpan) -> list[TextSpan] | None:
        """The clip's OCR spans from its checkpoint ([] without an engine); None to compute."""
        if self.b.ocr is None:
            return []
        cached = self.store.get(f"ocr/{clip.id}", self._ocr_key(clip))
        return None if cached is None else [TextSpan.from_json(item) for item in cached]

    def _clip_ocr(
        self, clip: ClipSpan, frames: list[KeptFrame], loaded: dict[int, np.ndarray]
    ) -> list[TextSpan]:
        """On a worker thread: read the clip's kept frames and checkpoint the spans."""
        assert self.b.ocr is not None
        load = self._loader(loaded)
        picked = [
            frames[i]
            for i in frames_to_read([f.timestamp_s for f in frames], self.settings.ocr.interval_s)
        ]
        with self.timings.measure("ocr"):
            spans = read_texts(
                self.b.ocr,
                [(f.timestamp_s, lambda f=f: load(f)) for f in picked],
                self.settings.ocr,
                end_s=clip.end_s,
                stats=self.ocr_stats,
            )
        self.store.put(f"ocr/{clip.id}", self._ocr_key(clip), [s.to_json() for s in spans])
        return spans

    def _clip_images(
        self, clip: ClipSpan, frames: list[KeptFrame], loaded: dict[int, np.ndarray]
    ) -> tuple[list[ImagePart], list[str]]:
        """On a worker thread: the clip's chosen frames as the images of its call."""
        load = self._loader(loaded)
        chosen = select_frames(frames, clip, self.settings.perception.frames)
        picked = [Frame(f.timestamp_s, f.index, load(f)) for f in chosen]
        with self.timings.measure("jpeg"):
            return self._images(picked)

    def _images(self, frames: list[Frame]) -> tuple[list[ImagePart], list[str]]:
        perception = self.settings.perception
        images_config = self.config.images
        if perception.layout == "frames":
            parts = frame_images(frames, images_config, max_frames=len(frames))
            notes = [
                f"Image {k}: the frame at {p.label.removeprefix('frame ')}"
                for k, p in enumerate(parts, 1)
            ]
            return parts, notes
        grids = pack_grids(
            frames,
            columns=perception.grid_columns,
            rows=perception.grid_rows,
            grid_width=images_config.grid_max_side,
        )
        parts, notes = [], []
        for k, grid in enumerate(grids, start=1):
            jpeg = encode_jpeg(
                grid.image,
                max_side=images_config.grid_max_side,
                quality=images_config.jpeg_quality,
            )
            parts.append(ImagePart(jpeg, f"grid {k}/{len(grids)}", grid.timestamps))
            notes.append(
                f"Image {k}: a grid of {len(grid.labels)} frames in {grid.columns} columns and "
                f"{grid.rows} rows, read left to right then top to bottom, at "
                + ", ".join(grid.labels)
            )
        return parts, notes

    def _fail(self, clip: ClipSpan, stage: str, reason: str) -> None:
        self.report.failures.append(ClipFailure(clip.id, clip.start_s, clip.end_s, stage, reason))
        self.records[clip.id] = None
        self.b.progress.message(f"clip {clip.id} failed ({stage}): {reason}")
        self._check_failures(final=False)

    def _check_failures(self, *, final: bool) -> None:
        total = len(self.clips)
        failed = len(self.report.failures)
        share = self.settings.max_failed_share
        if total and failed > share * total:
            done = total - failed if final else sum(1 for r in self.records.values() if r)
            last = self.report.failures[-1]
            raise TooManyFailuresError(
                f"{failed} of {total} clips failed, more than builder.max_failed_share={share:g} "
                f"allows (last: {last.clip_id}, {last.stage}: {last.reason}). The {done} finished "
                f"clips are checkpointed in {self.build_dir}; fix the cause and run the same "
                "command again to resume"
            )

    def _stopped(self, role: str, exc: ModelCallError) -> BuildStoppedError:
        settings = self.config.models.settings_for(role)
        return BuildStoppedError(
            f"build stopped at the first {role} call that failed (role {role}, model "
            f"{settings.model}): {exc}. Checkpoints are kept in {self.build_dir}; fix the "
            "configuration and run the same command again to resume"
        )

    def _degraded(self, what: str, where: str, why: str) -> None:
        self.report.degradations.append(Degradation(what, where, why))

    # ------------------------------------------------------------------ JSON calls with fallback

    async def _call(
        self,
        session: ModelSession,
        prompt_name: str,
        schema: type[T],
        variables: dict[str, Any],
        *,
        checkpoint: str,
        key_parts: Sequence[Any],
        stage: Any,
        where: str,
    ) -> T | None:
        """One checkpointed text call; None (and a degradation) when it stays unusable."""
        key = stage_key(
            prompt_name,
            self._prompt_hash(prompt_name),
            self._model_identity(prompt_name),
            *key_parts,
        )
        cached = self.store.get(checkpoint, key)
        if cached is not None:
            stage.reused += 1
            return schema.model_validate(cached)
        prompt = self.b.prompts.render(prompt_name, **variables)
        role = BUILDER_PROMPT_ROLES[prompt_name]
        try:
            reply = await session.complete_json(role, prompt, schema, level=prompt_name)
        except FATAL_MODEL_ERRORS as exc:
            raise self._stopped(role, exc) from None
        except ModelCallError as exc:
            self._degraded(prompt_name, where, f"fallback used: {exc}")
            return None
        self.store.put(checkpoint, key, reply.model_dump(mode="json"))
        stage.computed += 1
        return reply

    # ------------------------------------------------------------------ 5: MacroEvents

    def _caption_line(self, clip: ClipSpan) -> str:
        record = self.records.get(clip.id)
        caption = record["caption"] if record else "(not described)"
        return f"{clip.id} [{clock_range(TimeRange(start=clip.start_s, end=clip.end_s))}] {caption}"

    async def _macro_stage(self) -> None:
        settings = self.settings.macro
        with self._stage("macro_bounds") as (stage, session):
            captions = [(self.records.get(c.id) or {}).get("caption", "") for c in self.clips]
            valid = [bool(c) for c in captions]
            sims = self._caption_similarity(captions, valid)
            windows = macros.boundary_windows(self.clips, settings.window_s, settings.overlap_s)
            boundaries: set[int] = set()
            bar = self.b.progress.stage("macro bounds", len(windows), unit="call")

            async def one(window: macros.BoundaryWindow) -> bool:
                shown = self.clips[window.first : window.last + 1]
                lines = [self._caption_line(c) for c in shown]
                if len(shown) < 2 or not any(valid[window.first : window.last + 1]):
                    bar.update()
                    return False
                before = self.report.stage("macro_bounds").computed
                reply = await self._call(
                    session,
                    "builder_macro_boundaries",
                    MacroBoundaries,
                    {
                        "clips": lines,
                        "window_start": format_timestamp(shown[0].start_s),
                        "window_end": format_timestamp(shown[-1].end_s),
                        "video_duration": format_timestamp(self.info.duration_s),
                    },
                    checkpoint=f"boundaries/{shown[0].id}",
                    key_parts=[lines, settings.model_dump()],
                    stage=stage,
                    where=f"clips {shown[0].id}..{shown[-1].id}",
                )
                if reply is None:
                    boundaries.update(macros.change_points(window, sims, self.clips))
                else:
                    boundaries.update(macros.kept_boundaries(window, self.clips, reply.boundaries))
                bar.update()
                return self.report.stage("macro_bounds").computed > before

            try:
                await self._fan_out(windows, one, self.settings.concurrency)
            finally:
                bar.close()
            segments = macros.segments_from_boundaries(len(self.clips), boundaries)
            segments = macros.enforce_lengths(
                segments, self.clips, sims, min_s=settings.min_s, max_s=settings.max_s
            )
        sample = 1.0 / self.settings.scan.sample_fps
        self.drafts = [
            macros.assemble_subgraph(
                slot,
                [self.clips[i] for i in segment],
                self.records,
                self.ocr_spans,
                caption_prefix=lambda c: (
                    f"[{clock_range(TimeRange(start=c.start_s, end=c.end_s))}]"
                ),
                sample_interval_s=sample,
            )
            for slot, segment in enumerate(segments)
        ]
        await self._macro_details()

    def _caption_similarity(self, captions: list[str], valid: list[bool]) -> np.ndarray:
        """Each clip caption's similarity to the previous one (checkpointed: a resumed build
        need not load the embedding model for it)."""
        key = stage_key("caption_similarity", self.b.embedder.model_name, captions)
        cached = self.store.get("caption_similarity", key)
        if cached is not None:
            return np.asarray(cached, dtype=np.float64)
        with self.timings.measure("embed_captions"):
            vectors = (
                self.b.embedder.embed([c or "-" for c in captions])
                if any(valid)
                else np.zeros((len(captions), 1), np.float32)
            )
        sims = macros.neighbour_similarity(vectors, valid)
        self.store.put("caption_similarity", key, [round(float(x), 6) for x in sims])
        return sims

    async def _macro_details(self) -> None:
        with self._stage("macro_events") as (stage, session):
            bar = self.b.progress.stage("macro events", len(self.drafts), unit="event")

            async def one(draft: macros.MacroDraft) -> bool:
                if not draft.described:
                    self.details[draft.id] = None
                    bar.update()
                    return False
                nodes = "\n".join(node_line(n) for n in draft.nodes) or "(none)"
                before = stage.computed
                reply = await self._call(
                    session,
                    "builder_macro",
                    MacroDetails,
                    {
                        "macro_id": draft.id,
                        "start": format_timestamp(draft.start_s),
                        "end": format_timestamp(draft.end_s),
                        "captions": draft.captions,
                        "nodes": nodes,
                    },
                    checkpoint=f"macro/{draft.id}",
                    key_parts=[draft.captions, nodes],
                    stage=stage,
                    where=draft.id,
                )
                self.details[draft.id] = reply
                if reply is not None:
                    kept, dropped = macros.validated_relations(
                        reply.relations, draft.node_ids, draft.relations
                    )
                    draft.relations.extend(kept)
                    if dropped:
                        log.info("%s: %d proposed relations dropped", draft.id, dropped)
                bar.update()
                return stage.computed > before

            try:
                await self._fan_out(self.drafts, one, self.settings.concurrency)
            finally:
                bar.close()

    # ------------------------------------------------------------------ 6: entities

    async def _entity_stage(self) -> None:
        settings = self.settings.entities
        nodes = [n for d in self.drafts for n in d.entities]
        with self._stage("entities") as (stage, session):
            groups = unification.name_groups(nodes)
            if not groups:
                self.groups = []
                return
            merges, questions = self._merge_plan(groups)
            if questions:
                pairs = [
                    f"{q.pair_id}: {groups[q.a].describe()} | {groups[q.b].describe()}"
                    for q in questions
                ]
                reply = await self._call(
                    session,
                    "builder_entity_merge",
                    EntityMergeDecisions,
                    {"pairs": pairs},
                    checkpoint="entities",
                    key_parts=[pairs, settings.model_dump(), self.b.embedder.model_name],
                    stage=stage,
                    where=f"{len(questions)} candidate pairs",
                )
                if reply is not None:
                    merges += [
                        (q.a, q.b) for q in questions if reply.decisions.get(q.pair_id) is True
                    ]
            self.groups = unification.unify(groups, merges)

    def _merge_plan(
        self, groups: list[unification.NameGroup]
    ) -> tuple[list[tuple[int, int]], list[unification.MergeQuestion]]:
        """Automatic merges and model questions from name embeddings (checkpointed)."""
        settings = self.settings.entities
        texts = [f"{g.name} ({g.entity_type})" if g.entity_type else g.name for g in groups]
        key = stage_key("merge_plan", self.b.embedder.model_name, texts, settings.model_dump())
        cached = self.store.get("merge_plan", key)
        if cached is not None:
            return (
                [tuple(pair) for pair in cached["merges"]],
                [unification.MergeQuestion(*q) for q in cached["questions"]],
            )
        with self.timings.measure("embed_names"):
            vectors = np.asarray(self.b.embedder.embed(texts), dtype=np.float32)
        merges, questions = unification.plan_merges(
            groups,
            vectors,
            merge_similarity=settings.merge_similarity,
            ask_similarity=settings.ask_similarity,
            max_questions=settings.max_questions,
        )
        self.store.put(
            "merge_plan",
            key,
            {
                "merges": [list(m) for m in merges],
                "questions": [[q.pair_id, q.a, q.b, round(q.similarity, 6)] for q in questions],
            },
        )
        return list(merges), questions

    # ------------------------------------------------------------------ 7: SuperEvents, root

    def _macro_label(self, draft: macros.MacroDraft) -> tuple[str, str, list[str]]:
        detail = self.details.get(draft.id)
        if detail is not None:
            return detail.label.strip(), detail.summary.strip(), detail.key_entities
        captions = [c for c in draft.captions_raw if c]
        if not captions:
            return (
                "Undescribed stretch",
                "No clip of this stretch could be described (see the build report).",
                [],
            )
        label = " ".join(captions[0].split()[:6])
        return label, " ".join(captions)[:600], [e.name for e in draft.entities[:5]]

    async def _super_stage(self) -> None:
        settings = self.settings.super_events
        with self._stage("super_events") as (stage, session):
            lines = []
            for draft in self.drafts:
                label, summary, names = self._macro_label(draft)
                extra = f" | key entities: {', '.join(names)}" if names else ""
                lines.append(
                    f"{draft.id} [{clock_range(TimeRange(start=draft.start_s, end=draft.end_s))}] "
                    f"{label}: {summary}{extra}"
                )
            reply = await self._call(
                session,
                "builder_super",
                SuperStages,
                {
                    "events": lines,
                    "video_duration": format_timestamp(self.info.duration_s),
                    "target_minutes": f"{settings.target_minutes:g}",
                    "max_stages": settings.max_stages,
                },
                checkpoint="super",
                key_parts=[lines, settings.model_dump()],
                stage=stage,
                where="SuperEvents",
            )
            plans = (
                stages.stages_from_reply(
                    reply.stages, [d.id for d in self.drafts], max_stages=settings.max_stages
                )
                if reply is not None
                else []
            )
            if not plans:
                if reply is not None:
                    self._degraded("builder_super", "SuperEvents", "no valid stage; cut by time")
                plans = stages.stages_by_time(
                    [d.start_s for d in self.drafts],
                    [d.end_s for d in self.drafts],
                    target_s=settings.target_minutes * 60,
                    max_stages=settings.max_stages,
                )
            for plan in plans:
                if not plan.label:
                    first = self.drafts[plan.macros[0]]
                    plan.label = self._macro_label(first)[0]
                    plan.description = " ".join(
                        self._macro_label(self.drafts[i])[1] for i in plan.macros
                    )[:800]
            self.plans = plans

    async def _root_stage(self) -> None:
        with self._stage("root") as (stage, session):
            lines = []
            for number, plan in enumerate(self.plans, start=1):
                start = self.drafts[plan.macros[0]].start_s
                end = self.drafts[plan.macros[-1]].end_s
                names = (
                    f" | key entities: {', '.join(plan.key_entities)}" if plan.key_entities else ""
                )
                lines.append(
                    f"{stages.super_id(number)} [{clock_range(TimeRange(start=start, end=end))}] "
                    f"{plan.label}: {plan.description}{names}"
                )
            self.root_summary = await self._call(
                session,
                "builder_root",
                RootSummary,
                {"stages": lines, "video_duration": format_timestamp(self.info.duration_s)},
                checkpoint="root",
                key_parts=[lines],
                stage=stage,
                where="root",
            )

    # ------------------------------------------------------------------ 8: memory

    def _assemble(self) -> VideoMemory:
        duration = round(self.info.duration_s, 3)
        root_id = "root"
        summary = self.root_summary
        root = RootEvent(
            id=root_id,
            time_range=TimeRange(start=0.0, end=duration),
            title=summary.title.strip() if summary else Path(self.video).stem,
            description=(
                summary.description.strip() if summary else " ".join(p.label for p in self.plans)
            ),
            themes=tuple(summary.themes) if summary else (),
            key_entities=tuple(summary.key_entities) if summary else (),
            emotional_tone=(summary.emotional_tone or None) if summary else None,
        )
        supers: list[SuperEvent] = []
        macro_nodes: list[MacroEvent] = []
        relations: list[Relation] = []
        for number, plan in enumerate(self.plans, start=1):
            sid = stages.super_id(number)
            first, last = self.drafts[plan.macros[0]], self.drafts[plan.macros[-1]]
            supers.append(
                SuperEvent(
                    id=sid,
                    parent_id=root_id,
                    label=plan.label,
                    description=plan.description,
                    key_entities=tuple(plan.key_entities),
                    time_range=TimeRange(start=first.start_s, end=last.end_s),
                )
            )
            for index in plan.macros:
                draft = self.drafts[index]
                label, text, names = self._macro_label(draft)
                macro_nodes.append(
                    MacroEvent(
                        id=draft.id,
                        parent_id=sid,
                        label=label,
                        summary=text,
                        key_entity_names=tuple(names),
                        slot=draft.slot,
                        time_range=TimeRange(start=draft.start_s, end=draft.end_s),
                    )
                )
        for number in range(1, len(supers)):
            reason = self.plans[number - 1].transition or "follows in time"
            relations.append(
                Relation(
                    source=supers[number - 1].id,
                    target=supers[number].id,
                    type="PROGRESSION",
                    label="LEADS_TO",
                    reason=reason,
                )
            )
        for a, b in zip(self.drafts, self.drafts[1:], strict=False):
            relations.append(Relation(source=a.id, target=b.id, type="TEMPORAL", label="BEFORE"))
        for draft in self.drafts:
            relations.extend(draft.relations)
        clips = []
        spans = {c.id: c for c in self.clips}
        for draft in self.drafts:
            for clip_id in draft.clip_ids:
                clip = spans[clip_id]
                record = self.records.get(clip_id)
                clips.append(
                    Clip(
                        id=clip_id,
                        time_range=TimeRange(start=clip.start_s, end=clip.end_s),
                        macro_id=draft.id,
                        node_ids=tuple(dict.fromkeys(draft.clip_nodes.get(clip_id, []))),
                        captions=(record["caption"],) if record else (),
                    )
                )
        return VideoMemory(
            root=root,
            super_events=supers,
            macro_events=macro_nodes,
            subgraph_nodes=[n for d in self.drafts for n in d.nodes],
            relations=relations,
            unification=self.groups,
            clips=clips,
            origin=str(self.out),
        )

    async def _embed(self, memory: VideoMemory) -> VideoMemory:
        if not self.settings.embeddings:
            return memory
        stored = self._stored_embeddings()
        if stored is not None:
            memory = memory.with_embeddings(stored)  # reused if the node texts are unchanged
        with self._stage("embeddings"), self.timings.measure("embeddings"):
            return await asyncio.to_thread(ensure_embeddings, memory, self.b.embedder)

    def _stored_embeddings(self) -> Any:
        """The node vectors of the memory an earlier run wrote into ``out``, if any."""
        if not (self.out / MANIFEST_FILE).is_file():
            return None
        try:
            return load_memory(self.out).embeddings
        except VideoTapestryError:
            return None

    def _manifest_build(self) -> dict[str, Any]:
        data = self.report.to_json()
        return {
            "builder_version": BUILDER_VERSION,
            "status": data["status"],
            "partial": data["partial"],
            "failed_clips": data["failures"],
            "degradations": data["degradations"],
            "stages": data["stages"],
            "timings": data["timings"],
            "usage": data["usage"],
            "wall_s": round(self.report.wall_s, 3),
            "clips": self.report.clips,
            "transcript": {
                "source": self.transcript.source,
                "detail": self.transcript.detail,
                "lines": len(self.transcript.lines),
            },
            "ocr": getattr(self.b.ocr, "version", None) if self.b.ocr is not None else None,
        }

    def _finish_report(self, status: str, message: str = "") -> None:
        self.report.status = status
        self.report.message = message
        timings = self.timings.to_json()
        timings["ocr_frames"] = self.ocr_stats.frames
        timings["ocr_frames_read"] = self.ocr_stats.read
        self.report.timings = timings
        self.report.usage = usage_dict(self.summary())

    def _write(self, memory: VideoMemory) -> VideoMemory:
        roles = sorted(set(BUILDER_PROMPT_ROLES.values()))
        manifest = new_manifest(
            "builder",
            source_path=str(self.video.resolve()),
            video_fingerprint=self.info.fingerprint,
            models={role: self.config.models.settings_for(role).model for role in roles},
            prompt_hashes={name: self._prompt_hash(name) for name in BUILDER_PROMPT_ROLES},
            config=self.config.model_dump(mode="json"),
            build=self._manifest_build(),
        )
        memory = memory.with_manifest(manifest)
        staging = self.build_dir / "staging"
        if staging.exists():
            shutil.rmtree(staging)
        with self.timings.measure("write"):
            written = save_memory(memory, staging)
            memory = memory.with_manifest(written)
            if self.transcript.source != "none" and self.transcript.problem is None:
                write_json_atomic(
                    staging / TRANSCRIPT_FILE,
                    self.transcript.to_file(self.info.fingerprint).to_json(),
                )
            write_json_atomic(staging / REPORT_FILE, self.report.to_json())
            # The old manifest goes first and the new one moves last: a directory without a
            # manifest is not a memory yet, so a kill between the moves never leaves new
            # files under an old manifest (the rerun writes them again).
            (self.out / MANIFEST_FILE).unlink(missing_ok=True)
            names = sorted(p.name for p in staging.iterdir() if p.name != MANIFEST_FILE)
            for stale in ("embeddings.npy", "embedding_ids.json", TRANSCRIPT_FILE):
                if stale not in names:
                    (self.out / stale).unlink(missing_ok=True)
            for name in [*names, MANIFEST_FILE]:
                os.replace(staging / name, self.out / name)
            staging.rmdir()
        if self.export_dir is not None:
            from memory_builders.export import export_released_layout

            export_released_layout(memory, self.export_dir, keyframe=self._keyframe)
        if not self.settings.keep_frames and not self.report.failures:
            shutil.rmtree(self.frames_dir, ignore_errors=True)
        return memory

    def _keyframe(self, entity: EntityNode) -> bytes | None:
        """The kept frame nearest an entity's grounding time (JPEG), if frames are on disk."""
        if entity.grounding_time is None or not self.scan.frames:
            return None
        frame = min(self.scan.frames, key=lambda f: abs(f.timestamp_s - entity.grounding_time))
        path = self.frames_dir / frame.file
        return path.read_bytes() if path.is_file() else None

    def _write_stop_report(self) -> None:
        try:
            write_json_atomic(self.build_dir / REPORT_FILE, self.report.to_json())
        except OSError as exc:  # pragma: no cover - reporting must not hide the real error
            log.warning("cannot write %s: %s", self.build_dir / REPORT_FILE, exc)


# --------------------------------------------------------------------------- pure helpers


def select_frames(frames: Sequence[KeptFrame], clip: ClipSpan, count: int) -> list[KeptFrame]:
    """``count`` kept frames spread over the clip: the nearest to each of ``count`` equal
    slots' centres, without repeats (all of them when the clip has fewer)."""
    if len(frames) <= count:
        return list(frames)
    width = (clip.end_s - clip.start_s) / count
    chosen: list[KeptFrame] = []
    for k in range(count):
        centre = clip.start_s + (k + 0.5) * width
        free = [f for f in frames if f not in chosen]
        chosen.append(min(free, key=lambda f: (abs(f.timestamp_s - centre), f.index)))
    return sorted(chosen, key=lambda f: f.index)


def normalize_perception(
    reply: ClipPerception, clip: ClipSpan, frame_times: Sequence[float]
) -> dict[str, Any]:
    """The model's reply as a clip record with absolute times inside the clip and valid ids."""
    start, end = clip.start_s, clip.end_s
    default_t = frame_times[0] if frame_times else start

    def clamp(t: float | None, fallback: float) -> float:
        value = fallback if t is None else t
        return round(min(max(value, start), end), 3)

    entities = []
    ids: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for number, item in enumerate(reply.entities, start=1):
        name = item.name.strip()
        if not name:
            continue
        local = item.id.strip() or f"e{number}"
        if local in ids:
            local = f"e{number}_{len(ids)}"
        ids[item.id.strip() or local] = local
        by_name[name.casefold()] = local
        entities.append(
            {
                "id": local,
                "name": name,
                "type": item.type.strip(),
                "description": item.description.strip(),
                "attributes": item.attributes,
                "seen_at": clamp(item.seen_at, default_t),
            }
        )

    def resolve(refs: Sequence[str]) -> list[str]:
        out = []
        for ref in refs:
            key = ref.strip()
            local = ids.get(key) or by_name.get(key.casefold())
            if local and local not in out:
                out.append(local)
        return out

    events = []
    for item in reply.events:
        if not item.action.strip():
            continue
        a, b = item.time_range if item.time_range is not None else (start, end)
        a, b = clamp(a, start), clamp(b, end)
        if b < a:
            a, b = b, a
        events.append(
            {
                "action": item.action.strip(),
                "description": item.description.strip(),
                "type": item.type.strip(),
                "subjects": resolve(item.subject_ids),
                "objects": resolve(item.object_ids),
                "start": a,
                "end": b,
            }
        )
    texts = []
    for item in reply.on_screen_text:
        if not item.text.strip():
            continue
        texts.append(
            {
                "text": item.text.strip(),
                "type": item.type.strip(),
                "description": item.description.strip(),
                "start": clamp(item.seen_at, default_t),
                "end": round(end, 3),
            }
        )
    return {"caption": reply.caption, "entities": entities, "events": events, "texts": texts}
