"""The hierarchical video memory of SPEC §3 as typed, read-only data.

Root → SuperEvents → MacroEvents → one Subgraph per MacroEvent (Entity / Event / OCRText nodes
joined by typed relations). The agents read this memory at every level and refine temporary
*text copies* of it per question; the stored memory must never change underneath them, so
every node is a frozen pydantic model (entity attributes are deep-frozen too) and
``VideoMemory`` hands out only those frozen objects, tuples and fresh lists.

All times are absolute seconds in the video. Subgraph node ids carry their slot prefix
(``slot3_e1``) so that ids are unique across the whole memory.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal

import networkx as nx
import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from videotapestry.errors import MemoryFormatError, MemoryNodeNotFoundError

NodeKind = Literal["RootEvent", "SuperEvent", "MacroEvent", "Entity", "Event", "OCRText"]
NODE_KINDS: tuple[str, ...] = (
    "RootEvent",
    "SuperEvent",
    "MacroEvent",
    "Entity",
    "Event",
    "OCRText",
)
#: Kinds that live inside a MacroEvent's subgraph (and are embedded for semantic search).
SUBGRAPH_KINDS: tuple[str, ...] = ("Entity", "Event", "OCRText")

RelationType = Literal["PROGRESSION", "CAUSAL", "TEMPORAL", "SEMANTIC", "SPATIAL", "ATTRIBUTIVE"]
RELATION_TYPES: tuple[str, ...] = (
    "PROGRESSION",
    "CAUSAL",
    "TEMPORAL",
    "SEMANTIC",
    "SPATIAL",
    "ATTRIBUTIVE",
)
#: Label of the hierarchical child → parent edges in the graph (not a typed relation).
SUBEVENT_OF = "SUBEVENT_OF"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TimeRange(_Frozen):
    """A closed interval of absolute video seconds; reads ``[s, e]`` or ``{start, end}``."""

    start: float
    end: float

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError(f"a time range needs [start, end], got {len(value)} values")
            return {"start": value[0], "end": value[1]}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            raise ValueError("time range bounds must be finite numbers")
        if self.end < self.start:
            raise ValueError(f"time range ends ({self.end}) before it starts ({self.start})")
        return self

    @model_serializer
    def _as_pair(self) -> list[float]:
        return [self.start, self.end]

    @property
    def duration(self) -> float:
        return self.end - self.start

    def overlaps(self, other: TimeRange) -> bool:
        return self.start <= other.end and other.start <= self.end

    def contains(self, seconds: float) -> bool:
        return self.start <= seconds <= self.end


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


class _Node(_Frozen):
    id: str = Field(min_length=1)
    time_range: TimeRange
    parent_id: str | None = Field(None, description="None only for the root")


class RootEvent(_Node):
    """The global summary s_V of the video."""

    kind: Literal["RootEvent"] = "RootEvent"
    title: str = ""
    description: str = ""
    themes: tuple[str, ...] = ()
    key_entities: tuple[str, ...] = ()
    emotional_tone: str | None = None


class SuperEvent(_Node):
    """A coarse stage of the video (Overview agent level)."""

    kind: Literal["SuperEvent"] = "SuperEvent"
    label: str = ""
    description: str = ""
    key_entities: tuple[str, ...] = ()


class MacroEvent(_Node):
    """A localized coherent event (Skim agent level); owns exactly one subgraph."""

    kind: Literal["MacroEvent"] = "MacroEvent"
    label: str = ""
    summary: str = ""
    key_entity_names: tuple[str, ...] = ()
    slot: int | None = Field(None, description="MemDreamer slot of its subgraph")
    subevent_ids: tuple[str, ...] = ()


class EntityNode(_Node):
    """A person or thing seen in a MacroEvent; its time is its visual grounding moment."""

    kind: Literal["Entity"] = "Entity"
    name: str = ""
    entity_type: str = ""
    description: str = ""
    attributes: Mapping[str, Any] = Field(default_factory=lambda: MappingProxyType({}))
    grounding_time: float | None = Field(None, description="absolute seconds of best sighting")
    distinctive_features: str | tuple[str, ...] | None = Field(
        None, description="as the source gave them: one text, or a list (MemDreamer's release)"
    )
    name_inferred: bool = Field(
        False, description="the source had no name; `name` was made from type and description"
    )
    keyframe_path: str | None = Field(
        None, description="image file of the best sighting (MemDreamer's best_frame.jpg)"
    )

    @field_validator("attributes", mode="after")
    @classmethod
    def _deep_freeze(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        return _freeze(value)

    @field_serializer("attributes")
    def _plain_attributes(self, value: Mapping[str, Any]) -> dict[str, Any]:
        return _thaw(value)

    @model_serializer(mode="wrap")
    def _omit_absent_keyframe(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # keyframe_path came later than schema version 1's other fields: leaving it out when
        # there is none keeps such memories byte-identical to (and readable by) older versions.
        data = handler(self)
        if data.get("keyframe_path") is None:
            data.pop("keyframe_path", None)
        return data


class EventNode(_Node):
    """An action or happening inside a MacroEvent, with its subject/object entity ids."""

    kind: Literal["Event"] = "Event"
    action: str = ""
    description: str = ""
    event_type: str = ""
    subject_ids: tuple[str, ...] = ()
    object_ids: tuple[str, ...] = ()


class OCRTextNode(_Node):
    """On-screen text read inside a MacroEvent."""

    kind: Literal["OCRText"] = "OCRText"
    text: str = ""
    ocr_type: str = ""
    description: str = ""


SubgraphNode = Annotated[EntityNode | EventNode | OCRTextNode, Field(discriminator="kind")]
MemoryNode = Annotated[
    RootEvent | SuperEvent | MacroEvent | EntityNode | EventNode | OCRTextNode,
    Field(discriminator="kind"),
]
AnyNode = RootEvent | SuperEvent | MacroEvent | EntityNode | EventNode | OCRTextNode


def node_label(node: AnyNode) -> str:
    """The short name every level shows for a node (title, label, name, action or text)."""
    if isinstance(node, RootEvent):
        return node.title
    if isinstance(node, (SuperEvent, MacroEvent)):
        return node.label
    if isinstance(node, EntityNode):
        return node.name
    if isinstance(node, EventNode):
        return node.action
    return node.text


def node_description(node: AnyNode) -> str:
    """The longer text of a node (a MacroEvent's summary, everyone else's description)."""
    if isinstance(node, MacroEvent):
        return node.summary
    return node.description


class Relation(_Frozen):
    """A typed edge; ``label`` is free (LEADS_TO, CAUSES, PERFORMS …), ``reason`` optional."""

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: RelationType
    label: str = ""
    reason: str | None = None


class EntityGroup(_Frozen):
    """One unified entity: the canonical name and every surface form seen for it."""

    canonical_name: str = Field(min_length=1)
    canonical_type: str | None = None
    variants: tuple[str, ...] = ()


class Clip(_Frozen):
    """An atomic perception window of the builder (the evidence unit of PACE-Mem)."""

    id: str = Field(min_length=1)
    time_range: TimeRange
    macro_id: str | None = None
    node_ids: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()


class MemoryManifest(_Frozen):
    """Where a memory came from and what made it; stored beside the memory as manifest.json."""

    schema_version: int
    source: str = Field(description="memdreamer, builder, or another producer name")
    source_path: str | None = None
    embedding_model: str | None = None
    video_fingerprint: str | None = None
    created: str = Field(description="ISO-8601 UTC time the memory was written")
    counts: dict[str, int] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict, description="builder model per role")
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    build: dict[str, Any] = Field(
        default_factory=dict,
        description="memory builder report: version, status, partial, failed clips, "
        "per-stage timings and usage (empty for imported memories)",
    )


class Subgraph(_Frozen):
    """A MacroEvent's local graph: its nodes in time order and the relations among them."""

    macro: MacroEvent
    nodes: tuple[SubgraphNode, ...]
    relations: tuple[Relation, ...]

    @property
    def entities(self) -> tuple[EntityNode, ...]:
        return tuple(n for n in self.nodes if isinstance(n, EntityNode))

    @property
    def events(self) -> tuple[EventNode, ...]:
        return tuple(n for n in self.nodes if isinstance(n, EventNode))

    @property
    def ocr_texts(self) -> tuple[OCRTextNode, ...]:
        return tuple(n for n in self.nodes if isinstance(n, OCRTextNode))


def _time_key(node: AnyNode) -> tuple[float, float, str]:
    return (node.time_range.start, node.time_range.end, node.id)


@dataclass(frozen=True)
class NodeEmbeddings:
    """One read-only row per embedded node, in ``ids`` order, from the model ``model_name``."""

    model_name: str
    ids: tuple[str, ...]
    vectors: np.ndarray
    digest: str
    _rows: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        vectors = np.array(self.vectors, dtype=np.float32, copy=True)
        if vectors.ndim != 2 or vectors.shape[0] != len(self.ids):
            raise MemoryFormatError(
                f"embeddings of {self.model_name!r}: {len(self.ids)} ids but vectors of shape "
                f"{vectors.shape}"
            )
        vectors.setflags(write=False)
        object.__setattr__(self, "vectors", vectors)
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "_rows", {node_id: i for i, node_id in enumerate(self.ids)})
        if len(self._rows) != len(self.ids):
            raise MemoryFormatError(f"embeddings of {self.model_name!r}: repeated node ids")

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, node_id: str) -> int:
        return self._rows[node_id]

    def vector(self, node_id: str) -> np.ndarray:
        return self.vectors[self._rows[node_id]]

    def rows_for(self, node_ids: Iterable[str]) -> np.ndarray:
        return np.fromiter((self._rows[i] for i in node_ids), dtype=np.int64)


class VideoMemory:
    """A loaded, validated, read-only memory with typed accessors over a networkx graph.

    Build it from its parts (importers and the builder do); the constructor checks the
    hierarchy (one root, SuperEvents under the root, MacroEvents under SuperEvents, subgraph
    nodes under MacroEvents) and that every relation joins known nodes. ``origin`` names the
    file or directory in error messages.
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        *,
        root: RootEvent,
        super_events: Iterable[SuperEvent],
        macro_events: Iterable[MacroEvent],
        subgraph_nodes: Iterable[EntityNode | EventNode | OCRTextNode],
        relations: Iterable[Relation] = (),
        unification: Iterable[EntityGroup] = (),
        clips: Iterable[Clip] = (),
        manifest: MemoryManifest | None = None,
        embeddings: NodeEmbeddings | None = None,
        origin: str = "memory",
    ) -> None:
        nodes: dict[str, AnyNode] = {}
        for node in (root, *super_events, *macro_events, *subgraph_nodes):
            if node.id in nodes:
                raise MemoryFormatError(f"{origin}: node id {node.id!r} is used more than once")
            nodes[node.id] = node
        self._origin = origin
        self._nodes = nodes
        self._root = root
        self._relations = tuple(relations)
        self._unification = tuple(unification)
        self._clips = tuple(sorted(clips, key=lambda c: (c.time_range.start, c.id)))
        self._manifest = manifest
        self._embeddings = embeddings
        self._check_hierarchy()
        self._children: dict[str, tuple[str, ...]] = self._index_children()
        self._check_relations_and_clips()
        self._incident: dict[str, tuple[int, ...]] = self._index_relations()
        self._graph = self._build_graph()

    # ------------------------------------------------------------------ construction

    def _check_hierarchy(self) -> None:
        expected_parent = {
            "RootEvent": None,
            "SuperEvent": "RootEvent",
            "MacroEvent": "SuperEvent",
            "Entity": "MacroEvent",
            "Event": "MacroEvent",
            "OCRText": "MacroEvent",
        }
        roots = [n.id for n in self._nodes.values() if isinstance(n, RootEvent)]
        if len(roots) != 1:
            raise MemoryFormatError(f"{self._origin}: expected one RootEvent, found {len(roots)}")
        if self._root.parent_id is not None:
            raise MemoryFormatError(f"{self._origin}: the root {self._root.id!r} has a parent")
        for node in self._nodes.values():
            want = expected_parent[node.kind]
            if want is None:
                continue
            parent = self._nodes.get(node.parent_id) if node.parent_id else None
            if parent is None:
                what = "no parent" if not node.parent_id else f"unknown parent {node.parent_id!r}"
                raise MemoryFormatError(
                    f"{self._origin}: {node.kind} {node.id!r} has {what}; "
                    f"it must sit under a {want}"
                )
            if parent.kind != want:
                raise MemoryFormatError(
                    f"{self._origin}: {node.kind} {node.id!r} has parent {parent.id!r} of kind "
                    f"{parent.kind}; expected a {want}"
                )

    def _index_children(self) -> dict[str, tuple[str, ...]]:
        children: dict[str, list[AnyNode]] = {node_id: [] for node_id in self._nodes}
        for node in self._nodes.values():
            if node.parent_id is not None:
                children[node.parent_id].append(node)
        return {
            node_id: tuple(n.id for n in sorted(kids, key=_time_key))
            for node_id, kids in children.items()
        }

    def _check_relations_and_clips(self) -> None:
        for index, relation in enumerate(self._relations):
            for end in ("source", "target"):
                node_id = getattr(relation, end)
                if node_id not in self._nodes:
                    raise MemoryFormatError(
                        f"{self._origin}: relation {index} ({relation.label or relation.type}) "
                        f"has unknown {end} {node_id!r}"
                    )
        for clip in self._clips:
            if clip.macro_id is not None and not isinstance(
                self._nodes.get(clip.macro_id), MacroEvent
            ):
                raise MemoryFormatError(
                    f"{self._origin}: clip {clip.id!r} names unknown MacroEvent {clip.macro_id!r}"
                )
            missing = [i for i in clip.node_ids if i not in self._nodes]
            if missing:
                raise MemoryFormatError(
                    f"{self._origin}: clip {clip.id!r} names unknown node ids {missing[:5]}"
                )

    def _index_relations(self) -> dict[str, tuple[int, ...]]:
        incident: dict[str, list[int]] = {}
        for index, relation in enumerate(self._relations):
            incident.setdefault(relation.source, []).append(index)
            if relation.target != relation.source:
                incident.setdefault(relation.target, []).append(index)
        return {node_id: tuple(indices) for node_id, indices in incident.items()}

    def _build_graph(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        for node_id, node in self._nodes.items():
            graph.add_node(node_id, kind=node.kind, node=node)
        for node in self._nodes.values():
            if node.parent_id is not None:
                graph.add_edge(node.id, node.parent_id, key=SUBEVENT_OF, label=SUBEVENT_OF)
        for index, relation in enumerate(self._relations):
            graph.add_edge(
                relation.source,
                relation.target,
                key=index,
                type=relation.type,
                label=relation.label,
                relation=relation,
            )
        return nx.freeze(graph)

    def _replace(self, **changes: Any) -> VideoMemory:
        clone = object.__new__(VideoMemory)
        clone.__dict__.update(self.__dict__)
        for name, value in changes.items():
            setattr(clone, f"_{name}", value)
        return clone

    def with_manifest(self, manifest: MemoryManifest) -> VideoMemory:
        """The same memory with another manifest (nodes and graph are shared, not copied)."""
        return self._replace(manifest=manifest)

    def with_embeddings(self, embeddings: NodeEmbeddings | None) -> VideoMemory:
        """The same memory carrying these node embeddings."""
        return self._replace(embeddings=embeddings)

    # ------------------------------------------------------------------ accessors

    @property
    def root(self) -> RootEvent:
        return self._root

    @property
    def manifest(self) -> MemoryManifest | None:
        return self._manifest

    @property
    def embeddings(self) -> NodeEmbeddings | None:
        return self._embeddings

    @property
    def unification(self) -> tuple[EntityGroup, ...]:
        return self._unification

    @property
    def clips(self) -> tuple[Clip, ...]:
        """Builder clips in time order; empty for memories imported from MemDreamer."""
        return self._clips

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The frozen networkx graph: child → parent ``SUBEVENT_OF`` edges plus relations.

        Node attributes: ``kind`` and ``node`` (the frozen model). Relation edges carry
        ``type``, ``label`` and ``relation``. For graph algorithms; do not mutate attributes.
        """
        return self._graph

    @property
    def duration(self) -> float:
        return self._root.time_range.end

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __eq__(self, other: object) -> bool:
        """Same nodes, relations (as a multiset), unification and clips; manifests may differ."""
        if not isinstance(other, VideoMemory):
            return NotImplemented
        return (
            self._nodes == other._nodes
            and Counter(self._relations) == Counter(other._relations)
            and self._unification == other._unification
            and self._clips == other._clips
        )

    def node(self, node_id: str) -> AnyNode:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise MemoryNodeNotFoundError(f"{self._origin}: no node with id {node_id!r}") from None

    def kind(self, node_id: str) -> str:
        return self.node(node_id).kind

    def time_range(self, node_id: str) -> TimeRange:
        return self.node(node_id).time_range

    def nodes(self, kinds: Iterable[str] | None = None) -> list[AnyNode]:
        """Nodes of the given kinds (all by default) in time order."""
        wanted = set(kinds) if kinds is not None else None
        unknown = (wanted or set()) - set(NODE_KINDS)
        if unknown:
            raise ValueError(f"unknown node kinds {sorted(unknown)}; known: {NODE_KINDS}")
        chosen = [n for n in self._nodes.values() if wanted is None or n.kind in wanted]
        return sorted(chosen, key=_time_key)

    def super_events(self) -> list[SuperEvent]:
        return [self._nodes[i] for i in self._children[self._root.id]]  # type: ignore[misc]

    def macro_events(self, super_id: str | None = None) -> list[MacroEvent]:
        """MacroEvents in time order, all of them or those under one SuperEvent."""
        if super_id is None:
            return self.nodes(["MacroEvent"])  # type: ignore[return-value]
        parent = self.node(super_id)
        if not isinstance(parent, SuperEvent):
            raise MemoryNodeNotFoundError(
                f"{self._origin}: {super_id!r} is a {parent.kind}, not a SuperEvent"
            )
        return [self._nodes[i] for i in self._children[super_id]]  # type: ignore[misc]

    def child_ids(self, node_id: str) -> tuple[str, ...]:
        self.node(node_id)
        return self._children[node_id]

    def children(self, node_id: str) -> list[AnyNode]:
        return [self._nodes[i] for i in self.child_ids(node_id)]

    def parent(self, node_id: str) -> AnyNode | None:
        parent_id = self.node(node_id).parent_id
        return self._nodes[parent_id] if parent_id is not None else None

    def ancestor_of_kind(self, node_id: str, kind: str) -> str | None:
        """The id of the node itself or its nearest ancestor of ``kind`` (None if there is none)."""
        current: AnyNode | None = self.node(node_id)
        while current is not None:
            if current.kind == kind:
                return current.id
            current = self._nodes[current.parent_id] if current.parent_id else None
        return None

    def macro_id_of(self, node_id: str) -> str | None:
        return self.ancestor_of_kind(node_id, "MacroEvent")

    def super_id_of(self, node_id: str) -> str | None:
        return self.ancestor_of_kind(node_id, "SuperEvent")

    def subgraph(self, macro_id: str) -> Subgraph:
        macro = self.node(macro_id)
        if not isinstance(macro, MacroEvent):
            raise MemoryNodeNotFoundError(
                f"{self._origin}: {macro_id!r} is a {macro.kind}, not a MacroEvent"
            )
        members = self._children[macro_id]
        return Subgraph(
            macro=macro,
            nodes=tuple(self._nodes[i] for i in members),  # type: ignore[arg-type]
            relations=tuple(self.relations(members)),
        )

    def relations(self, among: Iterable[str] | None = None) -> list[Relation]:
        """Relations whose two ends are both in ``among`` (every relation when None)."""
        if among is None:
            return list(self._relations)
        ids = set(among)
        indices = sorted({i for node_id in ids for i in self._incident.get(node_id, ())})
        chosen = (self._relations[i] for i in indices)
        return [r for r in chosen if r.source in ids and r.target in ids]

    def relations_of(self, node_id: str) -> list[Relation]:
        """Relations that start or end at ``node_id``."""
        self.node(node_id)
        return [self._relations[i] for i in self._incident.get(node_id, ())]

    def counts(self) -> dict[str, int]:
        """Nodes per kind (every kind listed), plus ``relations`` and ``clips``."""
        counts = dict.fromkeys(NODE_KINDS, 0)
        for node in self._nodes.values():
            counts[node.kind] += 1
        counts["relations"] = len(self._relations)
        counts["clips"] = len(self._clips)
        return counts

    def variants_of(self, name: str) -> tuple[str, ...]:
        """Every name unified with ``name`` (case-insensitive), itself included."""
        folded = name.casefold().strip()
        for group in self._unification:
            names = (group.canonical_name, *group.variants)
            if any(n.casefold().strip() == folded for n in names):
                return tuple(dict.fromkeys(names))
        return (name,)

    def __repr__(self) -> str:
        counts = self.counts()
        parts = ", ".join(f"{k}={v}" for k, v in counts.items() if v)
        return f"VideoMemory({self._root.id!r}, {parts})"
