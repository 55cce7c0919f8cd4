"""Fixed top-k and Adaptive-k, on their own and through select_evidence."""

from __future__ import annotations

import numpy as np
import pytest

from videotapestry.config import EvidenceConfig
from videotapestry.errors import RetrievalError
from videotapestry.retrieval import Clip, EvidenceRecord, adaptive_k, fixed_depth, select_evidence


def test_adaptive_k_cuts_at_the_largest_gap_worked_example() -> None:
    # Sorted relevances; gaps: 0.05, 0.04, 0.31, 0.05, 0.02, 0.04, 0.01 -> largest after item 3.
    scores = np.array([0.82, 0.77, 0.73, 0.42, 0.37, 0.35, 0.31, 0.30])
    cut = adaptive_k(scores)
    assert cut.gaps == pytest.approx([0.05, 0.04, 0.31, 0.05, 0.02, 0.04, 0.01])
    assert (cut.cut, cut.k, cut.considered) == (3, 3, 7)
    assert adaptive_k(scores, buffer=2).k == 5
    assert adaptive_k(scores, buffer=50).k == 8  # never more than there are


def test_adaptive_k_can_ignore_a_noisy_tail() -> None:
    # The biggest gap is at the very bottom (an outlier); ignoring the last quarter of the
    # gaps (int(7 * 0.25) = 1) moves the cut to the largest gap among the rest.
    scores = np.array([0.80, 0.78, 0.60, 0.58, 0.57, 0.55, 0.50, -0.10])
    assert adaptive_k(scores).k == 7
    ignored = adaptive_k(scores, tail_fraction=0.25)
    assert ignored.considered == 6 and ignored.k == 2


def test_adaptive_k_edges_and_errors() -> None:
    assert adaptive_k(np.array([])).k == 0
    assert adaptive_k(np.array([0.4])).k == 1
    assert adaptive_k(np.full(5, 0.3)).k == 1  # equal scores: the first (zero) gap wins
    with pytest.raises(RetrievalError, match="sorted from highest to lowest"):
        adaptive_k(np.array([0.1, 0.5]))
    with pytest.raises(RetrievalError, match="tail fraction"):
        adaptive_k(np.array([0.5, 0.1]), tail_fraction=1.0)
    with pytest.raises(RetrievalError, match="buffer"):
        adaptive_k(np.array([0.5, 0.1]), buffer=-1)


def test_fixed_depth() -> None:
    assert fixed_depth(20, 7) == 7
    assert fixed_depth(3, 7) == 3
    with pytest.raises(RetrievalError):
        fixed_depth(3, 0)


def one_record_clips(relevances: list[float]) -> tuple[np.ndarray, list[Clip]]:
    dim = len(relevances) + 1
    axes = np.eye(dim)
    clips = []
    for i, rel in enumerate(relevances):
        vector = rel * axes[0] + np.sqrt(1 - rel**2) * axes[i + 1]
        record = EvidenceRecord(f"r{i}", "x", 30.0 * i, None, vector)
        clips.append(Clip(f"c{i}", 30.0 * i, 30.0 * i + 30, (record,), vector[None, :]))
    return axes[0], clips


def test_adaptive_k_and_top_k_through_select_evidence() -> None:
    # Relevances in chronological order; sorted they are the worked example above.
    relevances = [0.37, 0.82, 0.30, 0.73, 0.42, 0.77, 0.35, 0.31]
    query, clips = one_record_clips(relevances)
    adaptive = select_evidence(query, clips, EvidenceConfig(method="adaptive_k"))
    assert adaptive.depth_rule == "largest_gap" and adaptive.adaptive_cut == 3
    assert adaptive.selected_ids == ["c1", "c3", "c5"]  # the three above the gap, in time order
    buffered = select_evidence(query, clips, EvidenceConfig(method="adaptive_k", adaptive_buffer=1))
    assert buffered.selected_ids == ["c1", "c3", "c4", "c5"]
    top = select_evidence(query, clips, EvidenceConfig(method="top_k", fixed_k=5))
    assert top.depth_rule == "fixed" and top.k_star == 5
    assert top.selected_ids == ["c0", "c1", "c3", "c4", "c5"]
    # top_k ignores the MMR switch: it is the plain relevance baseline.
    assert np.array_equal(
        top.order, select_evidence(query, clips, EvidenceConfig(method="top_k", mmr=True)).order
    )
