"""MemDreamer's on-disk layout as a memory format (SPEC §3): reading it, writing it back.

Researchers bring memories that MemDreamer built (its prebuilt benchmark memories are public),
so every variant of the layout seen in them is read, and a memory of ours can be written in
the layout of MemDreamer's scripts or of its release. The package is split by job: ``layout``
(where the files are), ``hierarchy`` and ``reader`` (the documents), ``fields`` (each field in
our terms), ``vectors`` (``embeddings.json``) and ``writer``.
"""

from __future__ import annotations

from pathlib import Path

from videotapestry.memory.formats.memdreamer.fields import DEFAULT_ENTITY_SPAN_S
from videotapestry.memory.formats.memdreamer.layout import (
    EMBEDDINGS_FILE,
    RELEASED_LAYOUT,
    SCRIPTS_LAYOUT,
    MemDreamerLayout,
    is_memdreamer_memory,
    memdreamer_videos,
)
from videotapestry.memory.formats.memdreamer.reader import import_memdreamer
from videotapestry.memory.formats.memdreamer.vectors import MEMDREAMER_EMBEDDING_MODEL
from videotapestry.memory.formats.memdreamer.writer import KeyframeSource, export_memdreamer
from videotapestry.memory.manifest import check_fingerprint
from videotapestry.memory.video_memory import VideoMemory


class MemDreamerFormat:
    """MemDreamer's layout as a ``MemoryFormat``; writing uses the scripts' variant."""

    name = "memdreamer"
    description = "a MemDreamer memory (phase3/ or phase4/hierarchical_graph_final.json)"

    def detect(self, path: Path) -> bool:
        return is_memdreamer_memory(path)

    def read(self, path: Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
        memory = import_memdreamer(path)
        check_fingerprint(memory.manifest, expected_fingerprint, origin=str(path))
        return memory

    def write(self, memory: VideoMemory, path: Path) -> Path:
        return export_memdreamer(memory, path)

    def hint(self, path: Path) -> str | None:
        videos = memdreamer_videos(path)
        if not videos:
            return None
        keys = ", ".join(list(videos)[:5]) + (", …" if len(videos) > 5 else "")
        return (
            f"{path} holds the MemDreamer memories of {len(videos)} videos ({keys}); open one "
            f"of them, e.g. {next(iter(videos.values()))}"
        )


__all__ = [
    "DEFAULT_ENTITY_SPAN_S",
    "EMBEDDINGS_FILE",
    "MEMDREAMER_EMBEDDING_MODEL",
    "RELEASED_LAYOUT",
    "SCRIPTS_LAYOUT",
    "KeyframeSource",
    "MemDreamerFormat",
    "MemDreamerLayout",
    "export_memdreamer",
    "import_memdreamer",
    "is_memdreamer_memory",
    "memdreamer_videos",
]
