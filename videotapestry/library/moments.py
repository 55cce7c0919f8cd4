"""What a library index holds of one memory: its moments, each a text with its time span.

A memory already has everything a search across videos needs: summaries per level, on-screen
text and spoken lines with exact times, entities. This turns one memory (and its stored
transcript) into flat ``Moment`` rows, a pure function so what gets indexed is tested without
an index engine. Each row's vector is the memory's own node vector when the memory was
embedded with the library's model, else it is computed from the row's text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from videotapestry.asr import TranscriptLine
from videotapestry.memory import VideoMemory
from videotapestry.memory.types import (
    EntityNode,
    EventNode,
    MacroEvent,
    OCRTextNode,
    SuperEvent,
)

#: What a moment is, as a person names it: the whole video, a stage (SuperEvent), an event
#: (MacroEvent), a happening inside it, text on screen, a spoken line, a person or thing.
MomentLevel = Literal["video", "stage", "event", "action", "screen", "speech", "entity"]
MOMENT_LEVELS: tuple[MomentLevel, ...] = (
    "video",
    "stage",
    "event",
    "action",
    "screen",
    "speech",
    "entity",
)


@dataclass(frozen=True)
class Moment:
    """One searchable row: which memory, which node (or spoken line), when, and its text."""

    node_id: str
    level: MomentLevel
    start_s: float
    end_s: float
    text: str


@dataclass(frozen=True)
class IndexedVideo:
    """What the library knows of one memory besides its moments."""

    key: str
    memory: str
    video: str | None
    title: str
    duration_s: float
    summary: str
    #: Changes whenever the memory's files change (``memory_version``): re-index then.
    version: str


def memory_key(memory_dir: str | Path) -> str:
    """A memory's key in a library: a digest of its resolved path, stable across runs."""
    resolved = str(Path(memory_dir).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]


def memory_version(memory_dir: str | Path) -> str:
    """A digest of the memory directory's files (names, sizes, change times), not their
    contents: reading every file of a thousand memories on each update would cost minutes,
    and a rebuilt memory always writes new files. Subdirectories (checkpoints, kept frames)
    are not part of a memory's content."""
    path = Path(memory_dir)
    parts = []
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if entry.is_file():
            stat = entry.stat()
            parts.append(f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:24]


def _joined(*parts: str) -> str:
    return ": ".join(p.strip() for p in parts if p and p.strip())


def memory_moments(memory: VideoMemory, transcript: Sequence[TranscriptLine] = ()) -> list[Moment]:
    """Every moment of ``memory`` worth finding, in time order within each level.

    Rows with no text are left out (an unnamed node finds nothing and only costs an
    embedding); the root is one ``video`` row carrying the title and summary.
    """
    root = memory.root
    moments = []
    summary = _joined(root.title, root.description)
    if summary:
        moments.append(
            Moment(root.id, "video", root.time_range.start, root.time_range.end, summary)
        )
    for node in memory.nodes():
        span = (node.time_range.start, node.time_range.end)
        if isinstance(node, SuperEvent):
            moments.append(Moment(node.id, "stage", *span, _joined(node.label, node.description)))
        elif isinstance(node, MacroEvent):
            moments.append(Moment(node.id, "event", *span, _joined(node.label, node.summary)))
        elif isinstance(node, EventNode):
            moments.append(Moment(node.id, "action", *span, _joined(node.action, node.description)))
        elif isinstance(node, OCRTextNode):
            moments.append(Moment(node.id, "screen", *span, node.text.strip()))
        elif isinstance(node, EntityNode):
            at = node.grounding_time if node.grounding_time is not None else span[0]
            moments.append(Moment(node.id, "entity", at, at, _joined(node.name, node.description)))
    for number, line in enumerate(transcript):
        moments.append(
            Moment(f"speech_{number:05d}", "speech", line.start_s, line.end_s, line.text.strip())
        )
    return [m for m in moments if m.text]
