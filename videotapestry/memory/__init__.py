"""The hierarchical video memory: typed model, on-disk formats, search, prompt text.

Typical use::

    memory = open_memory("memories/cooking", expected_fingerprint=video_fp)
    memory = ensure_embeddings(memory, SentenceTransformerEmbedder(config.embedding))
    locator = MemoryLocator(memory, embedder)
    result = locator.locate(["Tom", "score card"])

This module is the face of the package: code outside ``videotapestry.memory`` imports from
here, so the modules behind it can be rearranged without touching their users.
"""

from __future__ import annotations

from videotapestry.memory.embedding_index import (
    VectorsReplaced,
    compute_node_embeddings,
    embed_reusing,
    embedding_text,
    ensure_embeddings,
    keep_valid_embeddings,
    reconcile_embeddings,
)
from videotapestry.memory.formats.base import MemoryFormat
from videotapestry.memory.formats.memdreamer import (
    MEMDREAMER_EMBEDDING_MODEL,
    RELEASED_LAYOUT,
    SCRIPTS_LAYOUT,
    KeyframeSource,
    MemDreamerLayout,
    export_memdreamer,
    import_memdreamer,
    is_memdreamer_memory,
    memdreamer_videos,
)
from videotapestry.memory.formats.native import (
    MANIFEST_FILE,
    is_native_memory,
    load_memory,
    save_memory,
)
from videotapestry.memory.formats.registry import MEMORY_FORMATS, detect_format, open_memory
from videotapestry.memory.importing import ImportOutcome, import_memdreamer_into
from videotapestry.memory.live import (
    LIVE_FILE,
    LIVE_FINGERPRINT_PREFIX,
    RECORDING_DIR,
    VERSIONS_DIR,
    LiveState,
    is_live_fingerprint,
    live_state,
    live_video,
    publish_live_state,
    recording_path,
    resolve_memory_path,
)
from videotapestry.memory.locator import MemoryLocator
from videotapestry.memory.locator_hits import (
    AnchorMatch,
    CandidateWindow,
    LocatorHit,
    MultiAnchorResult,
)
from videotapestry.memory.manifest import (
    SCHEMA_VERSION,
    check_duration,
    check_fingerprint,
    new_manifest,
)
from videotapestry.memory.multi_anchor import split_anchors
from videotapestry.memory.prompt_text import clock, clock_range, node_line
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
    node_description,
    node_label,
)
from videotapestry.memory.video_end import PAST_END_TOLERANCE_S, past_video_end
from videotapestry.memory.video_memory import VideoMemory

__all__ = [
    "LIVE_FILE",
    "LIVE_FINGERPRINT_PREFIX",
    "MANIFEST_FILE",
    "MEMDREAMER_EMBEDDING_MODEL",
    "MEMORY_FORMATS",
    "NODE_KINDS",
    "PAST_END_TOLERANCE_S",
    "RECORDING_DIR",
    "RELATION_TYPES",
    "RELEASED_LAYOUT",
    "SCHEMA_VERSION",
    "SCRIPTS_LAYOUT",
    "SUBGRAPH_KINDS",
    "VERSIONS_DIR",
    "AnchorMatch",
    "AnyNode",
    "CandidateWindow",
    "Clip",
    "EntityGroup",
    "EntityNode",
    "EventNode",
    "ImportOutcome",
    "KeyframeSource",
    "LiveState",
    "LocatorHit",
    "MacroEvent",
    "MemDreamerLayout",
    "MemoryFormat",
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
    "VectorsReplaced",
    "VideoMemory",
    "check_duration",
    "check_fingerprint",
    "clock",
    "clock_range",
    "compute_node_embeddings",
    "detect_format",
    "embed_reusing",
    "embedding_text",
    "ensure_embeddings",
    "export_memdreamer",
    "import_memdreamer",
    "import_memdreamer_into",
    "is_live_fingerprint",
    "is_memdreamer_memory",
    "is_native_memory",
    "keep_valid_embeddings",
    "live_state",
    "live_video",
    "load_memory",
    "memdreamer_videos",
    "new_manifest",
    "node_description",
    "node_label",
    "node_line",
    "open_memory",
    "past_video_end",
    "publish_live_state",
    "reconcile_embeddings",
    "recording_path",
    "resolve_memory_path",
    "save_memory",
    "split_anchors",
]
