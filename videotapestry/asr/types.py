"""Transcript lines in absolute video time, the source protocol, and the prompt format.

Whether the words come from Whisper or from a benchmark's subtitle file, the agents see the
same thing: ``TranscriptLine`` objects with start and end in seconds from the start of the
video, and ``format_transcript`` turning them into ``[mm:ss-mm:ss] text`` lines. Verbatim
evidence matching (agents/rules.py) relies on those lines being reproducible, so the format
is fixed here, in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from videotapestry.timecode import format_range
from videotapestry.video.container import VideoInfo
from videotapestry.video.windows import TimeWindow


@dataclass(frozen=True)
class TranscriptLine:
    """One spoken line; ``start_s``/``end_s`` are seconds from the start of the video."""

    start_s: float
    end_s: float
    text: str


#: What a transcript source is asked about: a video file, or its probed ``VideoInfo``.
VideoRef = str | Path | VideoInfo


@runtime_checkable
class TranscriptSource(Protocol):
    """Speech inside the given windows of a video, as lines sorted by start time."""

    def transcribe(
        self, video: VideoRef, windows: Sequence[TimeWindow | tuple[float, float]]
    ) -> list[TranscriptLine]: ...


def format_transcript(lines: Iterable[TranscriptLine]) -> str:
    """``[mm:ss-mm:ss] text``, one line each, in time order (``h:mm:ss`` past an hour)."""
    ordered = sorted(lines, key=lambda line: (line.start_s, line.end_s))
    return "\n".join(f"{format_range(line.start_s, line.end_s)} {line.text}" for line in ordered)


def lines_in_windows(
    lines: Iterable[TranscriptLine], windows: Sequence[TimeWindow | tuple[float, float]]
) -> list[TranscriptLine]:
    """The lines that overlap any window (a line spanning a boundary is kept whole), sorted."""
    spans = [TimeWindow(float(s), float(e)) for s, e in windows]
    kept = {
        line
        for line in lines
        if any(line.start_s <= w.end_s and w.start_s <= line.end_s for w in spans)
    }
    return sorted(kept, key=lambda line: (line.start_s, line.end_s, line.text))
