"""Builder prompts: each renders with the variables the builder passes, names every JSON key
of its reply schema, and is our own wording (no 8-word run shared with the paper)."""

from __future__ import annotations

import pytest

from videotapestry.config import MODEL_ROLES
from videotapestry.contracts.builder import BUILDER_PROMPT_ROLES, BUILDER_SCHEMAS
from videotapestry.prompts import PromptRegistry

VARIABLES: dict[str, dict] = {
    "builder_clip": {
        "clip_id": "clip_0003",
        "clip_start": "00:20",
        "clip_end": "00:40",
        "video_duration": "1:02:00",
        "image_notes": ["Image 1: a grid of 6 frames in 3 columns and 2 rows, at 00:21, 00:24"],
        "transcript": "[00:22-00:25] Welcome back.",
        "ocr_lines": "",
        "speech": True,
    },
    "builder_macro_boundaries": {
        "clips": ["clip_0001 [00:00-00:20] A chef greets the viewers."],
        "window_start": "00:00",
        "window_end": "10:00",
        "video_duration": "1:02:00",
    },
    "builder_macro": {
        "macro_id": "macro_0002",
        "start": "05:00",
        "end": "08:00",
        "captions": ["[05:00-05:20] The chef chops onions."],
        "nodes": "slot2_e1 [@05:02] Maria (person): the chef",
    },
    "builder_entity_merge": {"pairs": ['p1: "Maria" (person): chef | "Chef Maria" (person)']},
    "builder_super": {
        "events": ["macro_0000 [00:00-03:00] Intro: the chef greets viewers."],
        "video_duration": "1:02:00",
        "target_minutes": "15",
        "max_stages": 12,
    },
    "builder_root": {
        "stages": ["super_01 [00:00-20:00] Preparation: vegetables are cut."],
        "video_duration": "1:02:00",
    },
}


@pytest.fixture()
def registry() -> PromptRegistry:
    return PromptRegistry()


def test_every_builder_prompt_has_a_schema_and_a_builder_role(registry: PromptRegistry) -> None:
    names = {n for n in registry.names() if n.startswith("builder_")}
    assert names == set(BUILDER_SCHEMAS) == set(VARIABLES) == set(BUILDER_PROMPT_ROLES)
    assert set(BUILDER_PROMPT_ROLES.values()) <= set(MODEL_ROLES)


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_builder_prompts_render_and_name_their_keys(registry: PromptRegistry, name: str) -> None:
    prompt = registry.render(name, **VARIABLES[name])
    assert prompt.system and prompt.user
    assert registry.variables(name) == set(VARIABLES[name])
    for key in BUILDER_SCHEMAS[name].model_fields:
        assert f'"{key}"' in prompt.system, f"{name} does not ask for key {key}"


# Their wording is checked with every other prompt's against the paper in test_prompts.py.


def test_a_clip_prompt_without_speech_does_not_mention_it(registry: PromptRegistry) -> None:
    """builder.perception.transcript off: the model is neither sent the clip's speech nor
    told that there is any, so it cannot take a fact from it or guess at it."""
    variables = VARIABLES["builder_clip"]
    heard = registry.render("builder_clip", **variables)
    silent = registry.render("builder_clip", **{**variables, "speech": False})
    assert "Welcome back." in heard.user and "Speech during the clip:" in heard.user
    assert "speech heard" in heard.system and "shown or spoken" in heard.system
    assert "Welcome back." not in silent.user and "Speech" not in silent.user
    assert "speech heard" not in silent.system and "spoken" not in silent.system
    assert "the frames or the OCR text show" in silent.system
    assert "Text read on screen by OCR:" in silent.user and silent.hash != heard.hash
