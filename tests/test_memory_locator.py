"""Locators and node embeddings over the shared sample, with the packaged MiniLM model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.memory import (
    EntityNode,
    LocatorHit,
    MacroEvent,
    MemoryLocator,
    OCRTextNode,
    RootEvent,
    SuperEvent,
    TimeRange,
    VideoMemory,
    ensure_embeddings,
    import_memdreamer,
    load_memory,
    save_memory,
    split_anchors,
)
from videotapestry.memory.multi_anchor import candidate_windows

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"
PACKAGED = "packaged:all-MiniLM-L6-v2"


class CountingEmbedder:
    """A real embedder, seen through a counter so tests can tell reuse from recomputation."""

    def __init__(self, inner: SentenceTransformerEmbedder, model_name: str | None = None):
        self.inner = inner
        self._name = model_name or inner.model_name
        self.document_texts = 0

    @property
    def model_name(self) -> str:
        return self._name

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not query:
            self.document_texts += len(texts)
        return self.inner.embed(texts, query=query)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbeddingConfig(model=PACKAGED, query_prompt_name=None))


@pytest.fixture(scope="module")
def sample() -> VideoMemory:
    return import_memdreamer(SAMPLE)


@pytest.fixture(scope="module")
def locator(sample: VideoMemory, minilm: SentenceTransformerEmbedder) -> MemoryLocator:
    return MemoryLocator(sample, minilm)


# --------------------------------------------------------------------------- entity and OCR


def test_entity_search_finds_chef_maria_through_unification(locator: MemoryLocator) -> None:
    hits = locator.find_entities("Maria")
    by_id = {h.node_id: h for h in hits}
    assert {"slot1_e1", "slot3_e1"} <= set(by_id)  # named "Maria"
    assert by_id["slot1_e1"].match == "exact"
    chef = by_id["slot0_e1"]  # named "Chef Maria", reached through the variants
    assert chef.label == "Chef Maria" and chef.match == "alias"
    assert (chef.macro_id, chef.super_id) == ("macro_0000", "super_01")
    assert (chef.time_range.start, chef.time_range.end) == (12.0, 17.0)
    assert len(hits) == 5 and hits[0].score >= hits[-1].score
    assert {h.node_id for h in locator.find_entities("  chef   MARIA ")} == set(by_id)


def test_without_unification_maria_does_not_reach_chef_maria(tmp_path: Path) -> None:
    memory = import_memdreamer(SAMPLE)
    plain = VideoMemory(
        root=memory.root,
        super_events=memory.super_events(),
        macro_events=memory.macro_events(),
        subgraph_nodes=memory.nodes(["Entity", "Event", "OCRText"]),
        relations=memory.relations(),
    )
    hits = MemoryLocator(plain).find_entities("Maria")
    assert {h.node_id for h in hits} == {"slot1_e1", "slot3_e1"}
    # Substring search is the second tier only: "Chef" is no exact name.
    chef_hits = MemoryLocator(plain).find_entities("Chef")
    assert {h.match for h in chef_hits} == {"substring"} and len(chef_hits) == 3


def test_substring_matches_whole_words_only() -> None:
    span = TimeRange(start=0, end=60)
    memory = VideoMemory(
        root=RootEvent(id="root", time_range=span),
        super_events=[SuperEvent(id="super_01", parent_id="root", time_range=span)],
        macro_events=[MacroEvent(id="macro_0000", parent_id="super_01", time_range=span)],
        subgraph_nodes=[
            EntityNode(id="slot0_e1", parent_id="macro_0000", name="tomato", time_range=[1, 2]),
            EntityNode(id="slot0_e2", parent_id="macro_0000", name="Uncle Tom", time_range=[3, 4]),
        ],
    )
    assert [h.node_id for h in MemoryLocator(memory).find_entities("tom")] == ["slot0_e2"]


def test_ocr_search_reads_past_ocr_confusions() -> None:
    span = TimeRange(start=0, end=60)
    memory = VideoMemory(
        root=RootEvent(id="root", time_range=span),
        super_events=[SuperEvent(id="super_01", parent_id="root", time_range=span)],
        macro_events=[MacroEvent(id="macro_0000", parent_id="super_01", time_range=span)],
        subgraph_nodes=[
            OCRTextNode(id="slot0_o1", parent_id="macro_0000", text="R00M72C0DE1245",
                        time_range=[10, 18]),
            OCRTextNode(id="slot0_o2", parent_id="macro_0000", text="ROOM 5 CODE 9320",
                        time_range=[30, 38]),
        ],
    )  # fmt: skip
    locator = MemoryLocator(memory)
    hits = locator.find_ocr_text("Room 72")
    assert [(h.node_id, h.match) for h in hits] == [("slot0_o1", "ocr_confusable")]
    # An exact or plain substring reading still wins over a folded one.
    assert [(h.node_id, h.match) for h in locator.find_ocr_text("room")] == [
        ("slot0_o2", "ocr_substring")
    ]
    assert locator.find_ocr_text("Room 73") == []


def test_ocr_search_finds_the_oven_display(locator: MemoryLocator) -> None:
    hits = locator.find_ocr_text("220°C")
    assert [(h.node_id, h.match) for h in hits] == [("slot2_o1", "ocr_exact")]
    assert (hits[0].time_range.start, hits[0].time_range.end) == (615.0, 635.0)
    assert [h.node_id for h in locator.find_ocr_text("220 °c")] == ["slot2_o1"]
    partial = locator.find_ocr_text("timer")
    assert [(h.node_id, h.match) for h in partial] == [("slot3_o1", "ocr_substring")]
    assert locator.find_ocr_text("350°F") == []


def test_text_search_matches_whole_words_in_labels_and_descriptions(
    locator: MemoryLocator,
) -> None:
    assert {h.node_id for h in locator.find_text("onions")} == {"slot0_o1", "slot1_e3", "slot1_v1"}
    assert locator.find_text("oni") == []
    held = locator.find_text("score card")
    assert [(h.node_id, h.match, h.macro_id) for h in held] == [("slot5_o1", "text", "macro_0005")]


# --------------------------------------------------------------------------- semantic and time


def test_semantic_search_ranks_the_oven_nodes_first(locator: MemoryLocator) -> None:
    hits = locator.semantic_search("what temperature was the oven set to", limit=5)
    assert {h.node_id for h in hits[:3]} == {"slot2_o1", "slot2_v2", "slot2_e5"}
    assert all(h.match == "semantic" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    ocr_only = locator.semantic_search("oven temperature", kinds=["OCRText"], limit=2)
    assert ocr_only[0].node_id == "slot2_o1" and {h.kind for h in ocr_only} == {"OCRText"}


def test_search_by_time_returns_every_level(locator: MemoryLocator) -> None:
    hits = locator.at_time(616, 621)
    ids = {h.node_id for h in hits}
    assert {"super_02", "macro_0002", "slot2_o1", "slot2_v2", "slot2_e5"} <= ids
    assert "slot2_v1" not in ids  # ends at 570 s
    assert [h.time_range.start for h in hits] == sorted(h.time_range.start for h in hits)
    ocr = locator.at_time(1100, 1200, kinds=["OCRText"])
    assert [(h.node_id, h.macro_id, h.super_id) for h in ocr] == [
        ("slot5_o1", "macro_0005", "super_03")
    ]


# --------------------------------------------------------------------------- multi-anchor


def test_multi_anchor_window_covers_tom_and_the_score_card(locator: MemoryLocator) -> None:
    result = locator.locate(["Tom", "score card"])
    assert result.unresolved_anchors == ()
    best = result.candidate_windows[0]
    chosen = {m.anchor: m.hit for m in best.matches}
    assert chosen["Tom"].node_id == "slot5_e7" and chosen["Tom"].match == "exact"
    assert chosen["score card"].node_id == "slot5_o1"
    for hit in chosen.values():
        assert best.time_range.start <= hit.time_range.start
        assert hit.time_range.end <= best.time_range.end
    assert (best.time_range.start, best.time_range.end) == (1058.0, 1190.0)
    assert best.macro_ids == ("macro_0005",) and best.super_ids == ("super_03",)
    # A string target is split into the same anchors.
    from_text = locator.locate('Tom and the "score card"').candidate_windows[0]
    assert from_text.time_range == best.time_range
    assert {m.hit.node_id for m in from_text.matches} == {"slot5_e7", "slot5_o1"}


def test_multi_anchor_with_semantic_only_anchor(locator: MemoryLocator) -> None:
    result = locator.locate(["Maria", "oven temperature display"])
    assert result.unresolved_anchors == ()
    best = result.candidate_windows[0]
    chosen = {m.anchor: m.hit for m in best.matches}
    assert chosen["oven temperature display"].match == "semantic"
    assert "macro_0002" in best.macro_ids
    assert best.time_range.overlaps(TimeRange(start=615, end=635))


def test_unresolved_anchor_gives_no_partial_windows(sample: VideoMemory) -> None:
    lexical_only = MemoryLocator(sample)
    result = lexical_only.locate(["Tom", "zebra"])
    assert result.unresolved_anchors == ("zebra",)
    assert result.candidate_windows == ()
    assert result.anchor_hits["Tom"][0].node_id == "slot5_e7"


def _hit(node_id: str, start: float, score: float, length: float = 5.0) -> LocatorHit:
    return LocatorHit(
        node_id=node_id,
        kind="Entity",
        label=node_id,
        description="",
        time_range=TimeRange(start=start, end=start + length),
        macro_id=None,
        super_id=None,
        match="semantic",
        score=score,
    )


def test_windows_prefer_compact_clusters_of_strong_matches() -> None:
    hits = {
        "a": [_hit("a_early", 0, 1.0), _hit("a_late", 3000, 1.0)],
        "b": [_hit("b_late", 3020, 1.0)],
    }
    best = candidate_windows(hits)[0]
    assert [m.hit.node_id for m in best.matches] == ["a_late", "b_late"]
    # A tight pair of weak matches does not beat a slightly wider pair of exact ones.
    hits = {
        "a": [_hit("a_exact", 100, 1.0), _hit("a_weak", 900, 0.4)],
        "b": [_hit("b_exact", 160, 1.0), _hit("b_weak", 902, 0.4)],
    }
    ranked = [[m.hit.node_id for m in w.matches] for w in candidate_windows(hits)]
    assert ranked == [["a_exact", "b_exact"], ["a_weak", "b_weak"]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.floats(0, 7200), st.floats(0.05, 1.0)), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    )
)
def test_every_window_is_a_complete_ranked_hypothesis(
    groups: list[list[tuple[float, float]]],
) -> None:
    hits = {
        f"anchor{i}": [_hit(f"n{i}_{j}", t, s) for j, (t, s) in enumerate(group)]
        for i, group in enumerate(groups)
    }
    windows = candidate_windows(hits)
    assert windows
    assert [w.score for w in windows] == sorted((w.score for w in windows), reverse=True)
    for window in windows:
        assert [m.anchor for m in window.matches] == list(hits)
        for match in window.matches:
            assert match.hit in hits[match.anchor]
            assert window.time_range.start <= match.hit.time_range.start
            assert match.hit.time_range.end <= window.time_range.end


def test_split_anchors() -> None:
    assert split_anchors('Tom and the "score card"') == ["score card", "Tom"]
    assert split_anchors("the oven, a timer; Maria") == ["oven", "timer", "Maria"]


# --------------------------------------------------------------------------- embeddings


def test_embeddings_are_stored_reused_and_recomputed_for_another_model(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    counting = CountingEmbedder(minilm)
    memory = ensure_embeddings(import_memdreamer(SAMPLE), counting)
    stored = memory.embeddings
    assert stored is not None and stored.model_name == PACKAGED and len(stored) == 23
    assert 0 < counting.document_texts < 23  # the recurring "Maria (person): chef" once
    assert np.allclose(np.linalg.norm(stored.vectors, axis=1), 1.0, atol=1e-5)
    save_memory(memory, tmp_path / "native")

    reloaded = load_memory(tmp_path / "native")
    reuse = CountingEmbedder(minilm)
    assert ensure_embeddings(reloaded, reuse) is reloaded
    MemoryLocator(reloaded, reuse).semantic_search("oven")
    assert reuse.document_texts == 0

    other = CountingEmbedder(minilm, model_name="another-model")
    switched = ensure_embeddings(reloaded, other)
    assert other.document_texts > 0
    assert switched.embeddings is not None and switched.embeddings.model_name == "another-model"
    assert switched.manifest is not None and switched.manifest.embedding_model == "another-model"
    save_memory(switched, tmp_path / "native")
    assert load_memory(tmp_path / "native").embeddings.model_name == "another-model"
