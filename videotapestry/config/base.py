"""What every config section shares: unknown keys refused, and where default caches live."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section that refuses unknown keys and checks values assigned after loading.

    Refusing extra keys is what turns a typo in a YAML file into a message naming the key;
    validating assignments keeps a ``Config`` changed in code as sound as one loaded.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def user_cache_dir() -> Path:
    """videotapestry's directory under ``$XDG_CACHE_HOME`` (``~/.cache`` when unset), where
    caches whose path the config leaves null are kept."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "videotapestry"
