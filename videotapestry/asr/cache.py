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
from videotapestry.kvstore import JsonFileStore
from videotapestry.video.windows import TimeWindow

CACHE_VERSION = 1


class TranscriptCache:
    """A directory of cached transcripts, ``<fingerprint>/<hash of window and model>.json``;
    a damaged entry reads as a miss."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()
        self._files = JsonFileStore(self.directory, dumps=_compact_json)

    def path_for(self, fingerprint: str, window: TimeWindow, model_key: str) -> Path:
        return self._files.path(self._key(fingerprint, window, model_key))

    def get(
        self, fingerprint: str, window: TimeWindow, model_key: str
    ) -> list[TranscriptLine] | None:
        record = self._files.get(self._key(fingerprint, window, model_key))
        if record is None:
            return None
        try:
            return [TranscriptLine(float(s), float(e), str(t)) for s, e, t in record["lines"]]
        except (ValueError, KeyError, TypeError):
            return None  # damaged entry: transcribe again and overwrite it

    def put(
        self,
        fingerprint: str,
        window: TimeWindow,
        model_key: str,
        lines: list[TranscriptLine],
    ) -> Path:
        key = self._key(fingerprint, window, model_key)
        record = {
            "version": CACHE_VERSION,
            "fingerprint": fingerprint,
            "window": [window.start_s, window.end_s],
            "model": model_key,
            "lines": [[line.start_s, line.end_s, line.text] for line in lines],
        }
        self._files.put(key, record)
        return self._files.path(key)

    @staticmethod
    def _key(fingerprint: str, window: TimeWindow, model_key: str) -> str:
        entry = json.dumps(
            [CACHE_VERSION, round(window.start_s, 3), round(window.end_s, 3), model_key]
        )
        digest = hashlib.sha256(entry.encode()).hexdigest()[:32]
        folder = re.sub(r"[^A-Za-z0-9_.-]", "_", fingerprint) or "unknown"
        return f"{folder}/{digest}"


def _compact_json(record: object) -> str:
    return json.dumps(record, ensure_ascii=False)
