"""The memory builder: a raw video in, a MemDreamer-style hierarchical memory out (SPEC §4).

The stages, in order, each in its module and each checkpointed in ``<out>/build/`` under a
key of its inputs (``checkpoints``):

1. ``scan``: probe and fingerprint the video, then one decoding pass for the shot cuts and
   the kept frames; 2. ``transcript``, beside the scan: Whisper or the given subtitles;
   and, when ``builder.frame_proxy`` asks for it, ``frame_proxy``: a small copy of the video
   for query-time decoding, written into the memory directory;
3. ``segmentation``: clips from the shot cuts;
4. ``perception``: per clip, concurrently, OCR of its kept frames and one perception call;
5. ``macro``: MacroEvent boundaries (sliding window over captions), then per MacroEvent its
   subgraph and one call for its label, summary and relations;
6. ``entities``: entity unification; 7. ``summary``: SuperEvents and the root;
8. ``assembly``: the memory and its embeddings; ``output``: the memory directory, with its
   manifest, transcript and build report.

Before any stage, a build into a folder whose memory is complete, stamped with the same
inputs and unchanged on disk returns that memory as it is (``stamp``): a rerun of a finished
build decodes nothing and calls no model.

Failures: a clip whose frames cannot be decoded or whose reply stays unusable after the
repair retry is recorded and left out (the memory is then *partial*); above
``builder.max_failed_share`` failed clips the build stops. A stretch of the video that
cannot be decoded (a truncated file, a corrupt tail) is recorded as a lost span, which
also makes the memory partial; its frameless clips are failures that do not count towards
that share, as no rerun can bring them back. A model error that every call
would repeat (no key, unknown model, unreachable server, a rejected parameter) stops the
build at the first call that meets it. Either way the checkpoints stay, and running the same
command again resumes. Failed clips are tried again on a rerun; the response cache makes
a deterministic failure free to repeat.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory_builders.assembly import assemble_memory, embed_memory
from memory_builders.context import BuildContext
from memory_builders.entities import entity_stage
from memory_builders.frame_proxy import frame_proxy_stage
from memory_builders.lock import build_lock, check_same_video
from memory_builders.macro import macro_stage
from memory_builders.output import REPORT_FILE, check_directory, write_memory, write_stop_report
from memory_builders.perception import perception_stage
from memory_builders.progress import BuildProgress, StageListener
from memory_builders.report import BuildReport, Degradation
from memory_builders.scan import probe_stage, scan_stage
from memory_builders.segmentation import clip_stage
from memory_builders.stamp import build_stamp, up_to_date
from memory_builders.summary import summary_stages
from memory_builders.transcript import transcript_stage
from videotapestry.config import Config, load_config
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.errors import VideoError, VideoTapestryError
from videotapestry.llm import ModelService
from videotapestry.memory import VideoMemory, load_memory
from videotapestry.ocr import OcrEngine, make_ocr_engine, missing_ocr
from videotapestry.prompts import PromptRegistry
from videotapestry.video import fingerprint

#: The build directory inside the memory directory: checkpoints, kept frames, staging.
BUILD_DIR = "build"
#: The one stage of a build that kept an up-to-date memory (``MemoryBuilder.abuild``).
KEPT_STAGE = "up_to_date"


@dataclass
class BuildResult:
    memory: VideoMemory
    report: BuildReport
    path: Path
    #: The memory in ``path`` was up to date and is returned as it was: nothing ran.
    kept: bool = False

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
        ocr_engine: OcrEngine | Literal["config"] | None = "config",
    ) -> None:
        self.config = config if isinstance(config, Config) else load_config(config)
        self.prompts = prompts or PromptRegistry(self.config.prompts.override_dir)
        self.service = service or ModelService(self.config)
        self.embedder: Embedder = embedder or SentenceTransformerEmbedder(self.config.embedding)
        self.progress = progress or BuildProgress(enabled=False)
        self.ocr = (
            make_ocr_engine(self.config.builder.ocr) if isinstance(ocr_engine, str) else ocr_engine
        )

    def build(
        self,
        video: str | Path,
        out: str | Path,
        *,
        subtitles: str | Path | None = None,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
        force: bool = False,
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
                    force=force,
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
        force: bool = False,
    ) -> BuildResult:
        """Build (or resume) ``video``'s memory into ``out``, holding ``out``'s build lock
        throughout (``lock``): a second build into ``out`` is refused while this one runs,
        and so is a build of another video into a folder holding a memory, unless ``force``
        (which replaces that memory).

        A complete memory that this build would make again (``stamp``: the same video,
        settings, prompts and models, its files as written) is returned at once, read from
        ``out`` (``BuildResult.kept``), unless ``restart`` or ``export_memdreamer``."""
        out, source = Path(out), Path(video)
        check_directory(out, out / BUILD_DIR)
        with build_lock(out, out / BUILD_DIR, source):
            check_same_video(out, source, force=force)
            if not restart and export_memdreamer is None:
                kept = self._kept(source, out, Path(subtitles) if subtitles else None)
                if kept is not None:
                    return kept
            return await self._build_locked(source, out, subtitles, restart, export_memdreamer)

    def _kept(self, video: Path, out: Path, subtitles: Path | None) -> BuildResult | None:
        """The memory in ``out`` when it is up to date (``stamp.up_to_date``), with a report
        saying so; None when it must be built."""
        started = time.perf_counter()
        try:
            key = build_stamp(self, fingerprint(video), subtitles)
        except (VideoError, OSError):
            return None  # the probe stage says what is wrong, with its own report
        manifest = up_to_date(out, key)
        if manifest is None:
            return None
        try:
            memory = load_memory(out)
            stored = json.loads((out / REPORT_FILE).read_text(encoding="utf-8"))
        except (VideoTapestryError, OSError, ValueError):
            return None
        build = manifest.get("build") or {}
        report = BuildReport(
            video=str(video),
            out=str(out),
            duration_s=float(stored.get("duration_s") or 0.0),
            fingerprint=str(manifest.get("video_fingerprint") or ""),
            clips=int(build.get("clips") or 0),
            degradations=[Degradation(**d) for d in build.get("degradations") or []],
            counts=dict(stored.get("counts") or {}),
            status="complete",
            message=f"memory up to date, kept: {out}; --restart to build again",
        )
        report.stage(KEPT_STAGE).reused = 1
        report.wall_s = report.stages[KEPT_STAGE].wall_s = time.perf_counter() - started
        return BuildResult(memory, report, out, kept=True)

    async def abuild_version(
        self,
        recording: Path,
        out: Path,
        version_dir: Path,
        identity: str,
        *,
        previous: Path | None = None,
        final: bool = True,
    ) -> BuildResult:
        """One version of a followed memory (``follow``): ``recording`` as it is now, built
        into ``version_dir`` from the checkpoints in ``out``, under the stream's ``identity``
        instead of a fingerprint of the growing file. The caller holds ``out``'s lock; what
        an earlier version finished (clips, MacroEvents) is reused by its checkpoint keys,
        the ``previous`` version's node vectors where the texts are unchanged, and its
        SuperEvents but the last (``summary.summary_stages``). ``final``: the stream ended
        and this is its last version."""
        ctx = BuildContext(self, recording, version_dir, out / BUILD_DIR)
        ctx.live_identity = identity
        ctx.earlier_out = previous or version_dir
        ctx.live_final = final
        return await self._run(ctx, None, None, stamped=False)

    async def _build_locked(
        self,
        video: Path,
        out: Path,
        subtitles: str | Path | None,
        restart: bool,
        export_memdreamer: str | Path | None,
    ) -> BuildResult:
        ctx = BuildContext(self, video, out, out / BUILD_DIR)
        if restart:
            ctx.store.clear()
        return await self._run(ctx, subtitles, export_memdreamer, stamped=True)

    async def _run(
        self,
        ctx: BuildContext,
        subtitles: str | Path | None,
        export_memdreamer: str | Path | None,
        *,
        stamped: bool,
    ) -> BuildResult:
        started = time.perf_counter()
        missing = missing_ocr(self.config.builder.ocr, self.ocr)
        if missing:
            ctx.degraded("ocr", "builder", missing)
        try:
            info = await probe_stage(ctx)
            frames, transcript, _proxy = await asyncio.gather(
                scan_stage(ctx, info),
                transcript_stage(ctx, info, Path(subtitles) if subtitles else None),
                # A followed memory reads its recording: no proxy is encoded per version.
                frame_proxy_stage(ctx, info) if ctx.live_identity is None else _nothing(),
            )
            clips = clip_stage(ctx, info.duration_s, frames.result, fps=info.fps)
            perceptions = await perception_stage(ctx, info, frames, transcript, clips)
            macros = await macro_stage(ctx, info, clips, perceptions)
            groups = await entity_stage(ctx, macros.drafts)
            earlier = await asyncio.to_thread(ctx.earlier_memory) if ctx.live_identity else None
            plans, summary = await summary_stages(ctx, info, macros, earlier, final=ctx.live_final)
            memory = assemble_memory(ctx, info, clips, perceptions, macros, groups, plans, summary)
            memory = await embed_memory(ctx, memory)
            ctx.report.wall_s = time.perf_counter() - started
            ctx.finish_report("partial" if ctx.report.partial else "complete")
            export_dir = Path(export_memdreamer) if export_memdreamer else None
            subtitle_file = Path(subtitles) if subtitles else None
            stamp = build_stamp(self, info.fingerprint, subtitle_file) if stamped else None
            memory = write_memory(ctx, memory, info, transcript, frames, export_dir, stamp)
        except VideoTapestryError as exc:  # BuildError, or a video/config/ASR problem
            ctx.report.wall_s = time.perf_counter() - started
            ctx.finish_report("stopped", str(exc))
            write_stop_report(ctx)
            raise
        finally:
            ctx.close()
        return BuildResult(memory, ctx.report, ctx.out)


async def _nothing() -> None:
    return None


def create_builder(
    config: Config,
    *,
    service: ModelService,
    embedder: Embedder,
    prompts: PromptRegistry,
    progress: bool | BuildProgress = False,
    on_stage: StageListener | None = None,
) -> MemoryBuilder:
    """The ``videotapestry.memory_builders`` entry point: how ``VideoTapestry.build_memory``
    gets a builder that shares its config, models, embedder and prompts. ``progress``: bars
    on stderr or none, or a display of the caller's (a server reports each stage's advance);
    ``on_stage`` hears each stage's count (a server's progress notifications), bars drawn or
    not (with a display of the caller's, set its listener instead)."""
    return MemoryBuilder(
        config,
        service=service,
        embedder=embedder,
        prompts=prompts,
        progress=progress
        if isinstance(progress, BuildProgress)
        else BuildProgress(enabled=progress, listener=on_stage),
    )
