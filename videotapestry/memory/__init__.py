"""The hierarchical video memory: typed model, storage, MemDreamer import, search, prompt text.

Typical use::

    memory = load_memory("memories/cooking", expected_fingerprint=video_fp)
    memory = ensure_embeddings(memory, SentenceTransformerEmbedder(config.embedding))
    locator = MemoryLocator(memory, embedder)
    result = locator.locate(["Tom", "score card"])
"""

from __future__ import annotations

from pathlib import Path

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.embedding_index import (
    compute_node_embeddings,
    embedding_text,
    ensure_embeddings,
)
from videotapestry.memory.locator import (
    AnchorMatch,
    CandidateWindow,
    LocatorHit,
    MemoryLocator,
    MultiAnchorResult,
    split_anchors,
)
from videotapestry.memory.memdreamer import (
    MEMDREAMER_EMBEDDING_MODEL,
    ImportOutcome,
    export_memdreamer,
    import_memdreamer,
    import_memdreamer_into,
    is_memdreamer_memory,
    keep_valid_embeddings,
    memdreamer_videos,
)
from videotapestry.memory.prompt_text import clock, clock_range, node_line
from videotapestry.memory.storage import (
    MANIFEST_FILE,
    SCHEMA_VERSION,
    check_fingerprint,
    is_native_memory,
    load_memory,
    new_manifest,
    save_memory,
)
from videotapestry.memory.types import (
    NODE_KINDS,
    RELATION_TYPES,
    SUBGRAPH_KINDS,
    AnyNode,
    Clip,
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    MemoryManifest,
    NodeEmbeddings,
    OCRTextNode,
    Relation,
    RootEvent,
    Subgraph,
    SuperEvent,
    TimeRange,
    VideoMemory,
    node_description,
    node_label,
)


def open_memory(path: str | Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
    """Load a memory directory in either format: our native one or MemDreamer's layout."""
    path = Path(path)
    if is_native_memory(path):
        return load_memory(path, expected_fingerprint=expected_fingerprint)
    if is_memdreamer_memory(path):
        memory = import_memdreamer(path)
        check_fingerprint(memory.manifest, expected_fingerprint, origin=str(path))
        return memory
    if not path.exists():
        raise MemoryFormatError(f"memory path {path} does not exist")
    videos = memdreamer_videos(path)
    if videos:
        keys = ", ".join(list(videos)[:5]) + (", …" if len(videos) > 5 else "")
        raise MemoryFormatError(
            f"{path} holds the MemDreamer memories of {len(videos)} videos ({keys}); open one "
            f"of them, e.g. {next(iter(videos.values()))}"
        )
    raise MemoryFormatError(
        f"{path} is neither a videotapestry memory (memory.json + manifest.json) nor a "
        "MemDreamer memory (phase3/ or phase4/hierarchical_graph_final.json)"
    )


__all__ = [
    "MANIFEST_FILE",
    "MEMDREAMER_EMBEDDING_MODEL",
    "NODE_KINDS",
    "RELATION_TYPES",
    "SCHEMA_VERSION",
    "SUBGRAPH_KINDS",
    "AnchorMatch",
    "AnyNode",
    "CandidateWindow",
    "Clip",
    "EntityGroup",
    "EntityNode",
    "EventNode",
    "ImportOutcome",
    "LocatorHit",
    "MacroEvent",
    "MemoryLocator",
    "MemoryManifest",
    "MultiAnchorResult",
    "NodeEmbeddings",
    "OCRTextNode",
    "Relation",
    "RootEvent",
    "Subgraph",
    "SuperEvent",
    "TimeRange",
    "VideoMemory",
    "check_fingerprint",
    "clock",
    "clock_range",
    "compute_node_embeddings",
    "embedding_text",
    "ensure_embeddings",
    "export_memdreamer",
    "import_memdreamer",
    "import_memdreamer_into",
    "is_memdreamer_memory",
    "is_native_memory",
    "keep_valid_embeddings",
    "load_memory",
    "memdreamer_videos",
    "new_manifest",
    "node_description",
    "node_label",
    "node_line",
    "open_memory",
    "save_memory",
    "split_anchors",
]
