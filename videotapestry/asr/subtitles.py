"""Subtitle files as a transcript source, for benchmarks that ship them (SPEC §8).

With subtitles the ASR tool keeps the same window selection and reads the subtitle lines
inside the chosen windows instead of running Whisper. Formats:

- SRT (Video-MME ships one per video, named by its videoID) and WebVTT, parsed by pysubs2;
  styling tags are dropped and a cue's lines are joined with spaces.
- LongVideoBench JSON: a list whose entries are either ``{"timestamp": [start, end],
  "text": ...}`` in seconds (a null end means the end of the video) or ``{"start":
  "HH:MM:SS.mmm", "end": ..., "line": ...}``.

``offset_s`` is subtracted from every time (LongVideoBench's
``starting_timestamp_for_subtitles``: its videos are cut from longer ones whose subtitles
keep the original clock). Lines that end before the video starts are dropped.

A malformed cue or entry is skipped (``skipped`` counts them); a file with no usable cue at
all (empty, binary, every cue malformed) raises ``SubtitleError`` naming the file: a question
or a build given subtitles must not quietly go without speech.

The text encoding is detected, never guessed by replacing bytes: a byte-order mark (UTF-8,
UTF-16, UTF-32) wins, else strict UTF-8, else the declared fallback
(``asr.subtitle_fallback_encoding``, e.g. ``cp1252``); ``encoding`` says which was used.
Text holding NUL characters is not read as UTF-8 (it is UTF-16 without a mark), so it needs
the fallback too.
"""

from __future__ import annotations

import codecs
import math
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from videotapestry.asr.types import TranscriptLine, VideoRef, lines_in_windows
from videotapestry.errors import SubtitleError
from videotapestry.files import parse_json
from videotapestry.video.container import VideoInfo, probe
from videotapestry.video.windows import TimeWindow

SubtitleFormat = Literal["srt", "vtt", "lvb_json"]
_SUFFIXES: dict[str, SubtitleFormat] = {".srt": "srt", ".vtt": "vtt", ".json": "lvb_json"}
#: UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CLOCK = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)\s*$")


class SubtitleSource:
    """``TranscriptSource`` over one subtitle file; parsed on first use, then kept."""

    def __init__(
        self,
        path: str | Path,
        *,
        offset_s: float = 0.0,
        fmt: SubtitleFormat | None = None,
        fallback_encoding: str | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.offset_s = float(offset_s or 0.0)
        if not math.isfinite(self.offset_s):
            raise SubtitleError(f"the offset of subtitle file {self.path} must be finite")
        self.format = fmt or _detect_format(self.path)
        self.fallback_encoding = fallback_encoding
        #: How the file's bytes were decoded (``utf-16-le (BOM)``, ``utf-8``, ``cp1252
        #: (fallback)``); set once the file is parsed.
        self.encoding: str | None = None
        self.skipped = 0
        self._raw: list[tuple[float, float | None, str]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def find(
        cls,
        directory: str | Path,
        video_id: str,
        *,
        offset_s: float = 0.0,
        fallback_encoding: str | None = None,
    ) -> SubtitleSource | None:
        """The subtitle file named after ``video_id`` (``.srt``, ``.vtt`` or ``.json``), if any."""
        for suffix in _SUFFIXES:
            candidate = Path(directory) / f"{video_id}{suffix}"
            if candidate.is_file():
                return cls(candidate, offset_s=offset_s, fallback_encoding=fallback_encoding)
        return None

    def lines(self, duration_s: float | None = None) -> list[TranscriptLine]:
        """Every line in video time, sorted; an open end becomes ``duration_s`` (or the start)."""
        lines = []
        for start, end, text in self._load():
            start, end = start - self.offset_s, None if end is None else end - self.offset_s
            if end is None:
                end = duration_s if duration_s is not None else start
            if end < 0 or (duration_s is not None and start > duration_s):
                continue
            start = max(0.0, round(start, 6))  # subtitle clocks are in ms: drop float noise
            lines.append(TranscriptLine(start, max(start, round(end, 6)), text))
        return sorted(lines, key=lambda line: (line.start_s, line.end_s))

    def transcribe(
        self, video: VideoRef, windows: Sequence[TimeWindow | tuple[float, float]]
    ) -> list[TranscriptLine]:
        """The lines overlapping any window (kept whole), sorted by start time."""
        raw = self._load()
        duration = None
        if isinstance(video, VideoInfo):
            duration = video.duration_s
        elif any(end is None for _, end, _ in raw):
            duration = probe(video).duration_s  # only needed to close open-ended lines
        return lines_in_windows(self.lines(duration), windows)

    def _load(self) -> list[tuple[float, float | None, str]]:
        with self._lock:
            if self._raw is None:
                self._raw = self._parse()
            return self._raw

    def _parse(self) -> list[tuple[float, float | None, str]]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise SubtitleError(f"subtitle file {self.path} does not exist") from None
        except OSError as exc:
            raise SubtitleError(f"cannot read subtitle file {self.path}: {exc}") from None
        text, self.encoding = decode_subtitle_bytes(
            data, fallback=self.fallback_encoding, source=str(self.path)
        )
        if not text.strip():
            raise SubtitleError(f"subtitle file {self.path} is empty: it has no cue to read")
        if self.format == "lvb_json":
            entries, skipped = parse_longvideobench(text, source=str(self.path))
        else:
            entries, skipped = parse_cues(text, self.format, source=str(self.path))
        self.skipped = skipped
        if not entries:
            raise SubtitleError(
                f"subtitle file {self.path} has no usable {self.format} cue "
                f"({skipped} malformed; read as {self.encoding})"
            )
        return entries


def decode_subtitle_bytes(
    data: bytes, *, fallback: str | None = None, source: str = "<bytes>"
) -> tuple[str, str]:
    """(text, how it was decoded): a byte-order mark, else strict UTF-8, else ``fallback``.
    Bytes no candidate decodes are an error naming ``source``, never replaced."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(encoding), f"{encoding} (BOM)"
            except UnicodeDecodeError as exc:
                raise SubtitleError(
                    f"subtitle file {source} starts with a {encoding} byte-order mark but is "
                    f"not valid {encoding} (byte {exc.start + len(bom)})"
                ) from None
    problem = "it holds NUL characters (UTF-16 without a byte-order mark?)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"byte {exc.start} is not UTF-8"
    else:
        if "\x00" not in text:
            return text, "utf-8"
    if fallback is None:
        raise SubtitleError(
            f"subtitle file {source} cannot be read as UTF-8: {problem}; save it as UTF-8 "
            "or declare its encoding with asr.subtitle_fallback_encoding (e.g. cp1252, utf-16-le)"
        )
    try:
        return data.decode(fallback), f"{fallback} (fallback)"
    except (UnicodeDecodeError, LookupError) as exc:
        raise SubtitleError(
            f"subtitle file {source} is neither UTF-8 ({problem}) nor {fallback}: {exc}"
        ) from None


def parse_cues(
    text: str, fmt: Literal["srt", "vtt"], *, source: str = "<text>"
) -> tuple[list[tuple[float, float | None, str]], int]:
    """(start, end, text) of each SRT/WebVTT cue, in file time, and how many were unreadable."""
    import pysubs2

    try:
        subs = pysubs2.SSAFile.from_string(text, format_=fmt)
    except Exception as exc:  # pysubs2 raises several kinds; name the file instead
        raise SubtitleError(f"subtitle file {source} is not valid {fmt}: {exc}") from None
    entries: list[tuple[float, float | None, str]] = []
    skipped = 0
    for event in subs:
        if event.is_comment:
            continue
        line = " ".join(event.plaintext.split())
        if not line:
            continue
        if event.end < event.start:
            skipped += 1
            continue
        entries.append((event.start / 1000.0, event.end / 1000.0, line))
    return entries, skipped


def parse_longvideobench(
    text: str, *, source: str = "<text>"
) -> tuple[list[tuple[float, float | None, str]], int]:
    """(start, end, text) of each LongVideoBench subtitle entry, and how many were unreadable."""
    data = parse_json(text, f"subtitle file {source}", SubtitleError)  # deep nesting too
    if not isinstance(data, list):
        raise SubtitleError(f"subtitle file {source} must hold a JSON list of entries")
    entries: list[tuple[float, float | None, str]] = []
    skipped = 0
    for item in data:
        parsed = _lvb_entry(item)
        if parsed is None:
            skipped += 1
        elif parsed[2]:
            entries.append(parsed)
    return entries, skipped


def parse_clock(value: Any) -> float:
    """Seconds from ``HH:MM:SS.mmm`` / ``MM:SS.mmm`` (comma allowed) or a plain number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value):
            return float(value)
        raise ValueError(f"not a finite time: {value!r}")
    match = _CLOCK.match(str(value))
    if not match:
        raise ValueError(f"not a clock time: {value!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))


def _lvb_entry(item: Any) -> tuple[float, float | None, str] | None:
    if not isinstance(item, dict):
        return None
    try:
        if "timestamp" in item:
            start_raw, end_raw = item["timestamp"]
            text = item.get("text", "")
        else:
            start_raw, end_raw = item["start"], item.get("end")
            text = item.get("line", item.get("text", ""))
        start = parse_clock(start_raw)
        end = None if end_raw is None else parse_clock(end_raw)
    except (KeyError, TypeError, ValueError):
        return None
    if end is not None and end < start:
        return None
    return start, end, " ".join(str(text).split())


def _detect_format(path: Path) -> SubtitleFormat:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is not None:
        return fmt
    try:
        with path.open("rb") as handle:
            head = handle.read(64).decode("utf-8-sig", errors="ignore").lstrip()
    except OSError:
        return "srt"  # the read error is reported, with the path, when the file is parsed
    if head.startswith("WEBVTT"):
        return "vtt"
    if head.startswith("["):
        return "lvb_json"
    return "srt"
