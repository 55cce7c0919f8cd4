"""Stage 7: SuperEvents (contiguous stages of MacroEvents), their fallback, and the root.

The model proposes stages by naming each stage's first MacroEvent. The program keeps the
proposal only where it is a valid partition: ids that exist, in strictly increasing order,
the first stage starting at the first MacroEvent, at most ``max_stages`` stages. Anything
else is repaired (unknown or out-of-order starts dropped; the first stage moved to the
start), so stages always tile the video without gaps or overlap. Without a usable reply,
stages are cut by time at about ``target_minutes`` each, on MacroEvent boundaries. The
root's title and description come from one more call over the stages; without it the
memory is still complete (the assembly falls back to the stage labels).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_builders.context import BuildContext
from memory_builders.macro import MacroEvents, clock_span
from videotapestry.contracts.builder import RootSummary, SuperStage, SuperStages
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


# --------------------------------------------------------------------------- the stages


async def super_stage(ctx: BuildContext, info: VideoInfo, macros: MacroEvents) -> list[StagePlan]:
    settings = ctx.settings.super_events
    drafts = macros.drafts
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


async def root_stage(
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
