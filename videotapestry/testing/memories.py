"""Synthetic hierarchical memories of any length, for tests and benchmarks.

Real MemDreamer memories of long videos cannot ship with the repository, and tests need
memories with many SuperEvents (to see compression and the protected set at work) and
benchmarks need hour-long ones. These are deterministic for a given seed.
"""

from __future__ import annotations

import random

import numpy as np

from videotapestry.memory import (
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
    new_manifest,
)
from videotapestry.memory.embedding_index import embeddable_nodes, embedding_text, texts_digest
from videotapestry.memory.types import NodeEmbeddings

ENTITIES, EVENTS, OCR = 8, 9, 4  # 21 nodes per MacroEvent

CAST = [
    ("Detective Anna Berg", ["Anna", "Berg", "Detective Berg"]),
    ("Chef Maria Lopez", ["Maria", "Chef Maria"]),
    ("Tom Hale", ["Tom", "Mr. Hale"]),
    ("Coach Rita Moss", ["Rita", "Coach Moss"]),
    ("Dr. Omar Said", ["Omar", "Dr. Said"]),
    ("Lena Park", ["Lena"]),
    ("Victor Quinn", ["Victor", "Quinn"]),
    ("Grandma Ivy", ["Ivy", "Grandma"]),
    ("Officer Ben Cruz", ["Ben", "Officer Cruz"]),
    ("Sophie Lang", ["Sophie"]),
    ("Max the dog", ["Max", "the dog"]),
    ("Professor Ada Kim", ["Ada", "Professor Kim"]),
]
OBJECTS = [
    ("red umbrella", "object"),
    ("black sedan", "vehicle"),
    ("score card", "object"),
    ("wall oven", "appliance"),
    ("wooden crate", "object"),
    ("laptop", "device"),
    ("blue backpack", "object"),
    ("chess board", "object"),
    ("piano", "instrument"),
    ("bicycle", "vehicle"),
    ("coffee mug", "object"),
    ("map of the city", "document"),
    ("kitchen knife", "tool"),
    ("trophy", "object"),
    ("telephone", "device"),
    ("green door", "structure"),
    ("stairwell", "place"),
    ("market stall", "place"),
    ("fire extinguisher", "tool"),
    ("camera", "device"),
]
PLACES = [
    "kitchen",
    "police station",
    "stadium",
    "park",
    "train platform",
    "classroom",
    "hospital corridor",
    "rooftop",
    "market",
    "living room",
    "garage",
    "library",
]
ACTIONS = [
    "opens",
    "picks up",
    "hands over",
    "inspects",
    "drops",
    "carries",
    "points at",
    "repairs",
    "hides",
    "photographs",
    "cleans",
    "argues about",
    "plays",
    "reads",
]
VIEWS = ["seen clearly", "in the background", "close-up"]
SIGNS = [
    "EXIT",
    "OPEN 24 HOURS",
    "PLATFORM 3",
    "ROOM 204",
    "SALE 50%",
    "NO PARKING",
    "WELCOME HOME",
    "CASE FILE 17",
    "MENU OF THE DAY",
    "FINAL SCORE",
]


def span(start: float, length: float) -> TimeRange:
    """Times to the millisecond, the precision memories keep (see memdreamer.py)."""
    return TimeRange(start=round(start, 3), end=round(start + length, 3))


def synthetic_memory(
    *,
    duration_s: float = 7200.0,
    supers: int = 12,
    macros_per_super: int = 20,
    seed: int = 0,
    fingerprint: str | None = "synthetic-2h",
    title: str = "A synthetic two-hour drama",
) -> VideoMemory:
    """A deterministic memory: ``supers`` SuperEvents of ``macros_per_super`` MacroEvents,
    21 subgraph nodes each (8 entities, 9 events, 4 OCR texts), a recurring cast with name
    variants, and typed relations. The default is the size of a 2-hour MemDreamer build.
    ``title`` is the root's (it heads every composite memory): tests give each video its own
    so an answer can depend on which memory was read."""
    DURATION_S, SUPERS, MACROS_PER_SUPER = duration_s, supers, macros_per_super
    rng = random.Random(seed)
    root = RootEvent(
        id="root_001",
        title=title,
        description="Benchmark memory.",
        themes=("mystery", "city life"),
        key_entities=tuple(c for c, _ in CAST[:4]),
        time_range=TimeRange(start=0, end=DURATION_S),
    )
    super_events: list[SuperEvent] = []
    macros: list[MacroEvent] = []
    nodes: list[EntityNode | EventNode | OCRTextNode] = []
    relations: list[Relation] = []
    super_len = DURATION_S / SUPERS
    macro_len = super_len / MACROS_PER_SUPER
    for s in range(SUPERS):
        place = PLACES[s % len(PLACES)]
        super_id = f"super_{s + 1:02d}"
        cast = rng.sample(CAST, 4)
        super_events.append(
            SuperEvent(
                id=super_id,
                parent_id=root.id,
                label=f"Stage {s + 1} at the {place}",
                description=f"{cast[0][0]} and {cast[1][0]} spend a long stretch at the {place}.",
                key_entities=tuple(c for c, _ in cast[:2]),
                time_range=TimeRange(start=s * super_len, end=(s + 1) * super_len),
            )
        )
        if s:
            relations.append(
                Relation(
                    source=f"super_{s:02d}", target=super_id, type="PROGRESSION", label="LEADS_TO"
                )
            )
        for m in range(MACROS_PER_SUPER):
            slot = s * MACROS_PER_SUPER + m
            start = s * super_len + m * macro_len
            macro_id = f"macro_{slot:04d}"
            people = rng.sample(cast, 3)
            action = ACTIONS[slot % len(ACTIONS)]
            things = rng.sample(OBJECTS, ENTITIES - 3)
            macros.append(
                MacroEvent(
                    id=macro_id,
                    parent_id=super_id,
                    slot=slot,
                    label=f"{people[0][0].split()[-1].lower()}_{action.split()[0]}",
                    summary=f"At the {place}, {people[0][0]} {action} the "
                    f"{things[0][0]} while {people[1][0]} watches.",
                    key_entity_names=tuple(p for p, _ in people[:2]),
                    time_range=TimeRange(start=start, end=start + macro_len),
                )
            )
            if m or s:
                relations.append(
                    Relation(
                        source=f"macro_{slot - 1:04d}",
                        target=macro_id,
                        type="TEMPORAL",
                        label="BEFORE",
                    )
                )
            entity_ids = []
            for e, (name, kind) in enumerate(
                [(rng.choice([p, *v]), "person") for p, v in people] + things
            ):
                moment = round(start + rng.uniform(0, macro_len - 5), 3)
                node_id = f"slot{slot}_e{e + 1}"
                entity_ids.append(node_id)
                nodes.append(
                    EntityNode(
                        id=node_id,
                        parent_id=macro_id,
                        name=name,
                        entity_type=kind,
                        description=f"{rng.choice(VIEWS)} at the {place}",
                        grounding_time=moment,
                        time_range=span(moment, 5),
                    )
                )
            for v in range(EVENTS):
                subject = rng.choice(entity_ids[:3])
                target = rng.choice(entity_ids[3:])
                a = round(start + rng.uniform(0, macro_len - 6), 3)
                action = rng.choice(ACTIONS)
                node_id = f"slot{slot}_v{v + 1}"
                target_name = things[int(target.rsplit("e", 1)[1]) - 4][0]
                nodes.append(
                    EventNode(
                        id=node_id,
                        parent_id=macro_id,
                        action=f"{action} the {target_name}",
                        description=f"someone {action} the {target_name} near the {place}",
                        event_type="action",
                        subject_ids=(subject,),
                        object_ids=(target,),
                        time_range=span(a, rng.uniform(2, 6)),
                    )
                )
                relations.append(
                    Relation(source=subject, target=node_id, type="SEMANTIC", label="PERFORMS")
                )
                relations.append(
                    Relation(source=node_id, target=target, type="ATTRIBUTIVE", label="ACTS_ON")
                )
            for o in range(OCR):
                a = round(start + rng.uniform(0, macro_len - 4), 3)
                text = rng.choice(
                    [
                        rng.choice(SIGNS),
                        f"{rng.randint(1, 12)}:{rng.randint(0, 59):02d}",
                        f"${rng.randint(2, 99)}.{rng.randint(0, 99):02d}",
                        f"SCORE {rng.randint(0, 5)}-{rng.randint(0, 5)}",
                    ]
                )
                nodes.append(
                    OCRTextNode(
                        id=f"slot{slot}_o{o + 1}",
                        parent_id=macro_id,
                        text=text,
                        ocr_type=rng.choice(["sign", "screen", "caption", "label"]),
                        description=f"text visible at the {place}",
                        time_range=span(a, 4),
                    )
                )
    groups = [
        EntityGroup(canonical_name=c, canonical_type="person", variants=(c, *v)) for c, v in CAST
    ]
    return VideoMemory(
        root=root,
        super_events=super_events,
        macro_events=macros,
        subgraph_nodes=nodes,
        relations=relations,
        unification=groups,
        manifest=new_manifest("synthetic", video_fingerprint=fingerprint),
    )


def with_fake_embeddings(
    memory: VideoMemory, model_name: str, *, dimension: int = 384, seed: int = 0
) -> VideoMemory:
    """``memory`` carrying deterministic node vectors labelled as ``model_name``'s: seeded
    random unit vectors, one per embedded node (the rows a real build stores, with the real
    texts digest, so they count as valid for the memory). For benchmarks that need embedded
    memories fast: whatever reuses stored vectors of ``model_name`` skips the model. The
    vectors carry no meaning, so a search by them finds nothing in particular."""
    nodes = embeddable_nodes(memory)
    ids = [n.id for n in nodes]
    vectors = np.random.default_rng(seed).standard_normal((len(ids), dimension))
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    digest = texts_digest(ids, [embedding_text(n) for n in nodes])
    return memory.with_embeddings(
        NodeEmbeddings(model_name, tuple(ids), vectors.astype(np.float32), digest)
    )
