"""MemDreamer import/export: the shared sample, every layout variant, the released layout
(tests/fixtures/memdreamer_released, see make_memdreamer_released.py), round trips, bad input."""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from videotapestry.errors import MemoryFormatError
from videotapestry.memory import (
    EntityNode,
    EventNode,
    OCRTextNode,
    VectorsReplaced,
    VideoMemory,
    ensure_embeddings,
    export_memdreamer,
    import_memdreamer,
    keep_valid_embeddings,
    load_memory,
    reconcile_embeddings,
    save_memory,
)
from videotapestry.memory.embedding_index import embeddings_match

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"
GRAPH = Path("phase3") / "hierarchical_graph_final.json"
UNIFICATION = Path("phase3") / "intermediate" / "step2p5_entity_unification.json"


def sample_copy(tmp_path: Path, name: str = "sample") -> Path:
    target = tmp_path / name
    shutil.copytree(SAMPLE, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def edit_json(path: Path, change: Callable[[Any], object]) -> None:
    """Apply an in-place ``change`` to a JSON file (its return value is ignored)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def subgraph_file(root: Path, slot: int) -> Path:
    return root / "phase2" / f"episode_{slot:03d}" / "step5_subgraph.json"


@pytest.fixture(scope="module")
def sample() -> VideoMemory:
    return import_memdreamer(SAMPLE)


# --------------------------------------------------------------------------- the shared sample


def test_sample_counts_per_kind(sample: VideoMemory) -> None:
    assert sample.counts() == {
        "RootEvent": 1,
        "SuperEvent": 3,
        "MacroEvent": 6,
        "Entity": 11,
        "Event": 8,
        "OCRText": 4,
        "relations": 2 + 5 + 12,
        "clips": 0,
    }
    assert [s.id for s in sample.super_events()] == ["super_01", "super_02", "super_03"]
    assert [m.id for m in sample.macro_events("super_02")] == ["macro_0002", "macro_0003"]
    assert sample.manifest is not None and sample.manifest.source == "memdreamer"


def test_sample_times_are_absolute(sample: VideoMemory) -> None:
    oven_display = sample.node("slot2_o1")
    assert isinstance(oven_display, OCRTextNode) and oven_display.text == "220°C"
    assert (oven_display.time_range.start, oven_display.time_range.end) == (615.0, 635.0)
    assert sample.macro_id_of("slot2_o1") == "macro_0002"
    assert sample.super_id_of("slot2_o1") == "super_02"
    # An Entity's time is its grounding moment (slot start + primary_time_sec) plus a short span.
    oven = sample.node("slot2_e5")
    assert isinstance(oven, EntityNode) and oven.grounding_time == 620.0
    assert (oven.time_range.start, oven.time_range.end) == (620.0, 625.0)
    chopping = sample.node("slot1_v2")
    assert (chopping.time_range.start, chopping.time_range.end) == (310.0, 410.0)
    root = sample.root
    assert (root.time_range.start, root.time_range.end) == (0.0, 1200.0)  # given as {start,end}


def test_sample_ids_slots_relations_and_unification(sample: VideoMemory) -> None:
    assert sample.node("macro_0003").slot == 3
    setting = sample.node("slot2_v2")
    assert isinstance(setting, EventNode)
    assert setting.subject_ids == ("slot2_e1",) and setting.object_ids == ("slot2_e5",)
    subgraph = sample.subgraph("macro_0002")
    assert {(r.source, r.label, r.target, r.type) for r in subgraph.relations} == {
        ("slot2_e1", "PERFORMS", "slot2_v1", "SEMANTIC"),
        ("slot2_e1", "PERFORMS", "slot2_v2", "SEMANTIC"),
        ("slot2_v2", "ACTS_ON", "slot2_e5", "ATTRIBUTIVE"),
    }
    progression = sample.relations(["super_01", "super_02"])
    assert [(r.type, r.label, r.reason) for r in progression] == [
        ("PROGRESSION", "LEADS_TO", "follows in time")
    ]
    assert sample.variants_of("maria") == ("Chef Maria", "Maria")


# --------------------------------------------------------------------------- layout variants


def test_variant_non_final_graph_file(tmp_path: Path, sample: VideoMemory) -> None:
    root = sample_copy(tmp_path)
    (root / GRAPH).rename(root / "phase3" / "hierarchical_graph.json")
    assert import_memdreamer(root) == sample


def test_variant_final_graph_file_wins_over_non_final(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    stale = json.loads((root / GRAPH).read_text())
    stale["root_event"]["title"] = "an older draft"
    (root / "phase3" / "hierarchical_graph.json").write_text(json.dumps(stale))
    assert import_memdreamer(root).root.title == "Weeknight roast chicken with Chef Maria"


def test_variant_nested_episode_folders(tmp_path: Path, sample: VideoMemory) -> None:
    root = sample_copy(tmp_path)
    for slot in (0, 3, 5):
        episode = root / "phase2" / f"episode_{slot:03d}"
        (episode / episode.name).mkdir()
        (episode / "step5_subgraph.json").rename(episode / episode.name / "step5_subgraph.json")
    assert import_memdreamer(root) == sample


def test_variant_dict_and_list_time_ranges(tmp_path: Path, sample: VideoMemory) -> None:
    root = sample_copy(tmp_path)

    def swap_forms(graph: dict[str, Any]) -> None:
        graph["root_event"]["time_range"] = [0, 1200]
        for item in graph["super_events"] + graph["macro_events"]:
            start, end = item["time_range"]
            item["time_range"] = {"start": start, "end": end}

    edit_json(root / GRAPH, swap_forms)

    def dict_event_times(subgraph: dict[str, Any]) -> None:
        for node in subgraph["nodes"]:
            if "time_range" in node:
                start, end = node["time_range"]
                node["time_range"] = {"start": start, "end": end}

    edit_json(subgraph_file(root, 2), dict_event_times)
    assert import_memdreamer(root) == sample


def test_variant_local_subgraph_times_follow_start_sec(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    edit_json(subgraph_file(root, 2), lambda s: s.update(start_sec=400.0))
    shifted = import_memdreamer(root)
    display = shifted.node("slot2_o1")
    assert (display.time_range.start, display.time_range.end) == (595.0, 615.0)
    # Without start_sec the MacroEvent's own start is the offset.
    edit_json(subgraph_file(root, 2), lambda s: s.pop("start_sec"))
    assert import_memdreamer(root).node("slot2_o1").time_range.start == 615.0


def test_variant_null_entity_names(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)

    def drop_name(subgraph: dict[str, Any]) -> None:
        subgraph["nodes"][1]["name"] = None  # the oven

    edit_json(subgraph_file(root, 2), drop_name)
    memory = import_memdreamer(root)
    oven = memory.node("slot2_e5")
    assert isinstance(oven, EntityNode)
    assert oven.name == "appliance: wall oven with a digital display" and oven.name_inferred
    exported = export_memdreamer(memory, tmp_path / "out")
    written = json.loads(subgraph_file(exported, 2).read_text())
    assert next(n for n in written["nodes"] if n["node_id"] == "e5")["name"] is None
    assert import_memdreamer(exported) == memory


def test_variant_pre_prefixed_edge_and_node_ids(tmp_path: Path, sample: VideoMemory) -> None:
    root = sample_copy(tmp_path)

    def prefix_edges(subgraph: dict[str, Any]) -> None:
        for edge in subgraph["edges"]:
            edge["source_id"] = "slot1_" + edge["source_id"]
        subgraph["nodes"][0]["node_id"] = "slot1_e1"

    edit_json(subgraph_file(root, 1), prefix_edges)
    memory = import_memdreamer(root)
    assert memory == sample
    assert "slot1_slot1_e1" not in memory


def test_variant_missing_unification_file(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    (root / UNIFICATION).unlink()
    memory = import_memdreamer(root)
    assert memory.unification == ()
    assert memory.variants_of("Maria") == ("Maria",)
    assert memory.counts()["Entity"] == 11


def test_variant_missing_root_is_made_from_super_events(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    edit_json(root / GRAPH, lambda g: (g.pop("root_event"), g.pop("root_relations")))
    memory = import_memdreamer(root)
    assert memory.root.id == "root"
    assert (memory.root.time_range.start, memory.root.time_range.end) == (0.0, 1200.0)
    assert [s.parent_id for s in memory.super_events()] == ["root"] * 3


def test_variant_parent_only_from_subevent_relations(tmp_path: Path, sample: VideoMemory) -> None:
    root = sample_copy(tmp_path)

    def drop_child_lists(graph: dict[str, Any]) -> None:
        for item in graph["super_events"]:
            item["sub_macro_ids"] = []

    edit_json(root / GRAPH, drop_child_lists)
    assert import_memdreamer(root) == sample


# --------------------------------------------------------------------------- round trips


def test_export_writes_memdreamer_layout_with_local_times(
    tmp_path: Path, sample: VideoMemory
) -> None:
    out = export_memdreamer(sample, tmp_path / "out")
    assert (out / GRAPH).is_file() and (out / UNIFICATION).is_file()
    episode = json.loads(subgraph_file(out, 2).read_text())
    assert episode["slot_id"] == 2 and episode["start_sec"] == 420.0
    display = next(n for n in episode["nodes"] if n["node_id"] == "o1")
    assert display["time_range"] == [195.0, 215.0]
    oven = next(n for n in episode["nodes"] if n["node_id"] == "e5")
    assert oven["visual_grounding"]["primary_time_sec"] == 200.0
    graph = json.loads((out / GRAPH).read_text())
    assert graph["macro_events"][2]["anchors"] == {"slot_ids": [2]}


def test_import_export_import_is_lossless(tmp_path: Path, sample: VideoMemory) -> None:
    again = import_memdreamer(export_memdreamer(sample, tmp_path / "once"))
    assert again == sample
    twice = import_memdreamer(export_memdreamer(again, tmp_path / "twice"))
    assert twice == sample
    # Equality covers every modelled field; spot-check ones easy to drop on the way.
    assert twice.node("slot0_e1").distinctive_features == "woman in a white apron"
    assert twice.relations(["super_01", "super_02"])[0].reason == "follows in time"
    assert twice.root.emotional_tone == "warm"


def test_round_trip_keeps_attributes_and_odd_times(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)

    def enrich(subgraph: dict[str, Any]) -> None:
        subgraph["start_sec"] = 180.125
        subgraph["nodes"][2]["attributes"] = {"colour": "orange", "count": 3, "tags": ["raw"]}
        subgraph["nodes"][3]["time_range"] = [30.333, 120.5]
        del subgraph["nodes"][2]["visual_grounding"]

    edit_json(subgraph_file(root, 1), enrich)
    memory = import_memdreamer(root)
    carrot = memory.node("slot1_e4")
    assert isinstance(carrot, EntityNode) and carrot.grounding_time is None
    assert carrot.time_range == memory.node("macro_0001").time_range
    assert memory.node("slot1_v1").time_range.start == pytest.approx(210.458)
    assert import_memdreamer(export_memdreamer(memory, tmp_path / "out")) == memory


def test_export_refuses_a_non_empty_directory(tmp_path: Path, sample: VideoMemory) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    with pytest.raises(MemoryFormatError, match="new or empty directory"):
        export_memdreamer(sample, tmp_path / "busy")


# --------------------------------------------------------------------------- bad input


def test_corrupt_graph_json_names_file_and_position(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    (root / GRAPH).write_text('{"root_event": {"node_id": "root_001",', encoding="utf-8")
    with pytest.raises(
        MemoryFormatError, match=r"hierarchical_graph_final\.json is not valid JSON \(line 1"
    ):
        import_memdreamer(root)


def test_corrupt_subgraph_json_names_file(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    subgraph_file(root, 4).write_text("{nodes: []}", encoding="utf-8")
    with pytest.raises(
        MemoryFormatError, match=r"episode_004/step5_subgraph\.json is not valid JSON"
    ):
        import_memdreamer(root)


def test_missing_phase2_folder(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    shutil.rmtree(root / "phase2")
    with pytest.raises(MemoryFormatError, match="the phase2 folder is missing"):
        import_memdreamer(root)


def test_missing_graph_file(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    (root / GRAPH).unlink()
    with pytest.raises(MemoryFormatError, match="not a MemDreamer memory"):
        import_memdreamer(root)


def test_dangling_child_id_names_field_and_id(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    edit_json(root / GRAPH, lambda g: g["super_events"][1]["sub_macro_ids"].append("macro_0099"))
    with pytest.raises(MemoryFormatError) as caught:
        import_memdreamer(root)
    message = str(caught.value)
    assert "hierarchical_graph_final.json" in message
    assert "super_events[1].sub_macro_ids[2]" in message and "'macro_0099'" in message


def test_macro_event_without_super_event(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)

    def orphan(graph: dict[str, Any]) -> None:
        graph["super_events"][2]["sub_macro_ids"] = ["macro_0004"]
        graph["subevent_relations"] = [
            r for r in graph["subevent_relations"] if r["source_id"] != "macro_0005"
        ]

    edit_json(root / GRAPH, orphan)
    with pytest.raises(MemoryFormatError, match="'macro_0005' belongs to no SuperEvent"):
        import_memdreamer(root)


def test_bad_time_range_and_relation_type_name_the_field(tmp_path: Path) -> None:
    root = sample_copy(tmp_path)
    edit_json(root / GRAPH, lambda g: g["macro_events"][1].update(time_range=[420, 180]))
    with pytest.raises(MemoryFormatError, match=r"macro_events\[1\]\.time_range ends before"):
        import_memdreamer(root)
    root = sample_copy(tmp_path, "second")
    edit_json(subgraph_file(root, 0), lambda s: s["edges"][0].update(relation_type="FRIENDLY"))
    with pytest.raises(MemoryFormatError, match=r"edges\[0\]\.relation_type is 'FRIENDLY'"):
        import_memdreamer(root)


def test_edge_to_unknown_node_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = sample_copy(tmp_path)
    edit_json(
        subgraph_file(root, 4),
        lambda s: s["edges"].append(
            {"source_id": "e1", "target_id": "v9", "relation_type": "CAUSAL"}
        ),
    )
    memory = import_memdreamer(root)
    assert memory.counts()["relations"] == 19
    assert "slot4_v9" in caplog.text


# --------------------------------------------------------------------------- the released layout

RELEASED = Path(__file__).parent / "fixtures" / "memdreamer_released"
KITCHEN = RELEASED / "kitchen_0001"
HARBOUR = RELEASED / "harbour_0002"
#: The model MemDreamer's embeddings.json comes from, as sentence-transformers names it.
QWEN_8B = "Qwen/Qwen3-Embedding-8B"
#: The default configured embedding model.
SMALL_QWEN = "Qwen/Qwen3-Embedding-0.6B"


def released_copy(tmp_path: Path, video: Path = KITCHEN) -> Path:
    target = tmp_path / video.name
    shutil.copytree(video, target)
    return target


def released_subgraph(root: Path, slot: int) -> Path:
    episode = f"episode_{slot:04d}"
    return root / "phase2_topdown" / episode / episode / "step5_subgraph.json"


class HashEmbedder:
    """Deterministic vectors of any length under any model name (no model to load)."""

    def __init__(self, model_name: str, dimension: int) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.texts = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.texts += len(texts)
        rows = [
            np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dimension) for t in texts
        ]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def kitchen() -> VideoMemory:
    return import_memdreamer(KITCHEN)


def test_released_layout_imports(kitchen: VideoMemory) -> None:
    # phase4/ graph, phase2_topdown/episode_XXXX/episode_XXXX/ subgraphs, ids under
    # entity_id / event_id / ocr_id, phase4/intermediate unification.
    assert kitchen.counts() == {
        "RootEvent": 1,
        "SuperEvent": 2,
        "MacroEvent": 4,
        "Entity": 6,
        "Event": 4,
        "OCRText": 2,
        "relations": 7,
        "clips": 0,
    }
    display = kitchen.node("slot2_o1")
    assert isinstance(display, OCRTextNode) and display.text == "190°C"
    assert (display.time_range.start, display.time_range.end) == (144.0, 160.0)
    assert kitchen.macro_id_of("slot2_o1") == "macro_0002"
    assert kitchen.node("slot2_v1").subject_ids == ("slot2_e1",)
    assert kitchen.variants_of("nora") == ("Baker Nora", "Nora")
    scale = kitchen.node("slot0_e2")
    assert isinstance(scale, EntityNode)
    assert scale.distinctive_features == ("silver", "flat")
    episode = KITCHEN / "phase2_topdown" / "episode_0000" / "episode_0000"
    assert scale.keyframe_path == str((episode / "features" / "e2" / "best_frame.jpg").resolve())


def test_released_embeddings_are_the_node_vectors_with_their_model(kitchen: VideoMemory) -> None:
    embeddings = kitchen.embeddings
    assert embeddings is not None
    assert embeddings.model_name == QWEN_8B
    assert (
        kitchen.manifest is not None and kitchen.manifest.embedding_model == embeddings.model_name
    )
    assert embeddings.ids == tuple(n.id for n in kitchen.nodes(["Entity", "Event", "OCRText"]))
    raw = json.loads((KITCHEN / "embeddings.json").read_text())
    for node_id in ("slot0_e1", "slot2_o1", "slot3_v1"):
        expected = np.array(raw[node_id]) / np.linalg.norm(raw[node_id])
        np.testing.assert_allclose(embeddings.vector(node_id), expected, rtol=1e-6)
    # Recorded for exactly these node texts, so they count as valid for their own model only.
    assert embeddings_match(kitchen, QWEN_8B)
    assert not embeddings_match(kitchen, "Qwen/Qwen3-Embedding-0.6B")


def test_released_second_video_variants(caplog: pytest.LogCaptureFixture) -> None:
    # phase4/hierarchical_graph.json (non-final), ids under node_id, an Entity without a
    # keyframe file, and a vector for an id that is no subgraph node.
    harbour = import_memdreamer(HARBOUR)
    assert harbour.root.title == "A harbour walk"
    assert harbour.node("slot0_o1").text == "GATE 4"
    lighthouse = harbour.node("slot1_e1")
    assert isinstance(lighthouse, EntityNode) and lighthouse.keyframe_path is None
    assert lighthouse.distinctive_features == ("red", "tall")
    assert harbour.node("slot0_e1").keyframe_path is not None
    assert harbour.embeddings is not None and len(harbour.embeddings) == 4
    assert "macro_0000" in caplog.text and "ignored" in caplog.text


def test_released_round_trips_export_and_native(tmp_path: Path, kitchen: VideoMemory) -> None:
    exported = export_memdreamer(kitchen, tmp_path / "exported")
    written = json.loads(subgraph_file(exported, 0).read_text())
    scale = next(n for n in written["nodes"] if n["node_id"] == "e2")
    assert scale["visual_grounding"]["distinctive_features"] == ["silver", "flat"]
    # The export names the images where they are (outside it): kept only when asked for.
    assert all(n.keyframe_path is None for n in import_memdreamer(exported).nodes(["Entity"]))
    again = import_memdreamer(exported, outside_keyframes=True)
    assert again == kitchen
    assert again.node("slot0_e2").keyframe_path == kitchen.node("slot0_e2").keyframe_path
    assert again.embeddings is not None and kitchen.embeddings is not None
    assert again.embeddings.model_name == QWEN_8B
    np.testing.assert_allclose(again.embeddings.vectors, kitchen.embeddings.vectors, atol=1e-6)
    twice = export_memdreamer(again, tmp_path / "twice")
    assert import_memdreamer(twice, outside_keyframes=True) == kitchen

    save_memory(kitchen, tmp_path / "native")
    loaded = load_memory(tmp_path / "native")
    assert loaded == kitchen
    assert loaded.node("slot1_e1").distinctive_features == ("green apron", "flour on hands")
    assert loaded.node("slot0_e2").keyframe_path == kitchen.node("slot0_e2").keyframe_path
    assert loaded.embeddings is not None and loaded.embeddings.model_name == QWEN_8B


def test_entity_without_keyframe_writes_no_keyframe_field(tmp_path: Path, sample: VideoMemory):
    # Memories without keyframes keep schema version 1's memory.json unchanged.
    save_memory(sample, tmp_path / "native")
    assert "keyframe_path" not in (tmp_path / "native" / "memory.json").read_text()


def test_released_kind_follows_the_id_key_when_node_type_is_absent(tmp_path: Path) -> None:
    root = released_copy(tmp_path)
    edit_json(released_subgraph(root, 2), lambda s: [n.pop("node_type") for n in s["nodes"]])
    memory = import_memdreamer(root)
    assert [memory.kind(i) for i in ("slot2_e5", "slot2_v1", "slot2_o1")] == [
        "Entity",
        "Event",
        "OCRText",
    ]


def test_final_graph_in_phase4_wins_over_a_draft_in_phase3(tmp_path: Path) -> None:
    root = released_copy(tmp_path)
    draft = json.loads((root / "phase4" / "hierarchical_graph_final.json").read_text())
    draft["root_event"]["title"] = "an older draft"
    (root / "phase3").mkdir()
    (root / "phase3" / "hierarchical_graph.json").write_text(json.dumps(draft))
    assert import_memdreamer(root).root.title == "Baking a loaf with Nora"


def test_embeddings_json_without_every_node_is_not_imported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = released_copy(tmp_path)
    edit_json(root / "embeddings.json", lambda e: e.pop("slot2_o1"))
    memory = import_memdreamer(root)
    assert memory.embeddings is None
    assert memory.manifest is not None and memory.manifest.embedding_model is None
    assert "no vector for 1 of 12 nodes" in caplog.text and "slot2_o1" in caplog.text


def test_embeddings_json_errors_name_file_and_node(tmp_path: Path) -> None:
    root = released_copy(tmp_path)
    edit_json(root / "embeddings.json", lambda e: e["slot2_o1"].append(0.5))
    with pytest.raises(MemoryFormatError, match=r"embeddings\.json: field 'slot2_o1' has 9 values"):
        import_memdreamer(root)
    edit_json(root / "embeddings.json", lambda e: e.update(slot2_o1="not a vector"))
    with pytest.raises(MemoryFormatError, match=r"'slot2_o1' must be a non-empty list"):
        import_memdreamer(root)
    edit_json(root / "embeddings.json", lambda e: e.update(slot2_o1=[0.0] * 8))
    with pytest.raises(MemoryFormatError, match=r"'slot2_o1' is all zeros"):
        import_memdreamer(root)


def test_imported_vectors_are_used_only_by_their_model_and_length(kitchen: VideoMemory) -> None:
    same = HashEmbedder(QWEN_8B, 8)
    assert ensure_embeddings(kitchen, same) is kitchen and same.texts == 0
    # Same name, other length (a cut-down or renamed model): recomputed, never mixed.
    longer = HashEmbedder(QWEN_8B, 16)
    recomputed = ensure_embeddings(kitchen, longer)
    assert recomputed.embeddings is not None and recomputed.embeddings.dimension == 16
    assert longer.texts > 0
    # The configured default model: its own vectors, and the manifest says so.
    other = ensure_embeddings(kitchen, HashEmbedder("Qwen/Qwen3-Embedding-0.6B", 8))
    assert other.embeddings is not None and other.embeddings.model_name.endswith("0.6B")
    assert other.manifest is not None and other.manifest.embedding_model.endswith("0.6B")
    assert not np.allclose(other.embeddings.vectors, kitchen.embeddings.vectors)


def test_replaced_imported_vectors_are_named_with_the_reason(kitchen: VideoMemory) -> None:
    assert kitchen.embeddings is not None
    # The model that made them: used as stored, nothing embedded, nothing to report.
    same = HashEmbedder(QWEN_8B, 8)
    assert reconcile_embeddings(kitchen, same) == (kitchen, None) and same.texts == 0
    # The default embedding model: recomputed, and said why and how to keep them.
    other, replaced = reconcile_embeddings(kitchen, HashEmbedder(SMALL_QWEN, 16))
    assert other.embeddings is not None and other.embeddings.model_name == SMALL_QWEN
    assert replaced == VectorsReplaced(QWEN_8B, 8, SMALL_QWEN, 16, "other_model")
    note = replaced.describe()
    assert f"({QWEN_8B}, 8 values) were replaced by {SMALL_QWEN}'s (16 values)" in note
    assert "PACE-Mem" in note and note.endswith(f"embedding.model={QWEN_8B} uses the stored ones")
    # Same name, another length.
    _, cut = reconcile_embeddings(kitchen, HashEmbedder(QWEN_8B, 4))
    assert cut is not None and cut.because == "other_dimension"
    # recompute: even the same model embeds our node texts again (MemDreamer embedded its own).
    again = HashEmbedder(QWEN_8B, 8)
    redone, why = reconcile_embeddings(kitchen, again, stored_vectors="recompute")
    assert why is not None and why.because == "recompute" and again.texts > 0
    assert redone.embeddings is not None
    assert not np.allclose(redone.embeddings.vectors, kitchen.embeddings.vectors)
    # A memory that stored no vectors gets some; nothing of it was replaced.
    bare = kitchen.with_embeddings(None)
    assert reconcile_embeddings(bare, HashEmbedder(SMALL_QWEN, 16))[1] is None


def test_keep_valid_embeddings_prefers_valid_then_configured(kitchen: VideoMemory) -> None:
    imported = kitchen.embeddings
    own = ensure_embeddings(kitchen, HashEmbedder("toy", 4)).embeddings
    assert keep_valid_embeddings(kitchen, [own, imported]).embeddings is own
    chosen = keep_valid_embeddings(kitchen, [own, imported], preferred_model=imported.model_name)
    assert chosen.embeddings is imported
    # Vectors made for other texts are dropped rather than attached to these nodes.
    harbour_vectors = import_memdreamer(HARBOUR).embeddings
    dropped = keep_valid_embeddings(kitchen, [harbour_vectors])
    assert dropped.embeddings is None
    assert dropped.manifest is not None and dropped.manifest.embedding_model is None


def test_paths_leaving_the_memory_directory_are_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``../`` and absolute keyframe paths, a keyframe link, an episode link and an
    embeddings link that lead out: none is read, none reaches the memory."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.jpg"
    secret.write_bytes(b"\xff\xd8 not yours")
    root = released_copy(tmp_path / "src")
    path = released_subgraph(root, 0)
    data = json.loads(path.read_text())
    data["nodes"][0]["keyframe_path"] = "../../outside/secret.jpg"  # e1
    data["nodes"][1]["keyframe_path"] = str(secret)  # e2, absolute
    path.write_text(json.dumps(data))
    linked = released_subgraph(root, 1).parent / "features" / "e1" / "best_frame.jpg"
    linked.unlink()
    linked.symlink_to(secret)
    episode = root / "phase2_topdown" / "episode_0003"
    shutil.move(episode, outside / "episode_0003")
    episode.symlink_to(outside / "episode_0003")
    shutil.move(root / "embeddings.json", outside / "embeddings.json")
    (root / "embeddings.json").symlink_to(outside / "embeddings.json")

    memory = import_memdreamer(root)
    inside = root.resolve()
    keyframes = [n.keyframe_path for n in memory.nodes(["Entity"]) if n.keyframe_path]
    assert keyframes and all(Path(k).is_relative_to(inside) for k in keyframes)
    # e1's named path is refused; its best_frame.jpg inside the memory is used instead.
    episode0 = released_subgraph(root, 0).parent
    assert memory.node("slot0_e1").keyframe_path == str(episode0 / "features/e1/best_frame.jpg")
    assert memory.node("slot1_e1").keyframe_path is None  # its file is a link out
    nodes = memory.nodes(["Entity", "Event", "OCRText"])
    assert nodes and all(memory.macro_id_of(n.id) != "macro_0003" for n in nodes)
    assert memory.embeddings is None
    for what in ("'../../outside/secret.jpg'", repr(str(secret)), "episode_0003", "embeddings"):
        assert what in caplog.text
    assert "leads outside the memory directory" in caplog.text


def test_a_graph_file_linked_from_outside_is_refused(tmp_path: Path) -> None:
    root = released_copy(tmp_path)
    graph = root / "phase4" / "hierarchical_graph_final.json"
    graph.rename(tmp_path / "elsewhere.json")
    graph.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(MemoryFormatError, match="leads outside the memory directory"):
        import_memdreamer(root)
