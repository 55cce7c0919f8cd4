"""Leaf-level evidence selection: PACE-Mem, its ablations and the top-k / Adaptive-k baselines.

Typical use at the Focus level::

    clips = build_clips(records, macro_spans, builder_clips=memory_clips, bin_s=cfg.clip_bin_s)
    result = select_evidence(query_vector, clips, cfg)   # cfg: PaceMemConfig
    result.clips            # chosen clips, chronological
    result.to_dict()        # the whole trajectory, JSON-ready for the trace

``retrieval.plot.plot_selection`` draws a result (needs the ``plot`` extra).
"""

from videotapestry.retrieval.baselines import AdaptiveCut, adaptive_k, fixed_depth
from videotapestry.retrieval.clips import (
    Clip,
    EvidenceRecord,
    TimeWindow,
    build_clips,
    time_bins,
)
from videotapestry.retrieval.pace_mem import (
    PackedClips,
    PrefixChoice,
    best_record,
    group_near_duplicates,
    mmr_order,
    pack_clips,
    pool_clips,
    prefix_length,
    relevance_order,
)
from videotapestry.retrieval.selection import SelectionResult, select_evidence

__all__ = [
    "AdaptiveCut",
    "Clip",
    "EvidenceRecord",
    "PackedClips",
    "PrefixChoice",
    "SelectionResult",
    "TimeWindow",
    "adaptive_k",
    "best_record",
    "build_clips",
    "fixed_depth",
    "group_near_duplicates",
    "mmr_order",
    "pack_clips",
    "pool_clips",
    "prefix_length",
    "relevance_order",
    "select_evidence",
    "time_bins",
]
