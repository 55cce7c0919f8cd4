"""Focus-level evidence: every selected MacroEvent represented, in each focus_scope, and the
PACE-Mem query text with and without the options."""

from __future__ import annotations

import json

import numpy as np
import pytest

from videotapestry.config import EvidenceConfig, load_config
from videotapestry.question import option_body
from videotapestry.retrieval import (
    Clip,
    EvidenceRecord,
    clip_relevance,
    focus_query_text,
    pack_clips,
    select_evidence,
    select_focus_evidence,
    split_depth,
)
from videotapestry.retrieval.from_memory import clips_under

DIM = 48
SCOPES = ("joint", "joint_with_floor", "per_macro")
#: The PACE-Mem ablations and baselines every scope must honour.
ABLATIONS = {
    "pace_mem": {},
    "w/o MMR": {"mmr": False},
    "w/o depth selection": {"depth_selection": False},
    "w/o pooling": {"pooling": False},
    "top_k": {"method": "top_k"},
    "adaptive_k": {"method": "adaptive_k"},
}


def axes(count: int, seed: int = 0) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(DIM, count)))
    return q.T


def at_cosine(query: np.ndarray, direction: np.ndarray, cosine: float) -> np.ndarray:
    return cosine * query + np.sqrt(1.0 - cosine**2) * direction


def make_clip(name: str, start: float, vectors: list[np.ndarray], macro: str | None) -> Clip:
    records = tuple(
        EvidenceRecord(f"{name}_r{i}", f"{name} record {i}", start + i, None, i, macro)
        for i in range(len(vectors))
    )
    return Clip(name, start, start + 30.0, records, np.stack(vectors).astype(np.float32), macro)


@pytest.fixture(scope="module")
def memory() -> tuple[np.ndarray, list[Clip]]:
    """Three MacroEvents with clips, far apart in time, and very unequal relevance.

    ``hot`` has twelve strongly relevant, mutually different clips, so a joint run fills its
    whole depth there; ``warm`` and ``cold`` hold weaker evidence (the other branches of a
    cross-branch question). Clips are listed out of time order on purpose.
    """
    basis = axes(40)
    query = basis[0]
    clips = []
    for i in range(12):
        vectors = [at_cosine(query, basis[1 + i], 0.8 - 0.01 * i), basis[30]]
        clips.append(make_clip(f"hot{i:02d}", 1000.0 + 30 * (11 - i), vectors, "hot"))
    for i, cosine in enumerate((0.35, 0.45, 0.30)):
        clips.append(
            make_clip(f"warm{i}", 100.0 + 30 * i, [at_cosine(query, basis[14 + i], cosine)], "warm")
        )
    for i, cosine in enumerate((0.15, 0.25)):
        clips.append(
            make_clip(
                f"cold{i}", 3000.0 + 30 * i, [at_cosine(query, basis[18 + i], cosine)], "cold"
            )
        )
    return query, clips


def packed_of(clips: list[Clip], config: EvidenceConfig):
    return pack_clips(
        clips, duplicate_threshold=config.duplicate_threshold, length_unit=config.length_unit
    )


MACROS = ["cold", "hot", "empty", "warm"]


def test_the_joint_run_can_leave_a_selected_macro_event_without_evidence(memory) -> None:
    # The defect of issue 9 item 7, reproduced: the premise of every test below.
    query, clips = memory
    config = EvidenceConfig(focus_scope="joint")
    focus = select_focus_evidence(query, packed_of(clips, config), MACROS, config)
    assert set(focus.with_status("unrepresented")) == {"cold", "warm"}
    assert focus.macros["cold"].clips == () and focus.macros["warm"].record_ids == ()
    assert focus.joint is not None and focus.joint.k_star >= 2


@pytest.mark.parametrize("scope", ["joint_with_floor", "per_macro"])
@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_every_selected_macro_event_with_clips_gets_a_clip(memory, scope, ablation) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope=scope, **ABLATIONS[ablation])
    focus = select_focus_evidence(query, packed_of(clips, config), MACROS, config)
    assert focus.macro_ids == MACROS
    assert focus.with_status("no_clips") == ["empty"]
    assert focus.with_status("unrepresented") == []
    for macro_id in ("cold", "hot", "warm"):
        evidence = focus.macros[macro_id]
        assert len(evidence.clips) >= 1
        assert all(c.macro_id == macro_id for c in evidence.clips)
        assert evidence.record_ids and all(r.startswith(macro_id) for r in evidence.record_ids)
    assert focus.macros["empty"].clips == () and focus.macros["empty"].candidate_ids == ()


@pytest.mark.parametrize("scope", SCOPES)
def test_clips_are_chronological_per_macro_event_and_overall(memory, scope) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope=scope)
    focus = select_focus_evidence(query, packed_of(clips, config), MACROS, config)
    starts = [c.start_s for c in focus.clips]
    assert starts == sorted(starts) and len(set(focus.clip_ids)) == focus.depth
    for evidence in focus.macros.values():
        assert [c.start_s for c in evidence.clips] == sorted(c.start_s for c in evidence.clips)
    union = sorted({c for m in focus.macros.values() for c in m.clip_ids})
    assert sorted(focus.clip_ids) == union
    assert focus.windows == [(c.start_s, c.end_s) for c in focus.clips]


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_the_joint_scopes_run_exactly_select_evidence(memory, ablation) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope="joint", **ABLATIONS[ablation])
    packed = packed_of(clips, config)
    reference = select_evidence(query, clips_under(packed, MACROS), config)
    joint = select_focus_evidence(query, packed, MACROS, config)
    assert joint.clip_ids == reference.selected_ids
    assert joint.joint.to_dict() == reference.to_dict()

    floored = select_focus_evidence(
        query, packed, MACROS, config.model_copy(update={"focus_scope": "joint_with_floor"})
    )
    assert set(reference.selected_ids) <= set(floored.clip_ids)
    added = set(floored.clip_ids) - set(reference.selected_ids)
    assert added == set(floored.floor_clip_ids)
    # A floor clip is its MacroEvent's most relevant one, by the relevance the run ranked by.
    relevance = dict(zip(reference.clip_ids, reference.relevance, strict=True))
    for macro_id in floored.with_status("floor"):
        evidence = floored.macros[macro_id]
        best = max(evidence.candidate_ids, key=lambda c: relevance[c])
        assert evidence.clip_ids == [best] == [evidence.floor_clip_id]


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_per_macro_runs_honour_the_switches_and_split_the_depth(memory, ablation) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope="per_macro", **ABLATIONS[ablation])
    packed = packed_of(clips, config)
    focus = select_focus_evidence(query, packed, MACROS, config)
    assert focus.joint is None
    budgets = {m: focus.macros[m].budget for m in ("cold", "hot", "warm")}
    assert sum(b.k_max for b in budgets.values()) == config.k_max
    assert sum(b.fixed_k for b in budgets.values()) == config.fixed_k
    # The remainder goes to the MacroEvent with the most relevant clip.
    assert budgets["hot"].k_max == 4 and budgets["hot"].fixed_k == 3
    for macro_id, budget in budgets.items():
        run = focus.macros[macro_id].run
        share = config.model_copy(
            update={"k_min": budget.k_min, "k_max": budget.k_max, "fixed_k": budget.fixed_k}
        )
        reference = select_evidence(query, clips_under(packed, [macro_id]), share)
        assert run.to_dict() == reference.to_dict()
        assert focus.macros[macro_id].clip_ids == reference.selected_ids
        assert run.settings["pooling"] == config.pooling and run.method == config.method
        if config.method == "top_k" or not config.depth_selection:
            assert run.k_star == min(budget.fixed_k, len(run.clip_ids))
        elif config.method == "pace_mem":
            assert budget.k_min <= run.k_star <= budget.k_max
    if config.method != "adaptive_k":
        assert focus.depth <= max(config.k_max, config.fixed_k)


def test_per_macro_with_one_macro_event_is_the_plain_run(memory) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope="per_macro")
    packed = packed_of(clips, config)
    focus = select_focus_evidence(query, packed, ["hot"], config)
    reference = select_evidence(query, clips_under(packed, ["hot"]), config)
    assert focus.clip_ids == reference.selected_ids
    assert focus.macros["hot"].budget.k_min == config.k_min
    assert focus.macros["hot"].budget.k_max == config.k_max


def test_pooling_switch_changes_the_relevance_the_floor_reads(memory) -> None:
    query, clips = memory
    pooled, _ = clip_relevance(query, clips, EvidenceConfig())
    best, _ = clip_relevance(query, clips, EvidenceConfig(pooling=False))
    assert not np.allclose(pooled, best)
    reference = select_evidence(query, clips, EvidenceConfig(pooling=False))
    assert np.array_equal(best, reference.relevance)


def test_split_depth() -> None:
    assert split_depth(10, np.array([0.1, 0.9, 0.5])).tolist() == [3, 4, 3]
    assert split_depth(10, np.array([0.5, 0.5, 0.5])).tolist() == [4, 3, 3]
    assert split_depth(2, np.array([0.1, 0.2, 0.3])).tolist() == [1, 1, 1]
    assert split_depth(7, np.array([0.3])).tolist() == [7]
    assert split_depth(3, np.zeros(0)).tolist() == []


def test_more_macro_events_than_k_max_still_get_one_clip_each() -> None:
    basis = axes(20)
    clips = [
        make_clip(
            f"m{i}_c{j}", 100.0 * i + 30 * j, [at_cosine(basis[0], basis[1 + i], 0.5)], f"m{i}"
        )
        for i in range(6)
        for j in range(2)
    ]
    config = EvidenceConfig(focus_scope="per_macro", k_min=2, k_max=4)
    focus = select_focus_evidence(
        basis[0], packed_of(clips, config), [f"m{i}" for i in range(6)], config
    )
    assert focus.with_status("selected") == [f"m{i}" for i in range(6)]
    assert focus.depth == 6


def test_a_clip_straddling_two_macro_events_counts_for_both_and_is_returned_once() -> None:
    basis = axes(10)
    query = basis[0]
    vectors = np.stack([at_cosine(query, basis[1], 0.9), at_cosine(query, basis[2], 0.6)])
    records = (
        EvidenceRecord("a_node", "end of a", 28.0, None, 0, "a"),
        EvidenceRecord("b_node", "start of b", 31.0, None, 1, "b"),
    )
    straddle = Clip("builder_01", 20.0, 50.0, records, vectors.astype(np.float32))
    lone = make_clip("builder_00", 0.0, [at_cosine(query, basis[3], 0.2)], "a")
    far = make_clip("builder_09", 900.0, [at_cosine(query, basis[4], 0.1)], "c")
    for scope in SCOPES:
        config = EvidenceConfig(focus_scope=scope, k_min=1, k_max=1)
        packed = packed_of([lone, straddle, far], config)
        focus = select_focus_evidence(query, packed, ["a", "b", "c"], config)
        assert "builder_01" in focus.macros["a"].clip_ids
        assert "builder_01" in focus.macros["b"].clip_ids
        assert focus.clip_ids.count("builder_01") == 1
        assert "b_node" not in focus.macros["a"].record_ids
        assert focus.macros["b"].record_ids == ("b_node",)


def test_no_candidates_at_all_is_reported_not_an_error(memory) -> None:
    query, clips = memory
    for scope in SCOPES:
        config = EvidenceConfig(focus_scope=scope)
        packed = packed_of(clips, config)
        focus = select_focus_evidence(query, packed, ["nothing", "nothing", "missing"], config)
        assert focus.macro_ids == ["nothing", "missing"]
        assert focus.with_status("no_clips") == ["nothing", "missing"] and focus.depth == 0
        assert select_focus_evidence(query, packed, [], config).depth == 0
        empty = select_focus_evidence(query, packed_of([], config), ["hot"], config)
        assert empty.with_status("no_clips") == ["hot"]
        json.dumps(empty.to_dict())


@pytest.mark.parametrize("scope", SCOPES)
def test_deterministic_and_json_ready(memory, scope) -> None:
    query, clips = memory
    config = EvidenceConfig(focus_scope=scope)
    first = select_focus_evidence(query, packed_of(clips, config), MACROS, config).to_dict()
    second = select_focus_evidence(query, packed_of(list(reversed(clips)), config), MACROS, config)
    assert json.dumps(first) == json.dumps(second.to_dict())
    assert first["scope"] == scope and set(first["macros"]) == set(MACROS)
    assert first["method"] == "pace_mem" and first["depth"] == len(first["selected_ids"])
    assert first["macros"]["empty"]["status"] == "no_clips"
    if scope == "per_macro":
        assert first["joint"] is None and first["macros"]["hot"]["run"]["order_scores"]
    else:
        assert first["joint"]["order_scores"] and first["macros"]["hot"]["run"] is None


# --------------------------------------------------------------------------- query text


OPTIONS = ["A. Maria and Tom", "(B) Maria, Tom and Aisha", "c) Only Tom", "D: U.S. Army band"]


def test_option_labels_are_stripped_and_abbreviations_kept() -> None:
    assert [option_body(o) for o in OPTIONS] == [
        "Maria and Tom",
        "Maria, Tom and Aisha",
        "Only Tom",
        "U.S. Army band",
    ]
    assert option_body("U.S. Army band") == "U.S. Army band"
    assert option_body("A piano") == "A piano"
    assert option_body("  B.   two   spaces ") == "two spaces"


def test_the_options_switch_changes_the_query() -> None:
    question = "Which contestants play the piano?"
    instruction = "Check each performance  for a piano."
    without = focus_query_text(question, instruction, OPTIONS, include_options=False)
    with_options = focus_query_text(question, instruction, OPTIONS, include_options=True)
    assert without == "Which contestants play the piano? Check each performance for a piano."
    assert with_options == (
        f"{without} Options: Maria and Tom; Maria, Tom and Aisha; Only Tom; U.S. Army band."
    )
    assert focus_query_text(question, None, OPTIONS) == question
    assert focus_query_text(question, "", ["A. ", "B."], include_options=True) == question


def test_the_config_switches_validate_and_reach_the_default_config() -> None:
    config = load_config()
    assert config.evidence.focus_scope in SCOPES
    assert isinstance(config.evidence.query_options, bool)
    changed = load_config(overrides=["evidence.focus_scope=joint", "evidence.query_options=true"])
    assert changed.evidence.focus_scope == "joint" and changed.evidence.query_options is True
    with pytest.raises(Exception, match="focus_scope"):
        load_config(overrides=["evidence.focus_scope=everywhere"])
