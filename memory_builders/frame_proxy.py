"""Stage 2c (optional, ``builder.frame_proxy``): the frame proxy, beside the scan and the
transcript.

A low-resolution copy of the video with a keyframe every second (or every frame) that
query-time tools decode instead of the original (``videotapestry.video.proxy`` says what it
keeps exact and what it changes). It is written straight into the memory directory rather
than the staging area: it is a file of its own, complete once its description is written,
and readers use it only while that description names this video and this very file, so a
kill mid-write leaves nothing they would read.

Resume: the checkpoint holds the description under a key of the video's fingerprint, the
settings and the size. It is reused only while the file in the memory directory is still
the one it describes; otherwise (deleted, replaced, never finished) the proxy is written
again. A build with the proxy off removes an old one, so the directory matches its config.
A proxy that cannot be written is a degradation of the build, never a stop: the memory
works without it.
"""

from __future__ import annotations

import asyncio
import logging

from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.context import BuildContext
from videotapestry.errors import VideoError
from videotapestry.video import (
    PROXY_FILE,
    ProxyManifest,
    VideoInfo,
    find_proxy,
    proxy_max_side,
    remove_proxy,
    write_proxy,
)

log = logging.getLogger("memory_builders")


async def frame_proxy_stage(ctx: BuildContext, info: VideoInfo) -> ProxyManifest | None:
    """The proxy's description when the config asks for one and it could be written."""
    settings = ctx.settings.frame_proxy
    if not settings.enabled:
        if remove_proxy(ctx.out):
            log.info("%s: removed the frame proxy (builder.frame_proxy.enabled is off)", ctx.out)
        return None
    for partial in ctx.out.glob(f".{PROXY_FILE}.*.tmp"):  # left by a killed write
        partial.unlink(missing_ok=True)
    side = proxy_max_side(ctx.config.video, ctx.config.images, settings.max_side)
    key = stage_key("frame_proxy", info.fingerprint, settings.model_dump(), side)
    with ctx.stage("frame_proxy") as (stage, _):
        try:
            manifest = await checkpointed(
                ctx.store,
                "frame_proxy",
                key,
                lambda: _write(ctx, info, side),
                load=ProxyManifest.model_validate,
                dump=lambda made: made.model_dump(mode="json"),
                tally=stage,
            )
            if not _in_place(ctx, info, manifest):  # the checkpoint outlived its file
                manifest = await _write(ctx, info, side)
                ctx.store.put("frame_proxy", key, manifest.model_dump(mode="json"))
        except VideoError as exc:
            ctx.degraded("frame_proxy", "frame_proxy", f"no frame proxy written: {exc}")
            return None
    return manifest


def _in_place(ctx: BuildContext, info: VideoInfo, manifest: ProxyManifest) -> bool:
    found = find_proxy(ctx.out, info).manifest
    return found is not None and found.proxy_fingerprint == manifest.proxy_fingerprint


async def _write(ctx: BuildContext, info: VideoInfo, side: int) -> ProxyManifest:
    ctx.out.mkdir(parents=True, exist_ok=True)
    bar = ctx.tools.progress.stage("frame proxy", round(info.duration_s), unit="s")
    try:
        with ctx.timings.measure("frame_proxy"):
            manifest = await asyncio.to_thread(
                write_proxy,
                info,
                ctx.out,
                ctx.settings.frame_proxy,
                side,
                progress=lambda t: bar.set_done(round(t)),
            )
    finally:
        bar.close()
    return manifest
