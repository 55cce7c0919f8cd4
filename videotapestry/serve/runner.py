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
import functools
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_builders.sources import is_remote
from videotapestry.errors import VideoTapestryError
from videotapestry.serve.jobs import Job, JobKind, JobStore
from videotapestry.serve.operations import (
    JobCancelledError,
    ReportingProgress,
    ServedAnswer,
    answer_across_library,
    answer_question,
    build_memory,
    follow_source,
    index_library,
    level_event,
    library_dir,
    served_library,
)
from videotapestry.serve.roots import PathOutsideRootsError, Roots
from videotapestry.trace import scrub

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry
    from videotapestry.eval.session import EvalSpec

_log = logging.getLogger(__name__)

#: The inputs of a job that name a file or folder (stored resolved, shown relative).
_PATH_INPUTS = (
    "video", "out", "subtitles", "memory", "annotations", "videos", "memories", "library",
)  # fmt: skip

#: Jobs whose work runs on a thread: a cancel stops them at their next step (their finished
#: steps kept), not by cancelling the task that awaits the thread.
_ON_THREADS = frozenset({"build", "library_index"})

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
            "library_index": asyncio.Semaphore(1),  # the library has one writer
            "library_ask": asyncio.Semaphore(limits.max_questions),
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
        if task is not None and job.kind not in _ON_THREADS:
            task.cancel()
        return self._set(job_id, state="cancelled", error="cancelled by the client")

    def shown(self, job: Job) -> Job:
        """A job as clients see it: the paths of its inputs named relative to their root, as
        the library lists them (the store keeps them resolved, so a job runs on the files it
        was given even if another root later holds the same name)."""
        inputs = dict(job.inputs)
        for key in _PATH_INPUTS:
            value = inputs.get(key)
            if isinstance(value, str) and Path(value).is_absolute():
                inputs[key] = self._named(Path(value))
        return job.model_copy(update={"inputs": inputs})

    def _named(self, path: Path) -> str:
        """A stored path relative to its root; one that no root holds any more (the server
        restarted with other roots) by its name alone, so the job list still shows without
        naming folders outside what is served."""
        try:
            return self.roots.relative(path)
        except PathOutsideRootsError:
            return f"(outside the roots)/{path.name}"

    def shown_by_id(self, job_id: str) -> Job:
        return self.shown(self.store.get(job_id))

    async def follow(self, job_id: str) -> AsyncIterator[dict[str, Any]]:
        """A job's events: its state now, what it does from then on, and its end."""
        job = self.store.get(job_id)
        yield {"type": "job", "job": self.shown(job).model_dump(mode="json")}
        log = self._logs.get(job_id)
        if log is not None and not job.finished:
            async for event in log.follow():
                yield event
        yield {"type": "end", "job": self.shown_by_id(job_id).model_dump(mode="json")}

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
                work = {
                    "build": self._build,
                    "ask": self._ask,
                    "eval": self._eval,
                    "library_index": self._library_index,
                    "library_ask": self._library_ask,
                }.get(job.kind)
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
        if inputs.get("follow"):
            return await self._follow(job)
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
            force=bool(inputs.get("force", False)),
        )
        return {"memory": self.roots.relative(out), "report": report}

    async def _follow(self, job: Job) -> dict[str, Any]:
        """A source still arriving, followed until it ends (SPEC §16): one progress event
        per version published (the time it covers, what had arrived, the lag), the served
        library indexed again after each when there is one."""
        inputs = job.inputs
        source = inputs["video"]
        if not is_remote(source):
            source = str(self.roots.resolve(source, must_exist=False))
        out = self.roots.resolve(inputs["out"], must_exist=False)
        cancel = self._cancels.setdefault(job.id, threading.Event())
        config = self.vt.config
        reindex = None
        if config.serve.library or library_dir(config, self.roots).is_dir():
            reindex = functools.partial(served_library, self.vt, self.roots)

        def published(event: dict[str, Any]) -> None:
            self._set(job.id, progress=event)
            self._event(job.id, {"type": "progress", **event})

        result = await asyncio.to_thread(
            follow_source,
            config,
            source,
            out,
            embedder=self.vt.embedder,
            roots=self.roots,
            cancel=cancel,
            on_version=lambda event: self._loop.call_soon_threadsafe(published, event),
            library=reindex,
        )
        return {"memory": self.roots.relative(out), **result}

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
        return ServedAnswer.of(result, trace=f"/api/jobs/{job.id}/trace").model_dump(mode="json")

    async def _library_index(self, job: Job) -> dict[str, Any]:
        """The served library brought up to date with the memories under the roots; a
        cancel stops it after the memory being indexed (those done are kept)."""
        cancel = self._cancels.setdefault(job.id, threading.Event())
        report = self._threadsafe(self._stage_reporter(job.id))

        def progress(stage: str, done: float, total: float | None) -> None:
            if cancel.is_set():
                raise JobCancelledError("the indexing was cancelled; memories indexed are kept")
            report(stage, done, total)

        library = served_library(self.vt, self.roots)
        return await asyncio.to_thread(index_library, library, self.roots, progress)

    async def _library_ask(self, job: Job) -> dict[str, Any]:
        inputs = job.inputs
        library = served_library(self.vt, self.roots)
        served = await answer_across_library(
            library, self.roots, inputs["question"], inputs.get("options", [])
        )
        return served.model_dump(mode="json")

    async def _eval(self, job: Job) -> dict[str, Any]:
        """A benchmark run into its run directory; a server restarted part-way runs the same
        spec again, which keeps every finished record and asks only the rest."""
        from videotapestry.eval.session import (
            run_evaluation,
            select_questions,
            summarize,
            with_variants,
            write_outputs,
        )
        from videotapestry.executors import make_executor

        spec = self._eval_spec(job)
        vt = self.vt
        if spec.subtitles is not None:  # as ``eval --subtitles``: the benchmark's own text
            vt = _with_subtitles(vt)
        spec = with_variants(spec, vt.config.variant)
        questions = await asyncio.to_thread(select_questions, spec)
        counted = {"done": 0, "total": 0}

        def planned(units: int, reused: int) -> None:
            counted["total"] = units
            self._eval_progress(job.id, counted, reused)

        def recorded(_record: object) -> None:
            counted["done"] += 1
            self._eval_progress(job.id, counted)

        executor = make_executor(vt.config)
        concurrency = spec.options.concurrency
        with executor.answerer(vt, spec.variants, concurrency=concurrency) as answerer:
            run_dir, outcome = await run_evaluation(
                vt, spec, questions, answerer=answerer, on_record=recorded, on_plan=planned
            )
        try:
            written = await asyncio.to_thread(write_outputs, run_dir, spec.benchmark, outcome)
            note = None
        except (VideoTapestryError, OSError) as exc:  # the records stand without a report
            written, note = [], scrub(f"no report written: {exc}")
        result = {
            "run": self.roots.relative(run_dir),
            "files": [self.roots.relative(path) for path in written],
            "variants": [figures.to_json() for figures in summarize(outcome)],
            "written": outcome.written,
            "reused": outcome.reused,
            "stopped": outcome.stopped,
            "note": note,
        }
        if outcome.stopped:  # an error that would repeat on every question stopped the run
            self._set(job.id, result=result)
            raise VideoTapestryError(f"the run stopped early: {outcome.stopped}")
        return result

    def _eval_spec(self, job: Job) -> EvalSpec:
        from videotapestry.eval.runner import RunnerOptions
        from videotapestry.eval.session import EvalSpec

        inputs = job.inputs
        resolve = self.roots.resolve
        return EvalSpec(
            benchmark=inputs["benchmark"],
            annotations=resolve(inputs["annotations"]),
            memories=resolve(inputs["memories"], must_exist=False),
            out=resolve(inputs["out"], must_exist=False),
            options=RunnerOptions(
                variants=tuple(inputs.get("variants") or ()),
                concurrency=inputs.get("concurrency", 4),
                build_missing=inputs.get("build_missing", False),
                build_missing_hint='send "build_missing": true',
                retry_failed=inputs.get("retry_failed", True),
            ),
            videos=resolve(inputs["videos"]) if inputs.get("videos") else None,
            subtitles=resolve(inputs["subtitles"]) if inputs.get("subtitles") else None,
            mode=inputs.get("mode", "mc"),
            duration=inputs.get("duration"),
            ids=frozenset(inputs.get("ids") or ()),
            limit=inputs.get("limit"),
            force=inputs.get("force", False),
            command=("videotapestry", "serve", "eval job", job.id),
        )

    def _eval_progress(self, job_id: str, counted: dict[str, int], reused: int = 0) -> None:
        figures = {"stage": "eval", "done": counted["done"], "total": counted["total"]}
        if reused:
            figures["reused"] = reused
        self._set(job_id, progress=figures)
        self._event(job_id, {"type": "progress", **figures})

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


def _with_subtitles(vt: VideoTapestry) -> VideoTapestry:
    """The server's facade reading the benchmark's subtitles instead of running ASR,
    sharing its models and embedder."""
    from videotapestry.api import VideoTapestry

    return VideoTapestry(
        vt.config, overrides=["asr.source=subtitles"], service=vt.service, embedder=vt.embedder
    )


def _answer_key(inputs: dict[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False)
