"""Reading one video's MemDreamer memory into a validated ``VideoMemory``.

The documents are read in the order they depend on each other: the phase-3 hierarchy first
(``hierarchy``: Root, SuperEvents, MacroEvents and their relations), then each episode's
subgraph, placed under the MacroEvent whose slot is its ``anchors.slot_ids[0]``, then the
unification table and ``embeddings.json`` (``vectors``). Where the files are is ``layout``'s
business; how each field becomes ours is ``fields``'.

Documented fallbacks (logged as warnings, never silent): a missing root is made from the
SuperEvents; an episode folder without a subgraph file, a subgraph whose slot no MacroEvent
claims, a subgraph edge whose end is not a node of that subgraph, and vectors for ids that are
not subgraph nodes are skipped; an ``embeddings.json`` that lacks a vector for some node is
not imported (the vectors must cover every node). Broken structure (a SuperEvent naming a
MacroEvent that does not exist, a MacroEvent under no SuperEvent, a missing phase2 folder,
malformed JSON, vectors of different lengths) is an error naming the file and field.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.formats.json_files import read_json
from videotapestry.memory.formats.memdreamer import fields
from videotapestry.memory.formats.memdreamer.fields import DEFAULT_ENTITY_SPAN_S, SlotContext
from videotapestry.memory.formats.memdreamer.hierarchy import read_hierarchy, slot_index
from videotapestry.memory.formats.memdreamer.layout import (
    find_memdreamer_files,
    inside,
    keyframe_on_disk,
    subgraph_files,
)
from videotapestry.memory.formats.memdreamer.vectors import (
    MEMDREAMER_EMBEDDING_MODEL,
    read_vectors,
)
from videotapestry.memory.manifest import new_manifest
from videotapestry.memory.types import (
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    Relation,
)
from videotapestry.memory.video_memory import VideoMemory

logger = logging.getLogger(__name__)


def import_memdreamer(
    source: str | Path,
    *,
    entity_span_s: float = DEFAULT_ENTITY_SPAN_S,
    video_fingerprint: str | None = None,
    embedding_model: str | None = None,
    outside_keyframes: bool = False,
) -> VideoMemory:
    """Read one video's MemDreamer memory directory into a validated ``VideoMemory``.

    A ``keyframe_path`` that leads outside the directory is dropped with a warning, unless
    ``outside_keyframes``: for a memory this machine exported itself (``export_memdreamer``
    records where the images already are instead of copying them), whose paths are kept as
    they are (still never read here).

    ``video_fingerprint`` (of the video the memory was built from) goes into the manifest so
    later loads can refuse a different video; MemDreamer itself does not record one.
    ``embedding_model`` names the model of ``embeddings.json`` (default: the one the graph
    file records, else ``MEMDREAMER_EMBEDDING_MODEL``). Name it exactly as the configuration
    does: query time reuses the vectors only for a model of that name and vector length.
    """
    files = find_memdreamer_files(source)
    graph_data = read_json(files.graph_file)
    hierarchy = read_hierarchy(files.graph_file, graph_data)
    relations = list(hierarchy.relations)
    slots = slot_index(hierarchy.macro_events, files.graph_file)
    subgraph_nodes = []
    for episode, subgraph_file in subgraph_files(files.phase2, files.root):
        nodes, edges = _read_subgraph(
            subgraph_file,
            episode,
            slots,
            entity_span_s,
            keyframes_root=files.root,
            outside_keyframes=outside_keyframes,
        )
        subgraph_nodes.extend(nodes)
        relations.extend(edges)
    unification = _read_unification(files.unification_file)
    manifest = new_manifest(
        "memdreamer",
        source_path=str(files.root.resolve()),
        video_fingerprint=video_fingerprint,
    )
    memory = VideoMemory(
        root=hierarchy.root,
        super_events=hierarchy.super_events,
        macro_events=list(slots.values()) + [m for m in hierarchy.macro_events if m.slot is None],
        subgraph_nodes=subgraph_nodes,
        relations=relations,
        unification=unification,
        manifest=manifest,
        origin=str(files.root),
    )
    embeddings = None
    if files.embeddings_file is not None:
        recorded = graph_data.get("embedding_model")
        model = embedding_model or (recorded if isinstance(recorded, str) and recorded else None)
        embeddings = read_vectors(
            files.embeddings_file, memory, model or MEMDREAMER_EMBEDDING_MODEL
        )
    manifest = manifest.model_copy(
        update={
            "counts": memory.counts(),
            "embedding_model": embeddings.model_name if embeddings is not None else None,
        }
    )
    return memory.with_manifest(manifest).with_embeddings(embeddings)


def _read_subgraph(
    path: Path,
    episode: Path,
    slots: dict[int, MacroEvent],
    entity_span_s: float,
    *,
    keyframes_root: Path,
    outside_keyframes: bool = False,
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
    slot = fields.integer(slot_value, path, "slot_id")
    macro = slots.get(slot)
    if macro is None:
        logger.warning("%s: no MacroEvent has slot %s (anchors.slot_ids); skipped", path, slot)
        return [], []
    start = macro.time_range.start
    if data.get("start_sec") is not None:
        start = fields.round_time(fields.number(data["start_sec"], path, "start_sec"))
    context = SlotContext(path=path, slot=slot, macro=macro, start=start)
    nodes_raw = data.get("nodes") or []
    if not isinstance(nodes_raw, list):
        raise MemoryFormatError(f"{path}: field nodes must be a list")
    nodes: list[EntityNode | EventNode | OCRTextNode] = []
    seen: set[str] = set()
    for index, item in enumerate(nodes_raw):
        where = f"nodes[{index}]"
        if not isinstance(item, dict):
            raise MemoryFormatError(f"{path}: field {where} must be an object")
        if item.get("node_type") == "MacroEvent":
            continue  # the MacroEvent itself is read from phase3
        key, node_type = fields.node_key(item, path, where)
        local = str(item[key])
        node_id = context.global_id(local)
        if node_id in seen:
            raise MemoryFormatError(f"{path}: field {where}.{key} {node_id!r} is used twice")
        seen.add(node_id)
        if node_type == "Entity":
            local_ids = tuple(dict.fromkeys((local, fields.local_node_id(slot, node_id))))
            keyframe = _keyframe(
                item, local_ids, episode, keyframes_root, outside=outside_keyframes
            )
            nodes.append(
                fields.entity_node(
                    item, node_id, context, where, span_s=entity_span_s, keyframe=keyframe
                )
            )
        elif node_type == "Event":
            nodes.append(fields.event_node(item, node_id, context, where))
        elif node_type == "OCRText":
            nodes.append(fields.ocr_text_node(item, node_id, context, where))
        else:
            raise MemoryFormatError(
                f"{path}: field {where}.node_type is {node_type!r}; expected Entity, Event or "
                "OCRText"
            )
    return nodes, _subgraph_edges(data, context, seen)


def _subgraph_edges(data: dict[str, Any], context: SlotContext, seen: set[str]) -> list[Relation]:
    path = context.path
    edges_raw = data.get("edges") or []
    if not isinstance(edges_raw, list):
        raise MemoryFormatError(f"{path}: field edges must be a list")
    edges = []
    for index, edge in enumerate(edges_raw):
        where = f"edges[{index}]"
        if not isinstance(edge, dict):
            raise MemoryFormatError(f"{path}: field {where} must be an object")
        source = context.global_id(edge.get("source_id"))
        target = context.global_id(edge.get("target_id"))
        if source not in seen or target not in seen:
            logger.warning(
                "%s: %s joins %s and %s, not both nodes here; skipped", path, where, source, target
            )
            continue
        edges.append(
            fields.relation(
                {**edge, "source_id": source, "target_id": target}, "SEMANTIC", path, where
            )
        )
    return edges


def _keyframe(
    item: dict[str, Any],
    local_ids: tuple[str, ...],
    episode: Path,
    root: Path,
    *,
    outside: bool = False,
) -> str | None:
    """An Entity's keyframe: a path the JSON names (our export), else best_frame.jpg on disk.

    Paths are absolute, so a native memory made from this import still finds the images. A
    named path that leads outside ``root`` (``../``, an absolute path elsewhere, a link out)
    is dropped with a warning, so nothing outside the memory is ever read or copied for it.
    """
    given = item.get("keyframe_path")
    if isinstance(given, str) and given:
        named = root / given  # an absolute ``given`` replaces root
        if outside:  # kept as our own export wrote it
            return given if Path(given).is_absolute() else str(root.resolve() / given)
        if inside(root, named):
            return str(named.resolve())
        logger.warning(
            "%s: keyframe_path %r of %s leads outside the memory directory; dropped",
            episode,
            given,
            "/".join(local_ids),
        )
    found = keyframe_on_disk(episode, local_ids, root)
    return str(found.resolve()) if found is not None else None


def _read_unification(path: Path | None) -> list[EntityGroup]:
    if path is None:
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
                variants=fields.strings(item.get("variants")),
            )
        )
    return groups
