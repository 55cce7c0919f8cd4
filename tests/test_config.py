"""Config loading: the paper's defaults, layering, overrides and clear rejections."""

from __future__ import annotations

from pathlib import Path

import pytest

from videotapestry.config import MODEL_ROLES, load_config, parse_override
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
