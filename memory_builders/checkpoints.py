"""Stage checkpoints inside the build directory: one JSON file per stage (or per clip).

A build that is killed at any moment must resume without repeating finished work, and a
rebuild with changed settings must redo exactly the stages that depend on them. So every
checkpoint stores the *key* of its inputs (a hash of the settings, prompt and upstream
outputs that produced it) next to its data: a checkpoint is reused only when the key the
stage computes now is the one it was written with. The files are a ``JsonFileStore``: each
is written whole or not at all, and one that cannot be read back (a damaged disk, a hand
edit) counts as missing.

Every stage is made of one step, ``checkpointed``: the stored output if its key still
matches, else the output computed now, stored for the next run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from memory_builders.lock import LOCK_FILES
from memory_builders.report import StageReport
from videotapestry.kvstore import JsonFileStore

CHECKPOINT_VERSION = 1

T = TypeVar("T")


def stage_key(*parts: Any) -> str:
    """A stable hash of JSON-serializable parts (dict key order does not matter)."""
    canonical = json.dumps(
        [CHECKPOINT_VERSION, *parts], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


class CheckpointStore:
    """``<build dir>/<name>.json`` files holding ``{"version", "key", "data"}``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._files = JsonFileStore(self.directory)

    def path(self, name: str) -> Path:
        return self._files.path(name)

    def get(self, name: str, key: str) -> Any | None:
        """The stored data when it was written with ``key``; None when missing or stale."""
        record = self._files.get(name)
        if not isinstance(record, dict) or record.get("key") != key or "data" not in record:
            return None
        return record["data"]

    def put(self, name: str, key: str, data: Any) -> None:
        self._files.put(name, {"version": CHECKPOINT_VERSION, "key": key, "data": data})

    def names(self, prefix: str) -> list[str]:
        """Stored checkpoint names directly under ``prefix/`` (for reports and tests)."""
        return [n for n in self._files.all_keys() if n.rpartition("/")[0] == prefix]

    def clear(self) -> None:
        """Forget every checkpoint (and the kept frames); the build lock stays, as the build
        clearing them holds it and a lock file removed under it would let a second in."""
        if not self.directory.is_dir():
            return
        for entry in self.directory.iterdir():
            if entry.name in LOCK_FILES:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


async def checkpointed(
    store: CheckpointStore,
    name: str,
    key: str,
    compute: Callable[[], Awaitable[T]],
    *,
    load: Callable[[Any], T] = lambda data: data,
    dump: Callable[[Any], Any] = lambda value: value,
    tally: StageReport | None = None,
    keep: Callable[[Any], bool] = lambda value: True,
) -> T:
    """Checkpoint ``name``'s value if it was stored under ``key``, else ``compute()``'s.

    A computed value is stored (as ``dump(value)``, read back with ``load``) unless it is
    None, which stands for nothing worth keeping (a failed clip, a fallback used: the next
    run tries again), or ``keep`` refuses it. ``tally`` counts reused and computed values
    for the build report; a None is neither.
    """
    data = store.get(name, key)
    if data is not None:
        if tally is not None:
            tally.reused += 1
        return load(data)
    value = await compute()
    if value is None:
        return value
    if keep(value):
        store.put(name, key, dump(value))
    if tally is not None:
        tally.computed += 1
    return value
