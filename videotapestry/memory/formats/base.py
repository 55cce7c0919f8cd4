"""The one shape every on-disk format of a memory has: detect, read, write.

``open_memory`` is given a directory and must not care who wrote it, so each format (ours,
MemDreamer's) answers the same three questions behind this protocol, and a new format is one
more implementation in ``videotapestry.memory.formats.registry`` rather than one more branch
wherever memories are opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from videotapestry.memory.video_memory import VideoMemory


class MemoryFormat(Protocol):
    """One on-disk layout of a memory directory."""

    @property
    def name(self) -> str:
        """A short name for logs and messages (``native``, ``memdreamer``)."""
        ...

    @property
    def description(self) -> str:
        """What a directory of this format holds, for the message when none matches."""
        ...

    def detect(self, path: Path) -> bool:
        """Whether ``path`` is a memory of this format (cheap: looks at file names only)."""
        ...

    def read(self, path: Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
        """The memory in ``path``, refused when it was made from another video than the one
        with ``expected_fingerprint``."""
        ...

    def write(self, memory: VideoMemory, path: Path) -> Path:
        """Write ``memory`` into the directory ``path`` in this format; returns ``path``."""
        ...

    def hint(self, path: Path) -> str | None:
        """Why ``path``, which is no memory of this format, still looks like one of its
        places (a MemDreamer release root holds one memory per video); None otherwise."""
        ...
