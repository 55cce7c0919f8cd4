"""Clock-style timestamps for labels and transcripts: ``mm:ss``, or ``h:mm:ss`` past an hour.

Times are truncated, not rounded, so a label never claims a later second than the frame it
marks (a frame at 59.6 s is on screen during second 00:59, not 01:00).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def format_timestamp(seconds: float, decimals: int = 0) -> str:
    """``mm:ss`` below one hour, ``h:mm:ss`` from one hour on; ``decimals`` adds ``.d`` digits."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"timestamp must be a finite, non-negative number of seconds: {seconds}")
    if decimals < 0:
        raise ValueError("decimals must be >= 0")
    scale = 10**decimals
    # A tiny epsilon keeps 0.3 * 10 = 2.9999999999999996 from truncating to .2
    ticks = math.floor(seconds * scale + 1e-6)
    whole, fraction = divmod(ticks, scale)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
    if decimals:
        text += f".{fraction:0{decimals}d}"
    return text


def label_decimals(timestamps: Sequence[float], max_decimals: int = 2) -> int:
    """The fewest decimals (up to ``max_decimals``) that give distinct timestamps distinct labels.

    Overview grids span many minutes and read well as ``mm:ss``; frames from a few seconds
    of a Focus window would all print the same second without a fraction.
    """
    distinct = sorted(set(timestamps))
    for decimals in range(max_decimals + 1):
        labels = [format_timestamp(t, decimals) for t in distinct]
        if len(set(labels)) == len(labels):
            return decimals
    return max_decimals


def format_range(start_s: float, end_s: float, decimals: int = 0) -> str:
    """``[mm:ss-mm:ss]``, the prefix of a transcript line in a prompt."""
    return f"[{format_timestamp(start_s, decimals)}-{format_timestamp(end_s, decimals)}]"
