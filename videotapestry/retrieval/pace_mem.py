"""The four steps of PACE-Mem (SPEC section 6) as pure, vectorized, deterministic functions.

1. ``group_near_duplicates``: inside each clip, a record whose cosine to an earlier kept record
   reaches the threshold is folded into it, so a clip that says the same thing five times
   neither dominates pooling nor counts five times as evidence length.
2. ``pool_clips``: query-guided pooling. Softmax weights over the clip's record scores decide
   how much each record contributes to the clip's relevance and to its vector; the
   ``best_record`` ablation lets the single best record decide both.
3. ``mmr_order``: maximal marginal relevance over clip vectors, keeping the winning score of
   every step (the trajectory that step 4 reads).
4. ``prefix_length``: the depth K* from the same trajectory, by the length-normalized decline
   ``d_k * L_k / L_n`` (a drop after much evidence counts more than an early drop).

The clips of one candidate set are packed once into flat arrays (``PackedClips``), which is
where shapes are checked, vectors normalized and near-duplicates grouped; everything after
that is array arithmetic. All ties go to the earlier clip (clips are packed in chronological
order) or, for the depth, to the smaller k.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse

from videotapestry.errors import RetrievalError
from videotapestry.retrieval.clips import Clip
from videotapestry.tokens import estimate_tokens

LengthUnit = Literal["records", "tokens"]

#: A pooled clip vector shorter than this (records that cancel out) falls back to its best record.
_DEGENERATE_NORM = 1e-6


@dataclass(frozen=True, eq=False)
class PackedClips:
    """One candidate set of clips as flat arrays, ready for any number of queries.

    Clips are in chronological order (start, end, then input order). Row ``i`` of
    ``embeddings`` is the ``i``-th kept (representative) record; the kept rows of clip ``c``
    are ``offsets[c]:offsets[c + 1]``, and ``kept_records[i]`` is that record's position in
    ``clips[c].records``. ``lengths`` is each clip's evidence length in ``length_unit``.
    """

    clips: tuple[Clip, ...]
    embeddings: np.ndarray
    offsets: np.ndarray
    kept_records: np.ndarray
    lengths: np.ndarray
    duplicate_threshold: float
    length_unit: LengthUnit

    @property
    def size(self) -> int:
        return len(self.clips)

    @property
    def dimension(self) -> int | None:
        return int(self.embeddings.shape[1]) if self.clips else None

    @property
    def clip_ids(self) -> tuple[str, ...]:
        return tuple(clip.id for clip in self.clips)

    @property
    def kept_counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def kept_record_ids(self, index: int) -> list[str]:
        """Ids of the records that represent clip ``index`` after grouping."""
        clip = self.clips[index]
        rows = self.kept_records[self.offsets[index] : self.offsets[index + 1]]
        return [clip.records[int(row)].id for row in rows]

    def subset(self, clip_ids: Iterable[str]) -> PackedClips:
        """The named clips only, without repeating validation or grouping.

        Grouping does not depend on the query, so a whole memory can be packed once and each
        question's candidates (the clips under its selected MacroEvents) sliced out of it.
        """
        position = {clip.id: index for index, clip in enumerate(self.clips)}
        wanted = set(clip_ids)
        missing = sorted(wanted - position.keys())
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            raise RetrievalError(
                f"{len(missing)} requested clip id(s) are not in the packed clips: {shown}"
            )
        chosen = np.array(sorted(position[i] for i in wanted), dtype=np.int64)
        counts = self.kept_counts[chosen]
        in_subset = np.zeros(self.size, dtype=bool)
        in_subset[chosen] = True
        rows = np.flatnonzero(np.repeat(in_subset, self.kept_counts))
        return PackedClips(
            clips=tuple(self.clips[c] for c in chosen),
            embeddings=self.embeddings[rows],
            offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            kept_records=self.kept_records[rows],
            lengths=self.lengths[chosen],
            duplicate_threshold=self.duplicate_threshold,
            length_unit=self.length_unit,
        )


def pack_clips(
    clips: Sequence[Clip],
    *,
    duplicate_threshold: float = 0.9,
    length_unit: LengthUnit = "records",
) -> PackedClips:
    """Validate, normalize, sort and group ``clips`` (step 1) into a ``PackedClips``.

    Clips without records are skipped: they have nothing to score. Raises ``RetrievalError``
    naming the clip and record for NaN/inf or all-zero vectors, embedding dimensions that
    differ between clips, and repeated clip ids.
    """
    if length_unit not in ("records", "tokens"):
        raise RetrievalError(f"length_unit must be 'records' or 'tokens', got {length_unit!r}")
    ids = [clip.id for clip in clips]
    if len(set(ids)) != len(ids):
        repeated = next(name for name, count in Counter(ids).items() if count > 1)
        raise RetrievalError(f"clip id {repeated!r} appears twice; clip ids must be unique")
    order = sorted(
        (i for i, clip in enumerate(clips) if clip.records),
        key=lambda i: (clips[i].start_s, clips[i].end_s, i),
    )
    kept_clips = tuple(clips[i] for i in order)
    if not kept_clips:
        return PackedClips(
            (),
            np.zeros((0, 0), np.float32),
            np.zeros(1, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0),
            duplicate_threshold,
            length_unit,
        )

    dimension = kept_clips[0].embeddings.shape[1]
    for clip in kept_clips:
        if clip.embeddings.shape[1] != dimension:
            raise RetrievalError(
                f"clip {clip.id!r} has {clip.embeddings.shape[1]}-dimensional embeddings but "
                f"clip {kept_clips[0].id!r} has {dimension}; all clips need the same model"
            )
    matrix = np.concatenate([clip.embeddings for clip in kept_clips], dtype=np.float32)
    raw_offsets = np.concatenate([[0], np.cumsum([len(c.records) for c in kept_clips])])
    matrix = _normalized_rows(matrix, kept_clips, raw_offsets)

    keep = group_near_duplicates(matrix, raw_offsets, duplicate_threshold)
    kept_rows = np.flatnonzero(keep)
    clip_of_row = np.repeat(np.arange(len(kept_clips)), np.diff(raw_offsets))
    counts = np.bincount(clip_of_row[kept_rows], minlength=len(kept_clips))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    kept_records = kept_rows - raw_offsets[clip_of_row[kept_rows]]

    if length_unit == "records":
        lengths = counts.astype(np.float64)
    else:
        texts = [record.text for clip in kept_clips for record in clip.records]
        # Every kept record costs at least one token, so an all-empty clip still has a length.
        tokens = np.array([max(1, estimate_tokens(texts[row])) for row in kept_rows], float)
        lengths = np.add.reduceat(tokens, offsets[:-1])
    return PackedClips(
        clips=kept_clips,
        embeddings=matrix[kept_rows],
        offsets=offsets,
        kept_records=kept_records.astype(np.int64),
        lengths=lengths,
        duplicate_threshold=duplicate_threshold,
        length_unit=length_unit,
    )


# --------------------------------------------------------------------------- step 1


def group_near_duplicates(
    embeddings: np.ndarray, offsets: np.ndarray, threshold: float
) -> np.ndarray:
    """Keep-mask over rows: within each segment, drop a row whose cosine to an earlier *kept*
    row is at least ``threshold`` (greedy leader grouping in row order).

    Comparing against kept rows only, not all earlier rows, means a chain a~b~c with a and c
    dissimilar keeps c: only records that repeat something still in the evidence are folded.
    ``embeddings`` must have unit rows. Segments are processed in batches of similar size so
    the cost is a few batched matrix products, not a Python loop over clips.
    """
    keep = np.ones(embeddings.shape[0], dtype=bool)
    sizes = np.diff(offsets)
    multi = np.flatnonzero(sizes > 1)
    if multi.size == 0:
        return keep
    size_class = np.ceil(np.log2(sizes[multi])).astype(np.int64)
    for cls in np.unique(size_class):
        members = multi[size_class == cls]
        member_sizes = sizes[members]
        width = int(member_sizes.max())
        columns = np.arange(width)
        valid = columns < member_sizes[:, None]
        # Padding repeats a valid row of the same clip; it is masked out below.
        rows = offsets[members, None] + np.minimum(columns, member_sizes[:, None] - 1)
        block = embeddings[rows]
        close = np.matmul(block, block.transpose(0, 2, 1)) >= threshold
        kept = valid.copy()
        for column in range(1, width):
            repeats = (close[:, column, :column] & kept[:, :column]).any(axis=1)
            kept[:, column] &= ~repeats
        keep[rows[valid]] = kept[valid]
    return keep


# --------------------------------------------------------------------------- step 2


def pool_clips(
    scores: np.ndarray, embeddings: np.ndarray, offsets: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """Query-guided pooling: per segment, ``w = softmax(s / T)``, relevance ``sum(w * s)`` and
    vector ``normalize(sum(w * e))``.

    A low temperature approaches the best record, a high one the plain mean; either way a
    clip with one strong record among many weak ones keeps most of the strong record's score
    instead of being averaged away. Returns (relevance ``(C,)`` float64, vectors ``(C, D)``).
    """
    if not temperature > 0:
        raise RetrievalError(f"pooling temperature must be positive, got {temperature}")
    starts = offsets[:-1]
    segment = np.repeat(np.arange(len(starts)), np.diff(offsets))
    scores = scores.astype(np.float64)
    peak = np.maximum.reduceat(scores, starts)
    exp = np.exp((scores - peak[segment]) / temperature)
    weights = exp / np.add.reduceat(exp, starts)[segment]
    relevance = np.add.reduceat(weights * scores, starts)
    # A (clips x records) sparse weight matrix: the one fast way to sum variable-length
    # segments of a 2-D array (np.add.reduceat along axis 0 is ~40x slower here).
    weight_matrix = sparse.csr_matrix(
        (weights.astype(np.float32), np.arange(len(scores)), offsets),
        shape=(len(starts), len(scores)),
    )
    pooled = np.asarray(weight_matrix @ embeddings)
    norms = np.linalg.norm(pooled, axis=1)
    degenerate = norms < _DEGENERATE_NORM
    if degenerate.any():
        _, best_vectors = best_record(scores, embeddings, offsets)
        pooled[degenerate] = best_vectors[degenerate]
        norms[degenerate] = 1.0
    return relevance, pooled / norms[:, None]


def best_record(
    scores: np.ndarray, embeddings: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The "w/o pooling" ablation: each segment's best-scoring row gives its relevance and
    vector (the earliest row on ties)."""
    starts = offsets[:-1]
    segment = np.repeat(np.arange(len(starts)), np.diff(offsets))
    scores = scores.astype(np.float64)
    peak = np.maximum.reduceat(scores, starts)
    at_peak = np.flatnonzero(scores == peak[segment])
    first = at_peak[np.unique(segment[at_peak], return_index=True)[1]]
    return peak, embeddings[first]


# --------------------------------------------------------------------------- step 3


def mmr_order(
    relevance: np.ndarray, vectors: np.ndarray, lam: float, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``steps`` picks of maximal marginal relevance and each pick's winning score.

    Step k picks ``argmax  lam * rel(c) - (1 - lam) * max_{c' chosen} cos(h_c, h_c')`` among the
    unchosen clips (the penalty is 0 for the first pick), earliest clip on ties. From the
    second step on the scores cannot increase, because each candidate's penalty only grows.
    Returns (order ``(steps,)`` int64, scores ``(steps,)`` float64).
    """
    count = len(relevance)
    steps = max(0, min(int(steps), count))
    order = np.empty(steps, dtype=np.int64)
    winners = np.empty(steps, dtype=np.float64)
    base = lam * relevance.astype(np.float64)
    penalty = np.zeros(count, dtype=np.float64)
    available = np.ones(count, dtype=bool)
    for step in range(steps):
        marginal = np.where(available, base - (1.0 - lam) * penalty, -np.inf)
        pick = int(np.argmax(marginal))
        order[step], winners[step] = pick, marginal[pick]
        available[pick] = False
        similarity = (vectors @ vectors[pick]).astype(np.float64)
        penalty = similarity if step == 0 else np.maximum(penalty, similarity)
    return order, winners


def relevance_order(relevance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The "w/o MMR" order: by relevance, highest first, earliest clip on ties."""
    order = np.argsort(-relevance, kind="stable")
    return order, relevance[order].astype(np.float64)


# --------------------------------------------------------------------------- step 4


@dataclass(frozen=True)
class PrefixChoice:
    """Depth from a score trajectory ``m_1..m_m``.

    ``declines[k-1] = m_k - m_{k+1}`` and ``normalized_declines[k-1] = d_k * L_k / L_n`` for
    k = 1..m-1; ``cumulative_lengths[k-1] = L_k`` for k = 1..m.
    """

    k_star: int
    declines: np.ndarray
    normalized_declines: np.ndarray
    cumulative_lengths: np.ndarray


def prefix_length(
    scores: np.ndarray,
    lengths: np.ndarray,
    total_length: float,
    k_min: int,
    k_max: int,
) -> PrefixChoice:
    """K* = argmax over ``k_min <= k <= min(k_max, m - 1)`` of ``d_k * L_k / L_n``, smaller k on
    ties (up to float rounding).

    ``scores`` is the trajectory in pick order, ``lengths`` the evidence length of each picked
    clip and ``total_length`` L_n over *all* candidate clips (it only scales the criterion, so
    a trajectory cut short still picks the same k). A decline needs a next score, so the last
    score of the trajectory can end a prefix only through this rule: when ``m <= k_min`` there
    is nothing to compare and every clip is returned (K* = m); an empty trajectory gives 0.
    """
    scores = np.asarray(scores, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.float64)
    if scores.shape != lengths.shape or scores.ndim != 1:
        raise RetrievalError(
            f"score trajectory {scores.shape} and evidence lengths {lengths.shape} must be "
            "1-D arrays of the same length"
        )
    if k_min < 1 or k_max < k_min:
        raise RetrievalError(f"need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    if not total_length > 0 and scores.size:
        raise RetrievalError(f"total evidence length must be positive, got {total_length}")
    cumulative = np.cumsum(lengths)
    declines = scores[:-1] - scores[1:]
    normalized = declines * cumulative[:-1] / total_length if scores.size else declines
    count = scores.size
    last = min(k_max, count - 1)
    if count <= k_min or last < k_min:
        return PrefixChoice(count, declines, normalized, cumulative)
    window = normalized[k_min - 1 : last]
    best = window.max()
    tolerance = 1e-12 * max(1.0, abs(best))
    k_star = k_min + int(np.flatnonzero(window >= best - tolerance)[0])
    return PrefixChoice(k_star, declines, normalized, cumulative)


# --------------------------------------------------------------------------- input checks


def normalized_query(query: np.ndarray, dimension: int | None) -> np.ndarray:
    """The query as a unit float32 vector; a clear error for NaN, zeros or a wrong size."""
    vector = np.asarray(query)
    if vector.ndim == 2 and vector.shape[0] == 1:
        vector = vector[0]
    if vector.ndim != 1:
        raise RetrievalError(f"query embedding must be a 1-D vector, got shape {vector.shape}")
    if not np.issubdtype(vector.dtype, np.number):
        raise RetrievalError(f"query embedding must be numeric, got dtype {vector.dtype}")
    if dimension is not None and vector.shape[0] != dimension:
        raise RetrievalError(
            f"query embedding has {vector.shape[0]} dimensions but the clip records have "
            f"{dimension}; embed the query with the model that embedded the memory"
        )
    vector = vector.astype(np.float32)
    if not np.isfinite(vector).all():
        raise RetrievalError("query embedding contains NaN or infinite values")
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        raise RetrievalError("query embedding is all zeros; cosine similarity is undefined")
    return vector / norm


def _normalized_rows(
    matrix: np.ndarray, clips: tuple[Clip, ...], offsets: np.ndarray
) -> np.ndarray:
    """Unit rows, in place (``matrix`` must be a fresh array); errors name the bad record."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    suspect = np.flatnonzero(~np.isfinite(norms) | (norms == 0.0))
    if suspect.size:
        # Recheck in float64: a finite row can overflow the float32 sum of squares.
        exact = np.linalg.norm(matrix[suspect].astype(np.float64), axis=1)
        norms[suspect] = exact
        bad = suspect[~np.isfinite(norms[suspect]) | (norms[suspect] == 0.0)]
        if bad.size:
            row = int(bad[0])
            clip_index = int(np.searchsorted(offsets, row, side="right") - 1)
            clip = clips[clip_index]
            record = clip.records[row - offsets[clip_index]]
            finite = bool(np.isfinite(matrix[row]).all())
            problem = "an all-zero vector" if finite else "NaN or infinite values"
            raise RetrievalError(
                f"embedding of record {record.id!r} in clip {clip.id!r} has {problem} "
                f"({bad.size} bad row(s) in total); re-embed these records"
            )
    matrix /= norms[:, None]
    return matrix
