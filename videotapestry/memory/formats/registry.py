"""The formats a memory directory may be in, and opening one without knowing which.

A user points ``ask``, ``inspect`` or the API at a directory; whoever wrote it, the same call
must load it. The formats are tried in order (ours first: a directory that is both, because
an import was saved beside its source, is read the cheap and checked way).
"""

from __future__ import annotations

from pathlib import Path

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.formats.base import MemoryFormat
from videotapestry.memory.formats.memdreamer import MemDreamerFormat
from videotapestry.memory.formats.native import NativeFormat
from videotapestry.memory.video_memory import VideoMemory

#: Every format, in the order a directory is tested against them.
MEMORY_FORMATS: tuple[MemoryFormat, ...] = (NativeFormat(), MemDreamerFormat())


def detect_format(path: str | Path) -> MemoryFormat | None:
    """The first format ``path`` is a memory of, or None."""
    path = Path(path)
    return next((f for f in MEMORY_FORMATS if f.detect(path)), None)


def open_memory(path: str | Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
    """Load a memory directory in any known format: our native one or MemDreamer's layout."""
    path = Path(path)
    memory_format = detect_format(path)
    if memory_format is not None:
        return memory_format.read(path, expected_fingerprint=expected_fingerprint)
    if not path.exists():
        raise MemoryFormatError(f"memory path {path} does not exist")
    for candidate in MEMORY_FORMATS:
        hint = candidate.hint(path)
        if hint is not None:
            raise MemoryFormatError(hint)
    described = " nor ".join(f.description for f in MEMORY_FORMATS)
    raise MemoryFormatError(f"{path} is neither {described}")
