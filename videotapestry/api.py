"""The ``VideoTapestry`` facade: answer questions about a video from its memory.

One instance holds what questions share: the config, the model service (clients, cache,
run-level usage), the prompt registry, the embedder (loaded once) and every memory it has
loaded (with its embeddings and packed PACE-Mem clips). Each question gets its own run
context: a video reader, a transcript source, a model session with its own trace and usage.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videotapestry.agents.context import ProgressCallback, RunContext
from videotapestry.agents.rules import is_global_question
from videotapestry.agents.state import LevelOutcome, QuestionInput
from videotapestry.asr import TranscriptSource, make_transcript_source
from videotapestry.config import Config, load_config
from videotapestry.embeddings import Embedder, SentenceTransformerEmbedder
from videotapestry.graph import build_graph
from videotapestry.llm.service import ModelService
from videotapestry.llm.types import ImagePart
from videotapestry.llm.usage import UsageSummary
from videotapestry.memory import MemoryLocator, VideoMemory, ensure_embeddings, open_memory
from videotapestry.prompts import PromptRegistry, short_hash
from videotapestry.retrieval import PackedClips
from videotapestry.retrieval.from_memory import pack_memory_evidence
from videotapestry.trace import Trace
from videotapestry.video import VideoReader, open_video


@dataclass
class LoadedMemory:
    """A memory ready for questions: embedded, with its locator and packed leaf clips."""

    memory: VideoMemory
    locator: MemoryLocator
    evidence: PackedClips | None


@dataclass
class Result:
    """One answered question, with everything needed to see how the answer was reached."""

    question_id: str
    question: str
    options: list[str]
    answer: str
    reasoning: str
    answer_source: str
    variant: str
    memory_text: str
    memory_tokens: int
    handoff_trace: str
    levels: list[LevelOutcome]
    trace: Trace
    usage: UsageSummary
    prompt_hashes: dict[str, str]
    observation_disabled: str | None = None
    elapsed_s: float = 0.0
    images: list[ImagePart] = field(default_factory=list, repr=False)

    @property
    def levels_visited(self) -> list[str]:
        return [outcome.level for outcome in self.levels]

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "options": self.options,
            "answer": self.answer,
            "reasoning": self.reasoning,
            "answer_source": self.answer_source,
            "variant": self.variant,
            "levels_visited": self.levels_visited,
            "memory_tokens": self.memory_tokens,
            "handoff_trace": self.handoff_trace,
            "usage": self.usage.to_dict(),
            "prompt_hashes": self.prompt_hashes,
            "observation_disabled": self.observation_disabled,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def save_trace(self, path: str | Path) -> Path:
        """The whole story of this question as one JSON file (written atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "result": self.to_dict(),
            "memory_text": self.memory_text,
            "levels": [outcome.model_dump(mode="json") for outcome in self.levels],
            "events": json.loads(self.trace.to_json()),
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
        return path

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>"
            f"<td>{html.escape(o.agent)}</td><td>{len(o.candidate_ids)}</td>"
            f"<td>{html.escape(', '.join(o.selected_ids) or ('STOP' if o.stop else '-'))}</td>"
            f"<td>{html.escape(o.instruction_out or '')}</td>"
            f"<td>{html.escape('; '.join(_observation_summary(x) for x in o.observations))}</td>"
            "</tr>"
            for o in self.levels
        )
        images = "".join(
            f'<figure style="display:inline-block;margin:2px">'
            f'<img style="width:220px" src="data:image/jpeg;base64,'
            f'{base64.b64encode(image.jpeg).decode()}"/>'
            f"<figcaption style='font-size:10px'>{html.escape(image.label)}</figcaption></figure>"
            for image in self.images
        )
        usage = self.usage
        note = (
            f"<p><b>Observation disabled:</b> {html.escape(self.observation_disabled)}</p>"
            if self.observation_disabled
            else ""
        )
        return (
            f"<div><h4>{html.escape(self.question)}</h4>"
            f"<p><b>Answer: {html.escape(self.answer)}</b> ({html.escape(self.answer_source)}) — "
            f"{html.escape(self.reasoning)}</p>{note}"
            "<table><tr><th>agent</th><th>candidates</th><th>selected</th>"
            f"<th>instruction</th><th>observations</th></tr>{rows}</table>"
            f"<p>{usage.calls} calls, {usage.images} images, {usage.prompt_tokens} prompt / "
            f"{usage.completion_tokens} completion tokens, memory ≈{self.memory_tokens} tokens, "
            f"variant {html.escape(self.variant)}</p>"
            f"<details><summary>Composite memory</summary><pre>{html.escape(self.memory_text)}"
            f"</pre></details><details><summary>Frames and grids seen ({len(self.images)})"
            f"</summary>{images}</details></div>"
        )


def _observation_summary(obs: Any) -> str:
    windows = ", ".join(f"{s:.0f}-{e:.0f}s" for s, e in obs.windows)
    state = "ok" if obs.succeeded else f"failed: {obs.error}"
    return f"{obs.kind} [{windows}] {state}"


@dataclass(frozen=True)
class QuestionItem:
    """One question for ``abatch``."""

    video: str | Path | None
    memory: str | Path | VideoMemory
    question: str
    options: Sequence[str]
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
        self._memories: dict[tuple[str, str | None], LoadedMemory] = {}
        self._whisper: TranscriptSource | None = None  # one model load for all questions

    # -- memory ----------------------------------------------------------------------------

    def load_memory(
        self, memory: str | Path | VideoMemory, *, video_fingerprint: str | None = None
    ) -> LoadedMemory:
        """Load (once), embed with the configured model, and pack the leaf evidence."""
        if isinstance(memory, VideoMemory):
            key = (f"object:{id(memory)}", video_fingerprint)
        else:
            key = (str(Path(memory).resolve()), video_fingerprint)
        loaded = self._memories.get(key)
        if loaded is None:
            raw = (
                memory
                if isinstance(memory, VideoMemory)
                else open_memory(memory, expected_fingerprint=video_fingerprint)
            )
            embedded = ensure_embeddings(raw, self.embedder)
            evidence = pack_memory_evidence(embedded, self.config.pace_mem)
            loaded = LoadedMemory(embedded, MemoryLocator(embedded, self.embedder), evidence)
            self._memories[key] = loaded
        return loaded

    def build_graph(self, *, checkpointer: Any = None, **compile_options: Any) -> Any:
        """The compiled LangGraph graph for this config's variant (stream, draw, checkpoint)."""
        return build_graph(
            variant=self.config.variant, checkpointer=checkpointer, **compile_options
        )

    # -- questions -------------------------------------------------------------------------

    def answer(self, *args: Any, **kwargs: Any) -> Result:
        """Synchronous ``aanswer`` (for scripts; in a notebook, ``await aanswer(...)``)."""

        async def run() -> Result:
            try:
                return await self.aanswer(*args, **kwargs)
            finally:
                await self.service.aclose()

        return asyncio.run(run())

    async def aanswer(
        self,
        video: str | Path | None,
        memory: str | Path | VideoMemory,
        question: str,
        options: Sequence[str],
        *,
        question_id: str | None = None,
        no_video: bool = False,
        subtitle_path: str | Path | None = None,
        subtitle_offset_s: float = 0.0,
        progress: ProgressCallback | None = None,
        checkpointer: Any = None,
        thread_id: str | None = None,
        keep_images: bool = True,
    ) -> Result:
        """Answer one question. ``keep_images`` keeps the JPEGs the agents saw on the result
        (for notebooks); batch runs leave it off, as hundreds of questions would hold GBs."""
        started = time.perf_counter()
        qid = question_id or short_hash(question, *options)
        item = QuestionInput(
            question=question,
            options=list(options),
            question_id=qid,
            subtitle_path=str(subtitle_path) if subtitle_path else None,
            subtitle_offset_s=subtitle_offset_s,
        )
        ctx = self._context(video, memory, item, no_video=no_video, progress=progress)
        try:
            graph = self.build_graph(checkpointer=checkpointer)
            run_config = {"configurable": {"thread_id": thread_id or qid}}
            resume = False
            if checkpointer is not None:
                snapshot = await graph.aget_state(run_config)
                resume = bool(snapshot.values) and bool(snapshot.next)
            state_in = (
                None
                if resume
                else {
                    "question": item,
                    "is_global": is_global_question(question, options),
                }
            )
            if ctx.observation_disabled:
                ctx.session.trace.note("observation_disabled", reason=ctx.observation_disabled)
            state = await graph.ainvoke(state_in, run_config, context=ctx)
        finally:
            ctx.close_video()
        if not keep_images:
            ctx.images.clear()
        return self._result(item, ctx, state, time.perf_counter() - started)

    async def abatch(
        self, items: Iterable[QuestionItem], *, concurrency: int = 4, keep_images: bool = False
    ) -> list[Result]:
        """Answer many questions, at most ``concurrency`` at a time, results in input order."""
        limit = asyncio.Semaphore(max(1, concurrency))

        async def one(item: QuestionItem) -> Result:
            async with limit:
                return await self.aanswer(
                    item.video,
                    item.memory,
                    item.question,
                    item.options,
                    question_id=item.question_id,
                    subtitle_path=item.subtitle_path,
                    subtitle_offset_s=item.subtitle_offset_s,
                    keep_images=keep_images,
                )

        return list(await asyncio.gather(*(one(item) for item in items)))

    async def aclose(self) -> None:
        await self.service.aclose()

    # -- building memories -----------------------------------------------------------------

    def build_memory(
        self,
        video: str | Path,
        out: str | Path,
        subtitles: str | Path | None = None,
        *,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
        progress: bool = False,
    ) -> Any:
        """Build (or resume building) the memory of ``video`` into ``out`` with this
        instance's config, models and embedder; returns a ``memory_builders.BuildResult``."""
        return self._memory_builder(progress).build(
            video, out, subtitles=subtitles, restart=restart, export_memdreamer=export_memdreamer
        )

    async def abuild_memory(
        self,
        video: str | Path,
        out: str | Path,
        subtitles: str | Path | None = None,
        *,
        restart: bool = False,
        export_memdreamer: str | Path | None = None,
        progress: bool = False,
    ) -> Any:
        """``build_memory`` in a running event loop (notebooks)."""
        return await self._memory_builder(progress).abuild(
            video, out, subtitles=subtitles, restart=restart, export_memdreamer=export_memdreamer
        )

    def _memory_builder(self, progress: bool) -> Any:
        from memory_builders.builder import MemoryBuilder
        from memory_builders.progress import BuildProgress

        return MemoryBuilder(
            self.config,
            service=self.service,
            embedder=self.embedder,
            prompts=self.prompts,
            progress=BuildProgress(enabled=progress),
        )

    # -- internals -------------------------------------------------------------------------

    def _context(
        self,
        video: str | Path | None,
        memory: str | Path | VideoMemory,
        item: QuestionInput,
        *,
        no_video: bool,
        progress: ProgressCallback | None,
    ) -> RunContext:
        disabled = None
        reader = None
        if no_video:
            disabled = "disabled by the caller (--no-video)"
        elif video is None:
            disabled = "no video file was given; answering from the stored memory only"
        video_fp = None
        extra: list[VideoReader] = []
        if disabled is None:
            reader = open_video(video, self.config.video)
            video_fp = reader.info.fingerprint
        try:
            if reader is not None:
                # Same backend and probe as the first reader: no second probe or fingerprint,
                # and every decoder returns identical frames.
                extra = [
                    type(reader)(video, self.config.video, info=reader.info)
                    for _ in range(self.config.video.parallel_decoders - 1)
                ]
            loaded = self.load_memory(memory, video_fingerprint=video_fp)
            transcripts = self._memory_transcript(reader, memory, item, video_fp)
            if transcripts is None:
                transcripts = self._transcripts(reader, item)
        except BaseException:
            for opened in [reader, *extra]:
                if opened is not None:
                    opened.close()
            raise
        return RunContext(
            config=self.config,
            memory=loaded.memory,
            prompts=self.prompts,
            session=self.service.session(),
            video=reader,
            extra_decoders=extra,
            transcripts=transcripts,
            embedder=self.embedder,
            locator=loaded.locator,
            evidence=loaded.evidence,
            observation_disabled=disabled,
            progress=progress,
        )

    def _memory_transcript(
        self,
        reader: VideoReader | None,
        memory: str | Path | VideoMemory,
        item: QuestionInput,
        video_fp: str | None,
    ) -> TranscriptSource | None:
        """The transcript a built memory stores (``transcript.json``), unless the config says
        otherwise or the question brings its own subtitles."""
        if reader is None or isinstance(memory, VideoMemory) or item.subtitle_path:
            return None
        if not self.config.asr.memory_transcript:
            return None
        from videotapestry.asr.stored import StoredTranscript

        return StoredTranscript.for_memory(memory, expected_fingerprint=video_fp)

    def _transcripts(
        self, reader: VideoReader | None, item: QuestionInput
    ) -> TranscriptSource | None:
        """Subtitles when the config says so and the question has them; else one shared
        Whisper (loaded once) for videos with audio; else no ASR for this question."""
        if reader is None:
            return None
        if self.config.asr.source == "subtitles":
            if not item.subtitle_path:
                return None
            return make_transcript_source(
                self.config.asr,
                subtitle_path=item.subtitle_path,
                subtitle_offset_s=item.subtitle_offset_s,
            )
        if not reader.info.has_audio:
            return None
        if self._whisper is None:
            self._whisper = make_transcript_source(self.config.asr)
        return self._whisper

    def _result(
        self, item: QuestionInput, ctx: RunContext, state: Mapping[str, Any], elapsed: float
    ) -> Result:
        answer = state["answer"]
        names = {e.prompt_name for e in ctx.session.trace.events if e.prompt_name}
        return Result(
            question_id=item.question_id,
            question=item.question,
            options=item.options,
            answer=answer.letter,
            reasoning=answer.reasoning,
            answer_source=answer.source,
            variant=self.config.variant,
            memory_text=state.get("memory_text", ""),
            memory_tokens=state.get("memory_tokens", 0),
            handoff_trace=state.get("handoff_text", ""),
            levels=list(state.get("levels", [])),
            trace=ctx.session.trace,
            usage=ctx.session.usage.summary(),
            prompt_hashes={n: short_hash(self.prompts.source(n)) for n in sorted(names)},
            observation_disabled=ctx.observation_disabled,
            elapsed_s=elapsed,
            images=list(ctx.images),
        )
