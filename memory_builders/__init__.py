"""Offline construction of hierarchical video memories (raw video to memory); see SPEC §4.

    from memory_builders import MemoryBuilder
    result = MemoryBuilder("default").build("video.mp4", "memories/video")

``memory_builders.builder`` runs the stages in order; each stage lives in its own module
(``scan``, ``transcript``, ``segmentation``, ``perception``, ``macro``, ``entities``,
``summary``, ``assembly``, ``output``), pure rules beside them (``boundaries``,
``subgraphs``, ``clip_images``, ``clip_records``), and what every stage shares in
``context`` and ``checkpoints``. The builder uses only the public core: the faces of
``videotapestry.video``, ``.asr``, ``.memory`` and ``.llm``, and single-module tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_builders.builder import BuildResult, MemoryBuilder
    from memory_builders.report import (
        BuildError,
        BuildReport,
        BuildStoppedError,
        TooManyFailuresError,
    )

__all__ = [
    "BuildError",
    "BuildReport",
    "BuildResult",
    "BuildStoppedError",
    "MemoryBuilder",
    "TooManyFailuresError",
]


def __getattr__(name: str) -> Any:
    # Imported lazily: ``videotapestry.cli`` imports ``videotapestry.commands.build_memory``
    # for its parser, which must not pull in the whole builder (video, OCR, embeddings) at
    # start-up.
    if name in ("BuildResult", "MemoryBuilder"):
        from memory_builders import builder

        return getattr(builder, name)
    if name in __all__:
        from memory_builders import report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
