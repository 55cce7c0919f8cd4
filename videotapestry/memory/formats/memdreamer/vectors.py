"""``embeddings.json``: the node vectors of a released MemDreamer memory, both ways.

The release stores ``{global node id: [float, ...]}`` for its Entity, Event and OCRText nodes
(made with Qwen3-Embedding-8B). Read, they become our ``NodeEmbeddings`` in the memory's row
order, recorded with the digest of the node texts they belong to, so query time reuses them
exactly as long as those texts (and the configured model) stay the same.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from videotapestry.errors import MemoryFormatError
from videotapestry.memory.embedding_index import current_digest
from videotapestry.memory.formats.json_files import read_json
from videotapestry.memory.types import NodeEmbeddings
from videotapestry.memory.video_memory import VideoMemory

logger = logging.getLogger(__name__)

#: The model that made the vectors of MemDreamer's ``embeddings.json`` (sentence-transformers
#: name); a graph file we exported records another one under ``embedding_model``.
MEMDREAMER_EMBEDDING_MODEL = "Qwen/Qwen3-Embedding-8B"


def read_vectors(path: Path, memory: VideoMemory, model: str) -> NodeEmbeddings | None:
    """``{node_id: [float, ...]}`` as L2-normalized rows in the memory's embedding order.

    The digest of the imported node texts is recorded with them, so the vectors stay in use
    exactly as long as those texts do (an edited memory is re-embedded, never mismatched).
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise MemoryFormatError(
            f"{path}: expected a JSON object mapping node ids to vectors, got {type(data).__name__}"
        )
    ids, digest = current_digest(memory)
    known = set(ids)
    unknown = [key for key in data if key not in known]
    if unknown:
        logger.warning(
            "%s: %d vector(s) for ids that are not Entity/Event/OCRText nodes here (e.g. %s); "
            "ignored",
            path,
            len(unknown),
            ", ".join(unknown[:3]),
        )
    missing = [node_id for node_id in ids if node_id not in data]
    if missing:
        logger.warning(
            "%s has no vector for %d of %d nodes (e.g. %s); not imported: the configured "
            "embedding model computes all of them when the memory is used",
            path,
            len(missing),
            len(ids),
            ", ".join(missing[:3]),
        )
        return None
    if not ids:
        return None
    rows = [_vector(data[node_id], path, node_id) for node_id in ids]
    dimension = rows[0].shape[0]
    for node_id, row in zip(ids, rows, strict=True):
        if row.shape[0] != dimension:
            raise MemoryFormatError(
                f"{path}: field {node_id!r} has {row.shape[0]} values but {ids[0]!r} has "
                f"{dimension}; all vectors must come from one model"
            )
    matrix = np.stack(rows)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return NodeEmbeddings(model, ids, (matrix / norms).astype(np.float32), digest)


def _vector(value: Any, path: Path, node_id: str) -> np.ndarray:
    where = f"{path}: field {node_id!r}"
    if not isinstance(value, list) or not value:
        raise MemoryFormatError(f"{where} must be a non-empty list of numbers")
    try:
        row = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise MemoryFormatError(f"{where} must be a list of numbers") from None
    if row.ndim != 1 or not np.isfinite(row).all():
        raise MemoryFormatError(f"{where} must be a flat list of finite numbers")
    if not np.any(row):
        raise MemoryFormatError(f"{where} is all zeros; it cannot be compared by cosine")
    return row


def vectors_document(embeddings: NodeEmbeddings) -> dict[str, list[float]]:
    """The content of ``embeddings.json`` for these vectors."""
    return {node_id: embeddings.vector(node_id).tolist() for node_id in embeddings.ids}
