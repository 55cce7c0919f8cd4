"""The ``VideoTapestry`` facade: answer questions about a video from its memory.

One instance holds what questions share: the config, the model service (clients, cache,
run-level usage), the prompt registry, the embedder (loaded once) and every memory it has
loaded, with its embeddings and packed PACE-Mem clips (``memory_cache``). Each question gets
its own run context: a video reader, a transcript source, a model session with its own trace
and usage (``run_setup``); its answer becomes a ``Result`` (``Result.from_run``).

Questions are checked before anything is loaded or paid for (``validate_question``, the API
key); whatever makes a run differ from the method is recorded on its result
(``Result.degraded``); errors that would repeat on every call stop the question, and in
``abatch`` the batch, while every finished result is kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from videotapestry import plugins
from videotapestry.agents.answer import run_answer_agent
from videotapestry.agents.citations import citable
from videotapestry.agents.context import ProgressCallback, RunContext
from videotapestry.agents.follow_up import resolve_follow_up
from videotapestry.agents.relative_time import with_relative_time
from videotapestry.agents.rules import is_global_question
from videotapestry.agents.state import (
    AnswerOutcome,
    Degradation,
    DegradationKind,
    EarlierTurn,
    MomentHint,
    QuestionInput,
    ResultWarning,
)
from videotapestry.assemble import CompositeMemory, assemble
from videotapestry.config import Config, load_config, validate_config
from videotapestry.contracts.method import OUTPUT_SCHEMAS, answer_model
from videotapestry.conversation import Conversation
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.errors import ConfigError, ModelCallError, VideoTapestryError
from videotapestry.graph import build_graph
from videotapestry.library import Library, LibraryIndex
from videotapestry.library.answering import AnswerVideo
from videotapestry.llm.service import ModelService
from videotapestry.llm.usage import attach_spent
from videotapestry.memory import LiveState, VectorsReplaced, VideoMemory
from videotapestry.memory_cache import LoadedMemory, MemoryCache
from videotapestry.prompts import PromptRegistry, short_hash
from videotapestry.question import labelled_options, validate_question
from videotapestry.result import (
    BatchResults,
    Exploration,
    QuestionFailure,
    Result,
    load_exploration,
)
from videotapestry.run_setup import open_run_context
from videotapestry.variants import REASSEMBLY_VARIANTS, variant_named
from videotapestry.video import FrameCache, RenderCache, VideoReader, frame_workers_for
from videotapestry.views.trace_html import result_fragment

T = TypeVar("T")

__all__ = [
    "BatchResults",
    "Conversation",
    "LoadedMemory",
    "QuestionFailure",
    "QuestionItem",
    "Result",
    "VideoTapestry",
]


@dataclass(frozen=True)
class QuestionItem:
    """One question for ``abatch``."""

    video: str | Path | None
    memory: str | Path | VideoMemory
    question: str
    options: Sequence[str] = ()
    question_id: str | None = None
    subtitle_path: str | Path | None = None
    subtitle_offset_s: float = 0.0


class VideoTapestry:
    def __init__(
        self,
        config: str | Path | Mapping[str, Any] | Config | None = None,
        *,
        profile: str | None = None,
        overrides: Sequence[str] = (),
        service: ModelService | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = load_config(config, profile=profile, overrides=overrides)
        self.prompts = PromptRegistry(self.config.prompts.override_dir)
        self.service = service or ModelService(self.config)
        self.embedder = embedder or SentenceTransformerEmbedder(self.config.embedding)
        self._memories = MemoryCache(
            self.embedder,
            self.config.evidence,
            self.config.asr,
            stored_vectors=self.config.embedding.stored_vectors,
        )
        #: Decoded frames every question of this facade (and its variants) can reuse.
        self.frames = FrameCache(self.config.video.frame_cache_mb * 2**20)
        #: Rendered observations (grids, JPEG bytes) every question of this facade can reuse.
        self.renders = RenderCache(self.config.video.render_cache_mb * 2**20)
        #: The processes that decode and encode observation frames (``video.decode_workers``;
        #: None decodes in threads); started on the first frames, stopped by ``aclose``.
        self.frame_workers = frame_workers_for(self.config.video)
        #: The compiled graph of each variant asked without a checkpointer: compiled once,
        #: since a compiled graph keeps no state of a run and each compile leaves hundreds of
        #: objects in reference cycles for the collector's full passes.
        self._graphs: dict[str, Any] = {}

    def for_variant(self, variant: str) -> VideoTapestry:
        """This instance under another variant (paper Table 3), sharing everything loaded.

        The model service (clients, endpoint limits, cache, run usage), the embedder, the
        prompts, every loaded memory, the decoded frames and the Whisper model are the same
        objects, so a sweep
        over variants loads each of them once. Only ``config.variant`` differs, which is what
        makes sharing them valid.
        """
        config = validate_config({**self.config.model_dump(mode="json"), "variant": variant})
        sibling = VideoTapestry(config, service=self.service, embedder=self.embedder)
        sibling.prompts = self.prompts
        sibling._memories = self._memories
        sibling.frames = self.frames
        sibling.renders = self.renders
        sibling.frame_workers = self.frame_workers
        return sibling

    # -- memory ----------------------------------------------------------------------------

    def load_memory(
        self, memory: str | Path | VideoMemory, *, video_fingerprint: str | None = None
    ) -> LoadedMemory:
        """Load (once), embed with the configured model, and pack the leaf evidence."""
        return self._memories.load(memory, video_fingerprint=video_fingerprint)

    def release_memory(self, memory: str | Path) -> None:
        """Forget a loaded memory (under every video fingerprint), so a run over hundreds of
        videos keeps only the memories of the questions in flight."""
        self._memories.release(memory)

    def build_graph(self, *, checkpointer: Any = None, **compile_options: Any) -> Any:
        """The compiled LangGraph graph for this config's variant (stream, draw, checkpoint)."""
        return build_graph(
            variant=self.config.variant, checkpointer=checkpointer, **compile_options
        )

    def _question_graph(self, checkpointer: Any) -> Any:
        if checkpointer is not None:
            return self.build_graph(checkpointer=checkpointer)
        variant = self.config.variant
        if variant not in self._graphs:
            self._graphs[variant] = self.build_graph()
        return self._graphs[variant]

    def prepare(self) -> None:
        """Do now, in this thread, the one-off work of a process's first questions: every
        prompt template read and compiled, this variant's graph compiled, and each reply
        model's JSON schema made. Left to the questions, an eval's first 16 did it on the
        event loop they all share, one after another."""
        self.prompts.prepare()
        self._question_graph(None)
        for output_model in (*OUTPUT_SCHEMAS.values(), answer_model(self.config.answer.citations)):
            self.service.json_schema(output_model)

    # -- questions -------------------------------------------------------------------------

    def answer(self, *args: Any, **kwargs: Any) -> Result:
        """Synchronous ``aanswer`` (for scripts; in a notebook, ``await aanswer(...)``)."""
        return self.run_sync(self.aanswer(*args, **kwargs))

    def reanswer(self, *args: Any, **kwargs: Any) -> Result:
        """Synchronous ``areanswer``."""
        return self.run_sync(self.areanswer(*args, **kwargs))

    def conversation(
        self,
        video: str | Path | None,
        memory: str | Path | VideoMemory,
        **answer_options: Any,
    ) -> Conversation:
        """Follow-up questions about ``video``: ``conversation.ask(question, options=None)``
        answers each in the light of the turns before it (``Conversation``).
        ``answer_options`` go to every turn's ``aanswer`` (``no_video``, ``subtitle_path``)."""
        return Conversation(self, video, memory, answer_options=dict(answer_options))

    async def answer_candidate(
        self,
        video: str | None,
        memory: str,
        question: str,
        options: Sequence[str],
        hints: Sequence[MomentHint],
    ) -> Result:
        """One video's run for a library question: the method on ``memory`` (and ``video``,
        when its file is known), the search's moments in it as ``hints``, no images kept."""
        return await self.aanswer(
            video,
            memory,
            question,
            options,
            no_video=video is None,
            keep_images=False,
            hints=hints,
        )

    def library(
        self, path: str | Path, *, max_videos: int = 3, answer_video: AnswerVideo | None = None
    ) -> Library:
        """The library at ``path`` (made when new), answered with this facade: ``index``
        (``update(roots)``), ``search(query, top_k)``, ``answer(question, options=None)`` and
        ``aanswer``. A library question runs the method on each of up to ``max_videos``
        videos the search puts forward, then composes one answer citing (video, time).
        ``answer_video`` runs them elsewhere (on Ray: ``executors.open_library``); by
        default they are this facade's own, in this process (``answer_candidate``)."""
        return Library(
            LibraryIndex(path, self.embedder),
            service=self.service,
            prompts=self.prompts,
            answer_video=answer_video or self.answer_candidate,
            load_memory=lambda memory, fingerprint: (
                self.load_memory(memory, video_fingerprint=fingerprint).memory
            ),
            max_videos=max_videos,
            citations=self.config.answer.citations,
            max_question_chars=self.config.question.max_chars,
        )

    def run_sync(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run one of this facade's coroutines to the end from synchronous code, closing the
        model clients after (they belong to the event loop that ends here)."""
        return self._sync(coroutine)

    def _sync(self, coroutine: Any) -> Any:
        async def run() -> Any:
            try:
                return await coroutine
            finally:
                await self.service.aclose()

        return asyncio.run(run())

    async def aanswer(
        self,
        video: str | Path | None,
        memory: str | Path | VideoMemory,
        question: str,
        options: Sequence[str] | None = None,
        *,
        question_id: str | None = None,
        no_video: bool = False,
        subtitle_path: str | Path | None = None,
        subtitle_offset_s: float = 0.0,
        progress: ProgressCallback | None = None,
        checkpointer: Any = None,
        thread_id: str | None = None,
        keep_images: bool = True,
        history: Sequence[EarlierTurn] = (),
        readers: Sequence[VideoReader] = (),
        hints: Sequence[MomentHint] = (),
    ) -> Result:
        """Answer one question: multiple-choice with ``options``, free-form without (the same
        method; the Answer agent then answers in words, ``Result.answer_text``). Either way
        the result cites the moments its answer rests on (``Result.citations``).
        ``history`` holds a conversation's earlier turns (``conversation``): every agent is
        shown them, and a reference to the previous answer ("right after that") is resolved
        to the moment it cited (``Result.asked`` keeps the words as asked). ``readers``:
        decoders of ``video`` already open, used and left open (a conversation's).
        ``hints``: moments a library search found for the question in this video, shown to
        the Overview agent after its own locator's windows (``library``).
        ``keep_images`` keeps the JPEGs the agents saw on the result (for notebooks); batch
        runs leave it off, as hundreds of questions would hold GBs.

        Raises ``QuestionError`` for a malformed question and ``ModelAuthError`` for a
        missing key before anything is loaded; errors that would repeat on every model call
        (a refused key, an unknown model) stop the question with a ``ModelCallError``.
        """
        validate_question(question, options or [], max_chars=self.config.question.max_chars)
        options = labelled_options(options or [])
        self.service.check_credentials(self._roles())
        started = time.perf_counter()
        qid = question_id or short_hash(question, *options)
        follow_up = resolve_follow_up(question, history)
        item = QuestionInput(
            question=follow_up.question,
            options=list(options),
            question_id=qid,
            subtitle_path=str(subtitle_path) if subtitle_path else None,
            subtitle_offset_s=subtitle_offset_s,
            history=list(history),
            asked=follow_up.asked,
            hints=list(hints),
        )
        setup: list[Degradation] = []
        if follow_up.unresolved:
            setup.append(
                _setup_loss(
                    "follow_up_unresolved",
                    "the follow-up's reference to an earlier answer",
                    follow_up.unresolved,
                )
            )
        # Opening the video (probe, decoders) and loading the memory are CPU and file work:
        # off the event loop, so concurrent questions keep their model calls going.
        ctx = await asyncio.to_thread(
            self._context,
            video,
            memory,
            item,
            no_video=no_video,
            progress=progress,
            readers=readers,
        )
        # "In the last 10 minutes" was read against the time the loaded memory covers.
        item = with_relative_time(item, ctx.relative_time)
        past_covered = ctx.relative_time.past_covered if ctx.relative_time else ""
        try:
            if past_covered:
                # A moment the memory does not cover: said, not guessed by the agents.
                ctx.session.trace.note("question_past_covered", reason=past_covered)
                state: Mapping[str, Any] = {"answer": _not_covered_answer(past_covered, ctx)}
            else:
                state = await self._run_graph(item, ctx, setup, checkpointer, thread_id or qid)
        except BaseException as exc:
            attach_spent(exc, ctx.session.usage.summary())
            raise
        finally:
            # Closing a decoder frees its container's index (megabytes of a long file): off
            # the loop too, and carried to the end even when the question was cancelled.
            await asyncio.shield(asyncio.to_thread(ctx.close_video))
        if not keep_images:
            ctx.images.clear()
        # In a thread: the paths it resolves are system calls, each a wait for the
        # interpreter lock on the loop when the questions of an eval finish together.
        return await asyncio.to_thread(
            self._result,
            item,
            ctx,
            state,
            time.perf_counter() - started,
            memory=memory,
            setup=setup,
        )

    async def _run_graph(
        self,
        item: QuestionInput,
        ctx: RunContext,
        setup: list[Degradation],
        checkpointer: Any,
        thread_id: str,
    ) -> Mapping[str, Any]:
        """The method's graph on one question (resumed from ``checkpointer`` when it holds
        an unfinished run of ``thread_id``); ``setup`` gains what the setup lost."""
        graph = self._question_graph(checkpointer)
        run_config = {"configurable": {"thread_id": thread_id}}
        resume = False
        if checkpointer is not None:
            snapshot = await graph.aget_state(run_config)
            resume = bool(snapshot.values) and bool(snapshot.next)
        state_in = (
            None
            if resume
            else {
                "question": item,
                "is_global": is_global_question(item.question, item.options),
            }
        )
        if ctx.observation_disabled:
            ctx.session.trace.note("observation_disabled", reason=ctx.observation_disabled)
        if ctx.asr_substituted and ctx.asr_enabled:
            setup.append(_setup_loss("asr_substituted", "ASR transcript", ctx.asr_substituted))
        if ctx.memory_past_end and ctx.variant.method:
            setup.append(
                _setup_loss(
                    "memory_past_video_end",
                    "the memory's nodes past the video's end",
                    ctx.memory_past_end,
                )
            )
        if ctx.video is not None and ctx.video.info.not_upright and ctx.visual_enabled:
            setup.append(
                _setup_loss(
                    "frames_not_upright",
                    "the frames the agents see",
                    ctx.video.info.not_upright,
                )
            )
        return await graph.ainvoke(state_in, run_config, context=ctx)

    async def areanswer(
        self,
        source: Result | Exploration | str | Path,
        variant: str,
        *,
        memory: str | Path | VideoMemory | None = None,
    ) -> Result:
        """The same exploration under another final memory; only the Answer agent runs.

        ``source`` is a finished full-method ``Result``, its ``Exploration`` or the path of
        its saved trace. The selected nodes, observations, refined texts and handoff trace
        are reused as they are (paper Appendix C); no retrieval, observation or update call
        is repeated, so the variants differ only in what the Answer agent reads.
        """
        if variant not in REASSEMBLY_VARIANTS:
            raise ConfigError(
                f"variant {variant!r} cannot be built from a finished exploration; choose one "
                f"of {', '.join(REASSEMBLY_VARIANTS)}"
            )
        if isinstance(source, (str, Path)):
            exploration = load_exploration(source)
        elif isinstance(source, Result):
            exploration = Exploration.of(source)
        else:
            exploration = source
        if exploration.variant not in REASSEMBLY_VARIANTS:
            raise VideoTapestryError(
                f"run {exploration.run_id or exploration.question.question_id} used variant "
                f"{exploration.variant!r}, whose exploration is not the full method's; rerun it "
                "with variant=full first"
            )
        memory = memory if memory is not None else exploration.memory_source
        if memory is None:
            raise VideoTapestryError("the trace does not say which memory it used; pass memory=")
        self.service.check_credentials(("answer",))
        started = time.perf_counter()
        loaded = self.load_memory(memory, video_fingerprint=exploration.video_fingerprint)
        composite = assemble(
            loaded.memory,
            exploration.levels,
            exploration.handoff,
            variant=variant,
            macros_shown=self.config.agents.composite_macros,
            citations=self.config.answer.citations,
        )
        session = self.service.session()
        item = exploration.question
        try:
            answer = await run_answer_agent(
                session,
                self.prompts,
                question=item,
                memory=composite.text,
                handoff_trace=composite.handoff_trace,
                evidence=citable(exploration.levels),
                nodes=loaded.memory,
                citations=self.config.answer.citations,
            )
        except BaseException as exc:
            attach_spent(exc, session.usage.summary())
            raise
        # Read against the memory it is answered from (by default the one it explored).
        exploration = dataclasses.replace(
            exploration,
            memory_source=_memory_source(memory),
            video_duration_s=exploration.video_duration_s or loaded.memory.duration,
        )
        return Result.from_run(
            exploration,
            composite,
            answer,
            session,
            variant=variant,
            memory=loaded.memory,
            prompt_hashes={"final_answer": short_hash(self.prompts.source("final_answer"))},
            elapsed_s=time.perf_counter() - started,
            reassembled_from=exploration.run_id or item.question_id,
            warnings=_vectors_warning(loaded.vectors_replaced),
            html_view=result_fragment,
        )

    async def abatch(
        self, items: Iterable[QuestionItem], *, concurrency: int = 4, keep_images: bool = False
    ) -> BatchResults:
        """Answer many questions, at most ``concurrency`` at a time, outcomes in input order.

        Each outcome is a ``Result`` or a ``QuestionFailure``: one failing question never
        loses the others. An error that would repeat for every question (a refused key, an
        unknown model, an unreachable server) stops the batch: questions not yet started are
        returned as skipped failures and ``stopped`` says why.
        """
        items = list(items)
        limit = asyncio.Semaphore(max(1, concurrency))
        outcomes: BatchResults = BatchResults([None] * len(items))
        stop = asyncio.Event()

        def qid(index: int) -> str:
            item = items[index]
            return item.question_id or short_hash(item.question, *item.options)

        async def one(index: int) -> None:
            item = items[index]
            async with limit:
                if stop.is_set():
                    outcomes[index] = QuestionFailure(
                        qid(index), f"not run: {outcomes.stopped}", "BatchStopped", skipped=True
                    )
                    return
                try:
                    outcomes[index] = await self.aanswer(
                        item.video,
                        item.memory,
                        item.question,
                        item.options,
                        question_id=item.question_id,
                        subtitle_path=item.subtitle_path,
                        subtitle_offset_s=item.subtitle_offset_s,
                        keep_images=keep_images,
                    )
                except Exception as exc:  # one question's failure never loses the others
                    fatal = isinstance(exc, ModelCallError) and not exc.recoverable
                    message = str(exc) if isinstance(exc, VideoTapestryError) else repr(exc)
                    outcomes[index] = QuestionFailure(
                        qid(index), message, type(exc).__name__, fatal=fatal
                    )
                    if fatal and not stop.is_set():
                        outcomes.stopped = message
                        stop.set()

        await asyncio.gather(*(one(index) for index in range(len(items))))
        return outcomes

    async def aclose(self) -> None:
        await self.service.aclose()
        if self.frame_workers is not None:
            await asyncio.to_thread(self.frame_workers.close)

    # -- building memories -----------------------------------------------------------------

    def build_memory(
        self,
        video: str | Path,
        out: str | Path,
        subtitles: str | Path | None = None,
        *,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
        progress: Any = False,
        force: bool = False,
    ) -> Any:
        """Build (or resume building) the memory of ``video`` into ``out`` with this
        instance's config, models and embedder; returns a ``memory_builders.BuildResult``.
        ``progress``: bars on stderr (True), none (False), or the builder's progress display
        (a ``memory_builders.progress.BuildProgress``, which this layer cannot name).
        ``force``: replace the memory of another video that ``out`` holds (else refused)."""
        return self._sync(
            self.abuild_memory(
                video,
                out,
                subtitles,
                restart=restart,
                export_memdreamer=export_memdreamer,
                progress=progress,
                force=force,
            )
        )

    async def abuild_memory(
        self,
        video: str | Path,
        out: str | Path,
        subtitles: str | Path | None = None,
        *,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
        progress: Any = False,
        on_stage: Callable[[Any], None] | None = None,
        force: bool = False,
    ) -> Any:
        """``build_memory`` in a running event loop (notebooks, servers). ``on_stage`` is
        called with each ``memory_builders.progress.StageUpdate`` (a stage's done / total),
        whether or not ``progress`` draws bars; the scan calls it from its decoding thread."""
        # Passed only when set, so a third-party builder need not know the keyword.
        forcing = {"force": True} if force else {}
        return await self._memory_builder(progress, on_stage).abuild(
            video,
            out,
            subtitles=subtitles,
            restart=restart,
            export_memdreamer=export_memdreamer,
            **forcing,
        )

    def _memory_builder(self, progress: Any, on_stage: Callable[[Any], None] | None) -> Any:
        create_builder = plugins.load(plugins.MEMORY_BUILDERS, "default")
        # Passed only when asked for, so a third-party builder need not know the keyword.
        listening = {} if on_stage is None else {"on_stage": on_stage}
        return create_builder(
            self.config,
            service=self.service,
            embedder=self.embedder,
            prompts=self.prompts,
            progress=progress,
            **listening,
        )

    # -- internals -------------------------------------------------------------------------

    def _roles(self) -> tuple[str, ...]:
        return variant_named(self.config.variant).model_roles

    def _context(
        self,
        video: str | Path | None,
        memory: str | Path | VideoMemory,
        item: QuestionInput,
        *,
        no_video: bool,
        progress: ProgressCallback | None,
        readers: Sequence[VideoReader] = (),
    ) -> RunContext:
        return open_run_context(
            video,
            memory,
            item,
            config=self.config,
            prompts=self.prompts,
            service=self.service,
            embedder=self.embedder,
            memories=self._memories,
            frames=self.frames,
            renders=self.renders,
            frame_workers=self.frame_workers,
            no_video=no_video,
            progress=progress,
            readers=readers,
        )

    def _result(
        self,
        item: QuestionInput,
        ctx: RunContext,
        state: Mapping[str, Any],
        elapsed: float,
        *,
        memory: str | Path | VideoMemory,
        setup: Sequence[Degradation] = (),
    ) -> Result:
        """A run from the start: its exploration and final memory read from the graph's
        final state; ``setup``: what changed the question before any level ran."""
        levels = list(state.get("levels", []))
        exploration = Exploration(
            question=item,
            levels=levels,
            handoff=list(state.get("handoff", [])),
            variant=self.config.variant,
            run_id=uuid.uuid4().hex[:12],
            memory_source=_memory_source(memory),
            video_fingerprint=ctx.video.info.fingerprint if ctx.video is not None else None,
            degraded=[*setup, *(d for outcome in levels for d in outcome.degraded)],
            video_path=str(Path(ctx.video.info.path).resolve()) if ctx.video is not None else None,
            video_duration_s=ctx.duration_s,
        )
        final_memory = CompositeMemory(
            text=state.get("memory_text", ""),
            handoff_trace=state.get("handoff_text", ""),
            tokens=state.get("memory_tokens", 0),
        )
        names = {e.prompt_name for e in ctx.session.trace.events if e.prompt_name}
        result = Result.from_run(
            exploration,
            final_memory,
            state["answer"],
            ctx.session,
            variant=self.config.variant,
            memory=ctx.memory,
            prompt_hashes={n: short_hash(self.prompts.source(n)) for n in sorted(names)},
            elapsed_s=elapsed,
            observation_disabled=ctx.observation_disabled,
            images=ctx.images,
            warnings=_setup_warnings(ctx),
            html_view=result_fragment,
        )
        result.memory_covers = _memory_covers(ctx.live, ctx.memory)
        return result


def _memory_covers(state: LiveState | None, loaded: VideoMemory) -> dict[str, Any] | None:
    """What a live memory's version the question read covers (SPEC §16), else None. The
    pointer was read after the version was loaded: when a newer version was published in
    between, the time is the loaded one's (its name unknown, not the newer one's)."""
    if state is None:
        return None
    if abs(state.covered_s - loaded.duration) > 0.05:
        state = dataclasses.replace(
            state, version="", covered_s=round(loaded.duration, 3), ended=False
        )
    return {
        "version": state.version or None,
        "covered_s": state.covered_s,
        "ended": state.ended,
        "source": state.source,
        "text": state.describe(),
    }


def _not_covered_answer(message: str, ctx: RunContext) -> AnswerOutcome:
    """The answer to a question about a moment the memory does not cover: the message, no
    option chosen and nothing cited (no agent ran)."""
    return AnswerOutcome(
        letter="",
        reasoning=message,
        raw_answer="",
        source="past_covered",
        prompt_hash="",
        text=message,
        citations_asked=ctx.config.answer.citations,
    )


def _setup_warnings(ctx: RunContext) -> list[ResultWarning]:
    """What a reader of this result should know about how the question was set up."""
    covered = []
    if ctx.relative_time is not None and ctx.relative_time.past_covered:
        covered.append(
            ResultWarning(
                kind="question_past_covered",
                level="setup",
                what="the question (answered without the agents)",
                why=ctx.relative_time.past_covered,
            )
        )
    if not ctx.variant.method:
        return covered  # the Direct baseline reads neither the memory's vectors nor its speech
    warnings = [*covered, *_vectors_warning(ctx.vectors_replaced)]
    if ctx.subtitles_for_whisper and ctx.asr_enabled:
        warnings.append(
            ResultWarning(
                kind="transcript_from_subtitles",
                level="setup",
                what="the transcript the ASR tool reads",
                why=ctx.subtitles_for_whisper,
            )
        )
    return warnings


def _vectors_warning(replaced: VectorsReplaced | None) -> list[ResultWarning]:
    """The note every result answered from a memory whose own node vectors were replaced
    carries. A warning, not a degradation: nothing failed and no part of the method is
    missing (every step ran with the embedder the config names, as it will for every
    question on this memory), but search and PACE-Mem chose with other vectors than the
    memory was built with, which a comparison with results on the memory as built (the
    paper's) must know."""
    if replaced is None:
        return []
    return [
        ResultWarning(
            kind="memory_vectors_replaced",
            level="setup",
            what="the memory's node vectors",
            why=replaced.describe(),
        )
    ]


def _memory_source(memory: str | Path | VideoMemory) -> str | None:
    return None if isinstance(memory, VideoMemory) else str(Path(memory).resolve())


def _setup_loss(kind: DegradationKind, what: str, why: str) -> Degradation:
    """A loss known before the first agent runs (the question's setup), reported as such."""
    return Degradation(kind=kind, level="setup", what=what, why=why)
