"""Running the jobs of a :class:`~videotapestry.serve.jobs.JobStore`, within the configured
limits, and telling the clients who follow a job what it does as it does it.

Questions run on the server's event loop with its one facade (one embedder, every memory
loaded once); a build runs on a thread with a facade of its own, since decoding, OCR and
embedding a video are minutes of CPU that must not hold up the loop. Every change of a job
is written to the store first and then sent to its followers, so a client that connects
late, or to a restarted server, reads the same story from the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.errors import VideoTapestryError
from videotapestry.serve.jobs import Job, JobKind, JobStore
from videotapestry.serve.operations import (
    JobCancelledError,
    ReportingProgress,
    answer_payload,
    answer_question,
    build_memory,
    level_event,
)
from videotapestry.serve.roots import Roots
from videotapestry.trace import scrub

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry

_log = logging.getLogger(__name__)

#: A build's progress is written to the store and sent to its followers at most this often
#: per stage (a share of the stage's total): a scan advances once a frame.
_STEP_SHARE = 0.02


class EventLog:
    """One job's events in this process, in order, for any number of followers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.closed = False
        self._waiter = asyncio.Event()

    def add(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._waiter.set()
        self._waiter = asyncio.Event()

    async def follow(self) -> AsyncIterator[dict[str, Any]]:
        """Every event so far, then each new one as it comes, until the job ends."""
        seen = 0
        while True:
            while seen < len(self.events):
                seen += 1
                yield self.events[seen - 1]
            if self.closed:
                return
            await self._waiter.wait()


class JobRunner:
    """Starts, resumes, cancels and reports jobs; one per server, made in its lifespan."""

    def __init__(self, store: JobStore, vt: VideoTapestry, roots: Roots, traces: Path) -> None:
        self.store = store
        self.vt = vt
        self.roots = roots
        self.traces = traces
        limits = vt.config.serve
        self._limits = {
            "build": asyncio.Semaphore(limits.max_builds),
            "ask": asyncio.Semaphore(limits.max_questions),
            "eval": asyncio.Semaphore(limits.max_questions),
        }
        self._loop = asyncio.get_running_loop()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancels: dict[str, threading.Event] = {}
        self._logs: dict[str, EventLog] = {}
        #: Finished questions by their inputs, so an identical question is answered at once.
        self._answers = {
            _answer_key(job.inputs): job.id
            for job in store.all()
            if job.kind == "ask" and job.state == "done"
        }

    async def resume(self) -> list[Job]:
        """Start again every job a previous server left unfinished (in the order asked)."""
        jobs = self.store.unfinished()
        for job in jobs:
            self._launch(self.store.update(job.id, state="queued"))
        return jobs

    def submit(self, kind: JobKind, inputs: dict[str, Any]) -> Job:
        job = self.store.create(kind, inputs)
        self._launch(job)
        return job

    def answered(self, inputs: dict[str, Any]) -> Job | None:
        """The finished job that answered exactly this question about this memory, if any."""
        job_id = self._answers.get(_answer_key(inputs))
        return self.store.get(job_id) if job_id is not None else None

    def cancel(self, job_id: str) -> Job:
        job = self.store.get(job_id)
        if job.finished:
            return job
        if job_id in self._cancels:
            self._cancels[job_id].set()
        task = self._tasks.get(job_id)
        if task is not None and job.kind != "build":
            task.cancel()
        return self._set(job_id, state="cancelled", error="cancelled by the client")

    async def follow(self, job_id: str) -> AsyncIterator[dict[str, Any]]:
        """A job's events: its state now, what it does from then on, and its end."""
        job = self.store.get(job_id)
        yield {"type": "job", "job": job.model_dump(mode="json")}
        log = self._logs.get(job_id)
        if log is not None and not job.finished:
            async for event in log.follow():
                yield event
        yield {"type": "end", "job": self.store.get(job_id).model_dump(mode="json")}

    async def stop(self) -> None:
        """Stop what runs; unfinished jobs stay unfinished in the store, to be resumed."""
        for event in self._cancels.values():
            event.set()
        for task in self._tasks.values():
            task.cancel()
        for task in list(self._tasks.values()):
            with contextlib.suppress(BaseException):
                await task

    # -- running ---------------------------------------------------------------------------

    def _launch(self, job: Job) -> None:
        self._logs[job.id] = EventLog()
        self._tasks[job.id] = self._loop.create_task(self._run(job))

    async def _run(self, job: Job) -> None:
        log = self._logs[job.id]
        try:
            async with self._limits[job.kind]:
                if self.store.get(job.id).finished:  # cancelled while it waited
                    return
                job = self._set(job.id, state="running", attempts=job.attempts + 1)
                work = {"build": self._build, "ask": self._ask}.get(job.kind)
                if work is None:
                    raise VideoTapestryError(f"job kind {job.kind!r} is not served")
                result = await work(job)
            self._set(job.id, state="done", result=result)
            if job.kind == "ask":
                self._answers[_answer_key(job.inputs)] = job.id
        except asyncio.CancelledError:
            if self.store.get(job.id).state != "cancelled":
                raise  # the server stops: the job stays unfinished, to be resumed
        except JobCancelledError:
            self._set(job.id, state="cancelled", error="cancelled by the client")
        except VideoTapestryError as exc:
            self._set(job.id, state="failed", error=scrub(str(exc)))
        except Exception as exc:  # a bug must fail its job with a message, not kill the server
            _log.exception("job %s failed", job.id)
            self._set(job.id, state="failed", error=scrub(f"{type(exc).__name__}: {exc}"))
        finally:
            self._tasks.pop(job.id, None)
            self._cancels.pop(job.id, None)
            log.close()

    async def _build(self, job: Job) -> dict[str, Any]:
        inputs = job.inputs
        video = self.roots.resolve(inputs["video"])
        out = self.roots.resolve(inputs["out"], must_exist=False)
        subtitles = self.roots.resolve(inputs["subtitles"]) if inputs.get("subtitles") else None
        cancel = self._cancels.setdefault(job.id, threading.Event())
        progress = ReportingProgress(self._threadsafe(self._stage_reporter(job.id)), cancel)
        report = await asyncio.to_thread(
            build_memory,
            self.vt.config,
            video,
            out,
            embedder=self.vt.embedder,
            progress=progress,
            subtitles=subtitles,
        )
        return {"memory": self.roots.relative(out), "report": report}

    async def _ask(self, job: Job) -> dict[str, Any]:
        inputs = job.inputs
        memory = self.roots.resolve(inputs["memory"])
        video = self.roots.resolve(inputs["video"]) if inputs.get("video") else None

        def progress(event: dict[str, Any]) -> None:
            shown = level_event(event)
            if shown is not None:
                self._event(job.id, {"type": "level", **shown})

        result = await answer_question(
            self.vt,
            video=video,
            memory=memory,
            question=inputs["question"],
            options=inputs.get("options", []),
            progress=progress,
        )
        trace = self.traces / f"{job.id}.json"
        await asyncio.to_thread(result.save_trace, trace)
        return answer_payload(result, trace=job.id)

    def _stage_reporter(self, job_id: str) -> Callable[[str, float, float | None], None]:
        written: dict[str, float] = {}

        def report(stage: str, done: float, total: float | None) -> None:
            figures = {"stage": stage, "done": done, "total": total}
            step = max(1.0, (total or 0) * _STEP_SHARE)
            if done - written.get(stage, -step) >= step or (total and done >= total):
                written[stage] = done
                self._set(job_id, progress=figures)
                self._event(job_id, {"type": "progress", **figures})

        return report

    def _threadsafe(
        self, report: Callable[[str, float, float | None], None]
    ) -> Callable[[str, float, float | None], None]:
        def from_any_thread(stage: str, done: float, total: float | None) -> None:
            self._loop.call_soon_threadsafe(report, stage, done, total)

        return from_any_thread

    def _set(self, job_id: str, **changes: Any) -> Job:
        job = self.store.update(job_id, **changes)
        if "state" in changes:
            self._event(job_id, {"type": "state", "state": job.state, "error": job.error})
        return job

    def _event(self, job_id: str, event: dict[str, Any]) -> None:
        log = self._logs.get(job_id)
        if log is not None:
            log.add(event)


def _answer_key(inputs: dict[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False)
