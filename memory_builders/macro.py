"""Stage 5 rules: MacroEvent boundaries from a sliding window, and each MacroEvent's subgraph.

Boundaries. Clip captions are shown to a text model in windows of about ``window_s``
seconds that overlap by ``overlap_s``; the model names the clips where a new event begins.
Each window *owns* the part of the video between the middles of its overlaps with its
neighbours, and only the boundaries it proposes inside its own part are kept, so every
stretch of the video is decided once, by the window that sees it with the most context on
both sides. When a window's call fails, its part falls back to embedding change points:
a boundary before a clip whose caption is much less similar to the previous one than is
usual in that window. Finally MacroEvents shorter than ``min_s`` merge into the neighbour
they are more similar to, and ones longer than ``max_s`` are split at their weakest link.

Subgraphs. A MacroEvent's subgraph holds its clips' nodes: entities with the same name in
several of its clips become one Entity (seen first at its grounding time), every event and
on-screen text becomes a node, and OCR spans of one text that continue across clips become
one OCRText node. Texts the model reported that OCR also read are kept once (OCR's, which
has exact times). Structural relations come from the events themselves (subject PERFORMS
event, event ACTS_ON object); the model adds typed relations between the nodes it is shown,
and only those whose two ends exist are kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_builders.segmentation import ClipSpan
from videotapestry.contracts.builder import ProposedRelation
from videotapestry.memory.types import (
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


@dataclass(frozen=True)
class BoundaryWindow:
    """Clips ``first``..``last`` (indices) shown in one call; it owns [own_start, own_end)."""

    first: int
    last: int
    own_start: float
    own_end: float


def boundary_windows(
    clips: Sequence[ClipSpan], window_s: float, overlap_s: float
) -> list[BoundaryWindow]:
    if not clips:
        return []
    spans: list[tuple[int, int]] = []
    first = 0
    while True:
        start = clips[first].start_s
        last = first
        while last + 1 < len(clips) and clips[last + 1].start_s < start + window_s - _EPS:
            last += 1
        spans.append((first, last))
        if last == len(clips) - 1:
            break
        step_to = start + max(window_s - overlap_s, _EPS)
        nxt = next((i for i in range(first + 1, last + 1) if clips[i].start_s >= step_to), last)
        first = max(first + 1, nxt)
    windows = []
    for k, (a, b) in enumerate(spans):
        own_start = -math.inf
        own_end = math.inf
        if k > 0:
            prev_end = clips[spans[k - 1][1]].end_s
            own_start = (clips[a].start_s + prev_end) / 2
        if k + 1 < len(spans):
            own_end = (clips[spans[k + 1][0]].start_s + clips[b].end_s) / 2
        windows.append(BoundaryWindow(a, b, own_start, own_end))
    return windows


def kept_boundaries(
    window: BoundaryWindow, clips: Sequence[ClipSpan], proposed: Sequence[str]
) -> set[int]:
    """Clip indices (> 0) at which a MacroEvent begins, from one window's proposal."""
    index = {clips[i].id: i for i in range(window.first, window.last + 1)}
    kept = set()
    for clip_id in proposed:
        i = index.get(str(clip_id).strip())
        if i is None or i == 0:
            continue
        if window.own_start - _EPS <= clips[i].start_s < window.own_end - _EPS:
            kept.add(i)
    return kept


def neighbour_similarity(vectors: np.ndarray, valid: Sequence[bool]) -> np.ndarray:
    """Cosine similarity of each clip's caption to the previous clip's (1.0 for the first and
    wherever either caption is missing, so a failed clip never makes a boundary)."""
    sims = np.ones(len(valid), dtype=np.float64)
    for i in range(1, len(valid)):
        if valid[i] and valid[i - 1]:
            sims[i] = float(np.dot(vectors[i], vectors[i - 1]))
    return sims


def change_points(window: BoundaryWindow, sims: np.ndarray, clips: Sequence[ClipSpan]) -> set[int]:
    """Fallback boundaries in a window's own part: similarity a standard deviation below the
    window's mean and lower than both neighbours'."""
    indices = [i for i in range(max(1, window.first), window.last + 1)]
    if len(indices) < 2:
        return set()
    values = sims[indices]
    threshold = float(values.mean() - values.std())
    cuts = set()
    for i in indices:
        left = sims[i - 1] if i - 1 >= 1 else math.inf
        right = sims[i + 1] if i + 1 < len(sims) else math.inf
        owned = window.own_start - _EPS <= clips[i].start_s < window.own_end - _EPS
        if owned and sims[i] < threshold and sims[i] <= left and sims[i] <= right:
            cuts.add(i)
    return cuts


def segments_from_boundaries(count: int, boundaries: set[int]) -> list[list[int]]:
    starts = [0, *sorted(b for b in boundaries if 0 < b < count)]
    ends = [*starts[1:], count]
    return [list(range(a, b)) for a, b in zip(starts, ends, strict=True)]


def enforce_lengths(
    segments: list[list[int]],
    clips: Sequence[ClipSpan],
    sims: np.ndarray,
    *,
    min_s: float,
    max_s: float,
) -> list[list[int]]:
    """Merge MacroEvents shorter than ``min_s`` and split ones longer than ``max_s``."""

    def length(seg: list[int]) -> float:
        return clips[seg[-1]].end_s - clips[seg[0]].start_s

    segments = [list(s) for s in segments if s]
    while len(segments) > 1:
        short = [k for k, s in enumerate(segments) if length(s) < min_s - _EPS]
        if not short:
            break
        k = min(short, key=lambda j: (length(segments[j]), j))
        options = []
        if k > 0:
            options.append((sims[segments[k][0]], k - 1))
        if k + 1 < len(segments):
            options.append((sims[segments[k + 1][0]], k + 1))
        _, other = max(options, key=lambda o: (o[0], -o[1]))
        a, b = min(k, other), max(k, other)
        segments[a : b + 1] = [segments[a] + segments[b]]
    out: list[list[int]] = []
    pending = list(segments)
    while pending:
        seg = pending.pop(0)
        if length(seg) <= max_s + _EPS or len(seg) < 2:
            out.append(seg)
            continue
        cut = min(range(1, len(seg)), key=lambda j: (sims[seg[j]], abs(j - len(seg) / 2)))
        pending[:0] = [seg[:cut], seg[cut:]]
    return out


# --------------------------------------------------------------------------- subgraphs


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
    records: dict[str, dict[str, Any] | None],
    ocr: dict[str, list[TextSpan]],
    *,
    caption_prefix: Any,
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
            node = by_key.get(key)
            if node is None:
                seen = _clamp(item["seen_at"], clip.start_s, clip.end_s)
                node = EntityNode(
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
                by_key[key] = node
                draft.entities.append(node)
            elif len(item["description"]) > len(node.description):
                updated = node.model_copy(update={"description": item["description"]})
                draft.entities[draft.entities.index(node)] = updated
                by_key[key] = node = updated
            local[item["id"]] = node.id
            if node.id not in draft.clip_nodes[clip.id]:
                draft.clip_nodes[clip.id].append(node.id)
        for item in record["events"]:
            node = EventNode(
                id=new_id("v"),
                parent_id=mid,
                action=item["action"],
                description=item["description"],
                event_type=item["type"],
                subject_ids=tuple(local[i] for i in item["subjects"] if i in local),
                object_ids=tuple(local[i] for i in item["objects"] if i in local),
                time_range=TimeRange(start=item["start"], end=item["end"]),
            )
            draft.events.append(node)
            draft.clip_nodes[clip.id].append(node.id)
    for span in _merge_spans(spans, sample_interval_s * 1.5):
        node = OCRTextNode(
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
        draft.texts.append(node)
    ocr_keys = [text_key(t.text) for t in draft.texts]
    for clip in clips:
        record = records.get(clip.id)
        for item in (record or {}).get("texts", []):
            key = text_key(item["text"])
            if not key:
                continue
            if any(same_text(key, other) for other in ocr_keys):
                continue
            node = OCRTextNode(
                id=new_id("o"),
                parent_id=mid,
                text=item["text"],
                ocr_type=item["type"],
                description=item["description"],
                time_range=TimeRange(start=item["start"], end=item["end"]),
            )
            draft.texts.append(node)
            ocr_keys.append(key)
    for clip in clips:
        for node in draft.texts:
            if node.time_range.start < clip.end_s and clip.start_s < node.time_range.end:
                draft.clip_nodes[clip.id].append(node.id)
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
    seen = {(r.source, r.target, r.type, r.label) for r in existing}
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
                type=rtype,  # type: ignore[arg-type]
                label=label,
                reason=item.reason or None,
            )
        )
    return kept, dropped
