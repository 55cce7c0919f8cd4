"""The transcript a memory builder stored with its memory (``transcript.json``).

The builder transcribes the whole video once; the query-time ASR tool reads the lines inside
its windows from this file instead of running Whisper again, so both see the same words at
the same times. The file records the video fingerprint, and a transcript of another video is
refused like the memory itself would be.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from videotapestry.asr.types import TranscriptLine, VideoRef, lines_in_windows
from videotapestry.errors import FingerprintMismatchError, MemoryFormatError
from videotapestry.video.windows import TimeWindow

TRANSCRIPT_FILE = "transcript.json"
TRANSCRIPT_VERSION = 1


@dataclass(frozen=True)
class TranscriptFile:
    """Every line of the video with where it came from (``whisper`` or ``subtitles``)."""

    source: str
    detail: str
    video_fingerprint: str | None
    lines: list[TranscriptLine]

    def to_json(self) -> dict:
        return {
            "version": TRANSCRIPT_VERSION,
            "source": self.source,
            "detail": self.detail,
            "video_fingerprint": self.video_fingerprint,
            "lines": [[line.start_s, line.end_s, line.text] for line in self.lines],
        }

    @classmethod
    def read(cls, path: str | Path) -> TranscriptFile:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != TRANSCRIPT_VERSION:
                raise ValueError(f"unknown version {data.get('version')!r}")
            lines = [TranscriptLine(float(s), float(e), str(t)) for s, e, t in data["lines"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MemoryFormatError(f"{path} is not a readable transcript file: {exc}") from None
        except RecursionError:
            raise MemoryFormatError(f"{path} nests JSON too deeply to be a transcript") from None
        return cls(
            source=str(data.get("source", "")),
            detail=str(data.get("detail", "")),
            video_fingerprint=data.get("video_fingerprint"),
            lines=lines,
        )


class StoredTranscript:
    """``TranscriptSource`` over a memory's ``transcript.json``."""

    def __init__(self, transcript: TranscriptFile, origin: str = TRANSCRIPT_FILE) -> None:
        self.transcript = transcript
        self.origin = origin

    @classmethod
    def for_memory(
        cls, memory_dir: str | Path, *, expected_fingerprint: str | None = None
    ) -> StoredTranscript | None:
        """The memory directory's stored transcript, or None when it has none (an imported
        memory). A transcript made from another video raises ``FingerprintMismatchError``."""
        path = Path(memory_dir) / TRANSCRIPT_FILE
        if not path.is_file():
            return None
        transcript = TranscriptFile.read(path)
        stored = transcript.video_fingerprint
        if expected_fingerprint and stored and stored != expected_fingerprint:
            raise FingerprintMismatchError(
                f"{path} was made from a different video (fingerprint {stored}, this video "
                f"{expected_fingerprint}); rebuild the memory for this video"
            )
        return cls(transcript, str(path))

    def transcribe(
        self, video: VideoRef, windows: Sequence[TimeWindow | tuple[float, float]]
    ) -> list[TranscriptLine]:
        """The stored lines overlapping ``windows`` (``video`` is not read again)."""
        return lines_in_windows(self.transcript.lines, windows)
