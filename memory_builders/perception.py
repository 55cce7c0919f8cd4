"""Stage 4: per clip, concurrently, OCR of its kept frames and one perception call.

Each clip is two checkpointed steps. OCR reads the clip's kept frames (``frames_to_read``:
one per ``ocr.interval_s`` slot); its spans go into the perception prompt, so the model is
told the on-screen text it would otherwise misread. The perception call then shows the
model ``perception.frames`` of the clip's frames (``clip_images``) with the clip's
transcript and OCR lines, and its reply becomes the clip's record (``clip_records``).

With ``perception.transcript`` off the call carries no speech at all (the prompt does not
even mention it): the paper's memories hold what is seen, and speech reaches the agents only
through the ASR tool, so its ablations without ASR or without observation are comparable
only on memories built that way. The transcript is still stored with the memory for that
tool.

A clip fails, and is left out of the memory, when its frames cannot be decoded or its reply
stays unusable after the repair retry; each failure is in the report, and above
``builder.max_failed_share`` failed clips the build stops. A failed clip has no
checkpoint, so the next run tries it again. Clips wholly inside a lost span (the scan could
not decode that stretch of the file) fail too, but leave the share alone: the span is
already reported, and stopping would only withhold the memory of what the file does hold.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field

import numpy as np

from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.clip_images import clip_images, select_frames
from memory_builders.clip_records import ClipRecord, normalize_perception
from memory_builders.context import FATAL_MODEL_ERRORS, BuildContext, fan_out
from memory_builders.report import ClipFailure, StageReport, TooManyFailuresError
from memory_builders.scan import KeptFrame, KeptFrames
from memory_builders.segmentation import ClipSpan
from memory_builders.transcript import TranscriptResult
from videotapestry.contracts.builder import ClipPerception
from videotapestry.errors import ModelCallError, NoDecodableFramesError, StructuredOutputError
from videotapestry.images import ImagePart
from videotapestry.llm import ModelSession
from videotapestry.memory import clock
from videotapestry.ocr import OcrEngine, TextSpan, frames_to_read, read_texts
from videotapestry.timecode import format_timestamp
from videotapestry.video import Frame, VideoInfo

#: A clip's decoded frames by index, shared by its OCR and its images.
LoadedFrames = dict[int, np.ndarray]


def release_frames(loaded: LoadedFrames, shown: list[KeptFrame]) -> None:
    """Drop the decoded frames the clip's images will not show, once its OCR is done.

    Up to ``builder.concurrency + 2 * cpu_workers`` clips are between their OCR and their
    model call at once, each waiting for a worker thread to make its images, then for a
    call slot; each used to hold every frame its OCR decoded until the call returned
    (a 640x360 frame is 0.7 MB): ``bench/bench_live.py`` (30 minutes, appends of 5) counted
    124-143 decoded frames alive at once in every append, 40-81 with this, and the peak RSS
    during perception went from 1,225-1,344 MB to 1,101-1,162 MB. The frames the images
    show are kept, so none is decoded twice; after the images, none (``describe``)."""
    keep = {frame.index for frame in shown}
    for index in [index for index in loaded if index not in keep]:
        del loaded[index]


@dataclass
class Perceptions:
    """Per clip: its record (None when it failed) and its OCR spans."""

    records: dict[str, ClipRecord | None] = field(default_factory=dict)
    ocr_spans: dict[str, list[TextSpan]] = field(default_factory=dict)

    def caption(self, clip_id: str, *, missing: str = "") -> str:
        """The clip's caption; ``missing`` when the clip failed or was not perceived."""
        record = self.records.get(clip_id)
        return record["caption"] if record else missing


async def perception_stage(
    ctx: BuildContext,
    info: VideoInfo,
    frames: KeptFrames,
    transcript: TranscriptResult,
    clips: list[ClipSpan],
) -> Perceptions:
    perceptions = Perceptions()
    perceiver = _ClipPerceiver(ctx, info, frames, transcript, clips, perceptions)
    with ctx.stage("perception") as (stage, session):
        bar = ctx.tools.progress.stage("perception", len(clips))
        limit = asyncio.Semaphore(ctx.settings.concurrency)

        async def one(clip: ClipSpan) -> bool:
            called = await perceiver.perceive(clip, session, stage, limit)
            bar.update()
            return called

        try:
            await fan_out(clips, one, ctx.settings.concurrency + 2 * ctx.settings.cpu_workers)
        finally:
            bar.close()
    perceiver.check_failures(final=True)
    return perceptions


class _ClipPerceiver:
    """The two steps of each clip, and the failures they record."""

    def __init__(
        self,
        ctx: BuildContext,
        info: VideoInfo,
        frames: KeptFrames,
        transcript: TranscriptResult,
        clips: list[ClipSpan],
        perceptions: Perceptions,
    ) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.info = info
        self.frames = frames
        self.transcript = transcript
        self.clips = clips
        self.perceptions = perceptions

    async def perceive(
        self, clip: ClipSpan, session: ModelSession, stage: StageReport, limit: asyncio.Semaphore
    ) -> bool:
        """One clip; returns whether a model call was made."""
        frames = self.frames.between(clip.start_s, clip.end_s)
        if not frames:
            self._fail(
                clip,
                "frames",
                f"no frame between {clip.start_s:.2f} and {clip.end_s:.2f} s could be decoded "
                f"({self._why_no_frames(clip)})",
            )
            return False
        loaded: LoadedFrames = {}
        try:
            spans = await self._ocr(clip, frames, loaded)
        except NoDecodableFramesError as exc:
            self._fail(clip, "frames", str(exc))
            return False
        self.perceptions.ocr_spans[clip.id] = spans
        release_frames(loaded, select_frames(frames, clip, self.settings.perception.frames))
        speech = self.settings.perception.transcript
        transcript = (
            self.transcript.clip_text(clip, self.settings.perception.max_transcript_chars)
            if speech
            else ""
        )
        ocr_lines = "\n".join(f"[{clock(s.start_s)}-{clock(s.end_s)}] {s.text}" for s in spans)
        called = False

        async def describe() -> ClipRecord | None:
            nonlocal called
            try:
                await self.frames.ensure()
                images, notes = await self.ctx.cpu(self._images, clip, frames, loaded)
            except NoDecodableFramesError as exc:
                self._fail(clip, "frames", str(exc))
                return None
            finally:
                loaded.clear()  # the images are JPEGs now: no decoded frame waits for the call
            prompt = self.ctx.tools.prompts.render(
                "builder_clip",
                clip_id=clip.id,
                clip_start=format_timestamp(clip.start_s),
                clip_end=format_timestamp(clip.end_s),
                video_duration=format_timestamp(self.info.duration_s),
                image_notes=notes,
                transcript=transcript,
                ocr_lines=ocr_lines,
                speech=speech,
            )
            called = True
            async with limit:
                try:
                    reply = await session.complete_json(
                        "builder_clip", prompt, ClipPerception, images, level="clip"
                    )
                except StructuredOutputError as exc:
                    reason = f"reply unusable after one repair retry: {exc.validation_error}"
                    self._fail(clip, "perception", reason)
                    return None
                except FATAL_MODEL_ERRORS as exc:
                    raise self.ctx.stopped("builder_clip", exc) from None
                except ModelCallError as exc:
                    self._fail(clip, "perception", str(exc))
                    return None
            return normalize_perception(reply, clip, [f.timestamp_s for f in frames])

        key = self._perception_key(clip, transcript, ocr_lines)
        record = await checkpointed(
            self.ctx.store, f"perception/{clip.id}", key, describe, tally=stage
        )
        if record is not None:
            self.perceptions.records[clip.id] = record
        return called

    async def _ocr(
        self, clip: ClipSpan, frames: list[KeptFrame], loaded: LoadedFrames
    ) -> list[TextSpan]:
        """The clip's OCR spans, checkpointed ([] without an engine)."""
        engine = self.ctx.tools.ocr
        if engine is None:
            return []

        async def read() -> list[TextSpan]:
            await self.frames.ensure()
            return await self.ctx.cpu(self._read_texts, engine, clip, frames, loaded)

        return await checkpointed(
            self.ctx.store,
            f"ocr/{clip.id}",
            self._ocr_key(clip, engine),
            read,
            load=lambda items: [TextSpan.from_json(item) for item in items],
            dump=lambda spans: [span.to_json() for span in spans],
        )

    def _read_texts(
        self, engine: OcrEngine, clip: ClipSpan, frames: list[KeptFrame], loaded: LoadedFrames
    ) -> list[TextSpan]:
        """On a worker thread: OCR of the clip's frames, one per ``ocr.interval_s`` slot."""
        times = [f.timestamp_s for f in frames]
        picked = [frames[i] for i in frames_to_read(times, self.settings.ocr.interval_s)]
        with self.ctx.timings.measure("ocr"):
            return read_texts(
                engine,
                [(f.timestamp_s, functools.partial(self._load, loaded, f)) for f in picked],
                self.settings.ocr,
                end_s=clip.end_s,
                stats=self.ctx.ocr_stats,
            )

    def _images(
        self, clip: ClipSpan, frames: list[KeptFrame], loaded: LoadedFrames
    ) -> tuple[list[ImagePart], list[str]]:
        """On a worker thread: the clip's chosen frames as the images of its call."""
        chosen = select_frames(frames, clip, self.settings.perception.frames)
        picked = [Frame(f.timestamp_s, f.index, self._load(loaded, f)) for f in chosen]
        with self.ctx.timings.measure("jpeg"):
            return clip_images(picked, self.settings.perception, self.ctx.config.images)

    def _load(self, loaded: LoadedFrames, frame: KeptFrame) -> np.ndarray:
        if frame.index not in loaded:
            loaded[frame.index] = self.frames.load(frame)
        return loaded[frame.index]

    def _ocr_key(self, clip: ClipSpan, engine: OcrEngine) -> str:
        version = getattr(engine, "version", getattr(engine, "name", "none"))
        ocr = self.settings.ocr.model_dump()
        return stage_key("ocr", self.frames.key, clip.start_s, clip.end_s, ocr, version)

    def _perception_key(self, clip: ClipSpan, transcript: str, ocr_lines: str) -> str:
        return stage_key(
            "perception",
            self.frames.key,
            clip.id,
            clip.start_s,
            clip.end_s,
            self.settings.perception.model_dump(),
            self.ctx.config.images.model_dump(),
            self.ctx.prompt_hash("builder_clip"),
            self.ctx.model_identity("builder_clip"),
            transcript,
            ocr_lines,
        )

    def _why_no_frames(self, clip: ClipSpan) -> str:
        scan = self.frames.result
        if scan.errors:
            return scan.errors[-1]
        if scan.decoded_until_s < clip.start_s:
            return (
                f"the frames end at {scan.decoded_until_s:.2f} s although the file "
                f"says {self.info.duration_s:.2f} s: truncated?"
            )
        return "the decoder returned none"

    def _fail(self, clip: ClipSpan, stage: str, reason: str) -> None:
        report = self.ctx.report
        report.failures.append(ClipFailure(clip.id, clip.start_s, clip.end_s, stage, reason))
        self.perceptions.records[clip.id] = None
        self.ctx.tools.progress.message(f"clip {clip.id} failed ({stage}): {reason}")
        self.check_failures(final=False)

    def check_failures(self, *, final: bool) -> None:
        """Stop the build when more clips failed than ``builder.max_failed_share`` allows."""
        failures = self.ctx.report.failures
        lost = self.ctx.report.lost_spans
        counted = [
            f
            for f in failures
            if not any(s.start_s - 1e-6 <= f.start_s and f.end_s <= s.end_s + 1e-6 for s in lost)
        ]
        if not counted:
            return
        total, failed = len(self.clips), len(counted)
        share = self.settings.max_failed_share
        if not (total and failed > share * total):
            return
        records = self.perceptions.records.values()
        done = total - len(failures) if final else sum(1 for r in records if r)
        last = counted[-1]
        raise TooManyFailuresError(
            f"{failed} of {total} clips failed, more than builder.max_failed_share={share:g} "
            f"allows (last: {last.clip_id}, {last.stage}: {last.reason}). The {done} finished "
            f"clips are checkpointed in {self.ctx.build_dir}; fix the cause and run the same "
            "command again to resume"
        )
