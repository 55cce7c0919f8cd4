"""Speech for the ASR tool: Whisper over selected windows, or a benchmark's subtitle file."""

from __future__ import annotations

from pathlib import Path

from videotapestry.asr.cache import TranscriptCache
from videotapestry.asr.stored import TRANSCRIPT_FILE, StoredTranscript, TranscriptFile
from videotapestry.asr.subtitles import SubtitleSource
from videotapestry.asr.types import (
    TranscriptLine,
    TranscriptSource,
    format_transcript,
    lines_in_windows,
)
from videotapestry.asr.whisper import TranscriptionStats, WhisperTranscriber
from videotapestry.config import AsrConfig
from videotapestry.errors import ConfigError

__all__ = [
    "TRANSCRIPT_FILE",
    "StoredTranscript",
    "SubtitleSource",
    "TranscriptCache",
    "TranscriptFile",
    "TranscriptLine",
    "TranscriptSource",
    "TranscriptionStats",
    "WhisperTranscriber",
    "format_transcript",
    "lines_in_windows",
    "make_transcript_source",
]


def make_transcript_source(
    config: AsrConfig,
    *,
    subtitle_path: str | Path | None = None,
    subtitle_offset_s: float = 0.0,
    cache: bool = True,
) -> TranscriptSource:
    """The source ``config.source`` names: Whisper (cached in ``asr.cache_dir``) or subtitles.

    With ``source: subtitles`` the question's subtitle file must be given; there is no
    silent fallback to Whisper, which would change what the method sees.
    """
    if config.source == "subtitles":
        if subtitle_path is None:
            raise ConfigError(
                "asr.source is 'subtitles' but no subtitle file was given for this video; "
                "pass its path, or set asr.source=whisper"
            )
        return SubtitleSource(
            subtitle_path,
            offset_s=subtitle_offset_s,
            fallback_encoding=config.subtitle_fallback_encoding,
        )
    store = TranscriptCache(config.resolved_cache_dir()) if cache else None
    return WhisperTranscriber(config, store)
