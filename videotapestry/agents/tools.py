"""The two observation tools the level agents call: frames (grids or single) and speech.

Each tool call decodes what it needs (off the event loop), asks the model one question, and
returns an ``Observation`` record. A failed model call is recorded as an observation with an
``error`` rather than raised: the level goes on with what it has, as the method's fallbacks
require, and the trace says what went wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from videotapestry.agents.context import RunContext
from videotapestry.agents.options import strip_option_steering
from videotapestry.agents.rules import match_evidence_lines
from videotapestry.agents.state import ImageRef, Level, Observation
from videotapestry.asr import TranscriptLine, format_transcript
from videotapestry.config import Config, ImagesConfig, LevelSettings, OverviewSettings
from videotapestry.contracts.method import AsrObservation, VisualObservation
from videotapestry.errors import ConfigError, ModelCallError, TranscriptionError, VideoError
from videotapestry.images import ImagePart
from videotapestry.video import (
    FrameJob,
    FrameTimestamps,
    ProxyReader,
    RenderedFrames,
    TimeWindow,
    VideoReader,
    individual_frame_budget,
    overview_frame_budget,
    render_frames,
    render_key,
    window_indices,
)


def level_frame_settings(config: Config, level: Level) -> LevelSettings:
    """The single-frame settings of the Skim (Macro) or Focus (Subgraph) level."""
    return config.agents.skim if level == "macro" else config.agents.focus


def level_frame_indices(ctx: RunContext, windows: Sequence[TimeWindow], level: Level) -> list[int]:
    """The frames a Skim or Focus observation of ``windows`` reads: the level's budget of
    individual frames spread over them (what ``observe_frames`` decodes, and what the
    level's prefetch decodes ahead of it)."""
    video = ctx.require_video("the visual observation tool")
    settings = level_frame_settings(ctx.config, level)
    budget = individual_frame_budget(ctx.config.images, settings)
    return window_indices(video, list(windows), budget)


def _refs(images: Sequence[ImagePart]) -> list[ImageRef]:
    return [ImageRef(**image.reference()) for image in images]


async def observe_overview_grids(
    ctx: RunContext, window: TimeWindow, instruction: str, *, agent: str, source_id: str = "V1"
) -> Observation:
    """Up to 120 frames from one continuous window, in 3x2 timestamp-labelled grids."""
    config = ctx.config
    video = ctx.require_video("the visual observation tool")
    record = Observation(
        kind="visual",
        level="super",
        source_id=source_id,
        instruction=instruction,
        windows=[(window.start_s, window.end_s)],
    )
    job = frame_job(
        ctx,
        video,
        [window],
        overview_frame_budget(config.images, config.agents.overview),
        layout="grids",
        overview=config.agents.overview,
    )
    return await _look(ctx, record, job, agent=agent)


async def observe_frames(
    ctx: RunContext,
    windows: Sequence[TimeWindow],
    instruction: str,
    *,
    level: Level,
    agent: str,
    source_id: str,
) -> Observation:
    """Up to 50 individual frames spread over ``windows`` (Skim and Focus)."""
    config = ctx.config
    video = ctx.require_video("the visual observation tool")
    settings = level_frame_settings(config, level)
    record = Observation(
        kind="visual",
        level=level,
        source_id=source_id,
        instruction=instruction,
        windows=[(w.start_s, w.end_s) for w in windows],
    )
    budget = individual_frame_budget(config.images, settings)
    job = frame_job(
        ctx,
        video,
        windows,
        budget,
        layout="frames",
        max_frames=settings.max_frames,
        label=config.agents.frame_timestamps,
    )
    return await _look(ctx, record, job, agent=agent)


def frame_job(
    ctx: RunContext,
    video: VideoReader,
    windows: Sequence[TimeWindow],
    count: int,
    *,
    layout: Literal["grids", "frames"],
    images: ImagesConfig | None = None,
    overview: OverviewSettings | None = None,
    max_frames: int = 0,
    label: FrameTimestamps = "tab",
) -> FrameJob:
    """The job that samples ``count`` frames over ``windows`` of the question's video."""
    return FrameJob(
        path=video.info.path,
        fingerprint=video.info.fingerprint,
        video=video.config,
        windows=tuple((w.start_s, w.end_s) for w in windows),
        count=count,
        layout=layout,
        images=images or ctx.config.images,
        overview=overview,
        max_frames=max_frames,
        label=label,
    )


async def render(ctx: RunContext, job: FrameJob) -> RenderedFrames:
    """``job``'s frames, off the event loop: from the facade's render cache when an earlier
    observation rendered the same job, else in its frame workers when it has them
    (``video.decode_workers``), else in a thread with the question's decoders."""
    proxy = isinstance(ctx.decoders[0], ProxyReader)
    renders = ctx.renders if ctx.config.video.frame_reuse == 0 else None
    key = render_key(job, proxy=proxy) if renders is not None else ""
    if renders is None:
        return await _render_now(ctx, job, proxy=proxy)
    if (kept := renders.get(key)) is not None:
        return kept
    future, mine = renders.rendering(key)
    if not mine:  # another question of this video renders the same job right now
        shared = await asyncio.shield(future)
        if shared is not None:
            return shared
        return await _render_now(ctx, job, proxy=proxy)  # it failed: its error was its own
    rendered = None
    try:
        rendered = await _render_now(ctx, job, proxy=proxy)
        renders.put(key, rendered)
        return rendered
    finally:
        renders.done(key, future, rendered)


async def _render_now(ctx: RunContext, job: FrameJob, *, proxy: bool) -> RenderedFrames:
    # A frame proxy is decoded here: the workers open the video itself, whose keyframes
    # (and so its snapped samples) the proxy only reproduces through its own reader.
    if ctx.frame_workers is not None and not proxy:
        return await asyncio.to_thread(ctx.frame_workers.render, job)
    return await asyncio.to_thread(render_frames, ctx.decoders, job)


async def _look(ctx: RunContext, record: Observation, job: FrameJob, *, agent: str) -> Observation:
    """Decode and encode off the event loop, then ask the observation tool."""
    try:
        rendered = await render(ctx, job)
    except VideoError as exc:
        return record.model_copy(update={"error": f"frame sampling failed: {exc}"})
    record = record.model_copy(
        update={"frame_times": rendered.frame_times, "images": _refs(rendered.images)}
    )
    return await _ask_visual(ctx, record, rendered.images, agent=agent)


async def _ask_visual(
    ctx: RunContext, record: Observation, images: Sequence[ImagePart], *, agent: str
) -> Observation:
    if not images:
        return record.model_copy(update={"error": "no frames could be sampled"})
    ctx.images.extend(images)
    prompt = ctx.prompts.render(
        "visual_observation",
        agent_name=agent,
        memory_level=record.level,
        observation_instruction=record.instruction,
        image_notes=[f"Image {i}: {image.label}" for i, image in enumerate(images, 1)],
    )
    try:
        reply = await ctx.session.complete_json(
            "observation", prompt, VisualObservation, images, level=record.level, images_first=True
        )
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        return record.model_copy(update={"error": str(exc)})
    return record.model_copy(
        update={
            "result": strip_option_steering(reply.observation_result).strip(),
            "uncertainty": strip_option_steering(reply.uncertainty).strip(),
        }
    )


async def observe_speech(
    ctx: RunContext, windows: Sequence[TimeWindow], instruction: str, *, source_id: str = "A1"
) -> tuple[Observation, list[TranscriptLine]]:
    """Transcript of the windows, read by a model that never sees the question or options."""
    record = Observation(
        kind="asr",
        level="super",
        source_id=source_id,
        instruction=instruction,
        windows=[(w.start_s, w.end_s) for w in windows],
    )
    if ctx.transcripts is None:
        raise ConfigError("the ASR observation tool was called without a transcript source")
    info = ctx.require_video("the ASR observation tool").info
    try:
        lines = await asyncio.to_thread(ctx.transcripts.transcribe, info, list(windows))
    except (TranscriptionError, VideoError) as exc:
        return record.model_copy(update={"error": f"transcription failed: {exc}"}), []
    record = record.model_copy(update={"transcript_lines": len(lines)})
    if not lines:
        found_nothing = {"result": "No speech in the selected windows.", "found": False}
        return record.model_copy(update=found_nothing), []
    prompt = ctx.prompts.render(
        "asr_observation", observation_instruction=instruction, asr=format_transcript(lines)
    )
    try:
        reply = await ctx.session.complete_json(
            "asr_observation", prompt, AsrObservation, level="super"
        )
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        return record.model_copy(update={"error": str(exc)}), lines
    asr = ctx.config.asr
    # In a thread: a quote that is no whole line is looked for in every line and pair of
    # lines of the windows, which for a model that paraphrases is a while of CPU.
    quoted = await asyncio.to_thread(
        match_evidence_lines,
        reply.asr_evidence,
        lines,
        windows=[(w.start_s, w.end_s) for w in windows],
        tolerance_s=asr.quote_tolerance_s,
        fragments=asr.quote_fragments,
    )
    return (
        record.model_copy(
            update={
                "result": strip_option_steering(reply.observation_result).strip(),
                "evidence_lines": [(line.start_s, line.end_s, line.text) for line in quoted.lines],
                "unmatched_evidence": list(quoted.unmatched),
                "found": bool(reply.asr_evidence.strip()),
            }
        ),
        lines,
    )
