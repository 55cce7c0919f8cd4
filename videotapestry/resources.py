"""Locating the prompt and config files that ship with the package.

In the repository ``prompts/`` and ``configs/`` sit at the top level, where researchers read
and copy them. The wheel carries the same files as package data under
``videotapestry/_resources/``. Looking in both places lets one code path serve an installed
wheel, an editable install and a plain source checkout.
"""

from __future__ import annotations

from pathlib import Path

from videotapestry.errors import ResourceError

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the shipped ``prompts`` or ``configs`` directory."""
    if name not in ("prompts", "configs"):
        raise ResourceError(f"unknown resource directory {name!r}; expected 'prompts' or 'configs'")
    candidates = (_PACKAGE_DIR / "_resources" / name, _PACKAGE_DIR.parent / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise ResourceError(
        f"cannot find the shipped {name!r} directory (looked in {tried}); "
        "reinstall videotapestry or run from a source checkout"
    )


def prompts_dir() -> Path:
    return resource_dir("prompts")


def configs_dir() -> Path:
    return resource_dir("configs")
