"""Answering benchmark questions into a run directory: bounded concurrency, resume, early
stop and variant sweeps.

Why it is built this way:

- **One line per finished question, the moment it finishes.** Benchmarks run for hours and
  get killed; a question is written (trace first, then its record) as soon as its answer
  exists, so a kill loses only the questions in flight and a rerun of the same command asks
  only what has no finished record.
- **Resume rules.** Answered records are final. Skipped records (never run because the run
  stopped) are asked again. Failed records are asked again too, since most failures are
  transient (timeouts, a server restart) or were fixed between runs (a memory built, a
  video downloaded); a failure that happens before any model call (a missing video or
  memory, a malformed question) costs nothing to retry and gets a new line only when its
  outcome changes. ``retry_failed=False`` (``--keep-failed``) keeps every failed record.
- **Stopping early.** A non-recoverable model error (a refused key, an unknown model, an
  unreachable server: ``ModelCallError.recoverable is False``) would repeat for every
  question, and so would a failure that the first questions of a variant all share (same
  error type and message): either stops the run, so a wrong model name costs one request
  instead of a table of failures. Questions not yet started are recorded as skipped with
  the reason; questions in flight finish and are recorded.
- **Variant sweeps share everything loaded.** Each variant has its own ``VideoTapestry``
  made by ``for_variant`` (one model service, one embedder, one Whisper, each memory loaded
  once). ``refined_super_only`` and ``refined_paths_only`` are not explorations of their
  own: they reassemble the ``full`` run's exploration of the same question
  (``areanswer``, paper Appendix C), one Answer call each, in the same concurrency slot as
  that full run (so its ``Result`` is not held longer than one question), or from its saved
  trace when the full record is already in the run.
- **Missing memories.** ``--memories DIR/<video stem>/`` is what ``build-memory --videos``
  writes. A missing one is a per-question failure, or with ``build_missing`` it is built
  once per video (questions of that video wait for the one build; builds run one at a time,
  each with the builder's own concurrency, and hold no question slot).
- **Nothing heavy on the event loop.** A memory is loaded (parsed, embedded, packed) on one
  loader thread, once for every variant and question of its video, in the order questions
  reach it, and forgotten after its video's last question; traces and records are written
  off the loop. With ``Inputs.videos`` None questions are answered from the memories alone.
- **Where questions run is the answerer's business** (``eval/answering.py``). The runner
  plans, resumes, stops early and writes every record itself; an answerer answers a slot's
  variants and hands back outcomes: ``LocalAnswerer`` in this process, or the Ray executor's
  workers (``executors/ray_executor.py``), which run the same local answerer, so the
  records are the same.

A failed record carries the usage of the calls its question made before the exception
(``llm.usage.attach_spent``), so a run's totals count what failing questions cost too.

Every answered record carries the answer in words and the union of the spans its
citations cite (empty when it cited nothing: an ungrounded answer, not an error), which
the reports score against the question's evidence spans, clipped to the video's probed
duration when the answer knows it (and counted in the record's ``evidence_notes``). A
free-form question (no options) with a reference answer is judged as its record is written
(``judging``), in the slot of the question, so judging is bounded by ``--concurrency``
like answering; a judge error every question would repeat stops the run like a model
error of the method.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry.agents.state import Citation
from videotapestry.asr import SubtitleSource
from videotapestry.config import BUILDER_ROLES, JUDGE_ROLE
from videotapestry.errors import ConfigError, DiskFullError, VideoTapestryError
from videotapestry.eval.answering import (
    Answerer,
    Failure,
    LocalAnswerer,
    QuestionFiles,
    RunStoppedError,
    VariantOutcome,
)
from videotapestry.eval.judging import Judge, needs_judge
from videotapestry.eval.provenance import merge_models, served_models, video_prints
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import Judgement, RecordUsage, ResultRecord
from videotapestry.eval.run_budget import RunBudget, run_budget_reason, run_spent
from videotapestry.eval.run_reader import Key, VideoPrints, latest, read_records
from videotapestry.eval.run_writer import RunDirectory
from videotapestry.files import disk_full_named
from videotapestry.memory import is_memdreamer_memory, is_native_memory
from videotapestry.result import Result
from videotapestry.time_spans import Span, checked, union
from videotapestry.variants import FULL, exploration_source, variant_named

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry

ERRORS_LOG = "errors.log"


class MissingVideoError(VideoTapestryError):
    """A question's video file is not under ``--videos``."""


class MissingMemoryError(VideoTapestryError):
    """A question's memory directory is not under ``--memories`` (and is not to be built)."""


class MemoryBuildError(VideoTapestryError):
    """Building a missing memory failed; every question of that video records it."""


@dataclass(frozen=True)
class Inputs:
    """Where a question's files are: ``videos/q.video``, ``memories/<video stem>/``, and its
    subtitles under ``subtitles`` (else next to the annotations)."""

    #: None answers from the memories alone (no frames or speech observed).
    videos: Path | None
    memories: Path
    subtitles: Path | None = None
    annotations_dir: Path | None = None

    def video(self, question: EvalQuestion) -> Path | None:
        return None if self.videos is None else self.videos / question.video

    def memory(self, question: EvalQuestion) -> Path:
        return self.memories / Path(question.video).stem

    def subtitle_file(self, question: EvalQuestion) -> Path | None:
        if not question.subtitles:
            return None
        base = self.subtitles or self.annotations_dir
        return base / question.subtitles if base is not None else Path(question.subtitles)


@dataclass(frozen=True)
class RunnerOptions:
    variants: tuple[str, ...] = (FULL.name,)
    concurrency: int = 4
    build_missing: bool = False
    #: How the caller's user turns ``build_missing`` on, for the missing-memory message.
    build_missing_hint: str = "pass --build-missing"
    #: Ask failed questions again on a rerun (see the module docstring).
    retry_failed: bool = True
    #: Stop when the first this many finished questions of a variant all failed the same
    #: way, on two videos or more when the run has two; 0 never stops for that.
    stop_after_same_failures: int = 3
    #: Once the embedding model is loaded, move every object alive (modules, the model:
    #: ~0.6M objects) out of the cyclic collector's reach (``gc.freeze``), and again after
    #: each memory this process loads, so its full passes, which stop every thread, walk
    #: only the questions' own objects; everything is unfrozen when the run ends.
    #: Process-wide, so the command sets it, not the library's default.
    freeze_loaded_objects: bool = False
    #: The whole run's cap (``--max-usd``, ``--max-calls``): once its records have spent it,
    #: no further question starts; those in flight finish and every record is kept.
    budget: RunBudget = field(default_factory=RunBudget)


@dataclass
class RunOutcome:
    """The run's latest record of every selected (variant, question), and how it went."""

    records: dict[Key, ResultRecord]
    variants: tuple[str, ...]
    #: Records written by this invocation (questions asked, failed or skipped now).
    written: int = 0
    #: Finished records found in the run directory and kept.
    reused: int = 0
    #: Why the run stopped early (None when every question was attempted).
    stopped: str | None = None
    torn_lines: int = 0
    #: True when ``stopped`` is the run's budget, which a rerun with a larger one resumes.
    budget_reached: bool = False

    def of_variant(self, variant: str) -> list[ResultRecord]:
        return [r for (v, _), r in self.records.items() if v == variant]

    @property
    def failed(self) -> list[ResultRecord]:
        return [r for r in self.records.values() if r.status == "failed"]

    @property
    def skipped(self) -> list[ResultRecord]:
        return [r for r in self.records.values() if r.status == "skipped"]

    @property
    def degraded(self) -> list[ResultRecord]:
        return [r for r in self.records.values() if r.status == "answered" and r.degraded]


@dataclass
class _Plan:
    """The (variant, question) pairs still to answer, grouped by concurrency slot."""

    groups: list[tuple[EvalQuestion, tuple[str, ...]]] = field(default_factory=list)
    reused: int = 0

    @property
    def units(self) -> int:
        return sum(len(variants) for _, variants in self.groups)


def check_variants(variants: Sequence[str]) -> tuple[str, ...]:
    """The variants in order, once each; reassembly variants need ``full`` in the same run."""
    chosen = tuple(dict.fromkeys(v.strip() for v in variants if v.strip()))
    rows = [variant_named(v) for v in chosen]  # an unknown name stops here
    if not chosen:
        raise ConfigError("no variant given")
    reassembled = [v.name for v in rows if v.reassembled_from is not None]
    if reassembled and FULL.name not in chosen:
        raise ConfigError(
            f"{', '.join(reassembled)} reassemble the full method's exploration of each question "
            "(only the Answer agent runs); add full to --variant, e.g. --variant "
            f"full,{','.join(reassembled)}"
        )
    return chosen


class EvalRunner:
    """Answers questions into one run directory with one ``VideoTapestry`` per variant."""

    def __init__(
        self,
        vt: VideoTapestry,
        run: RunDirectory,
        inputs: Inputs,
        options: RunnerOptions,
        *,
        on_record: Callable[[ResultRecord], None] | None = None,
        on_plan: Callable[[int, int], None] | None = None,
        answerer: Answerer | None = None,
    ) -> None:
        self.base = vt
        self.run_dir = run
        self.inputs = inputs
        self.options = options
        self.variants = check_variants(options.variants)
        #: Called with each record written, and once with (records to write, kept).
        self.on_record = on_record
        self.on_plan = on_plan
        #: Where question groups are answered (``executors``: this process, or Ray workers).
        self._answerer = answerer or LocalAnswerer(
            vt, self.variants, concurrency=options.concurrency
        )
        self._judge = Judge(vt.config, vt.prompts, vt.service)
        self._latest: dict[Key, ResultRecord] = {}
        self._stop: str | None = None
        self._budget_stop = False
        self._first: dict[str, list[tuple[tuple[str, str] | None, Path]]] = {}
        self._builds: dict[Path, asyncio.Task] = {}
        self._build_slot: asyncio.Semaphore | None = None
        self._pending: Counter[Path] = Counter()
        self._present: set[Path] = set()
        self._written = 0
        #: Role -> model ids the replies of this invocation's answers named.
        self._served: dict[str, set[str]] = {}

    # -- planning --------------------------------------------------------------------------

    def plan(self, questions: Sequence[EvalQuestion]) -> _Plan:
        """What a run of ``questions`` would ask, given the records already in the run."""
        counts = Counter(q.id for q in questions)
        repeated = sorted(qid for qid, n in counts.items() if n > 1)
        if repeated:
            raise ConfigError(
                f"question ids must be unique, but {len(repeated)} repeat (e.g. {repeated[0]!r})"
            )
        plan = _Plan()
        for question in questions:
            todo = [v for v in self.variants if self._needs_run(v, question.id)]
            plan.reused += len(self.variants) - len(todo)
            for group in self._groups(todo):
                plan.groups.append((question, group))
        if self._answerer.group_by_video:  # stable: videos in order of their first question
            first: dict[Path, int] = {}
            for question, _ in plan.groups:
                first.setdefault(self.inputs.memory(question), len(first))
            plan.groups.sort(key=lambda item: first[self.inputs.memory(item[0])])
        return plan

    def _needs_run(self, variant: str, question_id: str) -> bool:
        record = self._latest.get((variant, question_id))
        if record is None or record.status == "skipped":
            return True
        return record.status == "failed" and self.options.retry_failed

    @staticmethod
    def _groups(todo: Sequence[str]) -> list[tuple[str, ...]]:
        """One slot for the full run with its reassemblies, one for each other variant."""
        full = tuple(v for v in todo if exploration_source(v) == FULL.name)
        others = [(v,) for v in todo if exploration_source(v) != FULL.name]
        return ([full] if full else []) + others

    # -- running ---------------------------------------------------------------------------

    async def run(self, questions: Sequence[EvalQuestion]) -> RunOutcome:
        read = read_records(self.run_dir.path)
        self._latest = latest(read.records)
        self._check_budget()
        plan = self.plan(questions)
        if self.on_plan is not None:
            self.on_plan(plan.units, plan.reused)
        if plan.units:
            self.base.service.check_credentials(self._roles(plan))
            self._answerer.open()
            # The model loads once, before the first questions queue behind its lock (on the
            # answerer's side: this process, or each Ray worker).
            await self._answerer.warm_up()
            if self.options.freeze_loaded_objects:
                gc.freeze()
                self._answerer.freeze_loaded = True
        self._pending = Counter(self.inputs.memory(q) for q, _ in plan.groups)
        # The run's files are looked for once, in a thread: each system call on the loop would
        # hand the interpreter lock to the render threads and wait to get it back. Checked in
        # the questions' order, the questions still reach their slots video by video.
        self._present = await asyncio.to_thread(self._present_files, plan)
        slots = asyncio.Semaphore(max(1, self._answerer.slots))
        self._build_slot = asyncio.Semaphore(1)
        try:
            await asyncio.gather(*(self._group(q, group, slots) for q, group in plan.groups))
        finally:
            self._answerer.close()
            if self.options.freeze_loaded_objects:
                # What was frozen with the memories (a cycle that died later) is collectable
                # again, and a later run in this process starts from a clean slate.
                gc.unfreeze()
        await self._record_run_end(questions)
        keys = [(v, q.id) for q in questions for v in self.variants]
        records = {key: self._latest[key] for key in keys if key in self._latest}
        # A budget spent by the last question stopped nothing: every question was asked.
        cut = self._budget_stop and any(r.status == "skipped" for r in records.values())
        return RunOutcome(
            records=records,
            variants=self.variants,
            written=self._written,
            reused=plan.reused,
            stopped=None if self._budget_stop and not cut else self._stop,
            torn_lines=read.torn_lines + int(self.run_dir.torn_bytes > 0),
            budget_reached=cut,
        )

    async def _record_run_end(self, questions: Sequence[EvalQuestion]) -> None:
        """Add the model ids the server reported and each video's and memory's fingerprint
        to ``run.json`` (``provenance.py``). The answers' traces name the models of calls
        made anywhere (Ray workers too); this process's ledger adds the judge's and a
        build's calls."""
        ledger: dict[str, set[str]] = {}
        for call in self.base.service.usage.records:
            if call.error is None and call.model:
                ledger.setdefault(call.role, set()).add(call.model)
        prints = await asyncio.to_thread(self._fingerprints, questions)
        await asyncio.to_thread(
            self.run_dir.record_run_end,
            served_models=merge_models(self._served, ledger),
            fingerprints=prints,
        )

    def _fingerprints(self, questions: Sequence[EvalQuestion]) -> dict[str, VideoPrints]:
        found: dict[str, VideoPrints] = {}
        for question in questions:
            if question.video not in found:
                found[question.video] = video_prints(
                    self.inputs.video(question), self.inputs.memory(question)
                )
        return found

    def _present_files(self, plan: _Plan) -> set[Path]:
        """The plan's videos that are files and its memories that are memories."""
        present: set[Path] = set()
        for question, _ in plan.groups:
            video, memory = self.inputs.video(question), self.inputs.memory(question)
            if video is not None and video.is_file():
                present.add(video)
            if _has_memory(memory):
                present.add(memory)
        return present

    def _roles(self, plan: _Plan) -> tuple[str, ...]:
        variants = {v for _, group in plan.groups for v in group}
        roles: set[str] = set()
        for row in map(variant_named, variants):
            # A reassembled variant only asks the Answer agent again.
            roles.update(("answer",) if row.reassembled_from is not None else row.model_roles)
        if self.options.build_missing and any(
            not _has_memory(self.inputs.memory(q)) for q, _ in plan.groups
        ):
            roles.update(BUILDER_ROLES)
        if any(needs_judge(q) for q, _ in plan.groups):
            roles.add(JUDGE_ROLE)
        return tuple(sorted(roles))

    async def _group(
        self, question: EvalQuestion, variants: tuple[str, ...], slots: asyncio.Semaphore
    ) -> None:
        memory = self.inputs.memory(question)
        try:
            try:
                prepared = await self._prepare(question)
            except RunStoppedError:
                for variant in variants:
                    await self._skip(question, variant)
                return
            except DiskFullError:
                raise  # every later write would fail too: the run stops, its records kept
            except Exception as exc:
                for variant in variants:
                    await self._fail(question, variant, Failure.of(exc), 0.0)
                return
            async with slots:
                if self._stop is not None:
                    for variant in variants:
                        await self._skip(question, variant)
                    return
                await self._dispatch(question, variants, prepared)
        finally:
            self._pending[memory] -= 1
            if self._pending[memory] == 0:
                # The video's last question is done: its memory need not stay loaded. Freeing
                # its tens of thousands of objects takes a while: not on the loop.
                await asyncio.to_thread(self._answerer.release, memory)

    async def _dispatch(
        self, question: EvalQuestion, variants: tuple[str, ...], prepared: QuestionFiles
    ) -> None:
        """Answer one slot's variants where the answerer runs them; record each outcome.

        Reassemblies need the full run's exploration: from this slot's full run, else from
        the full record already in the run (its trace). Without one they fail as it did."""
        reassembled = [v for v in variants if variant_named(v).reassembled_from is not None]
        saved: Path | None = None
        if reassembled and FULL.name not in variants:
            record = self._latest.get((FULL.name, question.id))
            if record is None or record.status != "answered" or not record.trace:
                for variant in reassembled:
                    await self._inherit_failure(question, variant, record)
                return
            saved = self.run_dir.path / record.trace
        got: set[str] = set()

        async def emit(outcome: VariantOutcome) -> None:
            got.add(outcome.variant)
            await self._record(question, outcome)

        await self._answerer.answer(question, variants, prepared, saved, emit)
        for variant in reassembled:
            if variant not in got:  # the full run failed: nothing to reassemble
                await self._inherit_failure(
                    question, variant, self._latest.get((FULL.name, question.id))
                )

    async def _record(self, question: EvalQuestion, outcome: VariantOutcome) -> None:
        if outcome.result is not None:
            await self._answered(
                question,
                outcome.variant,
                outcome.result,
                reassembled_from=outcome.reassembled_from,
            )
        else:
            assert outcome.failure is not None
            await self._fail(question, outcome.variant, outcome.failure, outcome.elapsed_s)

    async def _prepare(self, question: EvalQuestion) -> QuestionFiles:
        video = self.inputs.video(question)
        if video is not None and video not in self._present:
            raise MissingVideoError(f"video {video} does not exist (question {question.id})")
        memory = self.inputs.memory(question)
        subtitles = self.inputs.subtitle_file(question)
        asr = self.base.config.asr
        if subtitles is not None and asr.source == "subtitles" and video is not None:
            # Read first: a file with no usable cue fails its question (naming the file)
            # before a memory is built or loaded for it.
            source = SubtitleSource(
                subtitles,
                offset_s=question.subtitle_offset_s,
                fallback_encoding=asr.subtitle_fallback_encoding,
            )
            await asyncio.to_thread(source.lines)
        if memory not in self._present:
            if not self.options.build_missing or video is None:
                raise MissingMemoryError(
                    f"no memory for video {question.video} at {memory}; build it with "
                    f"`videotapestry build-memory {video or question.video} {memory}` or "
                    f"{self.options.build_missing_hint}"
                )
            await self._build(video, memory, subtitles)
        if self.base.config.asr.source != "subtitles":
            # A question's subtitles replace the memory's stored transcript and Whisper only
            # when the config says so (asr.source=subtitles, which --subtitles sets).
            subtitles = None
        return QuestionFiles(video, memory, subtitles)

    async def _build(self, video: Path, memory: Path, subtitles: Path | None) -> None:
        """Build ``memory`` once; every question of the video awaits the same build."""
        task = self._builds.get(memory)
        if task is None:
            task = self._builds[memory] = asyncio.ensure_future(
                self._build_once(video, memory, subtitles)
            )
        await asyncio.shield(task)

    async def _build_once(self, video: Path, memory: Path, subtitles: Path | None) -> None:
        from memory_builders.report import BuildStoppedError

        assert self._build_slot is not None
        async with self._build_slot:
            if self._stop is not None:
                raise RunStoppedError(f"not built: {self._stop}")
            try:
                await self._answerer.build_memory(
                    video, memory, subtitles if subtitles and subtitles.is_file() else None
                )
            except BuildStoppedError as exc:
                self._halt(f"building the memory of {video} stopped: {exc}")
                raise MemoryBuildError(f"building the memory of {video} stopped: {exc}") from None
            except DiskFullError:
                raise
            except VideoTapestryError as exc:
                raise MemoryBuildError(f"could not build the memory of {video}: {exc}") from None

    # -- records ---------------------------------------------------------------------------

    async def _answered(
        self,
        question: EvalQuestion,
        variant: str,
        result: Result,
        *,
        reassembled_from: str | None = None,
    ) -> None:
        trace = self.run_dir.trace_relpath(variant, question.id)
        judgement: Judgement | None = None
        if needs_judge(question):
            judged = await self._judge.judge(question, result.answer_text)
            judgement = judged.judgement
            if judged.fatal is not None:
                self._halt(judged.fatal)
        record = ResultRecord.for_question(
            question,
            variant,
            video_duration_s=result.video_duration_s,
            status="answered",
            prediction=None if question.free_form else result.answer,
            answer_text=result.answer_text,
            judgement=judgement,
            cited_spans=cited_spans(result.citations),
            answer_source=result.answer_source,
            fallback=result.answer_source == "fallback",
            degraded=list(dict.fromkeys(d.kind for d in result.degraded)),
            warnings=list(dict.fromkeys(w.kind for w in result.warnings)),
            usage=RecordUsage.model_validate(result.usage.to_dict()),
            elapsed_s=round(result.elapsed_s, 3),
            memory_tokens=result.memory_tokens,
            trace=trace,
            reassembled_from=reassembled_from,
        )
        for role, models in served_models(result.trace.events).items():
            self._served.setdefault(role, set()).update(models)
        await self._write(record, result)
        self._count_first(variant, None, self.inputs.memory(question))

    async def _fail(
        self, question: EvalQuestion, variant: str, failure: Failure, elapsed: float
    ) -> None:
        record = ResultRecord.for_question(
            question,
            variant,
            status="failed",
            error=failure.message,
            error_type=failure.error_type,
            elapsed_s=round(elapsed, 3),
            usage=RecordUsage.model_validate(failure.usage) if failure.usage else RecordUsage(),
        )
        if failure.traceback:  # a bug of ours or a library's: keep the traceback for the report
            await asyncio.to_thread(self._log_error, question, variant, failure.traceback)
        if failure.fatal:
            self._halt(f"{failure.error_type}: {failure.message}")
        await self._write(record)
        if not failure.stopped:
            failed = (record.error_type or "", failure.message)
            self._count_first(variant, failed, self.inputs.memory(question))

    async def _inherit_failure(
        self, question: EvalQuestion, variant: str, full: ResultRecord | None
    ) -> None:
        """A reassembly whose full run has no exploration fails the way the full run did,
        so it is retried exactly when the full run is."""
        error = full.error if full is not None else "the full run of this question is missing"
        record = ResultRecord.for_question(
            question,
            variant,
            status="failed",
            error=f"no exploration to reassemble: {error}",
            error_type=full.error_type if full is not None else "MissingExploration",
            reassembled_from=variant_named(variant).reassembled_from,
        )
        await self._write(record)

    async def _skip(self, question: EvalQuestion, variant: str) -> None:
        record = ResultRecord.for_question(
            question,
            variant,
            status="skipped",
            error=f"not run: {self._stop}",
            error_type=RunStoppedError.__name__,
        )
        await self._write(record)

    async def _write(self, record: ResultRecord, result: Result | None = None) -> None:
        if self._unchanged_failure(record):
            return
        await asyncio.to_thread(self._persist, record, result)
        self._latest[record.key] = record
        self._written += 1
        self._check_budget()
        if self.on_record is not None:
            self.on_record(record)

    def _check_budget(self) -> None:
        """Stop starting questions once the run's records have spent its budget."""
        budget = self.options.budget
        if not budget.limited or self._stop is not None:
            return
        reason = run_budget_reason(budget, run_spent(self._latest.values()))
        if reason is not None:
            self._halt(reason)
            self._budget_stop = True

    def _unchanged_failure(self, record: ResultRecord) -> bool:
        """A retried failure that cost nothing and failed the same way adds no line."""
        old = self._latest.get(record.key)
        return (
            old is not None
            and record.status == "failed"
            and old.status == "failed"
            and record.usage.calls == 0
            and (old.error_type, old.error) == (record.error_type, record.error)
        )

    def _persist(self, record: ResultRecord, result: Result | None) -> None:
        """The trace first, then the line: a record never points at a trace not on disk."""
        if result is not None and record.trace:
            result.save_trace(self.run_dir.path / record.trace)
        self.run_dir.writer.append(record)

    def _log_error(self, question: EvalQuestion, variant: str, text: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with (
            disk_full_named(self.run_dir.path),
            open(self.run_dir.path / ERRORS_LOG, "a", encoding="utf-8") as handle,
        ):
            handle.write(f"== {stamp} {variant} {question.id}\n{text}\n")

    # -- stopping --------------------------------------------------------------------------

    def _halt(self, reason: str) -> None:
        if self._stop is None:
            self._stop = reason

    def _count_first(self, variant: str, failure: tuple[str, str] | None, memory: Path) -> None:
        """Watch the first finished questions of each variant for one shared failure.

        The failures must come from two videos or more (when the run has two): questions
        go out video by video, so the first few may all be one video's, and a fault of that
        video (its file, its memory) repeats only on its own questions."""
        k = self.options.stop_after_same_failures
        first = self._first.setdefault(variant, [])
        if k <= 0 or len(first) >= k:
            return
        first.append((failure, memory))
        failures = [f for f, _ in first]
        if len(first) < k or failures[0] is None or any(f != failures[0] for f in failures):
            return
        videos = len(self._pending)  # the memories of the run's plan
        if len({m for _, m in first}) < min(2, videos):
            del first[-1]  # wait for a question of another video
            return
        error_type, message = failures[0]
        self._halt(
            f"the first {k} questions of variant {variant} all failed with the same error, "
            f"which would repeat for every question: {error_type}: {message}"
        )


def cited_spans(citations: Sequence[Citation]) -> list[Span]:
    """The union of every span the citations cite. A span that is not one (ending before it
    starts) is left out: the record scores what the answer did cite, and the trace keeps the
    citation as given."""
    spans = []
    for citation in citations:
        for start, end in citation.spans:
            try:
                spans.append(checked(start, end))
            except ValueError:
                continue
    return union(spans)


def _has_memory(path: Path) -> bool:
    return is_native_memory(path) or is_memdreamer_memory(path)
