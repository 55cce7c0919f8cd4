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
from videotapestry.memory.types import MemoryManifest

logger = logging.getLogger(__name__)

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
    if stored != expected:
        raise FingerprintMismatchError(
            f"{origin} was built from a different video (memory fingerprint {stored}, "
            f"this video {expected}); build or import the memory for this video"
        )
