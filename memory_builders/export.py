"""``--export-memdreamer DIR``: a memory in the layout MemDreamer's released reader loads.

That reader (``retrieve/core/memory_base.py`` of MemDreamer's retrieval release) expects,
per video::

    phase4/hierarchical_graph_final.json
    phase4/intermediate/step2p5_entity_unification.json
    phase2_topdown/episode_{slot:04d}/episode_{slot:04d}/step5_subgraph.json
    phase2_topdown/episode_{slot:04d}/episode_{slot:04d}/features/<local id>/best_frame.jpg
    embeddings.json        {global node id: [float, ...]} for Entity, Event and OCRText nodes

which is the released variant of the layout that ``videotapestry.memory.export_memdreamer``
writes (``RELEASED_LAYOUT``: ``distinctive_features`` as a list of strings, as the released
reader has it). The builder supplies the keyframes: the kept frame nearest each entity's
grounding time. Our importer reads this layout back.
"""

from __future__ import annotations

from pathlib import Path

from videotapestry.memory import (
    RELEASED_LAYOUT,
    KeyframeSource,
    VideoMemory,
    export_memdreamer,
)


def export_released_layout(
    memory: VideoMemory,
    destination: str | Path,
    *,
    keyframe: KeyframeSource | None = None,
) -> Path:
    """Write ``memory`` into a new or empty ``destination`` in the released layout."""
    return export_memdreamer(memory, destination, layout=RELEASED_LAYOUT, keyframe=keyframe)
