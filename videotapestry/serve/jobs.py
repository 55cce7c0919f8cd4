"""Durable jobs: every build, question and eval a server was asked for, in one SQLite file.

A build runs for minutes and an eval for hours, and a server gets restarted (or killed). So a
job is written down before it starts and after every change of state, in the data
directory's ``jobs.sqlite`` (WAL mode, one row a job, written whole): a server started again
finds each job it did not finish and runs it again, and the work itself resumes where it
stopped — a build from the builder's checkpoints in its output folder, an eval from its run
directory's results file. A finished job (done, failed, cancelled) is never run again.

A server must start whatever it finds there: a store that is not a database, or is damaged
inside (a torn copy, a full disk, a hand edit), is moved aside under a dated name, with a
logged message, and a new one is started; a row that cannot be read as a job (inputs that
are not JSON, a kind this version does not serve) is marked failed with its reason and left
out of every listing, so one bad row cannot take every other job with it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from videotapestry.errors import VideoTapestryError
from videotapestry.kvstore import SqliteStore

JobKind = Literal["build", "ask", "eval", "library_index", "library_ask"]
JobState = Literal["queued", "running", "done", "failed", "cancelled"]

#: States a job does not leave; the others are picked up again by a restarted server.
FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled"})

JOBS_FILE = "jobs.sqlite"

#: SQLite's result codes for a database damaged inside (``SQLITE_CORRUPT``) and for a file
#: that is no database (``SQLITE_NOTADB``): the ones a fresh store replaces (any other
#: failure to open, e.g. no permission, is an error).
_DAMAGED = frozenset({11, 26})

_log = logging.getLogger(__name__)

_SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    inputs TEXT NOT NULL,
    state TEXT NOT NULL,
    progress TEXT NOT NULL,
    result TEXT,
    error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    attempts INTEGER NOT NULL
)"""


class UnknownJobError(VideoTapestryError, LookupError):
    """A job id the database does not hold."""


class UnreadableJobError(UnknownJobError):
    """A row of the store that is no job this version can read (marked failed at start)."""


class JobStoreError(VideoTapestryError):
    """The data directory or its job store cannot be used, and moving it aside would not help
    (not a folder, no permission): the server does not start."""


class Job(BaseModel):
    """One job as stored and as sent to clients."""

    id: str
    kind: JobKind
    inputs: dict[str, Any]
    state: JobState = "queued"
    #: The latest figures: a build's stage and clips done / total, a question's last level.
    progress: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    #: How many times a server started it (more than one: it was resumed after a restart).
    attempts: int = 0

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


class JobStore:
    """The jobs of one data directory; one connection shared by the server's threads."""

    def __init__(self, data_dir: str | Path) -> None:
        path = Path(data_dir) / JOBS_FILE
        problem = store_damage(path)
        if problem is not None:
            moved = move_aside(path)
            _log.warning(
                "videotapestry: the job store %s is damaged (%s); moved it aside to %s and "
                "started a new one (its jobs are not resumed)",
                path,
                problem,
                moved,
            )
        try:
            self._rows = SqliteStore(path, table="jobs", schema=_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise JobStoreError(f"the job store {path} cannot be opened: {exc}") from None
        self.path = path
        self._fail_unreadable_rows()

    def create(self, kind: JobKind, inputs: dict[str, Any]) -> Job:
        job = Job(id=uuid.uuid4().hex[:12], kind=kind, inputs=inputs)
        self._save(job)
        return job

    def get(self, job_id: str) -> Job:
        row = self._rows.get(job_id)
        if row is None:
            raise UnknownJobError(f"job {job_id!r}: no such job")
        try:
            return _job_of(row)
        except (ValueError, TypeError, KeyError, RecursionError):  # pydantic's errors too
            raise UnreadableJobError(
                f"job {job_id!r}: unreadable in the job store ({row_problem(row)}); it was "
                "marked failed"
            ) from None

    def all(self) -> list[Job]:
        """Every job, newest first (rows that are no readable job left out)."""
        jobs = []
        for key in self._rows.all_keys():
            try:
                jobs.append(self.get(key))
            except UnknownJobError:  # unreadable, or removed meanwhile by another process
                continue
        return sorted(jobs, key=lambda job: job.created_at, reverse=True)

    def unfinished(self) -> list[Job]:
        """Jobs a previous server left queued or running, oldest first (the order asked)."""
        return sorted(
            (job for job in self.all() if not job.finished), key=lambda job: job.created_at
        )

    def update(self, job_id: str, **changes: Any) -> Job:
        """Write ``changes`` to a job (a finished job keeps its final state)."""
        job = self.get(job_id)
        if job.finished and "state" in changes:
            return job
        job = job.model_copy(update={**changes, "updated_at": time.time()})
        self._save(job)
        return job

    def close(self) -> None:
        self._rows.close()

    def _fail_unreadable_rows(self) -> None:
        """Mark failed, with the reason, each row that is no job this version reads (so a
        restarted server neither resumes it nor stops on it); logged once, here."""
        for key in self._rows.all_keys():
            row = self._rows.get(key)
            problem = None if row is None else row_problem(row)
            if row is None or problem is None:
                continue
            reason = f"unreadable in the job store: {problem}"
            if row.get("state") != "failed" or row.get("error") != reason:
                fields = {name: value for name, value in row.items() if name != "key"}
                self._rows.put(
                    key, {**fields, "state": "failed", "error": reason, "updated_at": time.time()}
                )
                _log.warning(
                    "videotapestry: job %s in %s cannot be read (%s); marked failed and skipped",
                    key,
                    self.path,
                    problem,
                )

    def _save(self, job: Job) -> None:
        self._rows.put(
            job.id,
            {
                "kind": job.kind,
                "inputs": json.dumps(job.inputs, ensure_ascii=False),
                "state": job.state,
                "progress": json.dumps(job.progress, ensure_ascii=False),
                "result": None
                if job.result is None
                else json.dumps(job.result, ensure_ascii=False),
                "error": job.error,
                "created_at": job.created_at,
                "updated_at": job.updated_at,
                "attempts": job.attempts,
            },
        )


def _job_of(row: dict[str, Any]) -> Job:
    return Job(
        id=row["key"],
        kind=row["kind"],
        inputs=json.loads(row["inputs"]),
        state=row["state"],
        progress=json.loads(row["progress"]),
        result=json.loads(row["result"]) if row["result"] is not None else None,
        error=row["error"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        attempts=row["attempts"],
    )


def row_problem(row: dict[str, Any]) -> str | None:
    """Why a stored row is no job this version can read (None when it is one)."""
    try:
        _job_of(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "row"
        return f"{where}: {first['msg']}"
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def store_damage(path: Path) -> str | None:
    """Why the SQLite file at ``path`` cannot serve as a job store (not a database, damaged
    pages, an unreadable table), or None when it can or does not exist yet. A failure that a
    new file would not cure (no permission, a folder of that name) is ``JobStoreError``."""
    if not path.exists():
        return None
    if not path.is_file():
        raise JobStoreError(f"the job store {path} is not a file; move it away")
    try:
        connection = sqlite3.connect(path, timeout=30)
        try:
            checked = connection.execute("PRAGMA quick_check").fetchall()
            if checked != [("ok",)]:
                return f"integrity check: {checked[0][0]}"
            listed = connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'jobs'"
            ).fetchone()
            if listed is not None:
                connection.execute("SELECT * FROM jobs").fetchall()
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) in _DAMAGED:
            return str(exc)
        raise JobStoreError(f"the job store {path} cannot be opened: {exc}") from None
    except OSError as exc:
        raise JobStoreError(f"the job store {path} cannot be read: {exc.strerror}") from None
    return None


def move_aside(path: Path) -> Path:
    """Rename ``path`` (and its WAL and shared-memory files) to a dated name beside it, kept
    for whoever wants to look at it; the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    number = 1
    while target.exists():
        number += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{number}")
    try:
        for suffix in ("", "-wal", "-shm"):
            source = path.with_name(path.name + suffix)
            if source.exists():
                source.replace(target.with_name(target.name + suffix))
    except OSError as exc:
        raise JobStoreError(
            f"the job store {path} is damaged and cannot be moved aside: {exc.strerror}"
        ) from None
    return target
