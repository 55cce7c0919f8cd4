"""A memory that grows while its video is recorded (SPEC §16): versions and the pointer.

A memory followed from a live source is a folder whose ``live.json`` names its newest
complete version, a full memory directory under ``versions/``. The builder writes each new
version beside the others and then replaces ``live.json`` in one atomic rename, so a reader
takes the pointer once and reads a directory no one writes again: it never sees half an
append. Old versions are removed only a few versions later, long after a reader that took
their pointer has loaded them.

Every reader (``open_memory``, ``load_memory``, the memory cache, the library) resolves a
followed folder to its newest version here, so the rest of the code sees an ordinary memory.
The memory's video is the builder's own recording of the stream (``live/`` in the folder),
and its manifest names the stream by a stable identity (``LIVE_FINGERPRINT_PREFIX``): the
recording keeps growing, so a content fingerprint of it would change with every append.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.files import write_json_atomic
from videotapestry.timecode import format_timestamp

#: The pointer file of a followed memory folder.
LIVE_FILE = "live.json"
#: Where the versions of a followed memory live, one directory each.
VERSIONS_DIR = "versions"
#: The builder's recording of the stream, inside the followed memory folder.
RECORDING_DIR = "live"
#: How a followed memory's manifest names its video: not a content hash (the recording
#: grows), but the stream's identity, fixed at its first segment.
LIVE_FINGERPRINT_PREFIX = "live-"


@dataclass(frozen=True)
class LiveState:
    """What ``live.json`` says: the newest version, the video time it covers, whether the
    stream has ended, the source followed and the recording (relative to the folder)."""

    version: str
    covered_s: float
    ended: bool
    source: str
    recording: str
    updated: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LiveState:
        return cls(
            version=str(data["version"]),
            covered_s=float(data["covered_s"]),
            ended=bool(data["ended"]),
            source=str(data["source"]),
            recording=str(data["recording"]),
            updated=str(data.get("updated", "")),
        )

    def describe(self) -> str:
        """One line for a person: what the memory covers and whether it still grows."""
        state = "the stream has ended" if self.ended else "still recording"
        return f"live memory covering 00:00-{format_timestamp(self.covered_s)} ({state})"


def live_state(folder: str | Path) -> LiveState | None:
    """The pointer of a followed memory folder; None for any other folder."""
    path = Path(folder) / LIVE_FILE
    if not path.is_file():
        return None
    try:
        return LiveState.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MemoryFormatError(f"{path} is not a readable live-memory pointer: {exc}") from None


def resolve_memory_path(path: str | Path) -> Path:
    """The directory to read for ``path``: its newest version when ``path`` is a followed
    memory folder, else ``path`` itself."""
    path = Path(path)
    state = live_state(path) if path.is_dir() else None
    if state is None:
        return path
    version = path / VERSIONS_DIR / state.version
    if not version.is_dir():
        raise MemoryFormatError(
            f"{path}: {LIVE_FILE} names version {state.version}, which is missing"
        )
    return version


def recording_path(folder: str | Path, state: LiveState) -> Path:
    return Path(folder) / state.recording


def live_video(folder: str | Path, video: str | Path) -> str | Path:
    """The file to read frames from when asking with ``video``: a followed memory's own
    recording when ``video`` is the source it follows (a path or a URL, during the stream
    and after it) or that recording; ``video`` itself for any other memory. Another video
    is refused: the memory names its stream, not a content fingerprint to check it by."""
    state = live_state(folder)
    if state is None:
        return video
    recording = recording_path(folder, state)
    given = str(video)
    if given == state.source or _same_file(given, recording) or _same_file(given, state.source):
        return recording
    raise MemoryFormatError(
        f"{folder} is a live memory of {state.source}; ask it with that source (or its "
        f"recording {recording}), not {given}"
    )


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return False


def publish_live_state(folder: str | Path, state: LiveState) -> None:
    """Point the folder at ``state.version`` in one rename (readers see old or new)."""
    write_json_atomic(Path(folder) / LIVE_FILE, state.to_json())


def is_live_fingerprint(fingerprint: str | None) -> bool:
    return bool(fingerprint) and str(fingerprint).startswith(LIVE_FINGERPRINT_PREFIX)
