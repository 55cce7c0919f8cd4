"""The Direct baseline's input: frames sampled uniformly over the whole video.

As in the paper, Direct sends individual frames (no grids, which are part of VideoTapestry's
own observation design) to the same model, at most ``agents.direct.max_frames`` (50) and
within the per-call image cap. That cap is the ``direct`` role's own (``max_images``) when
set: the paper gives each backbone as many frames as its gateway accepts (GPT 50, Qwen3.7-Plus
196, Qwen3.6-27B 396), while the method's observation calls keep ``images.max_per_call``.
Timestamps go in the prompt text, not into the pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

from videotapestry.agents.citations import frame_spans
from videotapestry.agents.context import RunContext
from videotapestry.agents.state import EvidenceRef
from videotapestry.agents.tools import frame_job, render
from videotapestry.images import ImagePart
from videotapestry.timecode import format_timestamp
from videotapestry.variants import DIRECT_ROLE
from videotapestry.video import TimeWindow, individual_frame_budget


async def direct_frames(ctx: RunContext) -> list[ImagePart]:
    video = ctx.require_video("the Direct baseline")
    settings = ctx.config.agents.direct
    cap = ctx.config.models.settings_for(DIRECT_ROLE).max_images
    sent = ctx.config.images.model_copy(update={"max_per_call": cap}) if cap else ctx.config.images
    budget = individual_frame_budget(sent, settings)
    whole = [TimeWindow(0.0, video.info.duration_s)]
    job = frame_job(
        ctx, video, whole, budget, layout="frames", images=sent, max_frames=settings.max_frames,
        label="untouched",
    )  # fmt: skip
    images = (await render(ctx, job)).images
    ctx.images.extend(images)
    return images


def direct_frame_refs(images: Sequence[ImagePart], duration_s: float) -> list[EvidenceRef]:
    """The frames the Direct baseline shows, citable as ``D1`` … in order; each stands for
    the stretch of the video between the midpoints to its neighbours."""
    times = [image.timestamps[0] if image.timestamps else 0.0 for image in images]
    return [
        EvidenceRef(
            id=f"D{number}",
            kind="frame",
            level="direct",
            start_s=start,
            end_s=end,
            text=f"frame at {format_timestamp(t)}",
            at_s=t,
        )
        for number, (t, (start, end)) in enumerate(
            zip(times, frame_spans(times, [(0.0, duration_s)]), strict=True), 1
        )
    ]
