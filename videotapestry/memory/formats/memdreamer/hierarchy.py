"""The phase-3 hierarchy file of a MemDreamer memory: Root, SuperEvents, MacroEvents.

``hierarchical_graph_final.json`` holds the upper levels and the relations among them. Its
structure is checked before anything is built from it, because a broken hierarchy would
otherwise surface far away as a missing parent: every MacroEvent must sit under exactly one
SuperEvent (named by ``sub_macro_ids`` or by a ``subevent_relations`` edge), every relation
must join nodes of its level, and a missing ``root_event`` is made from the SuperEvents'
span (with a warning).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.formats.memdreamer import fields
from videotapestry.memory.types import MacroEvent, Relation, RootEvent, SuperEvent, TimeRange

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hierarchy:
    """The upper levels of one memory, as read from its phase-3 file."""

    root: RootEvent
    super_events: list[SuperEvent]
    macro_events: list[MacroEvent]
    relations: list[Relation]


def read_hierarchy(path: Path, data: Any) -> Hierarchy:
    """The hierarchy in ``data`` (the parsed content of ``path``); errors name the field."""
    super_events, macro_events, relations, root = _GraphReader(path, data).read()
    return Hierarchy(root, super_events, macro_events, relations)


class _GraphReader:
    """Reads phase3's hierarchy file; every error names the file and the JSON field."""

    def __init__(self, path: Path, data: Any) -> None:
        if not isinstance(data, dict):
            raise MemoryFormatError(f"{path}: expected a JSON object at the top level")
        self.path = path
        self.data = data

    def fail(self, field: str, message: str) -> MemoryFormatError:
        return MemoryFormatError(f"{self.path}: field {field}: {message}")

    def items(self, key: str) -> list[tuple[str, dict[str, Any]]]:
        value = self.data.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list, got {type(value).__name__}")
        out = []
        for index, item in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(item, dict):
                raise self.fail(where, f"must be an object, got {type(item).__name__}")
            out.append((where, item))
        return out

    def read(self) -> tuple[list[SuperEvent], list[MacroEvent], list[Relation], RootEvent]:
        supers_raw = self.items("super_events")
        macros_raw = self.items("macro_events")
        if not supers_raw:
            raise self.fail("super_events", "is missing or empty; a memory needs SuperEvents")
        macro_ids = {}
        for where, item in macros_raw:
            macro_id = fields.required_id(item, where, self.path)
            if macro_id in macro_ids:
                raise self.fail(f"{where}.node_id", f"{macro_id!r} is used twice")
            macro_ids[macro_id] = (where, item)
        parents = self._macro_parents(supers_raw, macro_ids)
        root_raw = self.data.get("root_event")
        root_id = "root"
        if isinstance(root_raw, dict):
            root_id = str(root_raw.get("node_id") or root_id)
        supers = [self._super(where, item, root_id) for where, item in supers_raw]
        macros = [
            self._macro(where, item, parents[macro_id])
            for macro_id, (where, item) in macro_ids.items()
        ]
        root = self._root(root_raw, root_id, supers)
        relations = self._relations({s.id for s in supers}, set(macro_ids), root_id)
        return supers, macros, relations, root

    def _macro_parents(
        self, supers_raw: list[tuple[str, dict[str, Any]]], macro_ids: dict[str, Any]
    ) -> dict[str, str]:
        parents: dict[str, str] = {}
        super_ids = set()

        def claim(macro_id: str, super_id: str, where: str) -> None:
            if macro_id not in macro_ids:
                raise self.fail(
                    where, f"names MacroEvent {macro_id!r}, which is not in macro_events"
                )
            previous = parents.setdefault(macro_id, super_id)
            if previous != super_id:
                raise self.fail(
                    where,
                    f"puts MacroEvent {macro_id!r} under {super_id!r}, but it is already under "
                    f"{previous!r}",
                )

        for where, item in supers_raw:
            super_id = fields.required_id(item, where, self.path)
            super_ids.add(super_id)
            children = item.get("sub_macro_ids") or []
            if not isinstance(children, list):
                raise self.fail(f"{where}.sub_macro_ids", "must be a list of MacroEvent ids")
            for index, child in enumerate(children):
                claim(str(child), super_id, f"{where}.sub_macro_ids[{index}]")
        for where, edge in self.items("subevent_relations"):
            source, target = str(edge.get("source_id")), str(edge.get("target_id"))
            if target not in super_ids:
                raise self.fail(f"{where}.target_id", f"{target!r} is not a SuperEvent id")
            claim(source, target, f"{where}.source_id")
        orphans = [m for m in macro_ids if m not in parents]
        if orphans:
            where = macro_ids[orphans[0]][0]
            raise self.fail(
                where,
                f"MacroEvent {orphans[0]!r} belongs to no SuperEvent (not in any sub_macro_ids "
                "or subevent_relations)",
            )
        return parents

    def _super(self, where: str, item: dict[str, Any], root_id: str) -> SuperEvent:
        return SuperEvent(
            id=fields.required_id(item, where, self.path),
            parent_id=root_id,
            label=fields.text(item.get("label")),
            description=fields.text(item.get("description")),
            time_range=fields.time_range(item.get("time_range"), self.path, f"{where}.time_range"),
            key_entities=fields.strings(item.get("key_entities")),
        )

    def _macro(self, where: str, item: dict[str, Any], parent_id: str) -> MacroEvent:
        anchors = item.get("anchors") or {}
        slot_ids = anchors.get("slot_ids") if isinstance(anchors, dict) else None
        slot = None
        if slot_ids:
            slot = fields.integer(slot_ids[0], self.path, f"{where}.anchors.slot_ids[0]")
        names = item.get("key_entity_names", item.get("key_entities"))
        return MacroEvent(
            id=fields.required_id(item, where, self.path),
            parent_id=parent_id,
            label=fields.text(item.get("label")),
            summary=fields.text(item.get("summary", item.get("description"))),
            time_range=fields.time_range(item.get("time_range"), self.path, f"{where}.time_range"),
            key_entity_names=fields.strings(names),
            slot=slot,
            subevent_ids=fields.strings(item.get("subevent_ids")),
        )

    def _root(self, raw: Any, root_id: str, supers: list[SuperEvent]) -> RootEvent:
        span = TimeRange(
            start=min(s.time_range.start for s in supers), end=max(s.time_range.end for s in supers)
        )
        if not isinstance(raw, dict):
            logger.warning(
                "%s has no root_event; using an untitled root spanning the video", self.path
            )
            return RootEvent(id=root_id, time_range=span)
        time_value = raw.get("time_range")
        return RootEvent(
            id=root_id,
            title=fields.text(raw.get("title")),
            description=fields.text(raw.get("description")),
            themes=fields.strings(raw.get("themes")),
            key_entities=fields.strings(raw.get("key_entities")),
            emotional_tone=raw.get("emotional_tone"),
            time_range=(
                span
                if time_value is None
                else fields.time_range(time_value, self.path, "root_event.time_range")
            ),
        )

    def _relations(self, super_ids: set[str], macro_ids: set[str], root_id: str) -> list[Relation]:
        relations = []
        for key, ids, default in (
            ("super_relations", super_ids, "PROGRESSION"),
            ("macro_relations", macro_ids, "TEMPORAL"),
        ):
            for where, edge in self.items(key):
                for end in ("source_id", "target_id"):
                    if str(edge.get(end)) not in ids:
                        raise self.fail(f"{where}.{end}", f"{edge.get(end)!r} is not an id here")
                relations.append(fields.relation(edge, default, self.path, where))
        for where, edge in self.items("root_relations"):
            if str(edge.get("source_id")) not in super_ids:
                raise self.fail(
                    f"{where}.source_id", f"{edge.get('source_id')!r} is not a SuperEvent"
                )
            if str(edge.get("target_id")) != root_id:
                raise self.fail(f"{where}.target_id", f"{edge.get('target_id')!r} is not the root")
        return relations


def slot_index(macros: list[MacroEvent], graph_file: Path) -> dict[int, MacroEvent]:
    """The MacroEvents that own a subgraph, by slot; two claiming one slot is an error."""
    slots: dict[int, MacroEvent] = {}
    for macro in macros:
        if macro.slot is None:
            continue
        if macro.slot in slots:
            raise MemoryFormatError(
                f"{graph_file}: MacroEvents {slots[macro.slot].id!r} and {macro.id!r} both "
                f"claim slot {macro.slot} (anchors.slot_ids[0])"
            )
        slots[macro.slot] = macro
    return slots
