"""Following a source that is still arriving: a memory that grows at its tail (SPEC §16).

``build-memory SOURCE MEM --follow`` records the source into ``MEM/live/`` (``recording``)
and, each time ``builder.follow.append_every_s`` more seconds of video have arrived, builds
a new version of the memory from the recording so far into ``MEM/versions/vNNNNNN`` and
points ``MEM/live.json`` at it (``videotapestry.memory.live``). A version is an ordinary
build, with the checkpoints of all versions in ``MEM/build``: what an earlier version
finished is reused, keyed by its inputs, so an append computes what the new video brings.

What an append may change (and what stays):

- clips that end before the last shot cut of the earlier version keep their spans, OCR and
  caption (their checkpoints); the last clip or two of the earlier version may be planned
  again, as the video after them can move their end;
- MacroEvents whose clips are unchanged keep their label and summary; the sliding window
  of boundary calls may regroup the last ones;
- SuperEvents more than one back stay as they were (their MacroEvents unchanged); the last
  one and what follows it are planned again with every version, and the root too (a call
  each, ``summary.summary_stages``), or only every ``builder.follow.revise_every_s`` of
  video, the new MacroEvents joining the last SuperEvent in between.

The stream ends with ``#EXT-X-ENDLIST``, when it stops growing for
``builder.follow.idle_end_s``, or with Ctrl-C; the last version is then built from the whole
recording and marked ended. A kill -9 leaves the newest published version readable; running
the same command again resumes from the recorded segments and the checkpoints.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import re
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memory_builders.builder import BUILD_DIR, BuildResult, MemoryBuilder
from memory_builders.followers import make_follower
from memory_builders.lock import build_lock
from memory_builders.output import check_directory
from memory_builders.recording import Recording
from memory_builders.report import BuildError
from memory_builders.sources import SourceFollower
from videotapestry.embeddings import RememberingEmbedder
from videotapestry.memory import (
    RECORDING_DIR,
    VERSIONS_DIR,
    LiveState,
    live_state,
    publish_live_state,
)

VersionListener = Callable[[BuildResult, LiveState], None]
_VERSION = re.compile(r"v(\d{6})")


def version_name(number: int) -> str:
    return f"v{number:06d}"


def version_numbers(out: Path) -> list[int]:
    folder = out / VERSIONS_DIR
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _VERSION.fullmatch(p.name)))


def prune_versions(out: Path, keep: int, current: str) -> list[str]:
    """Remove all but the newest ``keep`` versions (never ``current``); the names removed.
    A reader that took an older pointer has long loaded it: loading takes well under the
    time ``keep`` appends take."""
    numbers = version_numbers(out)
    removed = []
    for number in numbers[:-keep] if len(numbers) > keep else []:
        name = version_name(number)
        if name != current:
            shutil.rmtree(out / VERSIONS_DIR / name, ignore_errors=True)
            removed.append(name)
    return removed


async def follow(
    builder: MemoryBuilder,
    source: str,
    out: str | Path,
    *,
    on_version: VersionListener | None = None,
    follower: SourceFollower | None = None,
) -> BuildResult:
    """Follow ``source`` into ``out`` until it ends; the last version's build result."""
    out = Path(out)
    check_directory(out, out / BUILD_DIR)
    settings = builder.config.builder.follow
    if not isinstance(builder.embedder, RememberingEmbedder):
        builder.embedder = RememberingEmbedder(builder.embedder)
    bound_native_heap()
    with build_lock(out, out / BUILD_DIR, Path(source)):
        recording = Recording(out / RECORDING_DIR, source)
        follower = follower or make_follower(source, recording.segments, settings)
        state = live_state(out)
        built_s = state.covered_s if state is not None else 0.0
        number = max(version_numbers(out), default=0)
        result: BuildResult | None = None
        arrived: float | None = None  # probed only when the recording changed
        #: What the last version was built from: the recorded bytes, and whether its tail was
        #: held back (a file still being written); the stream's end builds one more version
        #: only when either leaves something out.
        built_from: tuple[int, bool] | None = None
        try:
            while True:
                ended = await asyncio.to_thread(follower.poll)
                torn = not (follower.whole_segments or ended)
                appended = await asyncio.to_thread(recording.append_new)
                if arrived is None or appended or ended:
                    arrived = await asyncio.to_thread(recording.arrived_s)
                behind = built_from != (recording.bytes, False)  # or nothing built yet
                final = ended and (behind or not _ended(out))
                if arrived > 0 and (arrived - built_s >= settings.append_every_s or final):
                    await asyncio.to_thread(functools.partial(recording.update_mp4, torn_tail=torn))
                    built_from = (recording.bytes, torn)
                    number += 1
                    result = None  # the last version's memory is not kept while the next builds
                    result, published = await _version(
                        builder, recording, out, number, source, ended
                    )
                    built_s = result.report.duration_s
                    if on_version is not None:
                        on_version(result, published)
                if ended:
                    if result is None:
                        raise BuildError(f"{source} ended before any video arrived")
                    return result
                await asyncio.sleep(settings.poll_s)
        finally:
            follower.close()  # a stream URL's reader thread stops


#: glibc's ``mallopt`` parameters: the number of malloc arenas, and the size from which a
#: block is a memory mapping of its own.
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3
#: Blocks from 256 KiB (a decoded frame, an OCR tensor, a JPEG) are mapped and unmapped on
#: their own (``bound_native_heap``).
_MMAP_THRESHOLD = 256 * 1024


def _glibc() -> Any | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): its allocator is left as it is
        return None


def bound_native_heap() -> None:
    """Keep a long follow's resident memory flat. Every version runs its decoding, OCR and
    JPEG work on fresh worker threads, and glibc gives each new thread's allocations an arena
    of its own that it never hands back: measured, a follow of 65 minutes went from 1.2 to
    2.0 GB, almost all of it free memory held in arenas. Two arenas, and the free memory
    given back after each version (``trim_native_heap``), keep it from growing.

    Large blocks are mapped on their own from 256 KiB: glibc's own threshold starts at
    128 KiB but rises to the largest block freed (up to 32 MiB), after which a version's
    decoded frames and OCR tensors were carved from the arenas, where what the version
    freed stayed resident until the trim and what the trim could not give back varied from
    version to version. Measured with ``bench/bench_live.py`` (2 hours, appends of 5
    minutes, figures after the first 10 minutes, two runs without and three with): the
    peak during an append went from 1,119-1,256 MB to 953-1,061 MB; the RSS after a version,
    from 881-979 and 866-1,019 MB (a version 46 MB above the last one) to 865-968, 870-966
    and 866-967 MB, a steady rise of about 4 MB a version whose highest is the last. The
    cost is CPU: each mapping's pages are zeroed when first touched, and the bench at 65
    minutes took 99.8 s of CPU instead of 76.6 s (system time 6.6 -> 27.3 s). From 2 MiB it
    took 85 s, but kept less of the gain over 2 hours (peak 974-1,116 MB, after a version
    871-985 MB)."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, 2)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def trim_native_heap() -> None:
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


async def _version(
    builder: MemoryBuilder, recording: Recording, out: Path, number: int, source: str, ended: bool
) -> tuple[BuildResult, LiveState]:
    """Build version ``number`` and point ``out`` at it; its result and the pointer."""
    name = version_name(number)
    target = out / VERSIONS_DIR / name
    if target.exists():  # left by a kill before its pointer was written
        shutil.rmtree(target)
    target.mkdir(parents=True)
    assert recording.identity is not None  # set by the first append
    state = live_state(out)
    previous = out / VERSIONS_DIR / state.version if state is not None else None
    result = await builder.abuild_version(
        recording.path, out, target, recording.identity, previous=previous, final=ended
    )
    published = LiveState(
        version=name,
        covered_s=round(result.report.duration_s, 3),
        ended=ended,
        source=source,
        recording=str(recording.path.relative_to(out)),
        updated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    publish_live_state(out, published)
    prune_versions(out, builder.config.builder.follow.keep_versions, name)
    trim_native_heap()
    return result, published


def _ended(out: Path) -> bool:
    state = live_state(out)
    return state is not None and state.ended
