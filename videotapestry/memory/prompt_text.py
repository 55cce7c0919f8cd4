"""Compact prompt text for memory nodes and levels.

Every agent prompt carries memory as text, and the Answer agent's context is mostly memory,
so the format is dense: one line per node with its id (the handle agents select by), a mm:ss
time range (h:mm:ss past the first hour), its label and description; a subgraph lists its
entities, events and OCR texts and then its relations by id. Level serializers take an
explicit id list because each agent sees only its candidate nodes. Each result carries an
estimated token count (``videotapestry.tokens.estimate_tokens``) for budgeting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from videotapestry.errors import MemoryNodeNotFoundError
from videotapestry.memory.types import (
    AnyNode,
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
)
from videotapestry.memory.video_memory import VideoMemory
from videotapestry.timecode import format_timestamp
from videotapestry.tokens import estimate_tokens


@dataclass(frozen=True)
class PromptText:
    """Serialized memory and what it costs in the prompt."""

    text: str
    tokens: int
    node_ids: tuple[str, ...]


def _prompt(lines: Iterable[str], node_ids: Iterable[str]) -> PromptText:
    text = "\n".join(lines)
    return PromptText(text=text, tokens=estimate_tokens(text), node_ids=tuple(node_ids))


def clock(seconds: float) -> str:
    """``mm:ss`` below one hour, ``h:mm:ss`` from then on (whole seconds, rounded down)."""
    return format_timestamp(max(0.0, seconds))


def clock_range(time_range: TimeRange) -> str:
    """``07:00-11:00``; the end is rounded up so the printed range covers the real one."""
    end = clock(math.ceil(time_range.end - 1e-6))
    return f"{clock(time_range.start)}-{end}"


def _join(label: str, description: str) -> str:
    label, description = label.strip(), description.strip()
    if label and description:
        return f"{label}: {description}"
    return label or description


def _names(values: Sequence[str]) -> str:
    return ", ".join(v for v in values if v)


def node_line(node: AnyNode) -> str:
    """One line for any node: id, time, label and description (plus kind-specific details)."""
    if isinstance(node, RootEvent):
        line = f"{node.id} [{clock_range(node.time_range)}] {_join(node.title, node.description)}"
        if node.themes:
            line += f" | themes: {_names(node.themes)}"
        if node.key_entities:
            line += f" | key entities: {_names(node.key_entities)}"
        return line
    if isinstance(node, SuperEvent):
        line = f"{node.id} [{clock_range(node.time_range)}] {_join(node.label, node.description)}"
        if node.key_entities:
            line += f" | key entities: {_names(node.key_entities)}"
        return line
    if isinstance(node, MacroEvent):
        line = f"{node.id} [{clock_range(node.time_range)}] {_join(node.label, node.summary)}"
        if node.key_entity_names:
            line += f" | key entities: {_names(node.key_entity_names)}"
        return line
    if isinstance(node, EntityNode):
        when = (
            f"@{clock(node.grounding_time)}"
            if node.grounding_time is not None
            else clock_range(node.time_range)
        )
        head = f"{node.name} ({node.entity_type})" if node.entity_type else node.name
        line = f"{node.id} [{when}] {_join(head, node.description)}"
        if node.attributes:
            attributes = json.dumps(
                node.model_dump(mode="json")["attributes"], ensure_ascii=False, sort_keys=True
            )
            line += f" | attributes: {attributes}"
        return line
    if isinstance(node, EventNode):
        head = f"{node.action} ({node.event_type})" if node.event_type else node.action
        line = f"{node.id} [{clock_range(node.time_range)}] {_join(head, node.description)}"
        if node.subject_ids:
            line += f" | subject: {_names(node.subject_ids)}"
        if node.object_ids:
            line += f" | object: {_names(node.object_ids)}"
        return line
    assert isinstance(node, OCRTextNode)
    head = f'"{node.text}"' + (f" ({node.ocr_type})" if node.ocr_type else "")
    return f"{node.id} [{clock_range(node.time_range)}] {_join(head, node.description)}"


def relation_line(relation: Relation) -> str:
    line = (
        f"{relation.source} {relation.label or relation.type} {relation.target} [{relation.type}]"
    )
    return f"{line} ({relation.reason})" if relation.reason else line


def _typed(memory: VideoMemory, ids: Sequence[str], kind: type, name: str) -> list:
    nodes = []
    for node_id in ids:
        node = memory.node(node_id)
        if not isinstance(node, kind):
            raise MemoryNodeNotFoundError(f"{node_id!r} is a {node.kind}, not a {name}")
        nodes.append(node)
    return nodes


def serialize_root(memory: VideoMemory) -> PromptText:
    """The global summary s_V: title, time span, description, themes, key entities."""
    return _prompt([node_line(memory.root)], [memory.root.id])


def serialize_super_events(
    memory: VideoMemory, ids: Sequence[str], *, with_relations: bool = False
) -> PromptText:
    """The given SuperEvents, one line each in the order given (callers pass time order)."""
    nodes = _typed(memory, ids, SuperEvent, "SuperEvent")
    lines = [node_line(n) for n in nodes]
    if with_relations:
        lines += _relation_block(memory.relations(ids))
    return _prompt(lines, ids)


def serialize_macro_events(
    memory: VideoMemory, ids: Sequence[str], *, with_relations: bool = False
) -> PromptText:
    """The given MacroEvents, each with the SuperEvent it belongs to."""
    nodes = _typed(memory, ids, MacroEvent, "MacroEvent")
    lines = [f"{node_line(n)} | in: {n.parent_id}" for n in nodes]
    if with_relations:
        lines += _relation_block(memory.relations(ids))
    return _prompt(lines, ids)


def serialize_subgraph(memory: VideoMemory, macro_id: str) -> PromptText:
    """One MacroEvent's subgraph: entities, events, OCR texts, then relations among them."""
    subgraph = memory.subgraph(macro_id)
    macro = subgraph.macro
    lines = [f"Subgraph of {macro.id} [{clock_range(macro.time_range)}] {macro.label}".rstrip()]
    for title, group in (
        ("Entities", subgraph.entities),
        ("Events", subgraph.events),
        ("OCR texts", subgraph.ocr_texts),
    ):
        if group:
            lines.append(f"{title}:")
            lines += [f"- {node_line(n)}" for n in group]
    lines += _relation_block(subgraph.relations)
    return _prompt(lines, [n.id for n in subgraph.nodes])


def serialize_subgraphs(memory: VideoMemory, macro_ids: Sequence[str]) -> PromptText:
    """Several subgraphs, separated by blank lines, in the order given."""
    parts = [serialize_subgraph(memory, macro_id) for macro_id in macro_ids]
    text = "\n\n".join(p.text for p in parts)
    ids = tuple(i for p in parts for i in p.node_ids)
    return PromptText(text=text, tokens=estimate_tokens(text), node_ids=ids)


def serialize_nodes(memory: VideoMemory, ids: Sequence[str]) -> PromptText:
    """Any nodes, one line each, in the order given (e.g. PACE-Mem's chosen evidence)."""
    return _prompt([node_line(memory.node(i)) for i in ids], ids)


def _relation_block(relations: Sequence[Relation]) -> list[str]:
    if not relations:
        return []
    return ["Relations:", *(f"- {relation_line(r)}" for r in relations)]
