"""Stage 3: the transcript of the whole video, made once and stored with the memory.

Sources, by ``builder.transcript.source``: the subtitle file given to the build (SRT, WebVTT,
LongVideoBench JSON), or faster-whisper over consecutive ``chunk_s`` windows (the existing
ASR module, with its per-window cache, so a killed build does not transcribe a finished
window again). A video without an audio stream simply has no transcript. The lines are
written to ``transcript.json`` in the memory directory; at question time the ASR tool reads
them from there (``videotapestry.asr.stored``) instead of running Whisper again, with the
same timestamps.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.context import BuildContext
from memory_builders.segmentation import ClipSpan
from videotapestry.asr import (
    SubtitleSource,
    TranscriptCache,
    TranscriptFile,
    TranscriptLine,
    WhisperTranscriber,
    format_transcript,
    lines_in_windows,
)
from videotapestry.config import Config
from videotapestry.errors import SubtitleError, TranscriptionError
from videotapestry.video import TimeWindow, VideoInfo


@dataclass
class TranscriptResult:
    lines: list[TranscriptLine]
    source: str  # "whisper", "subtitles" or "none"
    detail: str = ""  # the Whisper settings or the subtitle file
    problem: str | None = None  # why there is no transcript when one was expected
    chunks: list[list[float]] = field(default_factory=list)

    def to_file(self, fingerprint: str) -> TranscriptFile:
        return TranscriptFile(
            source=self.source, detail=self.detail, video_fingerprint=fingerprint, lines=self.lines
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": [[line.start_s, line.end_s, line.text] for line in self.lines],
            "source": self.source,
            "detail": self.detail,
            "problem": self.problem,
            "chunks": self.chunks,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TranscriptResult:
        return cls(
            lines=[TranscriptLine(float(s), float(e), str(t)) for s, e, t in data["lines"]],
            source=str(data["source"]),
            detail=str(data.get("detail", "")),
            problem=data.get("problem"),
            chunks=[list(map(float, c)) for c in data.get("chunks", [])],
        )

    def clip_text(self, clip: ClipSpan, max_chars: int) -> str:
        """The lines spoken during ``clip``, cut at a line end to at most ``max_chars``."""
        text = format_transcript(lines_in_windows(self.lines, [(clip.start_s, clip.end_s)]))
        return text if len(text) <= max_chars else text[:max_chars].rsplit("\n", 1)[0] + "\n[...]"


async def transcript_stage(
    ctx: BuildContext, info: VideoInfo, subtitles: Path | None
) -> TranscriptResult:
    """The checkpointed transcript; one that failed is kept out of the checkpoint (the next
    run tries again) and recorded as a degradation."""
    with ctx.stage("transcript") as (stage, _):
        plan = transcript_plan(ctx.config, info, subtitles)
        if ctx.live_identity is not None:  # a growing recording: one transcript per length
            plan["until_s"] = round(info.duration_s, 3)

        async def transcribe() -> TranscriptResult:
            with ctx.timings.measure("asr"):
                return await asyncio.to_thread(make_transcript, ctx.config, info, plan)

        transcript = await checkpointed(
            ctx.store,
            "transcript",
            stage_key("transcript", info.fingerprint, plan),
            transcribe,
            load=TranscriptResult.from_json,
            dump=TranscriptResult.to_json,
            tally=stage,
            keep=lambda result: result.problem is None,
        )
    if transcript.problem:
        ctx.degraded("transcript", "whole video", transcript.problem)
    return transcript


def transcript_plan(config: Config, info: VideoInfo, subtitles: Path | None) -> dict[str, Any]:
    """What the transcript will be made from; its hash is the stage's checkpoint key."""
    source = config.builder.transcript.source
    if source == "auto":
        source = "subtitles" if subtitles is not None else "whisper"
    if source == "subtitles":
        if subtitles is None:
            raise TranscriptionError(
                "builder.transcript.source is 'subtitles' but no subtitle file was given; pass "
                "--subtitles FILE, or set builder.transcript.source=whisper"
            )
        # Read now: a file with no usable cue stops the build before any model call.
        fallback = config.asr.subtitle_fallback_encoding
        SubtitleSource(subtitles, fallback_encoding=fallback).lines(info.duration_s)
        return {
            "source": "subtitles",
            "file": str(subtitles),
            "sha256": _file_hash(subtitles),
            "fallback_encoding": fallback,
        }
    if source == "none" or not info.has_audio:
        return {"source": "none", "reason": "disabled" if source == "none" else "no audio"}
    transcriber = WhisperTranscriber(config.asr)
    return {
        "source": "whisper",
        "model": transcriber.model_key,
        "chunk_s": config.builder.transcript.chunk_s,
    }


def chunk_windows(duration_s: float, chunk_s: float) -> list[TimeWindow]:
    windows = []
    start = 0.0
    while start < duration_s - 1e-6:
        end = min(duration_s, start + chunk_s)
        windows.append(TimeWindow(start, end))
        start = end
    return windows


def make_transcript(
    config: Config,
    info: VideoInfo,
    plan: dict[str, Any],
    *,
    on_chunk: Callable[[TimeWindow], None] | None = None,
) -> TranscriptResult:
    """Run the planned source. A failure is returned as ``problem``, not raised: a build
    without speech is still a build (the report says what was lost)."""
    if plan["source"] == "none":
        return TranscriptResult([], "none", plan.get("reason", ""))
    if plan["source"] == "subtitles":
        # A subtitle file that yields no line is never stored as a complete transcript.
        subtitles = SubtitleSource(plan["file"], fallback_encoding=plan.get("fallback_encoding"))
        subtitle_lines = subtitles.lines(info.duration_s)
        detail = f"{plan['file']} ({subtitles.encoding})"
        if not subtitle_lines:
            problem = f"subtitle file {plan['file']} has no cue inside the video's duration"
            return TranscriptResult([], "subtitles", detail, problem=problem)
        return TranscriptResult(subtitle_lines, "subtitles", detail)
    transcriber = WhisperTranscriber(config.asr, TranscriptCache(config.asr.resolved_cache_dir()))
    lines: list[TranscriptLine] = []
    chunks = chunk_windows(info.duration_s, float(plan["chunk_s"]))
    try:
        for window in chunks:
            lines.extend(transcriber.transcribe_window(info, window))
            if on_chunk is not None:
                on_chunk(window)
    except TranscriptionError as exc:
        return TranscriptResult([], "whisper", plan["model"], problem=str(exc))
    lines.sort(key=lambda line: (line.start_s, line.end_s))
    return TranscriptResult(
        lines,
        "whisper",
        plan["model"],
        chunks=[[w.start_s, w.end_s] for w in chunks],
    )


def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:24]
    except OSError as exc:
        raise SubtitleError(f"cannot read subtitle file {path}: {exc.strerror or exc}") from None
