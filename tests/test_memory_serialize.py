"""Prompt text of nodes and levels, and the inspect views (tree, JSON summary, HTML)."""

from __future__ import annotations

from pathlib import Path

import pytest

from videotapestry.errors import MemoryNodeNotFoundError
from videotapestry.memory import VideoMemory, import_memdreamer
from videotapestry.memory.inspect import memory_summary, memory_tree
from videotapestry.memory.prompt_text import (
    clock,
    serialize_macro_events,
    serialize_nodes,
    serialize_root,
    serialize_subgraph,
    serialize_subgraphs,
    serialize_super_events,
)
from videotapestry.tokens import estimate_tokens
from videotapestry.views.memory_page import memory_html

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"


@pytest.fixture(scope="module")
def sample() -> VideoMemory:
    return import_memdreamer(SAMPLE)


def test_clock_formats() -> None:
    assert [clock(s) for s in (0, 59.9, 615, 3599, 3600, 7325.5)] == [
        "00:00",
        "00:59",
        "10:15",
        "59:59",
        "1:00:00",
        "2:02:05",
    ]


def test_subgraph_text_has_ids_times_labels_and_relations(sample: VideoMemory) -> None:
    prompt = serialize_subgraph(sample, "macro_0002")
    lines = prompt.text.splitlines()
    assert lines[0] == "Subgraph of macro_0002 [07:00-11:00] season_and_oven"
    assert '- slot2_o1 [10:15-10:35] "220°C" (display): oven display' in lines
    assert "- slot2_e5 [@10:20] oven (appliance): wall oven with a digital display" in lines
    assert any(line.startswith("- slot2_v2 [10:10-10:35] sets the oven") for line in lines)
    assert "- slot2_v2 ACTS_ON slot2_e5 [ATTRIBUTIVE]" in lines
    assert lines.index("Relations:") > lines.index("OCR texts:")
    assert prompt.tokens == estimate_tokens(prompt.text) > 0
    assert set(prompt.node_ids) == {n.id for n in sample.children("macro_0002")}


def test_level_serializers_take_explicit_ids_in_order(sample: VideoMemory) -> None:
    supers = serialize_super_events(sample, ["super_03", "super_01"])
    assert [line.split()[0] for line in supers.text.splitlines()] == ["super_03", "super_01"]
    assert "super_03 [15:00-20:00] Plating and tasting: Maria plates" in supers.text
    assert "Relations" not in supers.text
    with_relations = serialize_super_events(sample, ["super_01", "super_02"], with_relations=True)
    assert "- super_01 LEADS_TO super_02 [PROGRESSION] (follows in time)" in with_relations.text
    macros = serialize_macro_events(sample, ["macro_0005"])
    assert macros.text == (
        "macro_0005 [17:30-20:00] guest_tasting: Tom tastes the chicken and gives it a score on "
        "a card. | key entities: Chef Maria | in: super_03"
    )
    with pytest.raises(MemoryNodeNotFoundError, match="'macro_0001' is a MacroEvent, not a Super"):
        serialize_super_events(sample, ["super_01", "macro_0001"])
    both = serialize_subgraphs(sample, ["macro_0004", "macro_0005"])
    assert both.text.count("Subgraph of") == 2 and "\n\nSubgraph of macro_0005" in both.text
    assert serialize_root(sample).text.startswith("root_001 [00:00-20:00] Weeknight roast chicken")
    assert serialize_nodes(sample, ["slot5_o1"]).text.startswith('slot5_o1 [19:30-19:50] "9/10"')


def test_tree_view(sample: VideoMemory) -> None:
    tree = memory_tree(sample).splitlines()
    assert tree[0] == "root_001 [00:00-20:00] RootEvent: Weeknight roast chicken with Chef Maria"
    assert "├─ super_01 [00:00-07:00] SuperEvent: Preparation" in tree
    assert "│  │  ├─ slot2_o1 [10:15-10:35] OCRText: 220°C" in tree
    assert len(tree) == len(sample)
    assert len(memory_tree(sample, max_depth=1).splitlines()) == 4


def test_json_summary(sample: VideoMemory) -> None:
    summary = memory_summary(sample)
    assert summary["counts"]["OCRText"] == 4 and summary["counts"]["Entity"] == 11
    assert len(summary["nodes"]) == 33
    display = next(n for n in summary["nodes"] if n["id"] == "slot2_o1")
    assert display == {
        "id": "slot2_o1",
        "kind": "OCRText",
        "label": "220°C",
        "time_range": [615.0, 635.0],
        "parent": "macro_0002",
    }
    assert summary["nodes"][0]["parent"] is None


def test_html_is_standalone_and_escaped(sample: VideoMemory) -> None:
    page = memory_html(sample, title="<script>alert(1)</script>")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "http" not in page  # nothing fetched from the network
    assert "&quot;220°C&quot;" in page and "slot5_o1" in page
