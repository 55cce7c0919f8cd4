"""Where a memory came from, and the check that it is used with the video it was made from.

Every format ends up with a ``MemoryManifest``: the native format stores one beside the
memory, an import makes one (MemDreamer records none), and the builder stamps its models,
prompt hashes and report into one. The fingerprint check lives here rather than in a format
because it is the same refusal whichever files a memory was read from.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from videotapestry.errors import FingerprintMismatchError
from videotapestry.memory.live import is_live_fingerprint
from videotapestry.memory.types import MemoryManifest

logger = logging.getLogger(__name__)

#: Without a fingerprint, how far a memory's end may lie from its video's duration: the
#: larger of these seconds and this share of the video (a clip grid may stop short of the
#: last frames; a memory of another video is almost never that close).
DURATION_TOLERANCE_S = 5.0
DURATION_TOLERANCE_SHARE = 0.02

#: The version of the memory schema: of manifest.json and of the native format's memory.json.
SCHEMA_VERSION = 1


def new_manifest(source: str, *, source_path: str | None = None, **fields: Any) -> MemoryManifest:
    """A manifest stamped with the current schema version and time."""
    return MemoryManifest(
        schema_version=SCHEMA_VERSION,
        source=source,
        source_path=source_path,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **fields,
    )


def check_fingerprint(
    manifest: MemoryManifest | None, expected: str | None, *, origin: str = "memory"
) -> None:
    """Raise ``FingerprintMismatchError`` when the memory's video is not the expected video."""
    if expected is None:
        return
    stored = manifest.video_fingerprint if manifest is not None else None
    if stored is None:
        logger.warning(
            "%s records no video fingerprint; cannot check it was built from this video", origin
        )
        return
    if stored != expected and not is_live_fingerprint(stored):
        # A followed memory names its stream, not its growing recording (``live``).
        raise FingerprintMismatchError(
            f"{origin} was built from a different video (memory fingerprint {stored}, "
            f"this video {expected}); build or import the memory for this video"
        )


def check_duration(
    manifest: MemoryManifest | None,
    memory_duration_s: float,
    video_duration_s: float | None,
    *,
    origin: str = "memory",
) -> None:
    """Raise ``FingerprintMismatchError`` when a memory that records no fingerprint (an
    import without ``--video``) cannot be of this video because its length differs: the
    one check left for such memories, made so that a wrong pairing is not answered from."""
    if video_duration_s is None or (manifest is not None and manifest.video_fingerprint):
        return
    tolerance = max(DURATION_TOLERANCE_S, DURATION_TOLERANCE_SHARE * video_duration_s)
    if abs(memory_duration_s - video_duration_s) > tolerance:
        raise FingerprintMismatchError(
            f"{origin} records no video fingerprint and covers {memory_duration_s:.1f} s, but "
            f"this video lasts {video_duration_s:.1f} s; it was made from another video (import "
            "it again with --video to record the right one)"
        )
