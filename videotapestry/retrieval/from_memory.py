"""PACE-Mem's inputs from a stored memory: subgraph nodes as records, grouped into clips.

Records are the Entity, Event and OCRText nodes with their stored vectors; clips are the
builder's clips when the memory has them, otherwise fixed bins inside every MacroEvent.
Grouping near-duplicates does not depend on the question, so a memory is packed once and
each question slices out the clips under its selected MacroEvents (``clips_under``).
"""

from __future__ import annotations

from collections.abc import Iterable

from videotapestry.config import EvidenceConfig
from videotapestry.errors import RetrievalError
from videotapestry.memory import VideoMemory
from videotapestry.memory.embedding_index import embedding_text
from videotapestry.memory.types import SUBGRAPH_KINDS, EntityNode, NodeEmbeddings
from videotapestry.retrieval.clips import EvidenceRecord, TimeWindow, build_clips
from videotapestry.retrieval.pace_mem import PackedClips, pack_clips


def _node_embeddings(memory: VideoMemory) -> NodeEmbeddings:
    embeddings = memory.embeddings
    if embeddings is None:
        raise RetrievalError(
            "the memory has no node embeddings; compute them first "
            "(videotapestry.memory.ensure_embeddings)"
        )
    return embeddings


def memory_records(memory: VideoMemory) -> list[EvidenceRecord]:
    """One record per embedded subgraph node; an Entity is a point at its grounding time."""
    embeddings = _node_embeddings(memory)
    records = []
    for node in memory.nodes(SUBGRAPH_KINDS):
        start_s: float = node.time_range.start
        end_s: float | None = node.time_range.end
        if isinstance(node, EntityNode) and node.grounding_time is not None:
            start_s, end_s = node.grounding_time, None
        records.append(
            EvidenceRecord(
                id=node.id,
                text=embedding_text(node),
                start_s=start_s,
                end_s=end_s,
                embedding=embeddings.row(node.id),
                macro_id=memory.macro_id_of(node.id),
                kind=node.kind,
            )
        )
    return records


def pack_memory_evidence(memory: VideoMemory, config: EvidenceConfig) -> PackedClips:
    spans = [TimeWindow(m.id, m.time_range.start, m.time_range.end) for m in memory.macro_events()]
    builder = [TimeWindow(c.id, c.time_range.start, c.time_range.end) for c in memory.clips]
    records = memory_records(memory)
    clips = build_clips(
        records,
        spans,
        builder_clips=builder or None,
        bin_s=config.clip_bin_s,
        embeddings=_node_embeddings(memory).vectors,
    )
    return pack_clips(
        clips, duplicate_threshold=config.duplicate_threshold, length_unit=config.length_unit
    )


def clips_under(packed: PackedClips, macro_ids: Iterable[str]) -> PackedClips:
    """The packed clips whose records belong to the given MacroEvents."""
    wanted = set(macro_ids)
    ids = [
        clip.id
        for clip in packed.clips
        if clip.macro_id in wanted or any(r.macro_id in wanted for r in clip.records)
    ]
    return packed.subset(ids)
