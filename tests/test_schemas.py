"""Role replies are validated entry by entry: one bad memory never discards the others."""

from __future__ import annotations

import pytest

from videotapestry.contracts.method import LevelUpdate, SuperUpdate
from videotapestry.llm.structured import OutputParseError, parse_output


def test_a_super_entry_without_is_relevant_is_rejected_alone() -> None:
    reply = SuperUpdate.model_validate(
        {
            "updated_memories": {
                "super_01": {"visual_observation": "no flag"},
                "super_02": {"is_relevant": True, "visual_observation": "220°C"},
                "super_03": {"is_relevant": False, "irrelevant_summary": "Plating."},
            }
        }
    )
    assert set(reply.updated_memories) == {"super_02", "super_03"}
    assert list(reply.rejected) == ["super_01"] and "is_relevant" in reply.rejected["super_01"]


def test_a_reply_with_no_usable_entry_fails_so_it_gets_the_repair_retry() -> None:
    with pytest.raises(OutputParseError, match="no update entry is valid"):
        parse_output('{"updated_memories": {"super_01": {"x": 1}}}', SuperUpdate)


def test_level_rewrites_accept_plain_strings_and_flag_bad_entries() -> None:
    reply = LevelUpdate.model_validate(
        {"updated_memories": {"m1": "new text", "m2": {"updated_text": "t", "is_relevant": False},
                              "m3": 7}}
    )  # fmt: skip
    assert reply.updated_memories["m1"].updated_text == "new text"
    assert reply.updated_memories["m2"].is_relevant is False
    assert "m3" in reply.rejected
