"""Stage 5b rules: each MacroEvent's subgraph, from its clips' records and OCR spans.

A MacroEvent's subgraph holds its clips' nodes: entities with the same name in several of
its clips become one Entity (seen first at its grounding time), every event and on-screen
text becomes a node, and OCR spans of one text that continue across clips become one
OCRText node. Texts the model reported that OCR also read are kept once (OCR's, which has
exact times). Structural relations come from the events themselves (subject PERFORMS event,
event ACTS_ON object); the model adds typed relations between the nodes it is shown, and
only those whose two ends exist are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memory_builders.clip_records import ClipRecord
from memory_builders.segmentation import ClipSpan
from videotapestry.contracts.builder import ProposedRelation
from videotapestry.memory import (
    RELATION_TYPES,
    EntityNode,
    EventNode,
    OCRTextNode,
    Relation,
    TimeRange,
)
from videotapestry.ocr import TextSpan, same_text, text_key

#: Length given to an Entity's time range after its grounding moment (as MemDreamer import).
ENTITY_SPAN_S = 5.0
_EPS = 1e-6


@dataclass
class MacroDraft:
    """One MacroEvent before its label, summary and parent are known."""

    id: str
    slot: int
    start_s: float
    end_s: float
    clip_ids: list[str]
    captions: list[str]
    captions_raw: list[str] = field(default_factory=list)
    entities: list[EntityNode] = field(default_factory=list)
    events: list[EventNode] = field(default_factory=list)
    texts: list[OCRTextNode] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    clip_nodes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def nodes(self) -> list[EntityNode | EventNode | OCRTextNode]:
        return [*self.entities, *self.events, *self.texts]

    @property
    def node_ids(self) -> set[str]:
        return {n.id for n in self.nodes}

    @property
    def described(self) -> bool:
        return any(self.captions_raw)


def macro_id(slot: int) -> str:
    return f"macro_{slot:04d}"


def _clamp(t: float, start: float, end: float) -> float:
    return min(max(t, start), end)


def _name_key(name: str) -> str:
    return text_key(re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.I))


def assemble_subgraph(
    slot: int,
    clips: Sequence[ClipSpan],
    records: dict[str, ClipRecord | None],
    ocr: dict[str, list[TextSpan]],
    *,
    caption_prefix: Callable[[ClipSpan], str],
    sample_interval_s: float,
) -> MacroDraft:
    """The subgraph of MacroEvent ``slot`` from its clips' perception records and OCR spans."""
    mid = macro_id(slot)
    start, end = clips[0].start_s, clips[-1].end_s
    prefix = f"slot{slot}_"
    draft = MacroDraft(mid, slot, start, end, [c.id for c in clips], [], [])
    by_key: dict[tuple[str, str], EntityNode] = {}
    counters = {"e": 0, "v": 0, "o": 0}

    def new_id(kind: str) -> str:
        counters[kind] += 1
        return f"{prefix}{kind}{counters[kind]}"

    spans: list[TextSpan] = []
    for clip in clips:
        record = records.get(clip.id)
        draft.clip_nodes[clip.id] = []
        caption = (record or {}).get("caption", "")
        draft.captions_raw.append(caption)
        label = caption if caption else "(not described; see the build report)"
        draft.captions.append(f"{caption_prefix(clip)} {label}")
        spans.extend(ocr.get(clip.id, []))
        if not record:
            continue
        local: dict[str, str] = {}
        for item in record["entities"]:
            name = item["name"].strip() or item["type"] or "entity"
            key = (_name_key(name), item["type"].strip().casefold())
            entity = by_key.get(key)
            if entity is None:
                seen = _clamp(item["seen_at"], clip.start_s, clip.end_s)
                entity = EntityNode(
                    id=new_id("e"),
                    parent_id=mid,
                    name=name,
                    entity_type=item["type"],
                    description=item["description"],
                    attributes=item["attributes"],
                    grounding_time=round(seen, 3),
                    time_range=TimeRange(
                        start=round(seen, 3), end=round(min(seen + ENTITY_SPAN_S, end), 3)
                    ),
                )
                by_key[key] = entity
                draft.entities.append(entity)
            elif len(item["description"]) > len(entity.description):
                updated = entity.model_copy(update={"description": item["description"]})
                draft.entities[draft.entities.index(entity)] = updated
                by_key[key] = entity = updated
            local[item["id"]] = entity.id
            if entity.id not in draft.clip_nodes[clip.id]:
                draft.clip_nodes[clip.id].append(entity.id)
        for item in record["events"]:
            event = EventNode(
                id=new_id("v"),
                parent_id=mid,
                action=item["action"],
                description=item["description"],
                event_type=item["type"],
                subject_ids=tuple(local[i] for i in item["subjects"] if i in local),
                object_ids=tuple(local[i] for i in item["objects"] if i in local),
                time_range=TimeRange(start=item["start"], end=item["end"]),
            )
            draft.events.append(event)
            draft.clip_nodes[clip.id].append(event.id)
    for span in _merge_spans(spans, sample_interval_s * 1.5):
        read = OCRTextNode(
            id=new_id("o"),
            parent_id=mid,
            text=span.text,
            ocr_type="scene_text",
            description="read by OCR",
            time_range=TimeRange(
                start=round(_clamp(span.start_s, start, end), 3),
                end=round(_clamp(span.end_s, start, end), 3),
            ),
        )
        draft.texts.append(read)
    ocr_keys = [text_key(t.text) for t in draft.texts]
    for clip in clips:
        record = records.get(clip.id)
        for item in (record or {}).get("texts", []):
            reported_key = text_key(item["text"])
            if not reported_key:
                continue
            if any(same_text(reported_key, other) for other in ocr_keys):
                continue
            reported = OCRTextNode(
                id=new_id("o"),
                parent_id=mid,
                text=item["text"],
                ocr_type=item["type"],
                description=item["description"],
                time_range=TimeRange(start=item["start"], end=item["end"]),
            )
            draft.texts.append(reported)
            ocr_keys.append(reported_key)
    for clip in clips:
        for text in draft.texts:
            if text.time_range.start < clip.end_s and clip.start_s < text.time_range.end:
                draft.clip_nodes[clip.id].append(text.id)
    for event in draft.events:
        for subject in event.subject_ids:
            draft.relations.append(
                Relation(source=subject, target=event.id, type="SEMANTIC", label="PERFORMS")
            )
        for target in event.object_ids:
            draft.relations.append(
                Relation(source=event.id, target=target, type="ATTRIBUTIVE", label="ACTS_ON")
            )
    return draft


def _merge_spans(spans: list[TextSpan], gap_s: float) -> list[TextSpan]:
    merged: list[TextSpan] = []
    for span in sorted(spans, key=lambda s: (s.start_s, s.key)):
        target = next(
            (
                m
                for m in merged
                if same_text(m.key, span.key) and span.start_s - m.end_s <= gap_s + _EPS
            ),
            None,
        )
        if target is None:
            merged.append(TextSpan(span.text, span.start_s, span.end_s, span.confidence, span.key))
            continue
        target.end_s = max(target.end_s, span.end_s)
        if span.confidence > target.confidence:
            target.text, target.confidence = span.text, span.confidence
    return merged


def validated_relations(
    proposed: Sequence[ProposedRelation], node_ids: set[str], existing: Sequence[Relation]
) -> tuple[list[Relation], int]:
    """The model's relations whose ends exist and whose type is known; and how many were not."""
    seen: set[tuple[str, str, str, str]] = {(r.source, r.target, r.type, r.label) for r in existing}
    kept: list[Relation] = []
    dropped = 0
    for item in proposed:
        rtype = item.type.strip().upper()
        label = re.sub(r"[^A-Z0-9_]+", "_", item.label.strip().upper()).strip("_")
        if (
            item.source not in node_ids
            or item.target not in node_ids
            or item.source == item.target
            or rtype not in RELATION_TYPES
        ):
            dropped += 1
            continue
        key = (item.source, item.target, rtype, label)
        if key in seen:
            continue
        seen.add(key)
        kept.append(
            Relation(
                source=item.source,
                target=item.target,
                type=rtype,
                label=label,
                reason=item.reason or None,
            )
        )
    return kept, dropped
