"""Stage 8a: the stages' outputs put together as one ``VideoMemory``, then its embeddings.

The tree is root → SuperEvents → MacroEvents (each with its subgraph) → clips, with the
relations that make it a graph: SuperEvents LEADS_TO the next (with the model's transition
as the reason), MacroEvents BEFORE the next, and each subgraph's own. Where a summary call
failed the node still gets text (the stage labels, the clip captions), so a degraded build
is a usable memory.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from memory_builders.context import BuildContext
from memory_builders.macro import MacroEvents
from memory_builders.perception import Perceptions
from memory_builders.segmentation import ClipSpan
from memory_builders.summary import StagePlan, super_id
from videotapestry.contracts.builder import RootSummary
from videotapestry.memory import (
    Clip,
    EntityGroup,
    MacroEvent,
    Relation,
    RootEvent,
    SuperEvent,
    TimeRange,
    VideoMemory,
    embed_reusing,
    ensure_embeddings,
)
from videotapestry.video import VideoInfo

ROOT_ID = "root"


def assemble_memory(
    ctx: BuildContext,
    info: VideoInfo,
    clips: list[ClipSpan],
    perceptions: Perceptions,
    macros: MacroEvents,
    groups: list[EntityGroup],
    plans: list[StagePlan],
    summary: RootSummary | None,
) -> VideoMemory:
    drafts = macros.drafts
    supers: list[SuperEvent] = []
    macro_nodes: list[MacroEvent] = []
    for number, plan in enumerate(plans, start=1):
        sid = super_id(number)
        first, last = drafts[plan.macros[0]], drafts[plan.macros[-1]]
        supers.append(
            SuperEvent(
                id=sid,
                parent_id=ROOT_ID,
                label=plan.label,
                description=plan.description,
                key_entities=tuple(plan.key_entities),
                time_range=TimeRange(start=first.start_s, end=last.end_s),
            )
        )
        for index in plan.macros:
            draft = drafts[index]
            label, text, names = macros.text(draft)
            macro_nodes.append(
                MacroEvent(
                    id=draft.id,
                    parent_id=sid,
                    label=label,
                    summary=text,
                    key_entity_names=tuple(names),
                    slot=draft.slot,
                    time_range=TimeRange(start=draft.start_s, end=draft.end_s),
                )
            )
    relations: list[Relation] = []
    for number in range(1, len(supers)):
        reason = plans[number - 1].transition or "follows in time"
        relations.append(
            Relation(
                source=supers[number - 1].id,
                target=supers[number].id,
                type="PROGRESSION",
                label="LEADS_TO",
                reason=reason,
            )
        )
    for a, b in itertools.pairwise(drafts):
        relations.append(Relation(source=a.id, target=b.id, type="TEMPORAL", label="BEFORE"))
    for draft in drafts:
        relations.extend(draft.relations)
    spans = {c.id: c for c in clips}
    clip_nodes = []
    for draft in drafts:
        for clip_id in draft.clip_ids:
            clip = spans[clip_id]
            record = perceptions.records.get(clip_id)
            clip_nodes.append(
                Clip(
                    id=clip_id,
                    time_range=TimeRange(start=clip.start_s, end=clip.end_s),
                    macro_id=draft.id,
                    node_ids=tuple(dict.fromkeys(draft.clip_nodes.get(clip_id, []))),
                    captions=(record["caption"],) if record else (),
                )
            )
    return VideoMemory(
        root=_root(ctx.video, round(info.duration_s, 3), plans, summary),
        super_events=supers,
        macro_events=macro_nodes,
        subgraph_nodes=[n for d in drafts for n in d.nodes],
        relations=relations,
        unification=groups,
        clips=clip_nodes,
        origin=str(ctx.out),
    )


def _root(
    video: Path, duration_s: float, plans: list[StagePlan], summary: RootSummary | None
) -> RootEvent:
    """The root from the model's summary, else titled by the file and told by its stages."""
    return RootEvent(
        id=ROOT_ID,
        time_range=TimeRange(start=0.0, end=duration_s),
        title=summary.title.strip() if summary else video.stem,
        description=(summary.description.strip() if summary else " ".join(p.label for p in plans)),
        themes=tuple(summary.themes) if summary else (),
        key_entities=tuple(summary.key_entities) if summary else (),
        emotional_tone=(summary.emotional_tone or None) if summary else None,
    )


async def embed_memory(ctx: BuildContext, memory: VideoMemory) -> VideoMemory:
    """The memory with its node vectors; those of the memory an earlier run wrote (into the
    same directory, or a followed memory's last version) are reused for every node text
    they were made from, so an append embeds only its new nodes."""
    if not ctx.settings.embeddings:
        return memory
    earlier = await asyncio.to_thread(ctx.earlier_memory)
    with ctx.stage("embeddings"), ctx.timings.measure("embeddings"):
        if earlier is None:
            return await asyncio.to_thread(ensure_embeddings, memory, ctx.tools.embedder)
        return await asyncio.to_thread(embed_reusing, memory, earlier, ctx.tools.embedder)
