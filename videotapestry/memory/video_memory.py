"""``VideoMemory``: the typed nodes of one video joined into a checked, read-only graph.

Every reader of a memory (the agents, the locator, the views, the formats that write it
back) goes through this one container, so the hierarchy is checked once when it is built and
the accessors can hand out the frozen nodes without copying. The node and edge models
themselves are in ``videotapestry.memory.types``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import networkx as nx

from videotapestry.errors import MemoryFormatError, MemoryNodeNotFoundError
from videotapestry.memory.types import (
    NODE_KINDS,
    SUBEVENT_OF,
    AnyNode,
    Clip,
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    MemoryManifest,
    NodeEmbeddings,
    OCRTextNode,
    Relation,
    RootEvent,
    Subgraph,
    SuperEvent,
    TimeRange,
)


def _time_key(node: AnyNode) -> tuple[float, float, str]:
    return (node.time_range.start, node.time_range.end, node.id)


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
            nodes=tuple(self._nodes[i] for i in members),
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
