"""Import and export of memories in MemDreamer's on-disk layout (SPEC §3).

Researchers bring memories that MemDreamer built (its prebuilt benchmark memories are public),
so the importer accepts every layout variant seen in them::

    phase3/hierarchical_graph_final.json         (or phase3/hierarchical_graph.json)
    phase3/intermediate/step2p5_entity_unification.json   (optional)
    phase2/episode_*/step5_subgraph.json         (or episode_X/episode_X/step5_subgraph.json)

and the layout of MemDreamer's released memories, one folder per video under a root
(``<root>/<video_key>/``), whose phase-3 folder is named ``phase4/`` and whose subgraphs live
in ``phase2_topdown/``, with ``embeddings.json`` (``{node_id: [float, ...]}`` for the
Entity/Event/OCRText nodes, made with Qwen3-Embedding-8B) and each Entity's keyframe at
``phase2_topdown/episode_{slot:04d}/episode_{slot:04d}/features/<local_id>/best_frame.jpg``.

It turns their conventions into ours: subgraph times local to the slot become absolute
(``start_sec`` added), an Entity's time is its ``visual_grounding.primary_time_sec`` plus a
short span, time ranges given as ``{start, end}`` or ``[start, end]`` are both read, an Entity
with a null name is named from its type and description, a subgraph node's id is its
``node_id``, ``entity_id``, ``event_id`` or ``ocr_id``, subgraph ids get the ``slot{N}_``
prefix unless they already carry it, and a MacroEvent's subgraph is the one whose slot is
``anchors.slot_ids[0]``. Vectors from ``embeddings.json`` become the node embeddings, recorded
under their model's name, so query time reuses them only with that same model and otherwise
recomputes (``ensure_embeddings``). ``export_memdreamer`` writes the phase2/phase3 layout
back (with ``embeddings.json`` when the memory has vectors), so import → export → import gives
an equal memory for every field we model.

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
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from videotapestry.embeddings import Embedder
from videotapestry.errors import MemoryFormatError
from videotapestry.files import write_json_atomic
from videotapestry.memory.embedding_index import (
    current_digest,
    embeddings_match,
    ensure_embeddings,
)
from videotapestry.memory.storage import (
    is_native_memory,
    load_embeddings,
    new_manifest,
    read_json,
    read_manifest,
    save_memory,
)
from videotapestry.memory.types import (
    RELATION_TYPES,
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    MemoryManifest,
    NodeEmbeddings,
    OCRTextNode,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
)
from videotapestry.memory.video_memory import VideoMemory

logger = logging.getLogger(__name__)

GRAPH_FILE = Path("phase3") / "hierarchical_graph_final.json"
FALLBACK_GRAPH_FILE = Path("phase3") / "hierarchical_graph.json"
_UNIFICATION_NAME = Path("intermediate") / "step2p5_entity_unification.json"
UNIFICATION_FILE = Path("phase3") / _UNIFICATION_NAME
SUBGRAPH_FILE = "step5_subgraph.json"
EMBEDDINGS_FILE = "embeddings.json"
KEYFRAME_FILE = "best_frame.jpg"
#: The released memories name the phase-3 folder ``phase4/``; MemDreamer's scripts say phase3.
PHASE3_DIRS = ("phase3", "phase4")
#: The folder names of MemDreamer's released memories (what ``export_released_layout`` writes).
RELEASED_PHASE3 = PHASE3_DIRS[1]
#: Subgraph folders, in order of preference: ours and the scripts', then the release's.
PHASE2_DIRS = ("phase2", "phase2_topdown")
RELEASED_PHASE2 = PHASE2_DIRS[1]
GRAPH_NAMES = ("hierarchical_graph_final.json", "hierarchical_graph.json")
#: The model that made the vectors of MemDreamer's ``embeddings.json`` (sentence-transformers
#: name); a graph file we exported records another one under ``embedding_model``.
MEMDREAMER_EMBEDDING_MODEL = "Qwen/Qwen3-Embedding-8B"
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
#: Files or folders that mark a directory as one video's MemDreamer memory.
_MARKERS = (*PHASE3_DIRS, *PHASE2_DIRS, EMBEDDINGS_FILE)


@dataclass(frozen=True)
class MemDreamerLayout:
    """Where one video's files are, whichever variant of the layout the memory uses."""

    root: Path
    graph_file: Path
    phase2: Path
    unification_file: Path | None
    embeddings_file: Path | None


def _graph_files(root: Path) -> list[Path]:
    """Existing graph files, best first: a final one in either phase-3 folder before a draft."""
    return [
        root / folder / name
        for name in GRAPH_NAMES
        for folder in PHASE3_DIRS
        if (root / folder / name).is_file()
    ]


def is_memdreamer_memory(path: str | Path) -> bool:
    return bool(_graph_files(Path(path)))


def memdreamer_layout(source: str | Path) -> MemDreamerLayout:
    """Find the files of one video's memory; errors name what is missing and where."""
    root = Path(source)
    if not root.is_dir():
        raise MemoryFormatError(f"MemDreamer memory directory {root} does not exist")
    graphs = _graph_files(root)
    if not graphs:
        expected = " or ".join(f"{folder}/{GRAPH_NAMES[0]}" for folder in PHASE3_DIRS)
        raise MemoryFormatError(
            f"{root} is not a MemDreamer memory: neither {expected} (nor a non-final "
            f"{GRAPH_NAMES[1]}) exists"
        )
    graph_file = graphs[0]
    if len(graphs) > 1 and graphs[1].name == graph_file.name:
        logger.warning("%s and %s both exist; reading %s", graph_file, graphs[1], graph_file)
    folders = [root / name for name in PHASE2_DIRS if (root / name).is_dir()]
    with_episodes = [f for f in folders if any(f.glob("episode_*"))]
    if len(with_episodes) > 1:
        first, second = with_episodes[:2]
        logger.warning("%s and %s both hold episodes; reading %s", first, second, first)
    if not folders:
        raise MemoryFormatError(
            f"{root}: the phase2 folder is missing (expected {' or '.join(PHASE2_DIRS)}/"
            f"episode_*/{SUBGRAPH_FILE} with the MacroEvent subgraphs)"
        )
    # Beside the graph that is read, else in the other phase-3 folder.
    unifications = [
        d / _UNIFICATION_NAME for d in (graph_file.parent, *(root / n for n in PHASE3_DIRS))
    ]
    unification = next((f for f in unifications if f.is_file()), None)
    embeddings = root / EMBEDDINGS_FILE
    return MemDreamerLayout(
        root=root,
        graph_file=graph_file,
        phase2=(with_episodes or folders)[0],
        unification_file=unification,
        embeddings_file=embeddings if embeddings.is_file() else None,
    )


def memdreamer_videos(root: str | Path) -> dict[str, Path]:
    """The per-video folders of a release root (``<root>/<video_key>/``), by video key.

    A folder counts when it holds any part of the layout (a phase folder or embeddings.json),
    so a video whose memory is incomplete is reported by the import instead of ignored.
    """
    root = Path(root)
    if not root.is_dir():
        return {}
    return {
        child.name: child
        for child in sorted(root.iterdir())
        if child.is_dir() and any((child / marker).exists() for marker in _MARKERS)
    }


# --------------------------------------------------------------------------- import


def import_memdreamer(
    source: str | Path,
    *,
    entity_span_s: float = DEFAULT_ENTITY_SPAN_S,
    video_fingerprint: str | None = None,
    embedding_model: str | None = None,
) -> VideoMemory:
    """Read one video's MemDreamer memory directory into a validated ``VideoMemory``.

    ``video_fingerprint`` (of the video the memory was built from) goes into the manifest so
    later loads can refuse a different video; MemDreamer itself does not record one.
    ``embedding_model`` names the model of ``embeddings.json`` (default: the one the graph
    file records, else ``MEMDREAMER_EMBEDDING_MODEL``). Name it exactly as the configuration
    does: query time reuses the vectors only for a model of that name and vector length.
    """
    layout = memdreamer_layout(source)
    graph_data = read_json(layout.graph_file)
    reader = _GraphReader(layout.graph_file, graph_data)
    super_events, macro_events, relations, root = reader.read()
    slots = _slot_index(macro_events, layout.graph_file)
    subgraph_nodes = []
    for episode, subgraph_file in _subgraph_files(layout.phase2):
        nodes, edges = _read_subgraph(
            subgraph_file, episode, slots, entity_span_s, keyframes_root=layout.root
        )
        subgraph_nodes.extend(nodes)
        relations.extend(edges)
    unification = _read_unification(layout.unification_file)
    manifest = new_manifest(
        "memdreamer",
        source_path=str(layout.root.resolve()),
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
        origin=str(layout.root),
    )
    embeddings = None
    if layout.embeddings_file is not None:
        recorded = graph_data.get("embedding_model")
        model = embedding_model or (recorded if isinstance(recorded, str) and recorded else None)
        embeddings = _read_embeddings(
            layout.embeddings_file, memory, model or MEMDREAMER_EMBEDDING_MODEL
        )
    manifest = manifest.model_copy(
        update={
            "counts": memory.counts(),
            "embedding_model": embeddings.model_name if embeddings is not None else None,
        }
    )
    return memory.with_manifest(manifest).with_embeddings(embeddings)


def _read_embeddings(path: Path, memory: VideoMemory, model: str) -> NodeEmbeddings | None:
    """``{node_id: [float, ...]}`` as L2-normalized rows in the memory's embedding order.

    The digest of the imported node texts is recorded with them, so the vectors stay in use
    exactly as long as those texts do (an edited memory is re-embedded, never mismatched).
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise MemoryFormatError(
            f"{path}: expected a JSON object mapping node ids to vectors, got {type(data).__name__}"
        )
    ids, digest = current_digest(memory)
    known = set(ids)
    unknown = [key for key in data if key not in known]
    if unknown:
        logger.warning(
            "%s: %d vector(s) for ids that are not Entity/Event/OCRText nodes here (e.g. %s); "
            "ignored",
            path,
            len(unknown),
            ", ".join(unknown[:3]),
        )
    missing = [node_id for node_id in ids if node_id not in data]
    if missing:
        logger.warning(
            "%s has no vector for %d of %d nodes (e.g. %s); not imported: the configured "
            "embedding model computes all of them when the memory is used",
            path,
            len(missing),
            len(ids),
            ", ".join(missing[:3]),
        )
        return None
    if not ids:
        return None
    rows = [_vector(data[node_id], path, node_id) for node_id in ids]
    dimension = rows[0].shape[0]
    for node_id, row in zip(ids, rows, strict=True):
        if row.shape[0] != dimension:
            raise MemoryFormatError(
                f"{path}: field {node_id!r} has {row.shape[0]} values but {ids[0]!r} has "
                f"{dimension}; all vectors must come from one model"
            )
    matrix = np.stack(rows)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return NodeEmbeddings(model, ids, (matrix / norms).astype(np.float32), digest)


def _vector(value: Any, path: Path, node_id: str) -> np.ndarray:
    where = f"{path}: field {node_id!r}"
    if not isinstance(value, list) or not value:
        raise MemoryFormatError(f"{where} must be a non-empty list of numbers")
    try:
        row = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise MemoryFormatError(f"{where} must be a list of numbers") from None
    if row.ndim != 1 or not np.isfinite(row).all():
        raise MemoryFormatError(f"{where} must be a flat list of finite numbers")
    if not np.any(row):
        raise MemoryFormatError(f"{where} is all zeros; it cannot be compared by cosine")
    return row


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


def _subgraph_files(phase2: Path) -> list[tuple[Path, Path]]:
    """(episode folder, its subgraph file) for every episode, flat or nested one level."""
    files = []
    for episode in sorted(p for p in phase2.glob("episode_*") if p.is_dir()):
        flat, nested = episode / SUBGRAPH_FILE, episode / episode.name / SUBGRAPH_FILE
        if flat.is_file():
            files.append((episode, flat))
        elif nested.is_file():
            files.append((episode, nested))
        else:
            logger.warning("%s holds no %s; skipped", episode, SUBGRAPH_FILE)
    return files


def _keyframe(
    item: dict[str, Any], local_ids: Sequence[str], episode: Path, root: Path
) -> str | None:
    """An Entity's keyframe: a path the JSON names (our export), else best_frame.jpg on disk.

    The release keeps it in ``episode_X/episode_X/features/<local_id>/``; a flat
    ``episode_X/features/`` is looked in too. Paths are absolute, so a native memory made
    from this import still finds the images.
    """
    given = item.get("keyframe_path")
    if isinstance(given, str) and given:
        return str(root.resolve() / given) if not Path(given).is_absolute() else given
    for folder in (episode / episode.name, episode):
        for local in local_ids:
            candidate = folder / "features" / local / KEYFRAME_FILE
            if candidate.is_file():
                return str(candidate.resolve())
    return None


def _read_subgraph(
    path: Path,
    episode: Path,
    slots: dict[int, MacroEvent],
    entity_span_s: float,
    *,
    keyframes_root: Path,
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
        present = [(k, kind) for k, kind in _ID_KEYS if item.get(k) not in (None, "")]
        if not present:
            keys = ", ".join(k for k, _ in _ID_KEYS)
            raise MemoryFormatError(f"{path}: field {where} has no id (none of {keys})")
        key = present[0][0]
        node_type = node_type or next((kind for _, kind in present if kind), None)
        local = str(item[key])
        node_id = global_id(local)
        if node_id in seen:
            raise MemoryFormatError(f"{path}: field {where}.{key} {node_id!r} is used twice")
        seen.add(node_id)
        common = {"id": node_id, "parent_id": macro.id}
        if node_type == "Entity":
            local_ids = tuple(dict.fromkeys((local, node_id[len(prefix) :])))
            keyframe = _keyframe(item, local_ids, episode, keyframes_root)
            nodes.append(_entity(item, common, start, macro, entity_span_s, path, where, keyframe))
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
    keyframe: str | None,
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
    return EntityNode(
        **common,
        name=str(name),
        entity_type=entity_type,
        description=description,
        attributes=attributes,
        grounding_time=grounding_time,
        distinctive_features=_features(grounding.get("distinctive_features")),
        name_inferred=inferred,
        keyframe_path=keyframe,
        time_range=time_range,
    )


def _features(value: Any) -> str | tuple[str, ...] | None:
    """One text (older memories) stays a text; the release's list stays a list of texts."""
    if value is None:
        return None
    if isinstance(value, list):
        return _strings(value)
    return str(value)


def _local_range(
    item: dict[str, Any], start: float, macro: MacroEvent, path: Path, where: str
) -> TimeRange:
    value = item.get("time_range")
    if value is None:
        return macro.time_range
    return _time_range(value, path, f"{where}.time_range", offset=start)


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
                variants=_strings(item.get("variants")),
            )
        )
    return groups


# --------------------------------------------------------------------------- into a native dir


@dataclass(frozen=True)
class ImportOutcome:
    """What ``import_memdreamer_into`` wrote, and where its node vectors came from."""

    destination: Path
    manifest: MemoryManifest
    #: "embeddings.json", "kept" (the destination's own), "computed", or None (no vectors).
    embeddings_from: str | None


def import_memdreamer_into(
    source: str | Path,
    destination: str | Path,
    *,
    force: bool = False,
    video_fingerprint: str | None = None,
    embedding_model: str | None = None,
    preferred_model: str | None = None,
    embedder: Embedder | None = None,
    entity_span_s: float = DEFAULT_ENTITY_SPAN_S,
) -> ImportOutcome:
    """Import one video's memory and save it as a native memory in ``destination``.

    A non-empty destination is refused unless ``force``; then it must be a videotapestry
    memory, and what it already holds is not thrown away blindly: its stored vectors are kept
    while they are still valid for the imported nodes (same ids and texts; see
    ``keep_valid_embeddings``), and its recorded video fingerprint is kept when the same
    source is imported again without a new one. ``embedder`` (``--embed``) then makes sure the
    vectors are that model's, reusing whichever candidate already is.
    """
    dest = Path(destination)
    stored, previous = _existing_destination(dest, force=force)
    source_path = str(Path(source).resolve())
    if (
        video_fingerprint is None
        and previous is not None
        and previous.source_path == source_path
        and previous.video_fingerprint is not None
    ):
        logger.info("%s: keeping the recorded video fingerprint of %s", dest, source_path)
        video_fingerprint = previous.video_fingerprint
    memory = import_memdreamer(
        source,
        entity_span_s=entity_span_s,
        video_fingerprint=video_fingerprint,
        embedding_model=embedding_model,
    )
    imported = memory.embeddings
    memory = keep_valid_embeddings(memory, [stored, imported], preferred_model=preferred_model)
    chosen = memory.embeddings
    if embedder is not None:
        memory = ensure_embeddings(memory, embedder)
    origin = None
    if memory.embeddings is not None:
        if memory.embeddings is not chosen:
            origin = "computed"
        else:
            origin = "kept" if chosen is stored else EMBEDDINGS_FILE
    manifest = save_memory(memory, dest)
    return ImportOutcome(destination=dest, manifest=manifest, embeddings_from=origin)


def _existing_destination(
    dest: Path, *, force: bool
) -> tuple[NodeEmbeddings | None, MemoryManifest | None]:
    """Refuse what must not be overwritten; else the vectors and manifest stored there."""
    if dest.exists() and not dest.is_dir():
        raise MemoryFormatError(f"cannot import into {dest}: it is a file, not a directory")
    if not dest.is_dir() or not any(dest.iterdir()):
        return None, None
    if not force:
        raise MemoryFormatError(
            f"{dest} is not empty; import into a new or empty directory, or pass --force to "
            "replace the memory there (its embeddings are kept while still valid)"
        )
    if not is_native_memory(dest):
        raise MemoryFormatError(
            f"refusing to import into {dest}: it is not empty and not a videotapestry memory, "
            "and --force only replaces a memory; choose a new or empty directory"
        )
    previous = read_manifest(dest)
    try:
        stored = load_embeddings(dest)
    except MemoryFormatError as exc:
        logger.warning("%s; the stored embeddings cannot be kept", exc)
        stored = None
    return stored, previous


def keep_valid_embeddings(
    memory: VideoMemory,
    candidates: Sequence[NodeEmbeddings | None],
    *,
    preferred_model: str | None = None,
) -> VideoMemory:
    """``memory`` with the first candidate still valid for it (``None``s are skipped).

    Valid means made for exactly these node ids and texts (``embeddings_match``), so vectors
    of edited nodes are dropped, never mixed with new ones. A valid candidate of
    ``preferred_model`` (the configured one, which query time will use) wins over the order.
    With no valid candidate the memory carries no vectors.
    """
    valid = [
        c
        for c in candidates
        if c is not None and embeddings_match(memory.with_embeddings(c), c.model_name)
    ]
    for candidate in candidates:
        if candidate is not None and all(candidate is not v for v in valid):
            logger.warning(
                "embeddings of %s were made for other node texts; not kept", candidate.model_name
            )
    preferred = [c for c in valid if c.model_name == preferred_model]
    chosen = (preferred or valid or [None])[0]
    manifest = memory.manifest
    if manifest is not None:
        model = chosen.model_name if chosen is not None else None
        memory = memory.with_manifest(manifest.model_copy(update={"embedding_model": model}))
    return memory.with_embeddings(chosen)


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
    Node vectors go to ``embeddings.json`` with their model's name in the graph file
    (``embedding_model``, which MemDreamer's reader ignores), so a re-import labels them
    right; an Entity's keyframe is written as the path it has (images are not copied).
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
    embeddings = memory.embeddings
    if embeddings is not None:
        graph["embedding_model"] = embeddings.model_name
        vectors = {i: embeddings.vector(i).tolist() for i in embeddings.ids}
        write_json_atomic(dest / EMBEDDINGS_FILE, vectors)
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
                features = node.distinctive_features
                if features is not None:
                    grounding["distinctive_features"] = (
                        list(features) if isinstance(features, tuple) else features
                    )
                entry["visual_grounding"] = grounding
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
        "edges": [_relation_json(r, local(r.source), local(r.target)) for r in relations],
    }
