"""A library of videos (SPEC §15): every memory under some roots, indexed and searched as one.

``LibraryIndex`` keeps the index (LanceDB, embedded) up to date memory by memory and answers
``search`` with ranked moments: video, span, level, text, score.
"""

from videotapestry.library.index import (
    LibraryIndex,
    SearchHit,
    UpdateReport,
    find_memories,
)
from videotapestry.library.moments import (
    MOMENT_LEVELS,
    IndexedVideo,
    Moment,
    memory_key,
    memory_moments,
    memory_version,
)

__all__ = [
    "MOMENT_LEVELS",
    "IndexedVideo",
    "LibraryIndex",
    "Moment",
    "SearchHit",
    "UpdateReport",
    "find_memories",
    "memory_key",
    "memory_moments",
    "memory_version",
]
