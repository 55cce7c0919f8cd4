"""MemDreamer's fields in our terms: absolute times, our ids, entity names, typed relations.

MemDreamer's documents differ from our model in small ways that every reader of them must get
right the same way, so each conversion has one function here:

* times: a subgraph's node times are local to its slot (``start_sec`` is added); a range is
  ``[start, end]`` or ``{start, end}`` (also ``start_sec``/``end_sec``); everything is kept to
  the millisecond so local ↔ absolute conversions round-trip exactly;
* ids: a subgraph node's id is its ``node_id``, ``entity_id``, ``event_id`` or ``ocr_id``, and
  gets the ``slot{N}_`` prefix unless it already carries it;
* entities: the time is ``visual_grounding.primary_time_sec`` plus a short span (MemDreamer
  records a moment), and a null name is made from the type and the description;
* relations: ``relation_type`` must be one of ours (a level's default when absent).

Every error names the file and the JSON field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.types import (
    RELATION_TYPES,
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    Relation,
    TimeRange,
)

#: Length given to an Entity's time range, which MemDreamer records as a single moment.
DEFAULT_ENTITY_SPAN_S = 5.0
#: Times are kept to the millisecond so local ↔ absolute conversions round-trip exactly.
_TIME_DECIMALS = 3
#: Subgraph node keys that carry the local id, and the kind each one implies.
_ID_KEYS = (
    ("node_id", None),
    ("entity_id", "Entity"),
    ("event_id", "Event"),
    ("ocr_id", "OCRText"),
)


# --------------------------------------------------------------------------- values


def text(value: Any) -> str:
    return "" if value is None else str(value)


def strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value if v is not None)


def round_time(value: float) -> float:
    return round(float(value), _TIME_DECIMALS) + 0.0


def number(value: Any, path: Path, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MemoryFormatError(f"{path}: field {field} must be a number of seconds, got {value!r}")
    try:
        result = float(value)
    except ValueError:
        raise MemoryFormatError(f"{path}: field {field} must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise MemoryFormatError(f"{path}: field {field} must be finite, got {value!r}")
    return result


def integer(value: Any, path: Path, field: str) -> int:
    result = number(value, path, field)
    if result != int(result):
        raise MemoryFormatError(f"{path}: field {field} must be an integer, got {value!r}")
    return int(result)


def time_range(value: Any, path: Path, field: str, *, offset: float = 0.0) -> TimeRange:
    """``[s, e]`` or ``{start, end}`` (also ``start_sec``/``end_sec``), shifted by ``offset``."""
    if isinstance(value, dict):
        start = value.get("start", value.get("start_sec"))
        end = value.get("end", value.get("end_sec"))
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        start, end = value
    else:
        raise MemoryFormatError(
            f"{path}: field {field} must be [start, end] or {{start, end}}, got {value!r}"
        )
    if start is None or end is None:
        raise MemoryFormatError(f"{path}: field {field} needs both a start and an end: {value!r}")
    start_s = round_time(offset + number(start, path, f"{field}.start"))
    end_s = round_time(offset + number(end, path, f"{field}.end"))
    if end_s < start_s:
        raise MemoryFormatError(f"{path}: field {field} ends before it starts: {value!r}")
    return TimeRange(start=start_s, end=end_s)


def required_id(item: dict[str, Any], where: str, path: Path) -> str:
    value = item.get("node_id")
    if value is None or str(value).strip() == "":
        raise MemoryFormatError(f"{path}: field {where}.node_id is missing")
    return str(value)


def relation(edge: dict[str, Any], default_type: str, path: Path, where: str) -> Relation:
    raw_type = edge.get("relation_type") or default_type
    relation_type = str(raw_type).strip().upper()
    if relation_type not in RELATION_TYPES:
        raise MemoryFormatError(
            f"{path}: field {where}.relation_type is {raw_type!r}; expected one of "
            f"{', '.join(RELATION_TYPES)}"
        )
    reason = edge.get("reason")
    return Relation(
        source=str(edge.get("source_id")),
        target=str(edge.get("target_id")),
        type=relation_type,
        label=text(edge.get("relation_label")),
        reason=None if reason is None else str(reason),
    )


# --------------------------------------------------------------------------- ids


def global_node_id(slot: int, local: Any) -> str:
    """Our id of a subgraph node: its local id with the slot prefix (added once)."""
    prefix = f"slot{slot}_"
    value = str(local)
    return value if value.startswith(prefix) else prefix + value


def local_node_id(slot: int, node_id: str) -> str:
    """The id MemDreamer's subgraph file uses for one of our subgraph nodes."""
    prefix = f"slot{slot}_"
    return node_id[len(prefix) :] if node_id.startswith(prefix) else node_id


def node_key(item: dict[str, Any], path: Path, where: str) -> tuple[str, str | None]:
    """The key that holds a subgraph node's id, and the kind its ``node_type`` or key says."""
    present = [(k, kind) for k, kind in _ID_KEYS if item.get(k) not in (None, "")]
    if not present:
        keys = ", ".join(k for k, _ in _ID_KEYS)
        raise MemoryFormatError(f"{path}: field {where} has no id (none of {keys})")
    kind = item.get("node_type") or next((kind for _, kind in present if kind), None)
    return present[0][0], kind


# --------------------------------------------------------------------------- subgraph nodes


@dataclass(frozen=True)
class SlotContext:
    """One subgraph file being read: its slot, its MacroEvent, and the absolute second its
    local times count from (``start_sec``, else the MacroEvent's start)."""

    path: Path
    slot: int
    macro: MacroEvent
    start: float

    def global_id(self, local: Any) -> str:
        return global_node_id(self.slot, local)

    def local_range(self, item: dict[str, Any], where: str) -> TimeRange:
        value = item.get("time_range")
        if value is None:
            return self.macro.time_range
        return time_range(value, self.path, f"{where}.time_range", offset=self.start)


def entity_node(
    item: dict[str, Any],
    node_id: str,
    context: SlotContext,
    where: str,
    *,
    span_s: float,
    keyframe: str | None,
) -> EntityNode:
    path = context.path
    name = item.get("name")
    entity_type = text(item.get("entity_type"))
    description = text(item.get("description"))
    inferred = name is None or str(name).strip() in ("", "None", "null")
    if inferred:
        base = entity_type or "entity"
        name = f"{base}: {description}" if description else base
    grounding = item.get("visual_grounding") or {}
    if not isinstance(grounding, dict):
        raise MemoryFormatError(f"{path}: field {where}.visual_grounding must be an object")
    moment = grounding.get("primary_time_sec")
    grounding_time = None
    span = context.macro.time_range
    if moment is not None:
        grounding_time = round_time(
            context.start + number(moment, path, f"{where}.visual_grounding")
        )
        span = TimeRange(start=grounding_time, end=round_time(grounding_time + span_s))
    if item.get("time_range") is not None:  # written by our exporter; MemDreamer has none
        span = context.local_range(item, where)
    attributes = item.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise MemoryFormatError(f"{path}: field {where}.attributes must be an object")
    return EntityNode(
        id=node_id,
        parent_id=context.macro.id,
        name=str(name),
        entity_type=entity_type,
        description=description,
        attributes=attributes,
        grounding_time=grounding_time,
        distinctive_features=_features(grounding.get("distinctive_features")),
        name_inferred=inferred,
        keyframe_path=keyframe,
        time_range=span,
    )


def _features(value: Any) -> str | tuple[str, ...] | None:
    """One text (older memories) stays a text; the release's list stays a list of texts."""
    if value is None:
        return None
    if isinstance(value, list):
        return strings(value)
    return str(value)


def event_node(item: dict[str, Any], node_id: str, context: SlotContext, where: str) -> EventNode:
    return EventNode(
        id=node_id,
        parent_id=context.macro.id,
        action=text(item.get("action")),
        description=text(item.get("description")),
        event_type=text(item.get("event_type")),
        time_range=context.local_range(item, where),
        subject_ids=tuple(context.global_id(i) for i in strings(item.get("subject_entity_ids"))),
        object_ids=tuple(context.global_id(i) for i in strings(item.get("object_entity_ids"))),
    )


def ocr_text_node(
    item: dict[str, Any], node_id: str, context: SlotContext, where: str
) -> OCRTextNode:
    return OCRTextNode(
        id=node_id,
        parent_id=context.macro.id,
        text=text(item.get("text")),
        ocr_type=text(item.get("ocr_type")),
        description=text(item.get("description")),
        time_range=context.local_range(item, where),
    )
