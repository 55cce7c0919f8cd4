"""Stage checkpoints inside the build directory: one JSON file per stage (or per clip).

A build that is killed at any moment must resume without repeating finished work, and a
rebuild with changed settings must redo exactly the stages that depend on them. So every
checkpoint stores the *key* of its inputs (a hash of the settings, prompt and upstream
outputs that produced it) next to its data: a checkpoint is reused only when the key the
stage computes now is the one it was written with. Files are written to a temporary file,
flushed and renamed into place, so a ``kill -9`` leaves either the old file or the new one;
a file that cannot be read back (a damaged disk, a hand edit) counts as missing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from videotapestry.files import write_json_atomic

CHECKPOINT_VERSION = 1


def stage_key(*parts: Any) -> str:
    """A stable hash of JSON-serializable parts (dict key order does not matter)."""
    canonical = json.dumps(
        [CHECKPOINT_VERSION, *parts], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


def data_digest(data: Any) -> str:
    """A digest of a stage's output, for the keys of the stages that read it."""
    return stage_key("data", data)


class CheckpointStore:
    """``<build dir>/<name>.json`` files holding ``{"key", "data"}``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.json"

    def get(self, name: str, key: str) -> Any | None:
        """The stored data when it was written with ``key``; None when missing or stale."""
        try:
            record = json.loads(self.path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != key or "data" not in record:
            return None
        return record["data"]

    def put(self, name: str, key: str, data: Any) -> None:
        write_json_atomic(
            self.path(name), {"version": CHECKPOINT_VERSION, "key": key, "data": data}
        )

    def names(self, prefix: str) -> list[str]:
        """Stored checkpoint names under ``prefix/`` (for reports and tests)."""
        folder = self.directory / prefix
        if not folder.is_dir():
            return []
        return sorted(f"{prefix}/{p.stem}" for p in folder.glob("*.json"))

    def clear(self) -> None:
        if self.directory.exists():
            shutil.rmtree(self.directory)
