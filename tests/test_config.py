"""Config loading: the paper's defaults, layering, overrides and clear rejections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from videotapestry.config import (
    BUILDER_ROLES,
    MODEL_ROLES,
    RENAMED_KEYS,
    Config,
    load_config,
    parse_override,
    validate_config,
)
from videotapestry.contracts.builder import BUILDER_PROMPT_ROLES, BUILDER_SCHEMAS
from videotapestry.errors import ConfigError


def test_default_holds_the_paper_settings() -> None:
    config = load_config()
    assert config.profile == "openai"
    assert config.agents.overview.max_frames == 120
    assert config.agents.overview.max_grids == 20
    assert (config.agents.overview.grid_columns, config.agents.overview.grid_rows) == (3, 2)
    assert config.agents.overview.min_window_s == 600
    assert config.agents.skim.max_frames == config.agents.focus.max_frames == 50
    assert config.images.max_per_call == 50
    limits = config.agents.level_limits
    assert (limits.max_observations, limits.max_updates, limits.max_calls) == (2, 2, 4)
    assert (config.asr.max_windows, config.asr.min_window_s, config.asr.max_window_s) == (
        3,
        600,
        1200,
    )
    for role in MODEL_ROLES:
        settings = config.models.settings_for(role)
        assert settings.temperature == 0.1
        expected = "high" if role in ("answer", "direct") else None
        assert settings.reasoning_effort == expected, role


def test_the_local_profile_is_the_papers_qwen_setting() -> None:
    config = load_config(profile="local")
    thinks = {"overview", "skim", "focus", "controller", "decision", "answer", "direct"}
    for role in MODEL_ROLES:
        settings = config.models.settings_for(role)
        flags = settings.extra_body["chat_template_kwargs"]
        assert flags == {"enable_thinking": role in thinks}, role
        assert settings.max_images == (396 if role == "direct" else None), role
    assert config.agents.direct.max_frames == 396 and config.images.max_per_call == 50
    default = load_config()
    assert default.models.settings_for("direct").max_images is None
    assert default.agents.direct.max_frames == 50


def test_dotted_overrides_apply_with_yaml_types() -> None:
    config = load_config(
        overrides=[
            "agents.overview.max_frames=60",
            "models.roles.answer.model=other-vlm",
            "cache.enabled=false",
            "models.default.extra_body={top_k: 20}",
        ]
    )
    assert config.agents.overview.max_frames == 60
    assert config.models.settings_for("answer").model == "other-vlm"
    assert config.models.settings_for("answer").reasoning_effort == "high"
    assert config.models.settings_for("skim").model == "gpt-5.5"
    assert config.cache.enabled is False
    assert config.models.settings_for("decision").extra_body == {"top_k": 20}


def test_role_inherits_default_and_overrides_field_by_field() -> None:
    config = load_config(
        {
            "models": {
                "default": {"model": "base", "timeout_s": 30},
                "roles": {"update": {"timeout_s": 5}},
            }
        }
    )
    update = config.models.settings_for("update")
    assert (update.model, update.timeout_s) == ("base", 5)
    assert config.models.settings_for("overview").timeout_s == 30


def test_layers_default_profile_user_file_override(tmp_path: Path) -> None:
    user = tmp_path / "mine.yaml"
    user.write_text("profile: local\nmodels:\n  default:\n    model: from-file\n")
    config = load_config(user)
    assert config.profile == "local"
    assert config.models.default.base_url == "http://localhost:8000/v1"  # from the profile
    assert config.models.default.model == "from-file"  # file beats profile
    config = load_config(user, overrides=["models.default.model=from-cli"])
    assert config.models.default.model == "from-cli"  # override beats file
    assert load_config(user, profile="openai").models.default.base_url is None


def test_typo_key_is_rejected_with_its_name_and_a_suggestion() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["agents.overview.max_framez=3"])
    message = str(info.value)
    assert "agents.overview.max_framez" in message
    assert "did you mean 'max_frames'" in message


def test_typo_in_a_role_name_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("models:\n  roles:\n    answr:\n      model: x\n")
    with pytest.raises(ConfigError, match=r"models\.roles\.answr.*did you mean 'answer'"):
        load_config(path)


def test_wrong_type_names_the_key_and_value() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["agents.overview.max_frames=many"])
    assert "agents.overview.max_frames" in str(info.value)
    assert "'many'" in str(info.value)
    with pytest.raises(ConfigError, match=r"models\.default\.temperature"):
        load_config(overrides=["models.default.temperature=7"])


def test_secrets_in_config_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text("models:\n  default:\n    api_key: sk-abcdef\n")
    with pytest.raises(ConfigError, match="environment variables"):
        load_config(path)


def test_bad_files_and_names_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)
    with pytest.raises(ConfigError, match=r"unknown model profile 'nope'.*local"):
        load_config(profile="nope")
    with pytest.raises(ConfigError, match="must look like"):
        parse_override("no-equals-sign")
    with pytest.raises(ConfigError, match="unknown model role"):
        load_config().models.settings_for("narrator")


def test_config_object_round_trips_through_yaml(tmp_path: Path) -> None:
    config = load_config(overrides=["agents.focus.max_frames=12"])
    path = tmp_path / "dump.yaml"
    path.write_text(config.to_yaml())
    assert load_config(path) == config


def test_renamed_section_is_refused_naming_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text("pace_mem:\n  method: top_k\n  k_max: 6\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "'pace_mem.method' is now 'evidence.method'" in message
    assert "'pace_mem.k_max' is now 'evidence.k_max'" in message
    assert load_config(overrides=["evidence.k_max=6"]).evidence.k_max == 6


def test_renamed_leaf_is_refused_in_a_mapping() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"images": {"max_side": 1152}, "video": {"decode_max_side": 480}})
    message = str(info.value)
    assert "mapping" in message
    assert "'images.max_side' is now 'images.grid_max_side'" in message
    assert "'video.decode_max_side' is now 'video.decoded_max_side'" in message
    with pytest.raises(ConfigError, match=r"'builder\.scan\.kept_frame_max_side'"):
        load_config({"builder": {"scan": {"frame_max_side": 512}}})
    # the single-frame key of the images section kept its name
    assert load_config({"images": {"frame_max_side": 512}}).images.frame_max_side == 512


def test_renamed_role_is_refused_naming_the_new_roles(tmp_path: Path) -> None:
    path = tmp_path / "roles.yaml"
    path.write_text("models:\n  roles:\n    builder_summary:\n      model: small\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "'models.roles.builder_summary.model' is now" in message
    assert "'models.roles.builder_super.model' and 'models.roles.builder_root.model'" in message
    with pytest.raises(ConfigError, match=r"'builder_macro_boundaries', 'builder_macro' and"):
        load_config().models.settings_for("builder_event")


def test_renamed_key_in_an_override_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["agents.focus.max_frames=10", "pace_mem.mmr=false"])
    message = str(info.value)
    assert "override 'pace_mem.mmr=false'" in message
    assert "'pace_mem.mmr' is now 'evidence.mmr'" in message
    with pytest.raises(ConfigError, match=r"'models\.roles\.builder_macro\.model'"):
        load_config(overrides=["models.roles.builder_event.model=small"])
    with pytest.raises(ConfigError, match=r"'images\.max_side' is now 'images\.grid_max_side'"):
        validate_config({"images": {"max_side": 1152}})


def test_every_rename_points_from_a_gone_key_to_a_live_one() -> None:
    for renamed in RENAMED_KEYS:
        old_path = renamed.old.split(".")
        assert _known_key(old_path) is False, renamed.old
        for new in renamed.new:
            assert _known_key(new.split(".")), new


def test_each_builder_prompt_is_sent_with_the_role_of_its_name() -> None:
    assert all(role == prompt for prompt, role in BUILDER_PROMPT_ROLES.items())
    assert set(BUILDER_PROMPT_ROLES) == set(BUILDER_SCHEMAS)
    assert set(BUILDER_ROLES) == set(BUILDER_SCHEMAS) and set(BUILDER_ROLES) <= set(MODEL_ROLES)
    config = load_config(overrides=["models.roles.builder_root.model=summariser"])
    assert config.models.settings_for("builder_root").model == "summariser"
    assert config.models.settings_for("builder_super").model == "gpt-5.5"


def _known_key(path: list[str]) -> bool:
    model: Any = Config
    for part in path:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return False
        model = fields[part].annotation
    return True
