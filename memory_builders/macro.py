"""Stage 5: MacroEvents. Their boundaries come from a sliding window over the clip captions
(``boundaries``: one checkpointed call per window, embedding change points where a call
fails); then each MacroEvent gets its subgraph (``subgraphs``) and one checkpointed call
for its label, summary and relations.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from memory_builders.boundaries import (
    BoundaryWindow,
    boundary_windows,
    change_points,
    enforce_lengths,
    kept_boundaries,
    neighbour_similarity,
    segments_from_boundaries,
)
from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.context import BuildContext, fan_out
from memory_builders.perception import Perceptions
from memory_builders.segmentation import ClipSpan
from memory_builders.subgraphs import MacroDraft, assemble_subgraph, validated_relations
from videotapestry.contracts.builder import MacroBoundaries, MacroDetails
from videotapestry.memory import TimeRange, clock_range, node_line
from videotapestry.timecode import format_timestamp
from videotapestry.video import VideoInfo

log = logging.getLogger("memory_builders")


@dataclass
class MacroEvents:
    """The video's MacroEvents in order, and the model's details of each (None where the
    MacroEvent had no caption to describe, or the call failed)."""

    drafts: list[MacroDraft]
    details: dict[str, MacroDetails | None]

    def text(self, draft: MacroDraft) -> tuple[str, str, list[str]]:
        """A MacroEvent's label, summary and key entity names: the model's, else made from
        its captions, so a failed call still leaves a readable node."""
        detail = self.details.get(draft.id)
        if detail is not None:
            return detail.label.strip(), detail.summary.strip(), detail.key_entities
        captions = [c for c in draft.captions_raw if c]
        if not captions:
            return (
                "Undescribed stretch",
                "No clip of this stretch could be described (see the build report).",
                [],
            )
        label = " ".join(captions[0].split()[:6])
        return label, " ".join(captions)[:600], [e.name for e in draft.entities[:5]]


def clock_span(start_s: float, end_s: float) -> str:
    """``start-end`` as the prompts write a stretch of the video."""
    return clock_range(TimeRange(start=start_s, end=end_s))


async def macro_stage(
    ctx: BuildContext, info: VideoInfo, clips: list[ClipSpan], perceptions: Perceptions
) -> MacroEvents:
    segments = await _segments(ctx, info, clips, perceptions)
    sample_interval_s = 1.0 / ctx.settings.scan.sample_fps
    drafts = [
        assemble_subgraph(
            slot,
            [clips[i] for i in segment],
            perceptions.records,
            perceptions.ocr_spans,
            caption_prefix=lambda c: f"[{clock_span(c.start_s, c.end_s)}]",
            sample_interval_s=sample_interval_s,
        )
        for slot, segment in enumerate(segments)
    ]
    return MacroEvents(drafts, await _details(ctx, drafts))


async def _segments(
    ctx: BuildContext, info: VideoInfo, clips: list[ClipSpan], perceptions: Perceptions
) -> list[list[int]]:
    """The clips of each MacroEvent (indices), from the boundary calls."""
    settings = ctx.settings.macro
    with ctx.stage("macro_bounds") as (stage, session):
        captions = [perceptions.caption(c.id) for c in clips]
        valid = [bool(c) for c in captions]
        sims = await _caption_similarity(ctx, captions, valid)
        windows = boundary_windows(clips, settings.window_s, settings.overlap_s)
        boundaries: set[int] = set()
        bar = ctx.tools.progress.stage("macro bounds", len(windows), unit="call")

        async def one(window: BoundaryWindow) -> bool:
            shown = clips[window.first : window.last + 1]
            lines = [
                f"{c.id} [{clock_span(c.start_s, c.end_s)}] "
                + perceptions.caption(c.id, missing="(not described)")
                for c in shown
            ]
            if len(shown) < 2 or not any(valid[window.first : window.last + 1]):
                bar.update()
                return False
            before = stage.computed
            reply = await ctx.ask(
                session,
                "builder_macro_boundaries",
                MacroBoundaries,
                {
                    "clips": lines,
                    "window_start": format_timestamp(shown[0].start_s),
                    "window_end": format_timestamp(shown[-1].end_s),
                    "video_duration": format_timestamp(info.duration_s),
                },
                checkpoint=f"boundaries/{shown[0].id}",
                key_parts=[lines, settings.model_dump()],
                stage=stage,
                where=f"clips {shown[0].id}..{shown[-1].id}",
            )
            if reply is None:
                boundaries.update(change_points(window, sims, clips))
            else:
                boundaries.update(kept_boundaries(window, clips, reply.boundaries))
            bar.update()
            return stage.computed > before

        try:
            await fan_out(windows, one, ctx.settings.concurrency)
        finally:
            bar.close()
        segments = segments_from_boundaries(len(clips), boundaries)
        return enforce_lengths(segments, clips, sims, min_s=settings.min_s, max_s=settings.max_s)


async def _caption_similarity(
    ctx: BuildContext, captions: list[str], valid: list[bool]
) -> np.ndarray:
    """Each clip caption's similarity to the previous one (checkpointed: a resumed build
    need not load the embedding model for it)."""
    embedder = ctx.tools.embedder

    async def compute() -> np.ndarray:
        with ctx.timings.measure("embed_captions"):
            vectors = (
                embedder.embed([c or "-" for c in captions])
                if any(valid)
                else np.zeros((len(captions), 1), np.float32)
            )
        return neighbour_similarity(vectors, valid)

    return await checkpointed(
        ctx.store,
        "caption_similarity",
        stage_key("caption_similarity", embedder.model_name, captions),
        compute,
        load=lambda data: np.asarray(data, dtype=np.float64),
        dump=lambda sims: [round(float(x), 6) for x in sims],
    )


async def _details(ctx: BuildContext, drafts: list[MacroDraft]) -> dict[str, MacroDetails | None]:
    """Each described MacroEvent's label, summary and relations from one call."""
    details: dict[str, MacroDetails | None] = {}
    with ctx.stage("macro_events") as (stage, session):
        bar = ctx.tools.progress.stage("macro events", len(drafts), unit="event")

        async def one(draft: MacroDraft) -> bool:
            if not draft.described:
                details[draft.id] = None
                bar.update()
                return False
            nodes = "\n".join(node_line(n) for n in draft.nodes) or "(none)"
            before = stage.computed
            reply = await ctx.ask(
                session,
                "builder_macro",
                MacroDetails,
                {
                    "macro_id": draft.id,
                    "start": format_timestamp(draft.start_s),
                    "end": format_timestamp(draft.end_s),
                    "captions": draft.captions,
                    "nodes": nodes,
                },
                checkpoint=f"macro/{draft.id}",
                key_parts=[draft.captions, nodes],
                stage=stage,
                where=draft.id,
            )
            details[draft.id] = reply
            if reply is not None:
                kept, dropped = validated_relations(
                    reply.relations, draft.node_ids, draft.relations
                )
                draft.relations.extend(kept)
                if dropped:
                    log.info("%s: %d proposed relations dropped", draft.id, dropped)
            bar.update()
            return stage.computed > before

        try:
            await fan_out(drafts, one, ctx.settings.concurrency)
        finally:
            bar.close()
    return details
