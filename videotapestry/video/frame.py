"""A decoded frame: the one type every decoding path, the frame cache and the grids share,
and the turn that makes a stored frame upright, applied by each of those paths alike."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame; ``timestamp_s`` is ``index / fps``, the time it appears on screen."""

    timestamp_s: float
    index: int
    image: np.ndarray = field(repr=False)


def upright(image: np.ndarray, rotation_deg: int) -> np.ndarray:
    """``image`` (rows first, as decoded) turned ``rotation_deg`` clockwise, as a player
    shows a video whose display matrix asks for that turn (``VideoInfo.rotation_deg``).

    Every decoding path calls this on the frame exactly as stored, so PyAV, decord and
    OpenCV give the same pixels. The result is contiguous because OpenCV's encoders and
    resizers refuse the negatively strided view ``np.rot90`` returns.
    """
    if rotation_deg % 90:
        raise ValueError(f"a frame can only be turned by quarter turns, not {rotation_deg}°")
    turns = (rotation_deg // 90) % 4
    if not turns:
        return image
    # np.rot90 turns counter-clockwise for positive k.
    return np.ascontiguousarray(np.rot90(image, k=-turns))


def turned_size(size: tuple[int, int], rotation_deg: int) -> tuple[int, int]:
    """A (width, height) after ``upright``: swapped by a quarter turn, kept by a half turn."""
    return (size[1], size[0]) if rotation_deg % 180 else size
