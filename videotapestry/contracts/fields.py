"""What every reply contract is made of: times, texts and ids read tolerantly, and the base
model whose extra keys are ignored.

Models reply loosely in practice (a time range as a dict or a ``"mm:ss - mm:ss"`` string, a
list where a string was asked for, ids as numbers); these field types accept those shapes
and normalize them, so the query-time and the builder contracts read replies the same way.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

_CLOCK = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)\s*$")


def parse_seconds(value: Any) -> float:
    """Seconds from a number, a numeric string, or a clock string (``mm:ss`` / ``h:mm:ss``)."""
    if isinstance(value, bool):
        raise ValueError("a time must be a number of seconds, not a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().removesuffix("s").strip()
        match = _CLOCK.match(text)
        if match:
            hours, minutes, seconds = match.groups()
            return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
        return float(text)
    raise ValueError(f"cannot read a time from {value!r}")


def _time_range(value: Any) -> tuple[float, float]:
    if isinstance(value, dict):
        start = value.get("start", value.get("start_sec", value.get("begin")))
        end = value.get("end", value.get("end_sec"))
        value = [start, end]
    if isinstance(value, str) and "-" in value:
        value = [part for part in re.split(r"\s*-\s*", value.strip()) if part]
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"a time range must be [start, end] in seconds, got {value!r}")
    return parse_seconds(value[0]), parse_seconds(value[1])


def _text(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(item) for item in value)
    return value


def _ids(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, (str, int)):
        value = [value]
    if isinstance(value, list):
        return [str(item) for item in value]
    return value


TimeRange = Annotated[tuple[float, float], BeforeValidator(_time_range)]
Text = Annotated[str, BeforeValidator(_text)]
Ids = Annotated[list[str], BeforeValidator(_ids)]


class RoleOutput(BaseModel):
    """Base of every role's reply; extra keys a model adds are ignored, not fatal."""

    model_config = ConfigDict(extra="ignore")
