"""Import and export of memories in MemDreamer's on-disk layout (SPEC §3).

Researchers bring memories that MemDreamer built (its prebuilt benchmark memories are public),
so the importer accepts every layout variant seen in them::

    phase3/hierarchical_graph_final.json         (or phase3/hierarchical_graph.json)
    phase3/intermediate/step2p5_entity_unification.json   (optional)
    phase2/episode_*/step5_subgraph.json         (or episode_X/episode_X/step5_subgraph.json)

and turns their conventions into ours: subgraph times local to the slot become absolute
(``start_sec`` added), an Entity's time is its ``visual_grounding.primary_time_sec`` plus a
short span, time ranges given as ``{start, end}`` or ``[start, end]`` are both read, an Entity
with a null name is named from its type and description, subgraph ids get the ``slot{N}_``
prefix unless they already carry it, and a MacroEvent's subgraph is the one whose slot is
``anchors.slot_ids[0]``. ``export_memdreamer`` writes the same layout back, so import →
export → import gives an equal memory for every field we model.

Documented fallbacks (logged as warnings, never silent): a missing root is made from the
SuperEvents; an episode folder without a subgraph file, a subgraph whose slot no MacroEvent
claims, and a subgraph edge whose end is not a node of that subgraph are skipped. Broken
structure (a SuperEvent naming a MacroEvent that does not exist, a MacroEvent under no
SuperEvent, a missing phase2 folder, malformed JSON) is an error naming the file and field.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.schema import (
    RELATION_TYPES,
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
    VideoMemory,
)
from videotapestry.memory.storage import new_manifest, read_json, write_json_atomic

logger = logging.getLogger(__name__)

GRAPH_FILE = Path("phase3") / "hierarchical_graph_final.json"
FALLBACK_GRAPH_FILE = Path("phase3") / "hierarchical_graph.json"
UNIFICATION_FILE = Path("phase3") / "intermediate" / "step2p5_entity_unification.json"
SUBGRAPH_FILE = "step5_subgraph.json"
#: Length given to an Entity's time range, which MemDreamer records as a single moment.
DEFAULT_ENTITY_SPAN_S = 5.0
#: Times are kept to the millisecond so local ↔ absolute conversions round-trip exactly.
_TIME_DECIMALS = 3


#: MemDreamer's released reader names the phase-3 folder ``phase4/`` and the subgraph folder
#: ``phase2_topdown/``; both spellings are read.
RELEASED_PHASE3 = "phase4"
RELEASED_PHASE2 = "phase2_topdown"


def _released(path: Path, relative: Path) -> Path:
    """``relative`` under ``phase3/``, or under ``phase4/`` when only that folder exists."""
    if (path / relative).exists() or not (path / RELEASED_PHASE3).is_dir():
        return path / relative
    return path / RELEASED_PHASE3 / relative.relative_to("phase3")


def is_memdreamer_memory(path: str | Path) -> bool:
    path = Path(path)
    return _released(path, GRAPH_FILE).is_file() or _released(path, FALLBACK_GRAPH_FILE).is_file()


# --------------------------------------------------------------------------- import


def import_memdreamer(
    source: str | Path,
    *,
    entity_span_s: float = DEFAULT_ENTITY_SPAN_S,
    video_fingerprint: str | None = None,
) -> VideoMemory:
    """Read a MemDreamer memory directory into a validated ``VideoMemory``.

    ``video_fingerprint`` (of the video the memory was built from) goes into the manifest so
    later loads can refuse a different video; MemDreamer itself does not record one.
    """
    root_dir = Path(source)
    if not root_dir.is_dir():
        raise MemoryFormatError(f"MemDreamer memory directory {root_dir} does not exist")
    graph_file = _released(root_dir, GRAPH_FILE)
    if not graph_file.is_file():
        graph_file = _released(root_dir, FALLBACK_GRAPH_FILE)
    if not graph_file.is_file():
        raise MemoryFormatError(
            f"{root_dir} is not a MemDreamer memory: neither {GRAPH_FILE} nor "
            f"{FALLBACK_GRAPH_FILE} exists"
        )
    phase2 = root_dir / "phase2"
    if not phase2.is_dir() and (root_dir / RELEASED_PHASE2).is_dir():
        phase2 = root_dir / RELEASED_PHASE2
    if not phase2.is_dir():
        raise MemoryFormatError(
            f"{root_dir}: the phase2 folder is missing (expected "
            f"phase2/episode_*/{SUBGRAPH_FILE} with the MacroEvent subgraphs)"
        )
    reader = _GraphReader(graph_file, read_json(graph_file))
    super_events, macro_events, relations, root = reader.read()
    slots = _slot_index(macro_events, graph_file)
    subgraph_nodes = []
    for subgraph_file in _subgraph_files(phase2):
        nodes, edges = _read_subgraph(subgraph_file, slots, entity_span_s)
        subgraph_nodes.extend(nodes)
        relations.extend(edges)
    unification = _read_unification(_released(root_dir, UNIFICATION_FILE))
    manifest = new_manifest(
        "memdreamer",
        source_path=str(root_dir.resolve()),
        video_fingerprint=video_fingerprint,
    )
    memory = VideoMemory(
        root=root,
        super_events=super_events,
        macro_events=list(slots.values()) + [m for m in macro_events if m.slot is None],
        subgraph_nodes=subgraph_nodes,
        relations=relations,
        unification=unification,
        manifest=manifest,
        origin=str(root_dir),
    )
    return memory.with_manifest(manifest.model_copy(update={"counts": memory.counts()}))


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
            macro_id = _required_id(item, where, self.path)
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
            super_id = _required_id(item, where, self.path)
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
            id=_required_id(item, where, self.path),
            parent_id=root_id,
            label=_text(item.get("label")),
            description=_text(item.get("description")),
            time_range=_time_range(item.get("time_range"), self.path, f"{where}.time_range"),
            key_entities=_strings(item.get("key_entities")),
        )

    def _macro(self, where: str, item: dict[str, Any], parent_id: str) -> MacroEvent:
        anchors = item.get("anchors") or {}
        slot_ids = anchors.get("slot_ids") if isinstance(anchors, dict) else None
        slot = None
        if slot_ids:
            slot = _int(slot_ids[0], self.path, f"{where}.anchors.slot_ids[0]")
        names = item.get("key_entity_names", item.get("key_entities"))
        return MacroEvent(
            id=_required_id(item, where, self.path),
            parent_id=parent_id,
            label=_text(item.get("label")),
            summary=_text(item.get("summary", item.get("description"))),
            time_range=_time_range(item.get("time_range"), self.path, f"{where}.time_range"),
            key_entity_names=_strings(names),
            slot=slot,
            subevent_ids=_strings(item.get("subevent_ids")),
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
            title=_text(raw.get("title")),
            description=_text(raw.get("description")),
            themes=_strings(raw.get("themes")),
            key_entities=_strings(raw.get("key_entities")),
            emotional_tone=raw.get("emotional_tone"),
            time_range=(
                span
                if time_value is None
                else _time_range(time_value, self.path, "root_event.time_range")
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
                relations.append(_relation(edge, default, self.path, where))
        for where, edge in self.items("root_relations"):
            if str(edge.get("source_id")) not in super_ids:
                raise self.fail(
                    f"{where}.source_id", f"{edge.get('source_id')!r} is not a SuperEvent"
                )
            if str(edge.get("target_id")) != root_id:
                raise self.fail(f"{where}.target_id", f"{edge.get('target_id')!r} is not the root")
        return relations


def _slot_index(macros: list[MacroEvent], graph_file: Path) -> dict[int, MacroEvent]:
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


def _subgraph_files(phase2: Path) -> list[Path]:
    files = []
    for episode in sorted(p for p in phase2.glob("episode_*") if p.is_dir()):
        flat, nested = episode / SUBGRAPH_FILE, episode / episode.name / SUBGRAPH_FILE
        if flat.is_file():
            files.append(flat)
        elif nested.is_file():
            files.append(nested)
        else:
            logger.warning("%s holds no %s; skipped", episode, SUBGRAPH_FILE)
    return files


def _read_subgraph(
    path: Path, slots: dict[int, MacroEvent], entity_span_s: float
) -> tuple[list[EntityNode | EventNode | OCRTextNode], list[Relation]]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise MemoryFormatError(f"{path}: expected a JSON object at the top level")
    slot_value = data.get("slot_id")
    if slot_value is None:
        match = re.search(r"episode_(\d+)", str(path.parent))
        if match is None:
            raise MemoryFormatError(f"{path}: field slot_id is missing")
        slot_value = int(match.group(1))
    slot = _int(slot_value, path, "slot_id")
    macro = slots.get(slot)
    if macro is None:
        logger.warning("%s: no MacroEvent has slot %s (anchors.slot_ids); skipped", path, slot)
        return [], []
    start = macro.time_range.start
    if data.get("start_sec") is not None:
        start = _round(_number(data["start_sec"], path, "start_sec"))
    prefix = f"slot{slot}_"

    def global_id(value: Any) -> str:
        text = str(value)
        return text if text.startswith(prefix) else prefix + text

    nodes_raw = data.get("nodes") or []
    if not isinstance(nodes_raw, list):
        raise MemoryFormatError(f"{path}: field nodes must be a list")
    nodes: list[EntityNode | EventNode | OCRTextNode] = []
    seen: set[str] = set()
    for index, item in enumerate(nodes_raw):
        where = f"nodes[{index}]"
        if not isinstance(item, dict):
            raise MemoryFormatError(f"{path}: field {where} must be an object")
        node_type = item.get("node_type")
        if node_type == "MacroEvent":
            continue  # the MacroEvent itself is read from phase3
        local = item.get("node_id") or item.get("entity_id") or item.get("event_id")
        local = local or item.get("ocr_id")
        if local is None or str(local) == "":
            raise MemoryFormatError(f"{path}: field {where}.node_id is missing")
        node_id = global_id(local)
        if node_id in seen:
            raise MemoryFormatError(f"{path}: field {where}.node_id {node_id!r} is used twice")
        seen.add(node_id)
        common = {"id": node_id, "parent_id": macro.id}
        if node_type == "Entity":
            nodes.append(_entity(item, common, start, macro, entity_span_s, path, where))
        elif node_type == "Event":
            nodes.append(
                EventNode(
                    **common,
                    action=_text(item.get("action")),
                    description=_text(item.get("description")),
                    event_type=_text(item.get("event_type")),
                    time_range=_local_range(item, start, macro, path, where),
                    subject_ids=tuple(
                        global_id(i) for i in _strings(item.get("subject_entity_ids"))
                    ),
                    object_ids=tuple(global_id(i) for i in _strings(item.get("object_entity_ids"))),
                )
            )
        elif node_type == "OCRText":
            nodes.append(
                OCRTextNode(
                    **common,
                    text=_text(item.get("text")),
                    ocr_type=_text(item.get("ocr_type")),
                    description=_text(item.get("description")),
                    time_range=_local_range(item, start, macro, path, where),
                )
            )
        else:
            raise MemoryFormatError(
                f"{path}: field {where}.node_type is {node_type!r}; expected Entity, Event or "
                "OCRText"
            )
    edges_raw = data.get("edges") or []
    if not isinstance(edges_raw, list):
        raise MemoryFormatError(f"{path}: field edges must be a list")
    edges = []
    for index, edge in enumerate(edges_raw):
        where = f"edges[{index}]"
        if not isinstance(edge, dict):
            raise MemoryFormatError(f"{path}: field {where} must be an object")
        source, target = global_id(edge.get("source_id")), global_id(edge.get("target_id"))
        if source not in seen or target not in seen:
            logger.warning(
                "%s: %s joins %s and %s, not both nodes here; skipped", path, where, source, target
            )
            continue
        edges.append(
            _relation({**edge, "source_id": source, "target_id": target}, "SEMANTIC", path, where)
        )
    return nodes, edges


def _entity(
    item: dict[str, Any],
    common: dict[str, Any],
    start: float,
    macro: MacroEvent,
    span_s: float,
    path: Path,
    where: str,
) -> EntityNode:
    name = item.get("name")
    entity_type = _text(item.get("entity_type"))
    description = _text(item.get("description"))
    inferred = name is None or str(name).strip() in ("", "None", "null")
    if inferred:
        base = entity_type or "entity"
        name = f"{base}: {description}" if description else base
    grounding = item.get("visual_grounding") or {}
    if not isinstance(grounding, dict):
        raise MemoryFormatError(f"{path}: field {where}.visual_grounding must be an object")
    moment = grounding.get("primary_time_sec")
    grounding_time = None
    time_range = macro.time_range
    if moment is not None:
        grounding_time = _round(start + _number(moment, path, f"{where}.visual_grounding"))
        time_range = TimeRange(start=grounding_time, end=_round(grounding_time + span_s))
    if item.get("time_range") is not None:  # written by our exporter; MemDreamer has none
        time_range = _local_range(item, start, macro, path, where)
    attributes = item.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise MemoryFormatError(f"{path}: field {where}.attributes must be an object")
    features = grounding.get("distinctive_features")
    return EntityNode(
        **common,
        name=str(name),
        entity_type=entity_type,
        description=description,
        attributes=attributes,
        grounding_time=grounding_time,
        distinctive_features=None if features is None else str(features),
        name_inferred=inferred,
        time_range=time_range,
    )


def _local_range(
    item: dict[str, Any], start: float, macro: MacroEvent, path: Path, where: str
) -> TimeRange:
    value = item.get("time_range")
    if value is None:
        return macro.time_range
    return _time_range(value, path, f"{where}.time_range", offset=start)


def _read_unification(path: Path) -> list[EntityGroup]:
    if not path.is_file():
        return []
    data = read_json(path)
    mappings = data.get("entity_mappings", []) if isinstance(data, dict) else data
    if not isinstance(mappings, list):
        raise MemoryFormatError(f"{path}: field entity_mappings must be a list")
    groups = []
    for index, item in enumerate(mappings):
        canonical = item.get("canonical_name") if isinstance(item, dict) else None
        if not isinstance(canonical, str) or not canonical.strip():
            raise MemoryFormatError(
                f"{path}: field entity_mappings[{index}].canonical_name is missing"
            )
        canonical_type = item.get("canonical_type")
        groups.append(
            EntityGroup(
                canonical_name=canonical,
                canonical_type=None if canonical_type is None else str(canonical_type),
                variants=_strings(item.get("variants")),
            )
        )
    return groups


# --------------------------------------------------------------------------- shared parsing


def _required_id(item: dict[str, Any], where: str, path: Path) -> str:
    value = item.get("node_id")
    if value is None or str(value).strip() == "":
        raise MemoryFormatError(f"{path}: field {where}.node_id is missing")
    return str(value)


def _round(value: float) -> float:
    return round(float(value), _TIME_DECIMALS) + 0.0


def _number(value: Any, path: Path, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MemoryFormatError(f"{path}: field {field} must be a number of seconds, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise MemoryFormatError(f"{path}: field {field} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise MemoryFormatError(f"{path}: field {field} must be finite, got {value!r}")
    return number


def _int(value: Any, path: Path, field: str) -> int:
    number = _number(value, path, field)
    if number != int(number):
        raise MemoryFormatError(f"{path}: field {field} must be an integer, got {value!r}")
    return int(number)


def _time_range(value: Any, path: Path, field: str, *, offset: float = 0.0) -> TimeRange:
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
    start_s = _round(offset + _number(start, path, f"{field}.start"))
    end_s = _round(offset + _number(end, path, f"{field}.end"))
    if end_s < start_s:
        raise MemoryFormatError(f"{path}: field {field} ends before it starts: {value!r}")
    return TimeRange(start=start_s, end=end_s)


def _relation(edge: dict[str, Any], default_type: str, path: Path, where: str) -> Relation:
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
        type=relation_type,  # type: ignore[arg-type]
        label=_text(edge.get("relation_label")),
        reason=None if reason is None else str(reason),
    )


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value if v is not None)


# --------------------------------------------------------------------------- export


def export_memdreamer(memory: VideoMemory, destination: str | Path) -> Path:
    """Write ``memory`` in MemDreamer's layout into a new or empty directory.

    MacroEvents without a slot get the next free slot numbers. Relations that the layout
    cannot hold (between different levels or across subgraphs) are skipped with a warning.
    """
    dest = Path(destination)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise MemoryFormatError(f"cannot export to {dest}: choose a new or empty directory")
    macros = memory.macro_events()
    slots = _assign_slots(macros)
    kinds = {n.id: n.kind for n in memory.nodes()}
    macro_of = {n.id: n.parent_id for n in memory.nodes(("Entity", "Event", "OCRText"))}
    level_relations: dict[str, list[dict[str, Any]]] = {"SuperEvent": [], "MacroEvent": []}
    subgraph_relations: dict[str, list[Relation]] = {m.id: [] for m in macros}
    for relation in memory.relations():
        source_kind, target_kind = kinds[relation.source], kinds[relation.target]
        if source_kind == target_kind and source_kind in level_relations:
            level_relations[source_kind].append(
                _relation_json(relation, relation.source, relation.target)
            )
        elif (
            relation.source in macro_of
            and relation.target in macro_of
            and macro_of[relation.source] == macro_of[relation.target]
        ):
            subgraph_relations[macro_of[relation.source]].append(relation)  # type: ignore[index]
        else:
            logger.warning(
                "relation %s -%s-> %s cannot be written in MemDreamer's layout; skipped",
                relation.source,
                relation.label or relation.type,
                relation.target,
            )
    root = memory.root
    supers = memory.super_events()
    graph = {
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
    dest.mkdir(parents=True, exist_ok=True)
    for macro in macros:
        slot = slots[macro.id]
        document = _subgraph_json(memory, macro, slot, subgraph_relations[macro.id])
        write_json_atomic(dest / "phase2" / f"episode_{slot:03d}" / SUBGRAPH_FILE, document)
    if memory.unification:
        mappings = [
            {
                "canonical_name": g.canonical_name,
                "canonical_type": g.canonical_type,
                "variants": list(g.variants),
            }
            for g in memory.unification
        ]
        write_json_atomic(dest / UNIFICATION_FILE, {"entity_mappings": mappings})
    write_json_atomic(dest / GRAPH_FILE, graph)
    return dest


def _assign_slots(macros: list[MacroEvent]) -> dict[str, int]:
    slots = {m.id: m.slot for m in macros if m.slot is not None}
    next_slot = max(slots.values(), default=-1) + 1
    for macro in macros:
        if macro.slot is None:
            slots[macro.id] = next_slot
            next_slot += 1
    return slots  # type: ignore[return-value]


def _relation_json(relation: Relation, source: str, target: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "source_id": source,
        "target_id": target,
        "relation_type": relation.type,
        "relation_label": relation.label,
    }
    if relation.reason is not None:
        data["reason"] = relation.reason
    return data


def _subgraph_json(
    memory: VideoMemory, macro: MacroEvent, slot: int, relations: list[Relation]
) -> dict[str, Any]:
    start = macro.time_range.start
    prefix = f"slot{slot}_"

    def local(node_id: str) -> str:
        return node_id[len(prefix) :] if node_id.startswith(prefix) else node_id

    def local_range(time_range: TimeRange) -> list[float]:
        return [_round(time_range.start - start), _round(time_range.end - start)]

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
                grounding: dict[str, Any] = {
                    "primary_time_sec": _round(node.grounding_time - start)
                }
                if node.distinctive_features is not None:
                    grounding["distinctive_features"] = node.distinctive_features
                entry["visual_grounding"] = grounding
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
        "edges": [_relation_json(r, local(r.source), local(r.target)) for r in relations],
    }
