"""The variants table: the names the config accepts, the paper's component marks, the graph
each variant gets and the variants that can be reassembled."""

from __future__ import annotations

import pytest

from videotapestry import config
from videotapestry.errors import ConfigError
from videotapestry.eval.report import COMPONENT_COLUMNS, variant_components
from videotapestry.graph import build_graph
from videotapestry.variants import (
    REASSEMBLY_VARIANTS,
    VARIANT_NAMES,
    VARIANTS,
    exploration_source,
    variant_named,
)

#: Paper Table 3 as the report has always printed it (Visual, ASR, Update, M-A, Super, Paths).
TABLE_3 = {
    "full": ("Y", "Y", "Y", "Y", "Y", "Y"),
    "wo_visual": ("N", "Y", "Y", "Y", "Y", "Y"),
    "wo_asr": ("Y", "N", "Y", "Y", "Y", "Y"),
    "append_only": ("Y", "Y", "N", "Y", "–", "–"),
    "single_agent": ("Y", "Y", "Y", "N", "Y", "Y"),
    "static_memory": ("N", "N", "N", "Y", "–", "–"),
    "refined_super_only": ("Y", "Y", "Y", "Y", "Y", "N"),
    "refined_paths_only": ("Y", "Y", "Y", "Y", "N", "Y"),
    "direct": ("–", "–", "–", "–", "–", "–"),
}


def test_the_config_takes_exactly_the_names_of_the_table():
    for name in VARIANT_NAMES:
        assert config.validate_config({"variant": name}).variant == name
    with pytest.raises(ConfigError, match=r"unknown variant 'wo_update'.*single_agent"):
        config.validate_config({"variant": "wo_update"})
    assert len({v.name for v in VARIANTS}) == len(VARIANTS)
    assert all(v.meaning for v in VARIANTS)


def test_each_variant_names_the_model_roles_a_question_calls():
    assert variant_named("direct").model_roles == ("direct",)
    assert "controller" in variant_named("single_agent").model_roles
    assert set(variant_named("full").model_roles) < set(config.MODEL_ROLES)
    assert "controller" not in variant_named("full").model_roles


def test_report_components_are_read_from_the_table():
    assert {name: variant_components(name) for name in VARIANT_NAMES} == TABLE_3
    assert variant_components("not_a_variant") == ("",) * len(COMPONENT_COLUMNS)


def test_reassembly_variants_are_table_3b():
    assert REASSEMBLY_VARIANTS == ("full", "refined_super_only", "refined_paths_only")
    assert exploration_source("refined_super_only") == "full"
    assert exploration_source("refined_paths_only") == "full"
    assert {exploration_source(n) for n in VARIANT_NAMES if n not in REASSEMBLY_VARIANTS} == {
        n for n in VARIANT_NAMES if n not in REASSEMBLY_VARIANTS
    }


def test_only_static_memory_and_append_only_read_unrefined_texts():
    unrefined = {v.name for v in VARIANTS if v.method and not v.reads_refined_memory}
    assert unrefined == {"append_only", "static_memory"}
    assert variant_named("append_only").answer_reads == "evidence_log"
    assert variant_named("static_memory").answer_reads == "static"


def test_an_unknown_variant_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown variant 'nope'; choose from full, wo_visual"):
        variant_named("nope")


@pytest.mark.parametrize(
    ("variant", "nodes"),
    [
        ("full", {"overview", "skim", "focus", "focus_decide", "assemble", "answer"}),
        ("static_memory", {"overview", "skim", "focus", "focus_decide", "assemble", "answer"}),
        ("single_agent", {"controller", "assemble", "answer"}),
        ("direct", {"direct"}),
    ],
)
def test_each_variant_gets_its_graph(variant, nodes):
    drawn = build_graph(variant=variant).get_graph()
    assert set(drawn.nodes) - {"__start__", "__end__"} == nodes
