"""Vectors of the subgraph nodes (Entity / Event / OCRText) for semantic search.

Embedding a 2-hour memory takes seconds to minutes, so vectors are stored with the memory and
reused. They are only valid for the model that made them and the texts they were made from:
``ensure_embeddings`` reuses stored vectors when the model name and a digest of the node texts
both match, and otherwise recomputes everything, so two models' vector spaces are never mixed;
``keep_valid_embeddings`` picks, among several stored sets (an import's own, a destination's),
one that is still valid.
Rows are L2-normalized, so semantic search is one matrix-vector product.

Stored vectors that are not used are never dropped quietly: the vectors decide what semantic
search and PACE-Mem pick, so answers from a memory whose own vectors (a released MemDreamer
memory carries Qwen3-Embedding-8B's) were replaced by another model's are not answers from
the memory as built. ``reconcile_embeddings`` says so (``VectorsReplaced``), and the import
report and every result answered from such a memory carry it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from videotapestry.config.retrieval import StoredVectors
from videotapestry.embeddings import Embedder
from videotapestry.errors import MemoryFormatError
from videotapestry.memory.types import (
    SUBGRAPH_KINDS,
    AnyNode,
    EntityNode,
    EventNode,
    NodeEmbeddings,
    OCRTextNode,
)
from videotapestry.memory.video_memory import VideoMemory

logger = logging.getLogger(__name__)


def embedding_text(node: AnyNode) -> str:
    """The text a node is embedded from: its name/action/text with type and description."""
    if isinstance(node, EntityNode):
        head = f"{node.name} ({node.entity_type})" if node.entity_type else node.name
        return f"{head}: {node.description}" if node.description else head
    if isinstance(node, EventNode):
        return f"{node.action}: {node.description}" if node.description else node.action
    if isinstance(node, OCRTextNode):
        head = f'on-screen text "{node.text}"'
        if node.ocr_type:
            head += f" ({node.ocr_type})"
        return f"{head}: {node.description}" if node.description else head
    raise TypeError(f"{node.kind} nodes are not embedded")


def texts_digest(ids: Sequence[str], texts: Sequence[str]) -> str:
    """A fingerprint of what was embedded, so edited node texts invalidate stored vectors."""
    digest = hashlib.sha256()
    for node_id, text in zip(ids, texts, strict=True):
        digest.update(node_id.encode())
        digest.update(b"\x00")
        digest.update(text.encode())
        digest.update(b"\x01")
    return digest.hexdigest()


def embeddable_nodes(memory: VideoMemory) -> list[AnyNode]:
    """The nodes that get vectors, in time order (the row order of ``NodeEmbeddings``)."""
    return memory.nodes(SUBGRAPH_KINDS)


def compute_node_embeddings(
    memory: VideoMemory, embedder: Embedder, *, known: Mapping[str, np.ndarray] | None = None
) -> NodeEmbeddings:
    """Embed every subgraph node; identical texts (a recurring entity) are embedded once, and
    a text in ``known`` (vectors of the same model, by text) not at all."""
    known = known or {}
    nodes = embeddable_nodes(memory)
    ids = [n.id for n in nodes]
    texts = [embedding_text(n) for n in nodes]
    unique = [t for t in dict.fromkeys(texts) if t not in known]
    if unique or not known:
        vectors = np.asarray(embedder.embed(unique), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(unique):
            raise MemoryFormatError(
                f"embedder {embedder.model_name!r} returned shape {vectors.shape} "
                f"for {len(unique)} texts"
            )
    else:
        vectors = np.zeros((0, len(next(iter(known.values())))), dtype=np.float32)
    found = {text: vectors[i] for i, text in enumerate(unique)}
    found.update({t: np.asarray(known[t], dtype=np.float32) for t in texts if t in known})
    rows = np.stack([found[t] for t in texts]) if texts else vectors[:0]
    return NodeEmbeddings(embedder.model_name, tuple(ids), rows, texts_digest(ids, texts))


def embed_reusing(memory: VideoMemory, earlier: VideoMemory, embedder: Embedder) -> VideoMemory:
    """``memory`` with vectors from ``embedder``, those of ``earlier`` (a previous build of
    the same video: a rebuild, a followed memory's last version) reused for every node text
    they were made from, when they are ``embedder``'s own and still match their texts. A
    memory that grew by a few minutes embeds those minutes' nodes, not the hours before."""
    stored = earlier.embeddings
    known: dict[str, np.ndarray] = {}
    if stored is not None and embeddings_match(earlier, embedder.model_name):
        known = {embedding_text(n): stored.vector(n.id) for n in embeddable_nodes(earlier)}
    updated = memory.with_embeddings(compute_node_embeddings(memory, embedder, known=known))
    if memory.manifest is not None:
        manifest = memory.manifest.model_copy(update={"embedding_model": embedder.model_name})
        updated = updated.with_manifest(manifest)
    return updated


def current_digest(memory: VideoMemory) -> tuple[tuple[str, ...], str]:
    nodes = embeddable_nodes(memory)
    ids = tuple(n.id for n in nodes)
    return ids, texts_digest(ids, [embedding_text(n) for n in nodes])


def embeddings_match(memory: VideoMemory, model_name: str) -> bool:
    """Whether the memory carries vectors of ``model_name`` for exactly its current node texts."""
    stored = memory.embeddings
    if stored is None or stored.model_name != model_name:
        return False
    ids, digest = current_digest(memory)
    return stored.ids == ids and stored.digest == digest


def embedder_dimension(embedder: Embedder) -> int:
    """The length of the embedder's vectors (its ``dimension``, else one probe embedding)."""
    dimension = getattr(embedder, "dimension", None)
    if isinstance(dimension, int):
        return dimension
    return int(np.asarray(embedder.embed(["dimension probe"], query=True)).shape[1])


#: Why stored vectors were not used.
ReplacedBecause = Literal["other_model", "other_dimension", "other_texts", "recompute"]


@dataclass(frozen=True)
class VectorsReplaced:
    """A memory's stored node vectors that were not used, and the ones used instead."""

    stored_model: str
    stored_dimension: int
    model: str
    dimension: int
    because: ReplacedBecause

    def reason(self) -> str:
        """Why, in words."""
        if self.because == "other_model":
            return f"embedding.model is {self.model}"
        if self.because == "other_dimension":
            return f"{self.model} gives vectors of another length under the same name"
        if self.because == "other_texts":
            return "they were made for other node texts (the memory was edited since)"
        return "embedding.stored_vectors is 'recompute'"

    def describe(self) -> str:
        """The note on a result: what was replaced, what it changes, and how to avoid it."""
        text = (
            f"the memory's own node vectors ({self.stored_model}, {self.stored_dimension} "
            f"values) were replaced by {self.model}'s ({self.dimension} values) because "
            f"{self.reason()}, so semantic search and PACE-Mem's evidence selection may pick "
            "other nodes and clips than on the memory as built"
        )
        if self.because == "other_model":
            text += f"; embedding.model={self.stored_model} uses the stored ones"
        return text


def ensure_embeddings(
    memory: VideoMemory,
    embedder: Embedder,
    *,
    stored_vectors: StoredVectors = "use_when_same_model",
) -> VideoMemory:
    """The memory with vectors from ``embedder``: the stored ones if still valid, else new
    ones (``reconcile_embeddings``, for callers that need not say what was replaced)."""
    return reconcile_embeddings(memory, embedder, stored_vectors=stored_vectors)[0]


def reconcile_embeddings(
    memory: VideoMemory,
    embedder: Embedder,
    *,
    stored_vectors: StoredVectors = "use_when_same_model",
) -> tuple[VideoMemory, VectorsReplaced | None]:
    """The memory with vectors from ``embedder``, and what of its stored vectors was replaced.

    Stored vectors are reused only when the model name, the node texts *and* the vector length
    agree: an imported memory may carry vectors under a model's name that were cut to another
    length (or a local model may reuse a name), and query vectors of one length must never be
    scored against rows of another. The manifest's ``embedding_model`` is updated to match, so
    saving the result records which model the stored vectors belong to. A memory that stored
    no vectors gets new ones and nothing counts as replaced.
    """
    stored = memory.embeddings
    because = _not_reusable(memory, embedder, stored_vectors)
    if stored is not None and because is None:
        return memory, None
    embeddings = compute_node_embeddings(memory, embedder)
    updated = memory.with_embeddings(embeddings)
    if memory.manifest is not None:
        manifest = memory.manifest.model_copy(update={"embedding_model": embedder.model_name})
        updated = updated.with_manifest(manifest)
    if stored is None or because is None:
        return updated, None
    replaced = VectorsReplaced(
        stored_model=stored.model_name,
        stored_dimension=stored.dimension,
        model=embedder.model_name,
        dimension=embeddings.dimension,
        because=because,
    )
    return updated, replaced


def _not_reusable(
    memory: VideoMemory, embedder: Embedder, stored_vectors: StoredVectors
) -> ReplacedBecause | None:
    """Why the memory's stored vectors cannot serve ``embedder``; None when they can (or
    when there are none)."""
    stored = memory.embeddings
    if stored is None:
        return None
    if stored_vectors == "recompute":
        return "recompute"
    if stored.model_name != embedder.model_name:
        return "other_model"
    if not embeddings_match(memory, embedder.model_name):
        return "other_texts"
    dimension = embedder_dimension(embedder)
    if stored.dimension != dimension:
        logger.warning(
            "stored vectors of %s are %d-dimensional but the embedder gives %d; recomputing",
            embedder.model_name,
            stored.dimension,
            dimension,
        )
        return "other_dimension"
    return None


def keep_valid_embeddings(
    memory: VideoMemory,
    candidates: Sequence[NodeEmbeddings | None],
    *,
    preferred_model: str | None = None,
) -> VideoMemory:
    """``memory`` with the first candidate still valid for it (``None``s are skipped).

    Valid means made for exactly these node ids and texts (``embeddings_match``), so vectors
    of edited nodes are dropped, never mixed with new ones. A valid candidate of
    ``preferred_model`` (the configured one, which query time will use) wins over the order.
    With no valid candidate the memory carries no vectors.
    """
    valid = [
        c
        for c in candidates
        if c is not None and embeddings_match(memory.with_embeddings(c), c.model_name)
    ]
    for candidate in candidates:
        if candidate is not None and all(candidate is not v for v in valid):
            logger.warning(
                "embeddings of %s were made for other node texts; not kept", candidate.model_name
            )
    preferred = [c for c in valid if c.model_name == preferred_model]
    kept = preferred or valid
    chosen = kept[0] if kept else None
    manifest = memory.manifest
    if manifest is not None:
        model = chosen.model_name if chosen is not None else None
        memory = memory.with_manifest(manifest.model_copy(update={"embedding_model": model}))
    return memory.with_embeddings(chosen)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first (ties broken by lower index)."""
    if k <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= scores.size:
        k = scores.size
    candidates = np.argpartition(-scores, k - 1)[:k]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order]
