"""Stage 7: SuperEvents (contiguous stages of MacroEvents), their fallback, and the root.

The model proposes stages by naming each stage's first MacroEvent. The program keeps the
proposal only where it is a valid partition: ids that exist, in strictly increasing order,
the first stage starting at the first MacroEvent, at most ``max_stages`` stages. Anything
else is repaired (unknown or out-of-order starts dropped; the first stage moved to the
start), so stages always tile the video without gaps or overlap. Without a usable reply,
stages are cut by time at about ``target_minutes`` each, on MacroEvent boundaries. The
root's title and description come from one more call over the stages; without it the
memory is still complete (the assembly falls back to the stage labels).

A followed memory (``follow``) grows at its tail, and what a reader saw of its past must
not be rewritten under them: each version keeps the previous version's SuperEvents but its
last as they were (``fixed_stages``), and plans only the rest, the last SuperEvent and what
came after it, with the same call over those MacroEvents alone. ``max_stages`` then limits
each such revision, not the whole: a stream of many hours holds as many SuperEvents as its
length asks for. With ``builder.follow.revise_every_s`` set, the revision and the root's
are made only that often (``revision_due``); between them the new MacroEvents join the
last SuperEvent, whose text, like the root's, stays as it was.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_builders.context import BuildContext
from memory_builders.macro import MacroEvents, clock_span
from memory_builders.subgraphs import MacroDraft
from videotapestry.contracts.builder import RootSummary, SuperStage, SuperStages
from videotapestry.memory import VideoMemory
from videotapestry.timecode import format_timestamp
from videotapestry.video import VideoInfo


@dataclass
class StagePlan:
    """One SuperEvent: the indices of its MacroEvents and its text."""

    macros: list[int]
    label: str = ""
    description: str = ""
    key_entities: list[str] = field(default_factory=list)
    transition: str = ""


def super_id(number: int) -> str:
    return f"super_{number:02d}"


def stages_from_reply(
    stages: Sequence[SuperStage], macro_ids: Sequence[str], *, max_stages: int
) -> list[StagePlan]:
    position = {mid: i for i, mid in enumerate(macro_ids)}
    chosen: list[tuple[int, SuperStage]] = []
    for stage in stages:
        index = position.get(stage.first_macro_id.strip())
        if index is None or (chosen and index <= chosen[-1][0]):
            continue
        chosen.append((index, stage))
    if not chosen:
        return []
    chosen = chosen[:max_stages]
    if chosen[0][0] != 0:
        chosen[0] = (0, chosen[0][1])
    plans = []
    for k, (start, stage) in enumerate(chosen):
        end = chosen[k + 1][0] if k + 1 < len(chosen) else len(macro_ids)
        plans.append(
            StagePlan(
                list(range(start, end)),
                stage.label.strip(),
                stage.description.strip(),
                [n for n in stage.key_entities if n.strip()],
                stage.transition.strip(),
            )
        )
    return plans


def stages_by_time(
    starts: Sequence[float], ends: Sequence[float], *, target_s: float, max_stages: int
) -> list[StagePlan]:
    """Stages of about ``target_s`` each, cut where a MacroEvent starts."""
    if not starts:
        return []
    total = ends[-1] - starts[0]
    count = max(1, min(max_stages, len(starts), round(total / target_s) or 1))
    cuts: list[int] = []
    for k in range(1, count):
        at = starts[0] + total * k / count
        best = min(range(1, len(starts)), key=lambda i: (abs(starts[i] - at), i))
        if best not in cuts and (not cuts or best > cuts[-1]):
            cuts.append(best)
    bounds = [0, *cuts, len(starts)]
    return [StagePlan(list(range(a, b))) for a, b in itertools.pairwise(bounds)]


@dataclass(frozen=True)
class EarlierStage:
    """A SuperEvent as the previous version of a followed memory published it: its
    MacroEvents (id, start, end) and its text."""

    macros: tuple[tuple[str, float, float], ...]
    plan: StagePlan


def earlier_stages(memory: VideoMemory) -> list[EarlierStage]:
    """The SuperEvents of ``memory`` in order, with the transition each had to the next."""
    reasons = {(r.source, r.target): r.reason for r in memory.relations() if r.label == "LEADS_TO"}
    supers = memory.super_events()
    stages = []
    for k, node in enumerate(supers):
        members = memory.macro_events(node.id)
        following = supers[k + 1].id if k + 1 < len(supers) else None
        stages.append(
            EarlierStage(
                tuple((m.id, m.time_range.start, m.time_range.end) for m in members),
                StagePlan(
                    [],
                    node.label,
                    node.description,
                    list(node.key_entities),
                    (reasons.get((node.id, following)) or "") if following else "",
                ),
            )
        )
    return stages


#: How far a MacroEvent's stored start or end may be from its draft's (a memory's times
#: are written to the millisecond).
_SAME_TIME_S = 2e-3


def fixed_stages(earlier: Sequence[EarlierStage], drafts: Sequence[MacroDraft]) -> list[StagePlan]:
    """The earlier version's SuperEvents that this one keeps as they were: all but its last,
    in order, as far as each one's MacroEvents are still the first of ``drafts`` that
    follow, with the same ids and spans. A stage whose MacroEvents were regrouped (and
    every stage after it) is planned again."""
    fixed: list[StagePlan] = []
    at = 0
    for stage in earlier[:-1]:
        members = drafts[at : at + len(stage.macros)]
        same = len(members) == len(stage.macros) and all(
            d.id == mid
            and abs(d.start_s - start) <= _SAME_TIME_S
            and abs(d.end_s - end) <= _SAME_TIME_S
            for d, (mid, start, end) in zip(members, stage.macros, strict=True)
        )
        if not same or not members:
            break
        fixed.append(dataclasses.replace(stage.plan, macros=list(range(at, at + len(members)))))
        at += len(members)
    return fixed


def revision_due(earlier_s: float, covered_s: float, every_s: float, *, final: bool) -> bool:
    """Whether this version revises the last SuperEvent and the root: always when
    ``every_s`` is 0 and for the stream's final version, else when the covered time passed
    a multiple of ``every_s`` since the earlier version."""
    if every_s <= 0 or final:
        return True
    return int(covered_s // every_s) > int(earlier_s // every_s)


def kept_tail(
    earlier: Sequence[EarlierStage], fixed: Sequence[StagePlan], count: int
) -> StagePlan | None:
    """Between revisions: the earlier version's last SuperEvent, with its text, stretched
    over every MacroEvent after the fixed ones; None when the fixed stages are not all
    the earlier ones but its last (its MacroEvents were regrouped: it must be planned)."""
    if not earlier or len(fixed) != len(earlier) - 1:
        return None
    start = sum(len(p.macros) for p in fixed)
    if start >= count:
        return None
    return dataclasses.replace(earlier[-1].plan, macros=list(range(start, count)))


# --------------------------------------------------------------------------- the stages


async def summary_stages(
    ctx: BuildContext,
    info: VideoInfo,
    macros: MacroEvents,
    earlier: VideoMemory | None = None,
    *,
    final: bool = True,
) -> tuple[list[StagePlan], RootSummary | None]:
    """Stage 7: the SuperEvents and the root's summary. ``earlier``, a followed memory's
    previous version, fixes all its SuperEvents but the last (``fixed_stages``); the rest
    are planned by one call over their MacroEvents, and the root by one more, unless no
    revision is due (``revision_due``) and the earlier last stage can take the new
    MacroEvents (``kept_tail``): then both keep their earlier text. ``final``: this is the
    followed stream's last version (always revised)."""
    stages = earlier_stages(earlier) if earlier is not None else []
    fixed = fixed_stages(stages, macros.drafts)
    if earlier is not None and not revision_due(
        earlier.root.time_range.end,
        info.duration_s,
        ctx.settings.follow.revise_every_s,
        final=final,
    ):
        tail = kept_tail(stages, fixed, len(macros.drafts))
        if tail is not None:
            ctx.report.stage("super_events").reused += 1
            ctx.report.stage("root").reused += 1
            return [*fixed, tail], kept_root(earlier)
    offset = sum(len(p.macros) for p in fixed)
    plans = await _plan_stages(ctx, info, macros, macros.drafts[offset:])
    for plan in plans:
        plan.macros = [offset + i for i in plan.macros]
    plans = [*fixed, *plans]
    return plans, await _root(ctx, info, macros, plans)


def kept_root(memory: VideoMemory) -> RootSummary:
    """The root's summary as ``memory`` holds it (a followed memory between revisions)."""
    root = memory.root
    return RootSummary(
        title=root.title,
        description=root.description,
        themes=list(root.themes),
        key_entities=list(root.key_entities),
        emotional_tone=root.emotional_tone or "",
    )


async def _plan_stages(
    ctx: BuildContext, info: VideoInfo, macros: MacroEvents, drafts: Sequence[MacroDraft]
) -> list[StagePlan]:
    """Stages over ``drafts`` (indices into it): the model's, else cut by time."""
    settings = ctx.settings.super_events
    with ctx.stage("super_events") as (stage, session):
        lines = [summary_line(d.id, d.start_s, d.end_s, *macros.text(d)) for d in drafts]
        reply = await ctx.ask(
            session,
            "builder_super",
            SuperStages,
            {
                "events": lines,
                "video_duration": format_timestamp(info.duration_s),
                "target_minutes": f"{settings.target_minutes:g}",
                "max_stages": settings.max_stages,
            },
            checkpoint="super",
            key_parts=[lines, settings.model_dump()],
            stage=stage,
            where="SuperEvents",
        )
        macro_ids = [d.id for d in drafts]
        plans = (
            stages_from_reply(reply.stages, macro_ids, max_stages=settings.max_stages)
            if reply is not None
            else []
        )
        if not plans:
            if reply is not None:
                ctx.degraded("builder_super", "SuperEvents", "no valid stage; cut by time")
            plans = stages_by_time(
                [d.start_s for d in drafts],
                [d.end_s for d in drafts],
                target_s=settings.target_minutes * 60,
                max_stages=settings.max_stages,
            )
        for plan in plans:
            if not plan.label:
                plan.label = macros.text(drafts[plan.macros[0]])[0]
                plan.description = " ".join(macros.text(drafts[i])[1] for i in plan.macros)[:800]
    return plans


async def _root(
    ctx: BuildContext, info: VideoInfo, macros: MacroEvents, plans: list[StagePlan]
) -> RootSummary | None:
    drafts = macros.drafts
    with ctx.stage("root") as (stage, session):
        lines = [
            summary_line(
                super_id(number),
                drafts[plan.macros[0]].start_s,
                drafts[plan.macros[-1]].end_s,
                plan.label,
                plan.description,
                plan.key_entities,
            )
            for number, plan in enumerate(plans, start=1)
        ]
        return await ctx.ask(
            session,
            "builder_root",
            RootSummary,
            {"stages": lines, "video_duration": format_timestamp(info.duration_s)},
            checkpoint="root",
            key_parts=[lines],
            stage=stage,
            where="root",
        )


def summary_line(
    node_id: str, start_s: float, end_s: float, label: str, text: str, names: Sequence[str]
) -> str:
    """One event as the summary prompts list it: id, time span, label, text, key entities."""
    extra = f" | key entities: {', '.join(names)}" if names else ""
    return f"{node_id} [{clock_span(start_s, end_s)}] {label}: {text}{extra}"
