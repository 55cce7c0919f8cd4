"""Config keys that were renamed, and the check that refuses them under their old names.

A renamed key given under its old name is an error naming the new one. Mapping it over
silently would let an old file keep working while its reader learns the wrong name; ignoring
it would drop the setting without a word. Refusing is the only answer that leaves the user's
setting neither lost nor hidden.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from videotapestry.errors import ConfigError


@dataclass(frozen=True)
class RenamedKey:
    """One config key (a section, a setting or a model role) that now has another name.

    ``new`` holds more than one key when the old key was split: each of them takes the
    value the old one had.
    """

    old: str
    new: tuple[str, ...]
    why: str

    def spelled_new(self, path: tuple[str, ...]) -> list[str]:
        """``path`` (the old key or a key under it) as it is written now."""
        rest = path[len(self.old.split(".")) :]
        return [".".join((*new.split("."), *rest)) for new in self.new]


_ROLES_SECTION = "models.roles"

#: Every renamed key, by its old dotted path; the old paths are refused wherever they appear.
RENAMED_KEYS: tuple[RenamedKey, ...] = (
    RenamedKey(
        "pace_mem",
        ("evidence",),
        "the section chooses between the leaf evidence methods pace_mem, top_k and adaptive_k, "
        "so it is named for what it selects rather than for one of them",
    ),
    RenamedKey(
        "images.max_side",
        ("images.grid_max_side",),
        "it bounds the Overview grids, which are this wide, and caps every image sent; single "
        "frames have images.frame_max_side",
    ),
    RenamedKey(
        "video.decode_max_side",
        ("video.decoded_max_side",),
        "it bounds the frames the decoder returns",
    ),
    RenamedKey(
        "builder.scan.frame_max_side",
        ("builder.scan.kept_frame_max_side",),
        "it bounds the frames the builder's scan keeps for perception and OCR",
    ),
    RenamedKey(
        "models.roles.builder_event",
        (
            "models.roles.builder_macro_boundaries",
            "models.roles.builder_macro",
            "models.roles.builder_entity_merge",
        ),
        "the builder has one model role per prompt, named as the prompt",
    ),
    RenamedKey(
        "models.roles.builder_summary",
        ("models.roles.builder_super", "models.roles.builder_root"),
        "the builder has one model role per prompt, named as the prompt",
    ),
)


def refuse_renamed_keys(data: Mapping[str, Any], where: str) -> None:
    """Raise a ``ConfigError`` naming the new key for every old key set in ``data``.

    ``where`` says where ``data`` came from (a file, an override), so the message points to
    the line to change.
    """
    lines = []
    for renamed in RENAMED_KEYS:
        for path in _keys_set_under(data, tuple(renamed.old.split("."))):
            spelled = _spoken(renamed.spelled_new(path))
            lines.append(f"{'.'.join(path)!r} is now {spelled}: {renamed.why}")
    if lines:
        raise ConfigError(
            f"renamed config keys in {where}; write them under their new names:\n  "
            + "\n  ".join(lines)
        )


def renamed_role(role: str) -> str | None:
    """What a model role given under an old name is called now, said as an error message;
    None when ``role`` was never renamed."""
    for renamed in RENAMED_KEYS:
        if renamed.old == f"{_ROLES_SECTION}.{role}":
            names = [key.removeprefix(f"{_ROLES_SECTION}.") for key in renamed.new]
            return f"model role {role!r} is now {_spoken(names)}: {renamed.why}"
    return None


def _spoken(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _keys_set_under(data: Mapping[str, Any], path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The keys ``data`` sets at or below ``path``: none when ``path`` is absent."""
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return []
        node = node[part]
    return list(_leaf_paths(node, path))


def _leaf_paths(node: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The leaves of a non-empty mapping at ``path``, else ``path`` itself."""
    if isinstance(node, Mapping) and node:
        for key, value in node.items():
            yield from _leaf_paths(value, (*path, str(key)))
    else:
        yield path
