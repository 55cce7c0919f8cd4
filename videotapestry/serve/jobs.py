"""Durable jobs: every build, question and eval a server was asked for, in one SQLite file.

A build runs for minutes and an eval for hours, and a server gets restarted (or killed). So a
job is written down before it starts and after every change of state, in the data
directory's ``jobs.sqlite`` (WAL mode, one row a job, written whole): a server started again
finds each job it did not finish and runs it again, and the work itself resumes where it
stopped — a build from the builder's checkpoints in its output folder, an eval from its run
directory's results file. A finished job (done, failed, cancelled) is never run again.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from videotapestry.errors import VideoTapestryError
from videotapestry.kvstore import SqliteStore

JobKind = Literal["build", "ask", "eval"]
JobState = Literal["queued", "running", "done", "failed", "cancelled"]

#: States a job does not leave; the others are picked up again by a restarted server.
FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled"})

JOBS_FILE = "jobs.sqlite"

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
        self._rows = SqliteStore(Path(data_dir) / JOBS_FILE, table="jobs", schema=_SCHEMA)

    def create(self, kind: JobKind, inputs: dict[str, Any]) -> Job:
        job = Job(id=uuid.uuid4().hex[:12], kind=kind, inputs=inputs)
        self._save(job)
        return job

    def get(self, job_id: str) -> Job:
        row = self._rows.get(job_id)
        if row is None:
            raise UnknownJobError(f"job {job_id!r}: no such job")
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

    def all(self) -> list[Job]:
        """Every job, newest first."""
        jobs = [self.get(key) for key in self._rows.all_keys()]
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
