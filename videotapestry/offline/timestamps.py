"""How the offline model writes times in its replies: ``mm:ss``, and a span as
``mm:ss-mm:ss`` unless both ends fall on the same second."""

from __future__ import annotations

from videotapestry.timecode import format_timestamp


def clock(seconds: float) -> str:
    """``mm:ss`` (``h:mm:ss`` past an hour); a time before the start reads as ``00:00``."""
    return format_timestamp(max(0.0, seconds))


def span_text(start: float, end: float) -> str:
    """One time when the span is shorter than a second as written, else ``start-end``."""
    return clock(start) if clock(start) == clock(end) else f"{clock(start)}-{clock(end)}"
