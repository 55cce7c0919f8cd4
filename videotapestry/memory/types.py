"""The hierarchical video memory of SPEC §3 as typed, read-only data.

Root → SuperEvents → MacroEvents → one Subgraph per MacroEvent (Entity / Event / OCRText nodes
joined by typed relations). The agents read this memory at every level and refine temporary
*text copies* of it per question; the stored memory must never change underneath them, so
every node is a frozen pydantic model (entity attributes are deep-frozen too) and
``VideoMemory`` (``videotapestry.memory.video_memory``) hands out only those frozen objects,
tuples and fresh lists.

All times are absolute seconds in the video. Subgraph node ids carry their slot prefix
(``slot3_e1``) so that ids are unique across the whole memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args

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

from videotapestry.errors import MemoryFormatError

NodeKind = Literal["RootEvent", "SuperEvent", "MacroEvent", "Entity", "Event", "OCRText"]
NODE_KINDS: tuple[str, ...] = get_args(NodeKind)
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
