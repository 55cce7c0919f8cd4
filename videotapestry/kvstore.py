"""Key-value stores: the one shape of everything a run keeps so that a later run can skip work.

The response cache (a model reply per request hash), the transcript cache (Whisper's lines
per window) and the build checkpoints (a stage's output per stage) are the same idea: a value
under a key, read back by a later run, which may follow a crash in the middle of a write or
run beside another process writing the same store. They differ in where values live, so they
share this small base: ``get`` answers None for an entry that is missing *or unreadable*
(the caller computes it again, which is always safe), ``put`` replaces an entry whole.

Two back ends:

- ``JsonFileStore``: one JSON file per key in a directory (a ``/`` in a key makes a
  subfolder). Inspectable, safe to delete piecemeal, and free of locks: every write goes
  through ``videotapestry.files`` (temporary file, then one rename), so two writers of one
  entry leave one of their files, never a mix.
- ``SqliteStore``: the rows of one SQLite table keyed by its ``key`` column, in WAL mode, so
  threads and processes (the workers of a Ray job) share one file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from videotapestry.errors import DiskFullError
from videotapestry.files import json_text, write_atomic

#: SQLite's result code for a full disk (``SQLITE_FULL``).
_SQLITE_FULL = 13

V = TypeVar("V")


class KeyValueStore(ABC, Generic[V]):
    """Values by string key; a missing or damaged entry reads as None."""

    @abstractmethod
    def get(self, key: str) -> V | None:
        """The value stored under ``key``, or None when there is none that can be read."""

    @abstractmethod
    def put(self, key: str, value: V) -> None:
        """Store ``value`` under ``key``, replacing what was there."""

    @abstractmethod
    def all_keys(self) -> list[str]:
        """Every stored key, sorted."""

    @abstractmethod
    def drop(self) -> None:
        """Remove every entry."""

    def close(self) -> None:
        """Release what the store holds open (nothing, unless a back end says otherwise)."""

    def __len__(self) -> int:
        return len(self.all_keys())


class JsonFileStore(KeyValueStore[Any]):
    """``<directory>/<key>.json`` files; ``dumps`` sets their text layout."""

    def __init__(self, directory: str | Path, *, dumps: Callable[[Any], str] = json_text) -> None:
        self.directory = Path(directory)
        self._dumps = dumps

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable, torn or not JSON: a miss
            return None

    def put(self, key: str, value: Any) -> None:
        write_atomic(self.path(key), self._dumps(value))

    def all_keys(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        found = self.directory.rglob("*.json")
        return sorted(p.relative_to(self.directory).with_suffix("").as_posix() for p in found)

    def drop(self) -> None:
        if self.directory.exists():
            shutil.rmtree(self.directory)


class SqliteStore(KeyValueStore[dict[str, Any]]):
    """The rows of ``table`` (created by ``schema`` when absent), as column → value dicts.

    One connection, guarded by a lock, serves every thread; the WAL journal lets other
    processes read and write the same file meanwhile.
    """

    def __init__(self, path: str | Path, *, table: str, schema: str) -> None:
        self.path = Path(path)
        self.table = table
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(schema)
            self._conn.commit()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            cursor = self._conn.execute(f"SELECT * FROM {self.table} WHERE key = ?", (key,))
            row = cursor.fetchone()
        if row is None:
            return None
        return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}

    def put(self, key: str, value: dict[str, Any]) -> None:
        columns = ["key", *value]
        with self._lock:
            try:
                self._conn.execute(
                    f"INSERT OR REPLACE INTO {self.table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})",
                    (key, *value.values()),
                )
                self._conn.commit()
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", None) != _SQLITE_FULL:
                    raise
                self._conn.rollback()  # the entry is not stored; the ones before stand
                raise DiskFullError(str(self.path.parent)) from None

    def all_keys(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute(f"SELECT key FROM {self.table} ORDER BY key").fetchall()
        return [row[0] for row in rows]

    def drop(self) -> None:
        with self._lock:
            self._conn.execute(f"DELETE FROM {self.table}")
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __len__(self) -> int:
        with self._lock:
            count: int = self._conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
        return count
