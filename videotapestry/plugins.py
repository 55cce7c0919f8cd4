"""Finding the parts that plug into the core: model providers and the memory builder.

The core names them only by entry-point group and name (the way lmms-eval finds its model
classes), so it imports none of them: the offline model and ``memory_builders`` depend on
the core, never the other way round, and a third-party provider installs like ours.

Groups (declared in ``pyproject.toml`` for the built-in parts):

- ``videotapestry.providers``: a model provider; the entry point is a callable with no
  arguments that returns a ``ClientFactory`` (``settings -> ModelClient``).
- ``videotapestry.memory_builders``: a memory builder; the entry point is a callable taking
  ``(config, service=, embedder=, prompts=, progress=)`` (and ``on_stage=``, a listener of
  each stage's progress, when a caller such as the MCP server asks for one) and returning
  an object with ``abuild(video, out, subtitles=, restart=, export_memdreamer=)``.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from videotapestry.errors import ConfigError

PROVIDERS = "videotapestry.providers"
MEMORY_BUILDERS = "videotapestry.memory_builders"


def registered(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by name (the first installed one wins on a clash)."""
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=group):
        found.setdefault(entry.name, entry)
    return found


def load(group: str, name: str) -> Any:
    """The object registered as ``name`` in ``group``; a clear error when none is."""
    entry = registered(group).get(name)
    if entry is None:
        known = ", ".join(sorted(registered(group))) or "none"
        raise ConfigError(
            f"nothing is registered as {name!r} in the entry-point group {group!r} (registered: "
            f"{known}); the built-in parts are registered when the videotapestry package is "
            "installed (pip install -e . in a checkout)"
        )
    return entry.load()
