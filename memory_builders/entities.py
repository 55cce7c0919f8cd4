"""Stage 6: entity unification across the whole video (canonical name ↔ variants).

Entity search at question time (``MemoryLocator``) matches a name against canonical names
and their variants, so "Maria", "Chef Maria" and "maria" seen in different MacroEvents must
end up in one group. The procedure keeps the model out of the easy cases:

1. Names equal after normalization (case, punctuation, a leading article) with compatible
   types (equal, or one of them empty) are one group without asking.
2. Groups whose names embed close together (cosine ≥ ``merge_similarity``) merge too.
3. Pairs in the band below (``ask_similarity`` ≤ cosine < ``merge_similarity``), and pairs
   where one name's words are all in the other's ("Maria" / "Chef Maria"), are candidates:
   the model confirms or rejects them in one call (at most ``max_questions`` pairs, the most
   similar first). Without an answer they stay apart.

Each group's canonical name is its most frequent surface form (``preferred_name``). The
merge plan (embeddings) and the model's answers are checkpointed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.context import BuildContext
from memory_builders.subgraphs import MacroDraft
from videotapestry.contracts.builder import EntityMergeDecisions
from videotapestry.memory import EntityGroup, EntityNode
from videotapestry.ocr import text_key

#: Merges decided without the model (pairs of name-group indices), and the model's questions.
MergePlan = tuple[list[tuple[int, int]], list["MergeQuestion"]]


@dataclass
class NameGroup:
    """Entity nodes whose names are the same after normalization."""

    key: str
    entity_type: str
    names: Counter = field(default_factory=Counter)
    types: Counter = field(default_factory=Counter)
    node_ids: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return preferred_name(self.names)

    def describe(self) -> str:
        kind = f" ({self.entity_type})" if self.entity_type else ""
        description = max(self.descriptions, key=len) if self.descriptions else ""
        when = ", ".join(f"{t:.0f} s" for t in sorted(self.times)[:4])
        return f'"{self.name}"{kind}: {description} [seen at {when}]'


@dataclass(frozen=True)
class MergeQuestion:
    pair_id: str
    a: int
    b: int
    similarity: float


def preferred_name(names: Counter) -> str:
    """The most frequent form; ties go to one without a leading article, then to one with
    capitals (a proper name), then to the longer one."""

    def rank(name: str) -> tuple:
        plain = not re.match(r"(the|a|an)\s", name, flags=re.I)
        return (names[name], plain, name != name.lower(), len(name), name)

    return max(names, key=rank)


def normalized_name(name: str) -> str:
    return text_key(re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.I))


def _words(name: str) -> set[str]:
    return {w for w in re.findall(r"[0-9a-z]+", name.casefold()) if w not in ("the", "a", "an")}


def _compatible(a: str, b: str) -> bool:
    return not a or not b or a == b


def name_groups(entities: Sequence[EntityNode]) -> list[NameGroup]:
    groups: dict[tuple[str, str], NameGroup] = {}
    for node in sorted(entities, key=lambda n: (n.grounding_time or 0.0, n.id)):
        key = normalized_name(node.name) or text_key(node.entity_type) or "entity"
        kind = node.entity_type.strip().casefold()
        match = next((g for (k, t), g in groups.items() if k == key and _compatible(t, kind)), None)
        if match is None:
            match = groups[(key, kind)] = NameGroup(key, kind)
        if not match.entity_type and kind:
            match.entity_type = kind
        match.names[node.name.strip()] += 1
        match.types[node.entity_type.strip()] += 1
        match.node_ids.append(node.id)
        if node.description:
            match.descriptions.append(node.description)
        if node.grounding_time is not None:
            match.times.append(node.grounding_time)
    return list(groups.values())


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def plan_merges(
    groups: Sequence[NameGroup],
    vectors: np.ndarray,
    *,
    merge_similarity: float,
    ask_similarity: float,
    max_questions: int,
) -> tuple[list[tuple[int, int]], list[MergeQuestion]]:
    """Automatic merges and the questions for the model, from the groups' name vectors."""
    sims = vectors @ vectors.T if len(groups) else np.zeros((0, 0))
    merges: list[tuple[int, int]] = []
    candidates: list[tuple[float, int, int]] = []
    words = [_words(g.name) for g in groups]
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            if not _compatible(groups[i].entity_type, groups[j].entity_type):
                continue
            sim = float(sims[i, j])
            if sim >= merge_similarity:
                merges.append((i, j))
            elif sim >= ask_similarity or (
                words[i] and words[j] and (words[i] <= words[j] or words[j] <= words[i])
            ):
                candidates.append((sim, i, j))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    questions = [
        MergeQuestion(f"p{k}", i, j, sim)
        for k, (sim, i, j) in enumerate(candidates[:max_questions], start=1)
    ]
    return merges, questions


def unify(groups: Sequence[NameGroup], merges: Sequence[tuple[int, int]]) -> list[EntityGroup]:
    """One ``EntityGroup`` per connected set of name groups, in order of first sighting."""
    union = _UnionFind(len(groups))
    for a, b in merges:
        union.union(a, b)
    members: dict[int, list[int]] = {}
    for i in range(len(groups)):
        members.setdefault(union.find(i), []).append(i)
    out = []
    for root in sorted(members):
        names: Counter = Counter()
        types: Counter = Counter()
        for i in members[root]:
            names.update(groups[i].names)
            types.update(t for t in groups[i].types.elements() if t)
        canonical = preferred_name(names)
        variants = sorted((n for n in names if n != canonical), key=lambda n: (-names[n], n))
        canonical_type = max(types, key=lambda t: (types[t], t)) if types else None
        out.append(
            EntityGroup(
                canonical_name=canonical, canonical_type=canonical_type, variants=tuple(variants)
            )
        )
    return out


# --------------------------------------------------------------------------- the stage


async def entity_stage(ctx: BuildContext, drafts: list[MacroDraft]) -> list[EntityGroup]:
    settings = ctx.settings.entities
    nodes = [n for d in drafts for n in d.entities]
    with ctx.stage("entities") as (stage, session):
        groups = name_groups(nodes)
        if not groups:
            return []
        merges, questions = await _merge_plan(ctx, groups)
        if questions:
            pairs = [
                f"{q.pair_id}: {groups[q.a].describe()} | {groups[q.b].describe()}"
                for q in questions
            ]
            reply = await ctx.ask(
                session,
                "builder_entity_merge",
                EntityMergeDecisions,
                {"pairs": pairs},
                checkpoint="entities",
                key_parts=[pairs, settings.model_dump(), ctx.tools.embedder.model_name],
                stage=stage,
                where=f"{len(questions)} candidate pairs",
            )
            if reply is not None:
                merges += [(q.a, q.b) for q in questions if reply.decisions.get(q.pair_id) is True]
        return unify(groups, merges)


async def _merge_plan(ctx: BuildContext, groups: list[NameGroup]) -> MergePlan:
    """Automatic merges and model questions from name embeddings (checkpointed)."""
    settings = ctx.settings.entities
    embedder = ctx.tools.embedder
    texts = [f"{g.name} ({g.entity_type})" if g.entity_type else g.name for g in groups]

    async def plan() -> MergePlan:
        with ctx.timings.measure("embed_names"):
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        merges, questions = plan_merges(
            groups,
            vectors,
            merge_similarity=settings.merge_similarity,
            ask_similarity=settings.ask_similarity,
            max_questions=settings.max_questions,
        )
        return list(merges), questions

    return await checkpointed(
        ctx.store,
        "merge_plan",
        stage_key("merge_plan", embedder.model_name, texts, settings.model_dump()),
        plan,
        load=_plan_from_json,
        dump=_plan_to_json,
    )


def _plan_to_json(plan: MergePlan) -> dict[str, Any]:
    merges, questions = plan
    return {
        "merges": [list(m) for m in merges],
        "questions": [[q.pair_id, q.a, q.b, round(q.similarity, 6)] for q in questions],
    }


def _plan_from_json(data: dict[str, Any]) -> MergePlan:
    return (
        [(int(a), int(b)) for a, b in data["merges"]],
        [MergeQuestion(*q) for q in data["questions"]],
    )
