"""PACE-Mem's four steps and the select_evidence entry point, on hand-built and real vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from videotapestry.config import EvidenceConfig, load_config
from videotapestry.errors import ConfigError, RetrievalError
from videotapestry.retrieval import (
    Clip,
    EvidenceRecord,
    best_record,
    group_near_duplicates,
    mmr_order,
    pack_clips,
    pool_clips,
    prefix_length,
    select_evidence,
)

DIM = 64


def basis(count: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """``count`` orthonormal rows; row 0 serves as the query direction."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, count)))
    return q.T.astype(np.float64)


def with_cosine(query: np.ndarray, direction: np.ndarray, cosine: float) -> np.ndarray:
    """A unit vector at exactly ``cosine`` to ``query``, the rest along ``direction``."""
    return cosine * query + np.sqrt(1.0 - cosine**2) * direction


def clip(name: str, start: float, vectors, texts=None) -> Clip:
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    texts = texts or [f"{name} record {i}" for i in range(len(vectors))]
    records = tuple(
        EvidenceRecord(f"{name}_r{i}", text, start + i, None, i) for i, text in enumerate(texts)
    )
    return Clip(name, start, start + 30.0, records, vectors)


def config(**changes) -> EvidenceConfig:
    return EvidenceConfig(**changes)


# --------------------------------------------------------------------------- MMR


def test_mmr_picks_the_complementary_clip_second_hand_built() -> None:
    axes = basis(6)
    query, shared, other = axes[0], axes[1], axes[2]
    rng = np.random.default_rng(1)
    copies = []
    for index, rel in enumerate((0.80, 0.79, 0.78)):
        jitter = 0.02 * rng.normal(size=DIM)
        vec = with_cosine(query, shared, rel) + jitter - (jitter @ query) * query
        copies.append(clip(f"same{index}", 100.0 + 30 * index, vec / np.linalg.norm(vec)))
    complementary = clip("other", 10.0, with_cosine(query, other, 0.70))
    clips = [*copies, complementary]

    by_relevance = select_evidence(query, clips, config(mmr=False, depth_selection=False))
    by_mmr = select_evidence(query, clips, config(depth_selection=False))

    ids = by_mmr.clip_ids
    # Relevance alone ranks all three copies above the complementary clip ...
    assert [ids[i] for i in by_relevance.order[:3]] == ["same0", "same1", "same2"]
    # ... while MMR takes the best copy and then the complementary clip.
    assert [ids[i] for i in by_mmr.order[:2]] == ["same0", "other"]
    assert by_mmr.order_scores[1] == pytest.approx(0.7 * 0.70 - 0.3 * (0.80 * 0.70), abs=0.02)


def test_mmr_picks_the_complementary_clip_second_with_real_embeddings(embedder) -> None:
    facts = {
        "slice_a": "Tom slices the tomatoes on a cutting board.",
        "slice_b": "Tom slices tomatoes on the cutting board.",
        "slice_c": "Tom is slicing the tomatoes on the cutting board.",
        "bin": "Tom throws the rotten tomatoes into the bin.",
    }
    fillers = ["A red kettle sits on the stove.", "The kitchen window shows a rainy street."]
    clips = []
    for index, (name, fact) in enumerate(facts.items()):
        texts = [fact, *fillers]
        clips.append(clip(name, 30.0 * index, embedder.embed(texts), texts))
    query = embedder.embed(["What does Tom do with the tomatoes?"], query=True)[0]

    by_relevance = select_evidence(query, clips, config(mmr=False))
    by_mmr = select_evidence(query, clips, config())
    ids = by_mmr.clip_ids
    assert {ids[i] for i in by_relevance.order[:3]} == {"slice_a", "slice_b", "slice_c"}
    assert ids[by_mmr.order[1]] == "bin"


def test_mmr_matches_a_plain_loop_reference() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(30, 16))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    relevance = rng.uniform(-0.2, 0.9, size=30)
    order, scores = mmr_order(relevance, vectors, 0.6, steps=12)

    chosen: list[int] = []
    for _ in range(12):
        best, best_score = None, -np.inf
        for c in range(30):
            if c in chosen:
                continue
            penalty = max((vectors[c] @ vectors[p] for p in chosen), default=0.0)
            score = 0.6 * relevance[c] - 0.4 * penalty
            if score > best_score:
                best, best_score = c, score
        chosen.append(best)
        assert scores[len(chosen) - 1] == pytest.approx(best_score)
    assert order.tolist() == chosen
    assert np.all(np.diff(scores[1:]) <= 1e-12), "scores after the first pick never rise"


# --------------------------------------------------------------------------- depth


def test_normalized_rule_moves_the_cut_from_the_largest_raw_decline() -> None:
    # The paper's Figure 2 situation: the largest raw drop is right after the 2nd clip, but a
    # later drop after twice the evidence wins once declines are length-normalized.
    scores = np.array([0.60, 0.55, 0.35, 0.32, 0.15, 0.14, 0.13])
    lengths = np.ones(7)
    choice = prefix_length(scores, lengths, lengths.sum(), k_min=1, k_max=6)
    assert int(np.argmax(choice.declines)) + 1 == 2
    assert choice.k_star == 4
    assert choice.normalized_declines == pytest.approx(choice.declines * np.arange(1, 7) / 7.0)


def test_normalized_rule_end_to_end_through_select_evidence() -> None:
    axes = basis(10)
    query = axes[0]
    relevances = [0.60, 0.55, 0.35, 0.32, 0.15, 0.14, 0.13]
    # Chronological order differs from relevance order on purpose.
    starts = [300, 0, 120, 60, 240, 180, 360]
    clips = [
        clip(f"c{i}", float(start), with_cosine(query, axes[i + 1], rel))
        for i, (rel, start) in enumerate(zip(relevances, starts, strict=True))
    ]
    result = select_evidence(query, clips, config(mmr=False, k_min=1, k_max=6))
    assert int(np.argmax(result.declines)) + 1 == 2
    assert result.k_star == 4 and result.depth_rule == "normalized_decline"
    assert set(result.selected_ids) == {"c0", "c1", "c2", "c3"}
    # Output is chronological, not in pick order.
    assert result.selected_ids == ["c1", "c3", "c2", "c0"]
    assert [c.id for c in result.clips] == result.selected_ids
    assert result.selected_windows == [(0.0, 30.0), (60.0, 90.0), (120.0, 150.0), (300.0, 330.0)]


def test_evidence_length_in_tokens_changes_the_depth() -> None:
    axes = basis(8)
    query = axes[0]
    relevances = [0.9, 0.8, 0.5, 0.45, 0.25, 0.24]
    long_text = "word " * 400  # about 500 tokens each for the first two clips
    clips = []
    for i, rel in enumerate(relevances):
        text = long_text if i < 2 else "short note"
        clips.append(clip(f"c{i}", 30.0 * i, with_cosine(query, axes[i + 1], rel), [text]))
    by_records = select_evidence(query, clips, config(mmr=False))
    by_tokens = select_evidence(query, clips, config(mmr=False, length_unit="tokens"))
    # d_2 = 0.30, d_4 = 0.20: with one record per clip L_4 = 2 L_2, so k = 4 wins; in tokens
    # the two long clips make L_2 almost all of L_4, so the larger raw decline wins.
    assert by_records.k_star == 4
    assert by_tokens.k_star == 2
    assert by_tokens.evidence_lengths[0] > 100 and by_tokens.evidence_lengths[-1] < 10


def test_the_best_normalized_decline_wins_and_exact_ties_go_to_the_smaller_k() -> None:
    ones = np.ones(5)
    choice = prefix_length(np.array([1.0, 0.8, 0.7, 0.5, 0.4]), ones, 5.0, k_min=2, k_max=4)
    # d = [0.2, 0.1, 0.2, 0.1]; delta = d * k / 5 = [0.04, 0.04, 0.12, 0.08]
    assert choice.k_star == 3
    # Binary fractions make the tie exact: d_2 * 2 = 0.375 * 2 = d_3 * 3 = 0.25 * 3.
    tied = prefix_length(np.array([1.0, 0.875, 0.5, 0.25, 0.25]), ones, 5.0, k_min=1, k_max=4)
    assert tied.normalized_declines[1] == tied.normalized_declines[2] == 0.15
    assert tied.k_star == 2
    flat = prefix_length(np.full(6, 0.5), np.ones(6), 6.0, k_min=2, k_max=5)
    assert flat.k_star == 2


# --------------------------------------------------------------------------- pooling


def strong_and_weak_clips(axes: np.ndarray) -> list[Clip]:
    query = axes[0]
    strong = [with_cosine(query, axes[1], 0.70)] + [
        with_cosine(query, axes[2 + i], 0.30) for i in range(30)
    ]
    steady = [with_cosine(query, axes[40 + i], 0.66) for i in range(3)]
    return [clip("one_strong", 0.0, strong), clip("steady", 30.0, steady)]


def test_pooling_and_best_record_disagree_on_one_strong_among_many_weak() -> None:
    axes = basis(50)
    query = axes[0]
    clips = strong_and_weak_clips(axes)

    packed = pack_clips(clips)
    scores = packed.embeddings @ query.astype(np.float32)
    pooled_rel, pooled_vec = pool_clips(scores, packed.embeddings, packed.offsets, 0.1)
    best_rel, best_vec = best_record(scores, packed.embeddings, packed.offsets)

    # Softmax(s / 0.1) over one 0.70 and thirty 0.30 records: e^7 against 30 e^3.
    w_strong = np.exp(7) / (np.exp(7) + 30 * np.exp(3))
    expected = w_strong * 0.70 + (1 - w_strong) * 0.30
    assert pooled_rel[0] == pytest.approx(expected, abs=1e-5)
    assert best_rel[0] == pytest.approx(0.70, abs=1e-5)
    assert pooled_rel[1] == pytest.approx(0.66, abs=1e-5) == best_rel[1]
    # The weak records pull the pooled vector off the strong record's direction.
    assert float(pooled_vec[0] @ best_vec[0]) == pytest.approx(0.991, abs=0.002)

    top1_pooled = select_evidence(query, clips, config(method="top_k", fixed_k=1))
    top1_max = select_evidence(query, clips, config(method="top_k", fixed_k=1, pooling=False))
    assert top1_pooled.selected_ids == ["steady"]
    assert top1_max.selected_ids == ["one_strong"]


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    temperature=st.floats(0.02, 2.0),
    seed=st.integers(0, 10_000),
)
def test_pooling_matches_a_per_clip_reference(sizes, temperature, seed) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(sum(sizes), 12)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = rng.normal(size=12).astype(np.float32)
    query /= np.linalg.norm(query)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    scores = vectors @ query
    relevance, pooled = pool_clips(scores, vectors, offsets, temperature)
    for c in range(len(sizes)):
        s = scores[offsets[c] : offsets[c + 1]].astype(np.float64)
        w = np.exp(s / temperature - (s / temperature).max())
        w /= w.sum()
        assert relevance[c] == pytest.approx(float(w @ s), abs=1e-5)
        v = w @ vectors[offsets[c] : offsets[c + 1]]
        if np.linalg.norm(v) > 1e-3:
            assert pooled[c] == pytest.approx(v / np.linalg.norm(v), abs=1e-4)


# --------------------------------------------------------------------------- grouping


def reference_grouping(vectors: np.ndarray, offsets: np.ndarray, threshold: float) -> np.ndarray:
    keep = np.ones(len(vectors), dtype=bool)
    for c in range(len(offsets) - 1):
        kept: list[int] = []
        for row in range(offsets[c], offsets[c + 1]):
            if any(vectors[row] @ vectors[k] >= threshold for k in kept):
                keep[row] = False
            else:
                kept.append(row)
    return keep


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    copy_rate=st.floats(0.0, 0.8),
    seed=st.integers(0, 10_000),
)
def test_grouping_matches_a_per_clip_reference(sizes, copy_rate, seed) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    vectors = rng.normal(size=(offsets[-1], 8))
    for c in range(len(sizes)):
        for row in range(offsets[c] + 1, offsets[c + 1]):
            if rng.random() < copy_rate:  # near-copies, some at the threshold's edge
                vectors[row] = vectors[rng.integers(offsets[c], row)] + rng.normal(0, 0.3, 8)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    expected = reference_grouping(vectors, offsets, 0.9)
    assert group_near_duplicates(vectors, offsets, 0.9).tolist() == expected.tolist()


def test_grouping_folds_repeats_and_keeps_chains_apart() -> None:
    axes = basis(6)
    a, b = axes[1], axes[2]
    ab = (a + b) / np.linalg.norm(a + b)  # cos(a, ab) = cos(ab, b) = 0.707, cos(a, b) = 0
    near_a = 0.95 * a + np.sqrt(1 - 0.95**2) * axes[3]
    packed = pack_clips([clip("c", 0.0, [a, near_a, ab, b, a])], duplicate_threshold=0.7)
    # near_a and the last a repeat a; ab is within 0.7 of a (0.707) and is folded too; b is
    # only close to the folded ab, not to any kept record, so it stays.
    assert packed.kept_record_ids(0) == ["c_r0", "c_r3"]
    assert packed.lengths.tolist() == [2.0]
    assert pack_clips([clip("c", 0.0, [a, near_a, ab, b, a])]).kept_record_ids(0) == [
        "c_r0",
        "c_r2",
        "c_r3",
    ]


def test_grouped_duplicates_count_once_in_pooling() -> None:
    axes = basis(10)
    query = axes[0]
    middling = with_cosine(query, axes[1], 0.5)
    repeated = [middling] * 6 + [with_cosine(query, axes[2], 0.8)]
    packed = pack_clips([clip("c", 0.0, repeated)])
    assert packed.kept_counts.tolist() == [2]
    scores = packed.embeddings @ query.astype(np.float32)
    relevance, _ = pool_clips(scores, packed.embeddings, packed.offsets, 0.1)
    w = np.exp(8) / (np.exp(8) + np.exp(5))
    assert relevance[0] == pytest.approx(w * 0.8 + (1 - w) * 0.5, abs=1e-5)


# --------------------------------------------------------------------------- edge cases


ALL_METHODS = [
    config(),
    config(method="top_k"),
    config(method="adaptive_k"),
    config(mmr=False),
    config(pooling=False),
    config(depth_selection=False),
]


@pytest.mark.parametrize("cfg", ALL_METHODS, ids=lambda c: f"{c.method}-{c.mmr}-{c.pooling}")
def test_no_clips_gives_an_empty_result(cfg: EvidenceConfig) -> None:
    result = select_evidence(np.ones(DIM), [], cfg)
    assert result.k_star == 0 and result.clips == () and result.selected_ids == []
    assert json.loads(json.dumps(result.to_dict()))["k_star"] == 0


@pytest.mark.parametrize("cfg", ALL_METHODS, ids=lambda c: f"{c.method}-{c.mmr}-{c.pooling}")
def test_one_clip_is_returned_by_every_variant(cfg: EvidenceConfig) -> None:
    axes = basis(3)
    only = clip("only", 5.0, [with_cosine(axes[0], axes[1], 0.4), axes[2]])
    result = select_evidence(axes[0], [only], cfg)
    assert result.k_star == 1 and result.selected_ids == ["only"]
    assert result.declines.size == 0


def test_all_equal_scores() -> None:
    axes = basis(12)
    query = axes[0]
    clips = [clip(f"c{i}", 30.0 * i, with_cosine(query, axes[1], 0.5)) for i in range(10)]
    pace = select_evidence(query, clips, config(k_min=3))
    # Identical clips: every MMR step after the first has the same score, all declines tie at
    # zero, and the tie goes to the smallest allowed depth.
    assert pace.k_star == 3
    assert np.allclose(pace.declines[1:], 0.0, atol=1e-6)
    assert pace.selected_ids == ["c0", "c1", "c2"]  # earliest clips win ties
    assert select_evidence(query, clips, config(method="adaptive_k")).k_star == 1
    assert select_evidence(query, clips, config(method="top_k", fixed_k=4)).k_star == 4


def test_k_min_larger_than_the_candidate_count_returns_everything() -> None:
    axes = basis(6)
    query = axes[0]
    clips = [clip(f"c{i}", 30.0 * i, with_cosine(query, axes[i + 1], 0.9 - 0.2 * i))
             for i in range(3)]  # fmt: skip
    result = select_evidence(query, clips, config(k_min=5, k_max=8))
    assert result.k_star == 3 and result.depth_rule == "all"
    assert result.selected_ids == ["c0", "c1", "c2"]
    fixed = select_evidence(query, clips, config(depth_selection=False, fixed_k=7))
    assert fixed.k_star == 3


def test_mmr_trajectory_stops_after_k_max_plus_one_picks() -> None:
    axes = basis(40)
    query = axes[0]
    clips = [clip(f"c{i}", 30.0 * i, with_cosine(query, axes[i + 1], 0.9 - 0.02 * i))
             for i in range(30)]  # fmt: skip
    result = select_evidence(query, clips, config(k_max=6, fixed_k=3))
    assert len(result.order) == 7 and len(result.declines) == 6
    assert len(result.relevance) == 30
    assert 2 <= result.k_star <= 6


def test_result_serializes_to_json_with_the_whole_trajectory() -> None:
    axes = basis(12)
    clips = [clip(f"c{i}", 30.0 * i, with_cosine(axes[0], axes[i + 1], 0.8 - 0.05 * i))
             for i in range(8)]  # fmt: skip
    result = select_evidence(axes[0], clips, config())
    data = json.loads(json.dumps(result.to_dict()))
    assert data["selected_ids"] == result.selected_ids
    assert data["order_ids"][0] == "c0"
    assert len(data["normalized_declines"]) == len(data["order"]) - 1
    assert data["settings"]["mmr_lambda"] == 0.7 and data["method"] == "pace_mem"


def test_prepacked_clips_and_subsets_give_the_same_selection() -> None:
    axes = basis(24)
    query = axes[0]
    clips = [clip(f"c{i}", 30.0 * i, [with_cosine(query, axes[i + 1], 0.1 + 0.04 * i), axes[i + 2]])
             for i in range(20)]  # fmt: skip
    memory = pack_clips(clips)
    wanted = [f"c{i}" for i in range(5, 15)]
    direct = select_evidence(query, [c for c in clips if c.id in wanted], config())
    sliced = select_evidence(query, memory.subset(reversed(wanted)), config())
    assert sliced.selected_ids == direct.selected_ids
    assert np.allclose(sliced.relevance, direct.relevance)
    with pytest.raises(RetrievalError, match="'nope'"):
        memory.subset(["c1", "nope"])
    with pytest.raises(RetrievalError, match=r"packed with duplicate_threshold=0\.9"):
        select_evidence(query, memory, config(duplicate_threshold=0.8))


# --------------------------------------------------------------------------- bad input


def test_nan_record_embedding_names_the_record_and_clip() -> None:
    bad = np.ones((2, DIM))
    bad[1, 3] = np.nan
    with pytest.raises(RetrievalError, match=r"record 'c2_r1' in clip 'c2'.*NaN"):
        select_evidence(np.ones(DIM), [clip("c1", 0.0, np.ones(DIM)), clip("c2", 30.0, bad)],
                        config())  # fmt: skip


def test_zero_record_embedding_is_an_error() -> None:
    with pytest.raises(RetrievalError, match=r"record 'z_r0' in clip 'z'.*all-zero"):
        select_evidence(np.ones(DIM), [clip("z", 0.0, np.zeros(DIM))], config())


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (np.ones(DIM + 1), "query embedding has 65 dimensions but the clip records have 64"),
        (np.full(DIM, np.nan), "NaN"),
        (np.zeros(DIM), "all zeros"),
        (np.ones((2, DIM)), "1-D vector"),
    ],
)
def test_bad_query_vectors_are_clear_errors(query, message) -> None:
    with pytest.raises(RetrievalError, match=message):
        select_evidence(query, [clip("c", 0.0, np.ones(DIM))], config())


def test_mismatched_shapes_are_clear_errors() -> None:
    records = (EvidenceRecord("r0", "a", 0.0, None, 0), EvidenceRecord("r1", "b", 1.0, None, 1))
    with pytest.raises(RetrievalError, match="clip 'c' has 2 records but 1 embedding rows"):
        Clip("c", 0.0, 30.0, records, np.ones((1, DIM)))
    with pytest.raises(RetrievalError, match="clip 'c': embeddings must be a 2-D array"):
        Clip("c", 0.0, 30.0, records, np.ones(DIM))
    with pytest.raises(RetrievalError, match="clip 'b' has 32-dimensional embeddings"):
        pack_clips([clip("a", 0.0, np.ones(DIM)), clip("b", 30.0, np.ones(32))])
    with pytest.raises(RetrievalError, match="clip id 'a' appears twice"):
        pack_clips([clip("a", 0.0, np.ones(DIM)), clip("a", 30.0, np.ones(DIM))])


def test_config_rejects_k_max_below_k_min() -> None:
    with pytest.raises(ConfigError, match="k_max"):
        load_config(overrides=["evidence.k_min=5", "evidence.k_max=3"])
