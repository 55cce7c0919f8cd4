"""The per-question runtime that the graph's nodes share but that is not graph state.

Memory, video reader, transcript source, model session and the packed PACE-Mem clips cannot
go into a checkpoint, so LangGraph passes them to every node as its run context. A
``RunContext`` belongs to one question; the expensive parts inside it (the loaded memory, the
embedder, the packed clips) are shared read-only between questions by the facade.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from videotapestry.agents.relative_time import RelativeTime
from videotapestry.asr import TranscriptSource
from videotapestry.config import Config, LevelLimits
from videotapestry.embeddings import Embedder
from videotapestry.errors import ConfigError
from videotapestry.images import ImagePart
from videotapestry.llm.service import ModelSession
from videotapestry.memory import LiveState, MemoryLocator, VectorsReplaced, VideoMemory
from videotapestry.prompts import PromptRegistry
from videotapestry.retrieval import PackedClips
from videotapestry.variants import Variant, variant_named
from videotapestry.video import FrameCache, FrameWorkers, RenderCache, VideoReader

_log = logging.getLogger(__name__)

ProgressCallback = Callable[[dict[str, Any]], None]


@dataclass
class RunContext:
    config: Config
    memory: VideoMemory
    prompts: PromptRegistry
    session: ModelSession
    video: VideoReader | None = None
    #: Extra readers on the same file, so one observation's frames decode in parallel.
    extra_decoders: list[VideoReader] = field(default_factory=list)
    #: The facade's decoding processes (``video.decode_workers``); None decodes in a thread.
    frame_workers: FrameWorkers | None = None
    #: The facade's rendered observations, reused when a job is rendered again.
    renders: RenderCache | None = None
    transcripts: TranscriptSource | None = None
    embedder: Embedder | None = None
    locator: MemoryLocator | None = None
    evidence: PackedClips | None = None
    #: Why observation is off for this run (no video, ``--no-video``); None when it is on.
    observation_disabled: str | None = None
    #: Why the ASR tool cannot run although the method wants it (subtitles missing, Whisper
    #: failed to load); None when it can, or when the video simply has no audio.
    asr_unavailable: str | None = None
    #: Why the transcript the ASR tool reads is not the one ``asr.source`` names (the
    #: memory's Whisper transcript standing in for missing subtitles); None when it is.
    asr_substituted: str | None = None
    #: The memory's nodes that start past the video's end (``memory.past_video_end``), said
    #: for a degradation; None when there are none, or no video to compare with.
    memory_past_end: str | None = None
    #: Why the ASR tool reads subtitles under ``asr.source: whisper`` (a warning), or None.
    subtitles_for_whisper: str | None = None
    #: The memory's own node vectors when the configured embedder's replaced them (they steer
    #: search and PACE-Mem); None when the stored ones are used or there were none.
    vectors_replaced: VectorsReplaced | None = None
    #: The question read against the time the memory covers ("in the last 10 minutes" as
    #: an explicit window, or a moment past it to say so); None when it was not read.
    relative_time: RelativeTime | None = None
    #: A followed memory's pointer as the question read it, after loading its version
    #: (``memory.live``): the time it covers and whether the stream goes on; None otherwise.
    live: LiveState | None = None
    progress: ProgressCallback | None = None
    #: LangGraph's custom-stream writer while a graph node runs (``astream(stream_mode="custom")``).
    stream: ProgressCallback | None = None
    #: Every image sent to a model in this question, for notebooks (never stored in state).
    images: list[ImagePart] = field(default_factory=list)
    #: False when the decoders belong to the caller (a conversation keeps them open).
    owns_video: bool = True

    @property
    def variant(self) -> Variant:
        """The configured variant's record: which agents, tools and rewrites this run has."""
        return variant_named(self.config.variant)

    @property
    def decoders(self) -> list[VideoReader]:
        return [self.video, *self.extra_decoders] if self.video is not None else []

    @property
    def frame_cache(self) -> FrameCache | None:
        """The decoded frames the readers share; None when each frame is decoded when asked
        (``video.frame_cache_mb: 0``, or a reader of a backend of its own)."""
        cache = getattr(self.video, "frame_cache", None)
        return cache if isinstance(cache, FrameCache) and cache.max_bytes > 0 else None

    def close_video(self) -> None:
        if not self.owns_video:
            return
        for reader in self.decoders:
            reader.close()

    def require_video(self, step: str) -> VideoReader:
        """The video reader, for a ``step`` that cannot run without the file."""
        if self.video is None:
            raise ConfigError(f"{step} needs the video file; it cannot run without one")
        return self.video

    @property
    def duration_s(self) -> float:
        if self.video is not None:
            return self.video.info.duration_s
        return self.memory.duration

    @property
    def visual_enabled(self) -> bool:
        return (
            self.video is not None
            and self.observation_disabled is None
            and self.variant.observes_visual
        )

    @property
    def asr_enabled(self) -> bool:
        return self.transcripts is not None and self._uses_asr

    @property
    def asr_lost(self) -> str | None:
        """Why the method's ASR step cannot run although this variant uses it (else None)."""
        return self.asr_unavailable if self._uses_asr else None

    @property
    def _uses_asr(self) -> bool:
        return self.observation_disabled is None and self.variant.observes_asr

    @property
    def updates_enabled(self) -> bool:
        return self.variant.rewrites_nodes

    def report(self, **event: Any) -> None:
        """Progress for CLIs and notebooks; never lets a display error stop the run."""
        if self.stream is not None:
            self.stream(event)
        if self.progress is not None:
            try:
                self.progress(event)
            except Exception as exc:  # a progress display must not break a question
                _log.warning("progress callback failed on %s: %s", event.get("step"), exc)


class LevelBudget:
    """Per-level tool budget (Algorithm 2): observations, updates and their total.

    A locator call (the Overview agent's anchor decomposition) counts toward the total only.
    """

    def __init__(self, limits: LevelLimits) -> None:
        self.limits = limits
        self.observations = 0
        self.updates = 0
        self.locators = 0

    @property
    def calls(self) -> int:
        return self.observations + self.updates + self.locators

    def allows(self, kind: str) -> bool:
        if self.calls >= self.limits.max_calls:
            return False
        if kind == "observation":
            return self.observations < self.limits.max_observations
        if kind == "update":
            return self.updates < self.limits.max_updates
        if kind == "locator":
            return True
        raise ValueError(f"unknown tool kind {kind!r}")

    def left(self) -> int:
        """Tool calls this level may still make, of any kind."""
        return max(0, self.limits.max_calls - self.calls)

    def spend(self, kind: str) -> bool:
        """Count one call of ``kind`` if the budget allows it; False means: do not call."""
        if not self.allows(kind):
            return False
        if kind == "observation":
            self.observations += 1
        elif kind == "update":
            self.updates += 1
        else:
            self.locators += 1
        return True
