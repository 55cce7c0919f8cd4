"""The memories a ``VideoTapestry`` facade has loaded, kept for its next questions.

Part of the api layer, behind the facade. Loading a memory for questions is expensive (its
node embeddings made or checked with the configured model, the locator built, PACE-Mem's leaf
clips packed), so each memory is loaded once and shared by every question about it, and by
the facade's ``for_variant`` siblings: their configs differ only in the variant, which none of
this depends on. The one Whisper model the siblings' questions transcribe with is kept here
for the same reason.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry.asr import TranscriptSource, make_transcript_source
from videotapestry.memory import (
    MemoryLocator,
    VectorsReplaced,
    VideoMemory,
    open_memory,
    reconcile_embeddings,
    resolve_memory_path,
)
from videotapestry.retrieval import PackedClips
from videotapestry.retrieval.from_memory import pack_memory_evidence

if TYPE_CHECKING:
    from videotapestry.config import AsrConfig, EvidenceConfig
    from videotapestry.config.retrieval import StoredVectors
    from videotapestry.embeddings import Embedder


@dataclass
class LoadedMemory:
    """A memory ready for questions: embedded, with its locator and packed leaf clips."""

    memory: VideoMemory
    locator: MemoryLocator
    evidence: PackedClips | None
    #: The memory's own vectors when another model's replaced them: every result answered
    #: from it says so (the vectors steer search and PACE-Mem).
    vectors_replaced: VectorsReplaced | None = None


class MemoryCache:
    """Loaded memories by (resolved path, expected video fingerprint), and the shared Whisper.

    Questions set up their runs on worker threads; one lock makes each memory (and Whisper)
    load once however many questions ask for it at the same time.
    """

    def __init__(
        self,
        embedder: Embedder,
        evidence: EvidenceConfig,
        asr: AsrConfig,
        *,
        stored_vectors: StoredVectors = "use_when_same_model",
    ) -> None:
        self._embedder = embedder
        self._stored_vectors: StoredVectors = stored_vectors
        self._evidence = evidence
        self._asr = asr
        self._memories: dict[tuple[str, str | None], LoadedMemory] = {}
        self._whisper: TranscriptSource | None = None
        self._lock = threading.RLock()

    def load(
        self, memory: str | Path | VideoMemory, *, video_fingerprint: str | None = None
    ) -> LoadedMemory:
        """Load (once), embed with the configured model, and pack the leaf evidence."""
        if isinstance(memory, VideoMemory):
            key = (f"object:{id(memory)}", video_fingerprint)
        else:
            # A followed memory is keyed by its newest version: a new append loads anew.
            key = (str(resolve_memory_path(memory).resolve()), video_fingerprint)
        with self._lock:
            loaded = self._memories.get(key)
            if loaded is None:
                raw = (
                    memory
                    if isinstance(memory, VideoMemory)
                    else open_memory(memory, expected_fingerprint=video_fingerprint)
                )
                embedded, replaced = reconcile_embeddings(
                    raw, self._embedder, stored_vectors=self._stored_vectors
                )
                evidence = pack_memory_evidence(embedded, self._evidence)
                locator = MemoryLocator(embedded, self._embedder)
                loaded = LoadedMemory(embedded, locator, evidence, replaced)
                self._memories[key] = loaded
            return loaded

    def release(self, memory: str | Path) -> None:
        """Forget a loaded memory (under every video fingerprint), so a run over hundreds of
        videos keeps only the memories of the questions in flight."""
        path = str(resolve_memory_path(memory).resolve())
        with self._lock:
            for key in [key for key in self._memories if key[0] == path]:
                del self._memories[key]

    def whisper(self) -> TranscriptSource:
        """The Whisper transcript source, loaded on the first question that needs one."""
        with self._lock:
            if self._whisper is None:
                self._whisper = make_transcript_source(self._asr)
            return self._whisper
