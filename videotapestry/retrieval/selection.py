"""One entry point for leaf evidence selection: PACE-Mem, its ablations and the baselines.

``select_evidence`` reads ``EvidenceConfig`` and returns a ``SelectionResult`` that holds the
chosen clips in chronological order *and* the whole trajectory that led to them, so a trace
can store it as JSON and a notebook can plot it (``retrieval.plot``). Which variant runs:

=====================  =====================================================================
config                 behaviour
=====================  =====================================================================
method=pace_mem        pooled relevance -> MMR order -> normalized-decline depth (the method)
  pooling=false        a clip's best record gives relevance and vector ("w/o pooling")
  mmr=false            relevance order instead of MMR ("w/o MMR")
  depth_selection=false  the first ``fixed_k`` picks ("w/o depth selection")
method=top_k           relevance order, first ``fixed_k`` (MMR/depth switches ignored)
method=adaptive_k      relevance order, largest-gap cut (+ tail fraction, buffer)
=====================  =====================================================================

Every variant still reports the normalized-decline trajectory of the order it used, so
ablations can be compared on one plot. The MMR trajectory covers the first
``max(k_max + 1, fixed_k)`` picks (all clips when fewer): that is all the depth rule reads, and
it keeps the cost independent of how many clips lie far down the ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from videotapestry.config import EvidenceConfig
from videotapestry.errors import RetrievalError
from videotapestry.retrieval.baselines import adaptive_k, fixed_depth
from videotapestry.retrieval.clips import Clip
from videotapestry.retrieval.pace_mem import (
    PackedClips,
    best_record,
    mmr_order,
    normalized_query,
    pack_clips,
    pool_clips,
    prefix_length,
    relevance_order,
)

DepthRule = Literal["normalized_decline", "fixed", "largest_gap", "all"]


@dataclass(frozen=True, eq=False)
class SelectionResult:
    """The chosen evidence and everything needed to see why it was chosen.

    Arrays indexed by clip (``relevance``, ``evidence_lengths``, ``record_counts``, starts and
    ends) follow ``clip_ids``, which are the candidates in chronological order. ``order`` is
    the pick order (MMR or relevance; possibly only a prefix of all clips) with its scores
    ``order_scores`` (m_k); ``declines``/``normalized_declines`` are d_k and delta_k for
    k = 1..len(order)-1 and ``cumulative_lengths`` is L_k. ``selected`` holds the K* chosen clip
    indices in chronological order and ``clips`` the chosen ``Clip`` objects in that order.
    ``adaptive_cut`` is the largest-gap position for Adaptive-k (before the buffer), else None.
    """

    method: str
    depth_rule: DepthRule
    settings: dict[str, Any]
    clip_ids: tuple[str, ...]
    clip_starts: np.ndarray
    clip_ends: np.ndarray
    relevance: np.ndarray
    record_counts: np.ndarray
    evidence_lengths: np.ndarray
    order: np.ndarray
    order_scores: np.ndarray
    declines: np.ndarray
    normalized_declines: np.ndarray
    cumulative_lengths: np.ndarray
    total_length: float
    k_star: int
    selected: np.ndarray
    clips: tuple[Clip, ...]
    adaptive_cut: int | None = None

    @property
    def selected_ids(self) -> list[str]:
        return [self.clip_ids[i] for i in self.selected]

    @property
    def selected_windows(self) -> list[tuple[float, float]]:
        """Time ranges of the chosen clips (where the Focus agent samples frames)."""
        return [(float(self.clip_starts[i]), float(self.clip_ends[i])) for i in self.selected]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (lists, floats, ints, strings), for traces."""
        return {
            "method": self.method,
            "depth_rule": self.depth_rule,
            "settings": self.settings,
            "k_star": self.k_star,
            "selected_ids": self.selected_ids,
            "selected_windows": [list(w) for w in self.selected_windows],
            "clip_ids": list(self.clip_ids),
            "clip_starts": self.clip_starts.tolist(),
            "clip_ends": self.clip_ends.tolist(),
            "relevance": self.relevance.tolist(),
            "record_counts": self.record_counts.tolist(),
            "evidence_lengths": self.evidence_lengths.tolist(),
            "order": self.order.tolist(),
            "order_ids": [self.clip_ids[i] for i in self.order],
            "order_scores": self.order_scores.tolist(),
            "declines": self.declines.tolist(),
            "normalized_declines": self.normalized_declines.tolist(),
            "cumulative_lengths": self.cumulative_lengths.tolist(),
            "total_length": self.total_length,
            "adaptive_cut": self.adaptive_cut,
        }


def select_evidence(
    query_vec: np.ndarray,
    clips: Sequence[Clip] | PackedClips,
    config: EvidenceConfig,
) -> SelectionResult:
    """Choose the leaf evidence for one query, as configured (see the module table).

    ``clips`` may be pre-packed with ``pack_clips`` to share grouping work between queries
    over the same candidates; it must then have been packed with the config's
    ``duplicate_threshold`` and ``length_unit``. Edge cases: no clips -> an empty result with
    K* = 0; one clip -> that clip; at most ``k_min`` clips -> all of them; equal scores
    everywhere -> K* = k_min for PACE-Mem (all declines tie at 0), 1 for Adaptive-k.
    """
    packed = _packed(clips, config)
    if packed.size == 0:
        normalized_query(query_vec, packed.dimension)  # still reject a malformed query
        return _empty_result(config)

    relevance, vectors = clip_relevance(query_vec, packed, config)
    count = packed.size
    adaptive_cut = None
    if config.method == "pace_mem" and config.mmr:
        horizon = max(config.k_max + 1, config.fixed_k)
        order, trajectory = mmr_order(relevance, vectors, config.mmr_lambda, horizon)
    else:
        order, trajectory = relevance_order(relevance)
    total = float(packed.lengths.sum())
    prefix = prefix_length(trajectory, packed.lengths[order], total, config.k_min, config.k_max)

    rule: DepthRule
    if config.method == "adaptive_k":
        cut = adaptive_k(
            trajectory,
            tail_fraction=config.adaptive_tail_fraction,
            buffer=config.adaptive_buffer,
        )
        k_star, rule, adaptive_cut = cut.k, "largest_gap", cut.cut
    elif config.method == "top_k" or not config.depth_selection:
        k_star, rule = fixed_depth(count, config.fixed_k), "fixed"
    else:
        k_star = prefix.k_star
        rule = "all" if count <= config.k_min else "normalized_decline"

    selected = np.sort(order[:k_star])
    return SelectionResult(
        method=config.method,
        depth_rule=rule,
        settings=config.model_dump(mode="json"),
        clip_ids=packed.clip_ids,
        clip_starts=np.array([c.start_s for c in packed.clips], dtype=np.float64),
        clip_ends=np.array([c.end_s for c in packed.clips], dtype=np.float64),
        relevance=relevance,
        record_counts=packed.kept_counts,
        evidence_lengths=packed.lengths,
        order=order,
        order_scores=trajectory,
        declines=prefix.declines,
        normalized_declines=prefix.normalized_declines,
        cumulative_lengths=prefix.cumulative_lengths,
        total_length=total,
        k_star=int(k_star),
        selected=selected,
        clips=tuple(packed.clips[i] for i in selected),
        adaptive_cut=adaptive_cut,
    )


def clip_relevance(
    query_vec: np.ndarray, clips: Sequence[Clip] | PackedClips, config: EvidenceConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Step 2 alone: each clip's relevance and vector, pooled or best-record as configured.

    Exposed so callers that need relevance before choosing (the Focus floor, splitting a depth
    budget across MacroEvents) read exactly the scores ``select_evidence`` ranks by. Returns
    (relevance ``(C,)`` float64, unit vectors ``(C, D)``) for the packed, chronological clips.
    """
    packed = _packed(clips, config)
    query = normalized_query(query_vec, packed.dimension)
    if packed.size == 0:
        return np.zeros(0, dtype=np.float64), np.zeros((0, 0), dtype=np.float32)
    scores = packed.embeddings @ query
    if config.pooling:
        return pool_clips(scores, packed.embeddings, packed.offsets, config.pooling_temperature)
    return best_record(scores, packed.embeddings, packed.offsets)


def _packed(clips: Sequence[Clip] | PackedClips, config: EvidenceConfig) -> PackedClips:
    if not isinstance(clips, PackedClips):
        return pack_clips(
            clips, duplicate_threshold=config.duplicate_threshold, length_unit=config.length_unit
        )
    if (
        clips.duplicate_threshold != config.duplicate_threshold
        or clips.length_unit != config.length_unit
    ):
        raise RetrievalError(
            f"clips were packed with duplicate_threshold={clips.duplicate_threshold} and "
            f"length_unit={clips.length_unit!r}, but the config asks for "
            f"{config.duplicate_threshold} and {config.length_unit!r}; pack them again"
        )
    return clips


def _empty_result(config: EvidenceConfig) -> SelectionResult:
    empty_f = np.zeros(0, dtype=np.float64)
    empty_i = np.zeros(0, dtype=np.int64)
    rule: DepthRule
    if config.method == "adaptive_k":
        rule = "largest_gap"
    elif config.method == "top_k" or not config.depth_selection:
        rule = "fixed"
    else:
        rule = "normalized_decline"
    return SelectionResult(
        method=config.method,
        depth_rule=rule,
        settings=config.model_dump(mode="json"),
        clip_ids=(),
        clip_starts=empty_f,
        clip_ends=empty_f,
        relevance=empty_f,
        record_counts=empty_i,
        evidence_lengths=empty_f,
        order=empty_i,
        order_scores=empty_f,
        declines=empty_f,
        normalized_declines=empty_f,
        cumulative_lengths=empty_f,
        total_length=0.0,
        k_star=0,
        selected=empty_i,
        clips=(),
        adaptive_cut=0 if config.method == "adaptive_k" else None,
    )
