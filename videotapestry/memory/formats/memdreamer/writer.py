"""Writing a memory in MemDreamer's layout, in either of its variants.

The scripts' variant (``SCRIPTS_LAYOUT``, the default) is what our importer and MemDreamer's
construction scripts read; the released variant (``RELEASED_LAYOUT``) is what MemDreamer's
released reader loads (``phase4/``, nested ``phase2_topdown/`` episodes, keyframes, lists of
distinctive features). Both are written from the same documents, so import → export → import
gives an equal memory for every field we model, whichever variant sits in between.

What the layout cannot hold is skipped with a warning: relations between different levels or
across subgraphs. MacroEvents without a slot get the next free slot numbers. Node vectors go
to ``embeddings.json`` with their model's name in the graph file (``embedding_model``, which
MemDreamer's reader ignores), so a re-import labels them right. The hierarchy file is written
last: it is what marks a directory as a MemDreamer memory, so an interrupted export is not
mistaken for a whole one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.files import write_json_atomic
from videotapestry.memory.formats.memdreamer import fields
from videotapestry.memory.formats.memdreamer.layout import (
    EMBEDDINGS_FILE,
    SCRIPTS_LAYOUT,
    MemDreamerLayout,
)
from videotapestry.memory.formats.memdreamer.vectors import vectors_document
from videotapestry.memory.types import (
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    Relation,
    TimeRange,
)
from videotapestry.memory.video_memory import VideoMemory

logger = logging.getLogger(__name__)

#: Gives an Entity's keyframe as JPEG bytes (None when there is none to write).
KeyframeSource = Callable[[EntityNode], bytes | None]


def export_memdreamer(
    memory: VideoMemory,
    destination: str | Path,
    *,
    layout: MemDreamerLayout = SCRIPTS_LAYOUT,
    keyframe: KeyframeSource | None = None,
) -> Path:
    """Write ``memory`` in MemDreamer's ``layout`` into a new or empty directory.

    An Entity's keyframe is written as the path it has (images are not copied); with
    ``keyframe``, the image it gives is also written where the layout keeps it
    (``features/<local id>/best_frame.jpg`` of the Entity's episode).
    """
    dest = Path(destination)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise MemoryFormatError(f"cannot export to {dest}: choose a new or empty directory")
    macros = memory.macro_events()
    slots = _assign_slots(macros)
    level_relations, subgraph_relations = _split_relations(memory, macros)
    graph = _graph_document(memory, macros, slots, level_relations)
    dest.mkdir(parents=True, exist_ok=True)
    for macro in macros:
        slot = slots[macro.id]
        document = _subgraph_document(memory, macro, slot, subgraph_relations[macro.id], layout)
        write_json_atomic(dest / layout.subgraph_file(slot), document)
        if keyframe is not None:
            _write_keyframes(memory, macro, slot, dest, layout, keyframe)
    if memory.unification:
        mappings = [
            {
                "canonical_name": g.canonical_name,
                "canonical_type": g.canonical_type,
                "variants": list(g.variants),
            }
            for g in memory.unification
        ]
        write_json_atomic(dest / layout.unification_file, {"entity_mappings": mappings})
    embeddings = memory.embeddings
    if embeddings is not None:
        graph["embedding_model"] = embeddings.model_name
        write_json_atomic(dest / EMBEDDINGS_FILE, vectors_document(embeddings))
    write_json_atomic(dest / layout.graph_file, graph)
    return dest


def _assign_slots(macros: list[MacroEvent]) -> dict[str, int]:
    slots = {m.id: m.slot for m in macros if m.slot is not None}
    next_slot = max(slots.values(), default=-1) + 1
    assigned: dict[str, int] = {}
    for macro in macros:
        if macro.slot is None:
            assigned[macro.id] = next_slot
            next_slot += 1
        else:
            assigned[macro.id] = macro.slot
    return assigned


def _split_relations(
    memory: VideoMemory, macros: list[MacroEvent]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[Relation]]]:
    """Relations between SuperEvents or between MacroEvents (as JSON, by level), and those
    inside one subgraph (by MacroEvent); any other relation cannot be written."""
    kinds = {n.id: n.kind for n in memory.nodes()}
    macro_of = {n.id: n.parent_id for n in memory.nodes(("Entity", "Event", "OCRText"))}
    level_relations: dict[str, list[dict[str, Any]]] = {"SuperEvent": [], "MacroEvent": []}
    subgraph_relations: dict[str, list[Relation]] = {m.id: [] for m in macros}
    for relation in memory.relations():
        source_kind, target_kind = kinds[relation.source], kinds[relation.target]
        source_macro, target_macro = macro_of.get(relation.source), macro_of.get(relation.target)
        if source_kind == target_kind and source_kind in level_relations:
            level_relations[source_kind].append(
                _relation_document(relation, relation.source, relation.target)
            )
        elif source_macro is not None and source_macro == target_macro:
            subgraph_relations[source_macro].append(relation)
        else:
            logger.warning(
                "relation %s -%s-> %s cannot be written in MemDreamer's layout; skipped",
                relation.source,
                relation.label or relation.type,
                relation.target,
            )
    return level_relations, subgraph_relations


def _graph_document(
    memory: VideoMemory,
    macros: list[MacroEvent],
    slots: dict[str, int],
    level_relations: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    root = memory.root
    supers = memory.super_events()
    return {
        "root_event": {
            "node_id": root.id,
            "title": root.title,
            "description": root.description,
            "themes": list(root.themes),
            "emotional_tone": root.emotional_tone,
            "key_entities": list(root.key_entities),
            "time_range": {"start": root.time_range.start, "end": root.time_range.end},
        },
        "super_events": [
            {
                "node_id": s.id,
                "label": s.label,
                "description": s.description,
                "time_range": [s.time_range.start, s.time_range.end],
                "key_entities": list(s.key_entities),
                "sub_macro_ids": list(memory.child_ids(s.id)),
            }
            for s in supers
        ],
        "macro_events": [
            {
                "node_id": m.id,
                "label": m.label,
                "summary": m.summary,
                "time_range": [m.time_range.start, m.time_range.end],
                "anchors": {"slot_ids": [slots[m.id]]},
                "key_entity_names": list(m.key_entity_names),
                "subevent_ids": list(m.subevent_ids),
            }
            for m in macros
        ],
        "super_relations": level_relations["SuperEvent"],
        "macro_relations": level_relations["MacroEvent"],
        "subevent_relations": [
            {"source_id": m.id, "target_id": m.parent_id, "relation_label": "SUBEVENT_OF"}
            for m in macros
        ],
        "root_relations": [
            {"source_id": s.id, "target_id": root.id, "relation_label": "SUBEVENT_OF"}
            for s in supers
        ],
    }


def _relation_document(relation: Relation, source: str, target: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "source_id": source,
        "target_id": target,
        "relation_type": relation.type,
        "relation_label": relation.label,
    }
    if relation.reason is not None:
        data["reason"] = relation.reason
    return data


def _subgraph_document(
    memory: VideoMemory,
    macro: MacroEvent,
    slot: int,
    relations: list[Relation],
    layout: MemDreamerLayout,
) -> dict[str, Any]:
    start = macro.time_range.start

    def local(node_id: str) -> str:
        return fields.local_node_id(slot, node_id)

    def local_range(time_range: TimeRange) -> list[float]:
        return [
            fields.round_time(time_range.start - start),
            fields.round_time(time_range.end - start),
        ]

    nodes: list[dict[str, Any]] = []
    for node in memory.children(macro.id):
        node_id = local(node.id)
        if isinstance(node, EntityNode):
            entry: dict[str, Any] = {
                "node_id": node_id,
                "entity_id": node_id,
                "node_type": "Entity",
                "name": None if node.name_inferred else node.name,
                "entity_type": node.entity_type,
                "description": node.description,
                "attributes": node.model_dump(mode="json")["attributes"],
                "time_range": local_range(node.time_range),
            }
            if node.grounding_time is not None:
                moment = fields.round_time(node.grounding_time - start)
                entry["visual_grounding"] = _grounding(moment, node.distinctive_features, layout)
            if node.keyframe_path is not None:
                entry["keyframe_path"] = node.keyframe_path
        elif isinstance(node, EventNode):
            entry = {
                "node_id": node_id,
                "event_id": node_id,
                "node_type": "Event",
                "action": node.action,
                "description": node.description,
                "event_type": node.event_type,
                "time_range": local_range(node.time_range),
                "subject_entity_ids": [local(i) for i in node.subject_ids],
                "object_entity_ids": [local(i) for i in node.object_ids],
            }
        else:
            assert isinstance(node, OCRTextNode)
            entry = {
                "node_id": node_id,
                "ocr_id": node_id,
                "node_type": "OCRText",
                "text": node.text,
                "ocr_type": node.ocr_type,
                "description": node.description,
                "time_range": local_range(node.time_range),
            }
        nodes.append(entry)
    return {
        "slot_id": slot,
        "start_sec": start,
        "end_sec": macro.time_range.end,
        "nodes": nodes,
        "edges": [_relation_document(r, local(r.source), local(r.target)) for r in relations],
    }


def _grounding(
    moment: float, features: str | tuple[str, ...] | None, layout: MemDreamerLayout
) -> dict[str, Any]:
    grounding: dict[str, Any] = {"primary_time_sec": moment}
    if isinstance(features, tuple):
        grounding["distinctive_features"] = list(features)
    elif features is not None:
        grounding["distinctive_features"] = [features] if layout.features_as_list else features
    return grounding


def _write_keyframes(
    memory: VideoMemory,
    macro: MacroEvent,
    slot: int,
    dest: Path,
    layout: MemDreamerLayout,
    keyframe: KeyframeSource,
) -> None:
    for node in memory.children(macro.id):
        jpeg = keyframe(node) if isinstance(node, EntityNode) else None
        if jpeg:
            target = dest / layout.keyframe_file(slot, fields.local_node_id(slot, node.id))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(jpeg)
