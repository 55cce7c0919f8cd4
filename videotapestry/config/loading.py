"""Building a ``Config`` from its layers: YAML files, a model profile and dotted overrides.

A run is described by one ``Config`` built from layers, later layers winning:
``configs/default.yaml`` (the mission's setting; ``configs/paper.yaml`` is the paper's) → a
model profile (``configs/profiles/``) → the user's YAML file (or a shipped one by name) →
``-o key=value`` overrides. Every section refuses unknown keys, so a typo is an error that
names the key instead of a silently ignored setting. Secrets never live here: a model
setting names the environment variable that holds its API key.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from videotapestry.config.renames import refuse_renamed_keys
from videotapestry.config.run import Config
from videotapestry.errors import ConfigError
from videotapestry.resources import configs_dir


def load_config(
    source: str | Path | Mapping[str, Any] | Config | None = None,
    *,
    profile: str | None = None,
    overrides: Sequence[str] = (),
) -> Config:
    """Build a validated ``Config`` from the default file, a profile, a user file and overrides.

    ``source`` is a shipped config name (a file under ``configs/`` without ``.yaml``, such as
    ``"default"``), a YAML path, a mapping, or an existing ``Config`` (then only ``profile``
    and ``overrides`` apply).
    """
    base = _read_config_file(configs_dir() / "default.yaml")
    if isinstance(source, Config):
        user: dict[str, Any] = source.model_dump(exclude_unset=True)
    elif isinstance(source, Mapping):
        user = copy.deepcopy(dict(source))
        refuse_renamed_keys(user, "the config mapping given")
    elif source is None or source == "default":
        user = {}
    else:
        user = _read_config_file(_config_path(source))
    override_tree: dict[str, Any] = {}
    for item in overrides:
        key, value = parse_override(item)
        refuse_renamed_keys(_set_dotted({}, key, value), f"override {item!r}")
        _set_dotted(override_tree, key, value)

    chosen = profile or override_tree.get("profile") or user.get("profile") or base.get("profile")
    layers = [base]
    if chosen:
        layers.append(_read_config_file(_profile_path(str(chosen))))
    layers += [user, override_tree, {"profile": chosen} if chosen else {}]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    return validate_config(merged)


def validate_config(data: Mapping[str, Any]) -> Config:
    """The ``Config`` that ``data`` (a whole config tree) describes, or a ``ConfigError``
    naming each key that is wrong."""
    _reject_secrets(data, ())
    refuse_renamed_keys(data, "the configuration")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc)) from None


def parse_override(item: str) -> tuple[str, Any]:
    """Split ``key.path=value``; the value is read as YAML so numbers and booleans keep types."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {item!r} must look like section.key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` laid over ``base``: nested mappings merge key by key, so a layer that sets one
    setting of a section leaves the section's other settings as the layers below set them."""
    merged = copy.deepcopy(dict(base))
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def available_profiles() -> list[str]:
    """The names ``profile`` accepts: the shipped files under ``configs/profiles/``."""
    return sorted(p.stem for p in (configs_dir() / "profiles").glob("*.yaml"))


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    node = tree
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key!r} conflicts with an earlier override of {part!r}")
        node = child
    node[parts[-1]] = value
    return tree


def _config_path(source: str | Path) -> Path:
    path = Path(source).expanduser()
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path
    shipped = configs_dir() / f"{source}.yaml"
    if shipped.is_file():
        return shipped
    names = sorted(
        str(p.relative_to(configs_dir()).with_suffix("")) for p in configs_dir().rglob("*.yaml")
    )
    raise ConfigError(
        f"no config named {str(source)!r}: not a file and not one of the shipped configs "
        f"({', '.join(names)})"
    )


def _profile_path(name: str) -> Path:
    path = configs_dir() / "profiles" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"unknown model profile {name!r}; available: {', '.join(available_profiles())}"
        )
    return path


def _read_config_file(path: Path) -> dict[str, Any]:
    """The mapping a YAML config file holds, refused when it uses a renamed key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    refuse_renamed_keys(data, f"config file {path}")
    return data


def _reject_secrets(data: Any, path: tuple[str, ...]) -> None:
    if isinstance(data, Mapping):
        for key, value in data.items():
            if str(key).lower() in ("api_key", "apikey", "secret", "token", "password"):
                where = ".".join((*path, str(key)))
                raise ConfigError(
                    f"config key {where!r}: secrets are read only from environment variables; "
                    "remove it and set 'api_key_env' to the name of the variable that holds it"
                )
            if key == "api_key_env" and isinstance(value, str) and not _variable_name(value):
                where = ".".join((*path, str(key)))
                # The value is never repeated: it is most likely the key itself.
                raise ConfigError(
                    f"config key {where!r} names the environment variable that holds the API "
                    "key (like OPENAI_API_KEY), and what is there is not a variable name; if it "
                    "is the key, export it in a variable and name that variable here"
                )
            _reject_secrets(value, (*path, str(key)))


def _variable_name(text: str) -> bool:
    """An environment variable name, and not a key pasted in its place (a long run of
    letters and digits with no underscore, which real variable names have)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return False
    looks_random = len(text) >= 24 and "_" not in text and not text.isalpha()
    return not looks_random


def _describe_validation_error(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        loc = tuple(str(p) for p in error["loc"])
        key = ".".join(loc)
        if error["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            hint = difflib.get_close_matches(loc[-1], known, n=1)
            suffix = f"; did you mean {hint[0]!r}?" if hint else ""
            lines.append(
                f"config key {key!r} is not a known setting{suffix} "
                f"(known here: {', '.join(known)})"
            )
        else:
            got = error.get("input")
            got_text = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
            lines.append(f"config key {key!r}: {error['msg']}{got_text}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _known_keys(loc: Iterable[str]) -> list[str]:
    model: Any = Config
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return []
        model = fields[part].annotation
    fields = getattr(model, "model_fields", None)
    return sorted(fields) if fields else []
