"""An image a model is shown: JPEG bytes plus the moments of the video it shows.

The video tools make these (frames, grids), model requests carry them, traces describe them
by their timestamps and hash, and notebooks show them. Keeping the timestamps on the image
lets a trace say which moments the model saw without storing pixels.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class ImagePart:
    """One JPEG sent to the model; ``label`` and ``timestamps`` are for traces and notebooks."""

    jpeg: bytes
    label: str = ""
    timestamps: tuple[float, ...] = ()

    @cached_property
    def sha256(self) -> str:
        # Hashed once: both the cache key and the trace reference need it.
        return hashlib.sha256(self.jpeg).hexdigest()

    def data_url(self) -> str:
        return "data:image/jpeg;base64," + base64.b64encode(self.jpeg).decode("ascii")

    def reference(self) -> dict[str, Any]:
        """A bytes-free description, safe to put in traces."""
        return {
            "label": self.label,
            "timestamps": list(self.timestamps),
            "bytes": len(self.jpeg),
            "sha256": self.sha256[:16],
        }
