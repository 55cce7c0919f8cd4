"""A clip's perception reply as the clip record the later stages read.

The model answers in the clip's terms but loosely: times may fall outside the clip or be
missing, ids may repeat or be absent, events may name their subjects by name rather than
by id. The record keeps what can be placed: times clamped into the clip (a missing one
falls on the clip's first shown frame), entity ids made unique, event participants
resolved to those ids by id or by name, empty items dropped. The record is plain JSON, as
it is checkpointed per clip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_builders.segmentation import ClipSpan
from videotapestry.contracts.builder import ClipPerception

#: What perception keeps of a clip: caption, entities, events and texts, as plain JSON.
ClipRecord = dict[str, Any]


def normalize_perception(
    reply: ClipPerception, clip: ClipSpan, frame_times: Sequence[float]
) -> ClipRecord:
    """The model's reply as a clip record with absolute times inside the clip and valid ids."""
    start, end = clip.start_s, clip.end_s
    default_t = frame_times[0] if frame_times else start

    def clamp(t: float | None, fallback: float) -> float:
        value = fallback if t is None else t
        return round(min(max(value, start), end), 3)

    entities = []
    ids: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for number, entity in enumerate(reply.entities, start=1):
        name = entity.name.strip()
        if not name:
            continue
        local = entity.id.strip() or f"e{number}"
        if local in ids:
            local = f"e{number}_{len(ids)}"
        ids[entity.id.strip() or local] = local
        by_name[name.casefold()] = local
        entities.append(
            {
                "id": local,
                "name": name,
                "type": entity.type.strip(),
                "description": entity.description.strip(),
                "attributes": entity.attributes,
                "seen_at": clamp(entity.seen_at, default_t),
            }
        )

    def resolve(refs: Sequence[str]) -> list[str]:
        out = []
        for ref in refs:
            key = ref.strip()
            local = ids.get(key) or by_name.get(key.casefold())
            if local and local not in out:
                out.append(local)
        return out

    events = []
    for event in reply.events:
        if not event.action.strip():
            continue
        a, b = event.time_range if event.time_range is not None else (start, end)
        a, b = clamp(a, start), clamp(b, end)
        if b < a:
            a, b = b, a
        events.append(
            {
                "action": event.action.strip(),
                "description": event.description.strip(),
                "type": event.type.strip(),
                "subjects": resolve(event.subject_ids),
                "objects": resolve(event.object_ids),
                "start": a,
                "end": b,
            }
        )
    texts = []
    for text in reply.on_screen_text:
        if not text.text.strip():
            continue
        texts.append(
            {
                "text": text.text.strip(),
                "type": text.type.strip(),
                "description": text.description.strip(),
                "start": clamp(text.seen_at, default_t),
                "end": round(end, 3),
            }
        )
    return {"caption": reply.caption, "entities": entities, "events": events, "texts": texts}
