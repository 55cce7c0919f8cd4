"""Transcripts on disk, one JSON file per (video fingerprint, window, model settings).

Transcribing is the slowest tool the agents call, and the same windows of the same video come
back question after question. A JSON file per entry keeps the cache inspectable, safe to
delete piecemeal, and free of locking: writes go to a temporary file and are renamed into
place, so concurrent writers of the same entry just both produce the same file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from videotapestry.asr.types import TranscriptLine
from videotapestry.files import write_atomic
from videotapestry.video.windows import TimeWindow

CACHE_VERSION = 1


class TranscriptCache:
    """A directory of cached transcripts; a damaged entry reads as a miss."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()

    def path_for(self, fingerprint: str, window: TimeWindow, model_key: str) -> Path:
        key = json.dumps(
            [CACHE_VERSION, round(window.start_s, 3), round(window.end_s, 3), model_key]
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        folder = re.sub(r"[^A-Za-z0-9_.-]", "_", fingerprint) or "unknown"
        return self.directory / folder / f"{digest}.json"

    def get(
        self, fingerprint: str, window: TimeWindow, model_key: str
    ) -> list[TranscriptLine] | None:
        path = self.path_for(fingerprint, window, model_key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return [TranscriptLine(float(s), float(e), str(t)) for s, e, t in data["lines"]]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # damaged entry: transcribe again and overwrite it

    def put(
        self,
        fingerprint: str,
        window: TimeWindow,
        model_key: str,
        lines: list[TranscriptLine],
    ) -> Path:
        path = self.path_for(fingerprint, window, model_key)
        record = {
            "version": CACHE_VERSION,
            "fingerprint": fingerprint,
            "window": [window.start_s, window.end_s],
            "model": model_key,
            "lines": [[line.start_s, line.end_s, line.text] for line in lines],
        }
        write_atomic(path, json.dumps(record, ensure_ascii=False))
        return path
