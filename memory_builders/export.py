"""``--export-memdreamer DIR``: a memory in the layout MemDreamer's released reader loads.

That reader (``retrieve/core/memory_base.py`` of MemDreamer's retrieval release) expects,
per video::

    phase4/hierarchical_graph_final.json
    phase4/intermediate/step2p5_entity_unification.json
    phase2_topdown/episode_{slot:04d}/episode_{slot:04d}/step5_subgraph.json
    phase2_topdown/episode_{slot:04d}/episode_{slot:04d}/features/<local id>/best_frame.jpg
    embeddings.json        {global node id: [float, ...]} for Entity, Event and OCRText nodes

The JSON documents are the ones ``videotapestry.memory.export_memdreamer`` writes (its
phase3/phase2 layout), moved to these places; ``distinctive_features`` becomes a list of
strings, as the released reader has it. Keyframes are written when the caller can supply an
entity's frame (the builder passes its kept frames). Our importer reads this layout back.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from videotapestry.errors import MemoryFormatError
from videotapestry.files import write_json_atomic
from videotapestry.memory import EntityNode, VideoMemory, export_memdreamer
from videotapestry.memory.memdreamer import (
    GRAPH_FILE,
    RELEASED_PHASE2,
    RELEASED_PHASE3,
    SUBGRAPH_FILE,
    UNIFICATION_FILE,
)

EMBEDDINGS_FILE = "embeddings.json"


def export_released_layout(
    memory: VideoMemory,
    destination: str | Path,
    *,
    keyframe: Callable[[EntityNode], bytes | None] | None = None,
) -> Path:
    """Write ``memory`` into a new or empty ``destination`` in the released layout."""
    dest = Path(destination)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise MemoryFormatError(f"cannot export to {dest}: choose a new or empty directory")
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=dest))
    try:
        export_memdreamer(memory, staging / "memory")
        source = staging / "memory"
        for relative in (GRAPH_FILE, UNIFICATION_FILE):
            if (source / relative).is_file():
                target = dest / RELEASED_PHASE3 / relative.relative_to("phase3")
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source / relative, target)
        entities = {n.id: n for n in memory.nodes(["Entity"])}
        for subgraph in sorted((source / "phase2").glob(f"episode_*/{SUBGRAPH_FILE}")):
            document = json.loads(subgraph.read_text(encoding="utf-8"))
            slot = int(document["slot_id"])
            episode = dest / RELEASED_PHASE2 / f"episode_{slot:04d}" / f"episode_{slot:04d}"
            for node in document["nodes"]:
                grounding = node.get("visual_grounding")
                if grounding and isinstance(grounding.get("distinctive_features"), str):
                    grounding["distinctive_features"] = [grounding["distinctive_features"]]
                if keyframe is not None and node.get("node_type") == "Entity":
                    entity = entities.get(f"slot{slot}_{node['node_id']}")
                    jpeg = keyframe(entity) if entity is not None else None
                    if jpeg:
                        folder = episode / "features" / str(node["node_id"])
                        folder.mkdir(parents=True, exist_ok=True)
                        (folder / "best_frame.jpg").write_bytes(jpeg)
            write_json_atomic(episode / SUBGRAPH_FILE, document)
        if memory.embeddings is not None:
            vectors = memory.embeddings
            write_json_atomic(
                dest / EMBEDDINGS_FILE,
                {node_id: vectors.vector(node_id).tolist() for node_id in vectors.ids},
            )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
