"""Leaf-level evidence selection: PACE-Mem, its ablations and the top-k / Adaptive-k baselines.

Typical use at the Focus level::

    clips = build_clips(records, macro_spans, builder_clips=memory_clips, bin_s=cfg.clip_bin_s)
    result = select_evidence(query_vector, clips, cfg)   # cfg: EvidenceConfig
    result.clips            # chosen clips, chronological
    result.to_dict()        # the whole trajectory, JSON-ready for the trace

At the Focus level, with every selected MacroEvent represented (``evidence.focus_scope``)::

    text = focus_query_text(question, instruction, options, include_options=cfg.query_options)
    focus = select_focus_evidence(embed(text), packed, macro_ids, cfg)
    focus.macros[macro_id].clips      # per MacroEvent, chronological; .status says why
    focus.windows                     # all chosen clips' time ranges, for frame sampling
    focus.to_dict()                   # every run's trajectory, for the trace

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
from videotapestry.retrieval.focus import (
    DepthBudget,
    FocusScope,
    FocusSelection,
    MacroEvidence,
    MacroStatus,
    focus_query_text,
    select_focus_evidence,
    split_depth,
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
from videotapestry.retrieval.selection import SelectionResult, clip_relevance, select_evidence

__all__ = [
    "AdaptiveCut",
    "Clip",
    "DepthBudget",
    "EvidenceRecord",
    "FocusScope",
    "FocusSelection",
    "MacroEvidence",
    "MacroStatus",
    "PackedClips",
    "PrefixChoice",
    "SelectionResult",
    "TimeWindow",
    "adaptive_k",
    "best_record",
    "build_clips",
    "clip_relevance",
    "fixed_depth",
    "focus_query_text",
    "group_near_duplicates",
    "mmr_order",
    "pack_clips",
    "pool_clips",
    "prefix_length",
    "relevance_order",
    "select_evidence",
    "select_focus_evidence",
    "split_depth",
    "time_bins",
]
