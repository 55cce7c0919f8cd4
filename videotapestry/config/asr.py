"""The ``asr`` section: which speech is read for a question, and how Whisper transcribes it."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from videotapestry.config.base import StrictModel, user_cache_dir


class AsrConfig(StrictModel):
    """Speech for a question: transcript windows the Overview agent plans, read from the
    given subtitles or transcribed by faster-whisper (cached per window and model)."""

    source: Literal["whisper", "subtitles"] = "whisper"
    max_windows: int = Field(3, ge=1)
    min_window_s: float = Field(600.0, gt=0)
    max_window_s: float = Field(1200.0, gt=0)
    whisper_model: str = Field("large-v3", description="faster-whisper model name or directory")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    compute_type: str = "default"
    language: str | None = Field(None, description="null lets Whisper detect the language")
    beam_size: int = Field(5, ge=1)
    vad_filter: bool = True
    word_timestamps: bool = True
    cpu_threads: int = Field(0, ge=0, description="0 lets CTranslate2 choose")
    pause_split_s: float = Field(
        1.0,
        ge=0.0,
        description="start a new transcript line where words are further apart than this "
        "(needs word_timestamps); 0 keeps Whisper's segments as they are",
    )
    cache_dir: str | None = Field(
        None,
        description="transcript cache directory (one JSON file per video window and model); "
        "null uses $XDG_CACHE_HOME/videotapestry/transcripts",
    )
    quote_tolerance_s: float = Field(
        2.0,
        ge=0.0,
        description="a quoted transcript line with a timestamp counts only where it was said "
        "within this many seconds of that time",
    )
    quote_fragments: bool = Field(
        True,
        description="a quote may be a run of words of one transcript line or of two adjacent "
        "ones (it stands for those lines); false counts whole lines only, the strictest "
        "reading of the paper's verbatim evidence",
    )
    subtitle_fallback_encoding: str | None = Field(
        None,
        description="how to decode a subtitle file that has no byte-order mark and is not "
        "UTF-8 (e.g. cp1252, utf-16-le); null makes such a file an error",
    )
    memory_transcript: bool = Field(
        True,
        description="read the transcript a built memory stores (transcript.json) instead of "
        "running Whisper again; subtitles given to a question still win",
    )

    @field_validator("subtitle_fallback_encoding")
    @classmethod
    def _known_codec(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                codecs.lookup(value)
            except LookupError:
                raise ValueError(f"unknown text encoding {value!r}") from None
        return value

    def resolved_cache_dir(self) -> Path:
        """The transcript cache: ``cache_dir`` when set, else one in the user's cache directory."""
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        return user_cache_dir() / "transcripts"
