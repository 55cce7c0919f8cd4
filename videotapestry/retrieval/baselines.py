"""Depth rules PACE-Mem is compared with: fixed top-k and Adaptive-k.

Both read only the clip relevances (pooled or best-record, as configured), so a comparison
with PACE-Mem isolates the selection itself. Adaptive-k (Taguchi et al., EMNLP 2025) sorts the
relevances and cuts at the largest gap between neighbours; a fraction of the lowest gaps can
be ignored (gaps among the many irrelevant items can be large and noisy) and a buffer of extra
items added after the cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from videotapestry.errors import RetrievalError


def fixed_depth(count: int, k: int) -> int:
    """``k`` clips, or all of them when there are fewer."""
    if k < 1:
        raise RetrievalError(f"fixed depth must be at least 1, got {k}")
    return min(int(k), int(count))


@dataclass(frozen=True)
class AdaptiveCut:
    """Where Adaptive-k cut a descending score list.

    ``gaps[i] = scores[i] - scores[i+1]``; only ``gaps[:considered]`` competed; the largest of
    them sits after the first ``cut`` items; ``k = min(n, cut + buffer)``.
    """

    k: int
    cut: int
    considered: int
    gaps: np.ndarray


def adaptive_k(
    sorted_scores: np.ndarray, *, tail_fraction: float = 0.0, buffer: int = 0
) -> AdaptiveCut:
    """The largest-gap rule on ``sorted_scores`` (highest first).

    The last ``int((n - 1) * tail_fraction)`` gaps are ignored; the first largest remaining gap
    wins (so equal scores cut after the first item). An empty list gives k = 0, one score k = 1.
    """
    scores = np.asarray(sorted_scores, dtype=np.float64)
    if scores.ndim != 1:
        raise RetrievalError(f"Adaptive-k needs a 1-D score list, got shape {scores.shape}")
    if not 0.0 <= tail_fraction < 1.0:
        raise RetrievalError(f"Adaptive-k tail fraction must be in [0, 1), got {tail_fraction}")
    if buffer < 0:
        raise RetrievalError(f"Adaptive-k buffer must be non-negative, got {buffer}")
    gaps = scores[:-1] - scores[1:] if scores.size else scores
    if (gaps < 0).any():
        raise RetrievalError("Adaptive-k needs scores sorted from highest to lowest")
    count = scores.size
    if count <= 1:
        return AdaptiveCut(count, count, 0, gaps)
    considered = gaps.size - int((count - 1) * tail_fraction)
    cut = int(np.argmax(gaps[:considered])) + 1
    return AdaptiveCut(min(count, cut + buffer), cut, considered, gaps)
