"""The typed memory: accessors in time order, hierarchy checks, and read-only guarantees."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from pydantic import ValidationError

from videotapestry.errors import MemoryFormatError, MemoryNodeNotFoundError
from videotapestry.memory import (
    EntityNode,
    EventNode,
    MacroEvent,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
    VideoMemory,
    import_memdreamer,
)

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"


@pytest.fixture(scope="module")
def sample() -> VideoMemory:
    return import_memdreamer(SAMPLE)


def tiny(**overrides: object) -> dict[str, object]:
    """Parts of a two-level memory; tests break one part at a time."""
    parts: dict[str, object] = {
        "root": RootEvent(id="root", time_range=TimeRange(start=0, end=100)),
        "super_events": [
            SuperEvent(id="super_01", parent_id="root", time_range=TimeRange(start=0, end=100))
        ],
        "macro_events": [
            MacroEvent(
                id="macro_0000", parent_id="super_01", time_range=TimeRange(start=0, end=100)
            )
        ],
        "subgraph_nodes": [
            EntityNode(id="slot0_e1", parent_id="macro_0000", name="Tom", time_range=[10, 15]),
            EventNode(id="slot0_v1", parent_id="macro_0000", action="waves", time_range=[5, 9]),
        ],
        "relations": [
            Relation(source="slot0_e1", target="slot0_v1", type="SEMANTIC", label="PERFORMS")
        ],
    }
    parts.update(overrides)
    return parts


def test_accessors_follow_the_hierarchy_in_time_order(sample: VideoMemory) -> None:
    assert sample.root.id == "root_001"
    assert [m.id for m in sample.macro_events()] == [f"macro_{i:04d}" for i in range(6)]
    assert [n.id for n in sample.children("macro_0002")] == [
        "slot2_e1",
        "slot2_v1",
        "slot2_v2",
        "slot2_o1",
        "slot2_e5",
    ]
    assert sample.parent("slot2_o1").id == "macro_0002"
    assert sample.parent("macro_0002").id == "super_02"
    assert sample.parent("super_02").id == "root_001"
    assert sample.parent("root_001") is None
    assert sample.time_range("super_03") == TimeRange(start=900, end=1200)
    subgraph = sample.subgraph("macro_0005")
    assert [n.id for n in subgraph.entities] == ["slot5_e7"]
    assert [n.id for n in subgraph.events] == ["slot5_v1"]
    assert [n.id for n in subgraph.ocr_texts] == ["slot5_o1"]
    assert [(r.source, r.target) for r in subgraph.relations] == [("slot5_e7", "slot5_v1")]
    assert [r.target for r in sample.relations_of("slot2_v2")] == ["slot2_v2", "slot2_e5"]


def test_unknown_ids_and_wrong_kinds_are_clear_errors(sample: VideoMemory) -> None:
    with pytest.raises(MemoryNodeNotFoundError, match="no node with id 'macro_9999'"):
        sample.node("macro_9999")
    with pytest.raises(
        MemoryNodeNotFoundError, match="'super_01' is a SuperEvent, not a MacroEvent"
    ):
        sample.subgraph("super_01")
    with pytest.raises(MemoryNodeNotFoundError, match="not a SuperEvent"):
        sample.macro_events("macro_0001")


def test_stored_memory_cannot_be_mutated(sample: VideoMemory) -> None:
    node = sample.node("slot0_e1")
    with pytest.raises(ValidationError, match="frozen"):
        node.name = "someone else"  # type: ignore[misc]
    assert isinstance(node, EntityNode)
    with pytest.raises(TypeError):
        node.attributes["mood"] = "happy"  # type: ignore[index]
    with pytest.raises(nx.NetworkXError, match="Frozen graph"):
        sample.graph.add_node("intruder")
    listed = sample.super_events()
    listed.clear()
    assert len(sample.super_events()) == 3
    assert isinstance(sample.subgraph("macro_0000").nodes, tuple)


def test_graph_holds_hierarchy_and_relations(sample: VideoMemory) -> None:
    graph = sample.graph
    assert graph.number_of_nodes() == len(sample) == 33
    assert graph.has_edge("slot2_o1", "macro_0002")  # child -> parent SUBEVENT_OF
    edge = graph.get_edge_data("slot2_v2", "slot2_e5")
    assert [d["label"] for d in edge.values()] == ["ACTS_ON"]
    assert nx.has_path(graph, "slot5_o1", "root_001")


def test_constructor_checks_the_hierarchy() -> None:
    VideoMemory(**tiny())  # the valid base case
    with pytest.raises(MemoryFormatError, match="node id 'slot0_e1' is used more than once"):
        VideoMemory(
            **tiny(
                subgraph_nodes=[
                    EntityNode(id="slot0_e1", parent_id="macro_0000", time_range=[1, 2]),
                    EntityNode(id="slot0_e1", parent_id="macro_0000", time_range=[3, 4]),
                ],
                relations=[],
            )
        )
    with pytest.raises(MemoryFormatError, match="parent 'super_01' of kind SuperEvent"):
        VideoMemory(
            **tiny(
                subgraph_nodes=[EntityNode(id="e", parent_id="super_01", time_range=[1, 2])],
                relations=[],
            )
        )
    with pytest.raises(MemoryFormatError, match="unknown source 'ghost'"):
        VideoMemory(**tiny(relations=[Relation(source="ghost", target="slot0_v1", type="CAUSAL")]))


def test_time_ranges_read_both_forms_and_reject_reversed() -> None:
    assert TimeRange.model_validate([1, 2]) == TimeRange.model_validate({"start": 1, "end": 2})
    assert TimeRange(start=1, end=2).model_dump() == [1.0, 2.0]
    with pytest.raises(ValidationError, match="ends"):
        TimeRange(start=5, end=1)
    with pytest.raises(ValidationError, match="finite"):
        TimeRange(start=0, end=float("inf"))
