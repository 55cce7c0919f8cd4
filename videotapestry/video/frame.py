"""A decoded frame: the one type every decoding path, the frame cache and the grids share."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame; ``timestamp_s`` is ``index / fps``, the time it appears on screen."""

    timestamp_s: float
    index: int
    image: np.ndarray = field(repr=False)
