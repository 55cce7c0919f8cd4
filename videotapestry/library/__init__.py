"""A library of videos (SPEC §15): every memory under some roots, indexed and searched as one.

``LibraryIndex`` keeps the index (LanceDB, embedded) up to date memory by memory and answers
``search`` with ranked moments: video, span, level, text, score. ``Library`` answers a
question across the videos (``VideoTapestry.library``).
"""

from videotapestry.library.answering import (
    NONE_SHOWS_THIS,
    Library,
    LibraryCitation,
    LibraryResult,
)
from videotapestry.library.index import (
    LibraryIndex,
    SearchHit,
    UpdateReport,
    find_memories,
    index_built,
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
    "NONE_SHOWS_THIS",
    "IndexedVideo",
    "Library",
    "LibraryCitation",
    "LibraryIndex",
    "LibraryResult",
    "Moment",
    "SearchHit",
    "UpdateReport",
    "find_memories",
    "index_built",
    "memory_key",
    "memory_moments",
    "memory_version",
]
