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

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videotapestry.asr import SubtitleSource, TranscriptCache, TranscriptLine, WhisperTranscriber
from videotapestry.asr.stored import TranscriptFile
from videotapestry.config import Config
from videotapestry.errors import SubtitleError, TranscriptionError
from videotapestry.video.reader import VideoInfo
from videotapestry.video.windows import TimeWindow


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
        return {"source": "subtitles", "file": str(subtitles), "sha256": _file_hash(subtitles)}
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
    on_chunk: Any = None,
) -> TranscriptResult:
    """Run the planned source. A failure is returned as ``problem``, not raised: a build
    without speech is still a build (the report says what was lost)."""
    if plan["source"] == "none":
        return TranscriptResult([], "none", plan.get("reason", ""))
    if plan["source"] == "subtitles":
        try:
            lines = SubtitleSource(plan["file"]).lines(info.duration_s)
        except SubtitleError as exc:
            return TranscriptResult([], "subtitles", plan["file"], problem=str(exc))
        return TranscriptResult(lines, "subtitles", plan["file"])
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
