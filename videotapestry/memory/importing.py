"""A MemDreamer memory saved as a native one, without throwing away what is already there.

``import-memdreamer`` converts once, so that later runs load the cheap, checked native format.
Re-importing into the same directory (``--force``) is common (a newer release, another
embedding model), and embedding a memory costs minutes, so the vectors the destination already
stores are kept while they are still valid for the imported nodes, and so is the video
fingerprint recorded for the same source.

The vectors decide what semantic search and PACE-Mem pick, and a MemDreamer memory's are
Qwen3-Embedding-8B's while the default embedder is another model: the import report says
when the stored vectors are replaced (``--embed``) or will be at question time
(``ImportOutcome.vectors_note``), never only a log line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from videotapestry.config.retrieval import StoredVectors
from videotapestry.embeddings import Embedder
from videotapestry.errors import MemoryFormatError
from videotapestry.memory.embedding_index import (
    VectorsReplaced,
    keep_valid_embeddings,
    reconcile_embeddings,
)
from videotapestry.memory.formats.memdreamer import (
    DEFAULT_ENTITY_SPAN_S,
    EMBEDDINGS_FILE,
    import_memdreamer,
)
from videotapestry.memory.formats.native import (
    is_native_memory,
    load_embeddings,
    read_manifest,
    save_memory,
)
from videotapestry.memory.types import MemoryManifest, NodeEmbeddings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportOutcome:
    """What ``import_memdreamer_into`` wrote, and where its node vectors came from."""

    destination: Path
    manifest: MemoryManifest
    #: "embeddings.json", "kept" (the destination's own), "computed", or None (no vectors).
    embeddings_from: str | None
    #: The stored vectors replaced by the configured model's (``--embed``); None otherwise.
    vectors_replaced: VectorsReplaced | None = None
    #: What happened, or will happen at question time, to vectors that are not the
    #: configured model's, in words for the report; None when nothing is replaced.
    vectors_note: str | None = None


def import_memdreamer_into(
    source: str | Path,
    destination: str | Path,
    *,
    force: bool = False,
    video_fingerprint: str | None = None,
    embedding_model: str | None = None,
    preferred_model: str | None = None,
    embedder: Embedder | None = None,
    stored_vectors: StoredVectors = "use_when_same_model",
    entity_span_s: float = DEFAULT_ENTITY_SPAN_S,
) -> ImportOutcome:
    """Import one video's memory and save it as a native memory in ``destination``.

    A non-empty destination is refused unless ``force``; then it must be a videotapestry
    memory, and what it already holds is not thrown away blindly: its stored vectors are kept
    while they are still valid for the imported nodes (same ids and texts; see
    ``keep_valid_embeddings``), and its recorded video fingerprint is kept when the same
    source is imported again without a new one. ``embedder`` (``--embed``) then makes sure the
    vectors are that model's, reusing whichever candidate already is (unless
    ``stored_vectors`` is "recompute"); ``preferred_model`` is the configured model.
    """
    dest = Path(destination)
    stored, previous = _existing_destination(dest, force=force)
    source_path = str(Path(source).resolve())
    if (
        video_fingerprint is None
        and previous is not None
        and previous.source_path == source_path
        and previous.video_fingerprint is not None
    ):
        logger.info("%s: keeping the recorded video fingerprint of %s", dest, source_path)
        video_fingerprint = previous.video_fingerprint
    memory = import_memdreamer(
        source,
        entity_span_s=entity_span_s,
        video_fingerprint=video_fingerprint,
        embedding_model=embedding_model,
    )
    imported = memory.embeddings
    memory = keep_valid_embeddings(memory, [stored, imported], preferred_model=preferred_model)
    chosen = memory.embeddings
    replaced = None
    if embedder is not None:
        memory, replaced = reconcile_embeddings(memory, embedder, stored_vectors=stored_vectors)
    origin = None
    if memory.embeddings is not None:
        if memory.embeddings is not chosen:
            origin = "computed"
        else:
            origin = "kept" if chosen is stored else EMBEDDINGS_FILE
    manifest = save_memory(memory, dest)
    if replaced is not None:
        note: str | None = (
            f"the stored node vectors ({replaced.stored_model}, {replaced.stored_dimension} "
            f"values) were replaced by {replaced.model}'s ({replaced.dimension} values) "
            f"because {replaced.reason()}; only these are saved, so search and PACE-Mem on "
            "this memory pick with them (import again without --embed to keep its own)"
        )
    else:
        note = vectors_note(memory.embeddings, preferred_model, stored_vectors)
    return ImportOutcome(
        destination=dest,
        manifest=manifest,
        embeddings_from=origin,
        vectors_replaced=replaced,
        vectors_note=note,
    )


def vectors_note(
    vectors: NodeEmbeddings | None, model: str | None, stored_vectors: StoredVectors
) -> str | None:
    """What questions with the configured embedding ``model`` will do with the stored
    ``vectors``, when that is to replace them; None when they will be used as stored."""
    if vectors is None or model is None:
        return None
    held = f"the stored node vectors are {vectors.model_name}'s ({vectors.dimension} values)"
    if stored_vectors == "recompute":
        return (
            f"{held}; embedding.stored_vectors is 'recompute', so questions embed the nodes "
            f"again with {model} and say so on each result"
        )
    if vectors.model_name != model:
        return (
            f"{held} but embedding.model is {model}: questions recompute them with it, which "
            "changes what search and PACE-Mem pick, and say so on each result "
            f"(embedding.model={vectors.model_name} uses them)"
        )
    return None


def _existing_destination(
    dest: Path, *, force: bool
) -> tuple[NodeEmbeddings | None, MemoryManifest | None]:
    """Refuse what must not be overwritten; else the vectors and manifest stored there."""
    if dest.exists() and not dest.is_dir():
        raise MemoryFormatError(f"cannot import into {dest}: it is a file, not a directory")
    if not dest.is_dir() or not any(dest.iterdir()):
        return None, None
    if not force:
        raise MemoryFormatError(
            f"{dest} is not empty; import into a new or empty directory, or pass --force to "
            "replace the memory there (its embeddings are kept while still valid)"
        )
    if not is_native_memory(dest):
        raise MemoryFormatError(
            f"refusing to import into {dest}: it is not empty and not a videotapestry memory, "
            "and --force only replaces a memory; choose a new or empty directory"
        )
    previous = read_manifest(dest)
    try:
        stored = load_embeddings(dest)
    except MemoryFormatError as exc:
        logger.warning("%s; the stored embeddings cannot be kept", exc)
        stored = None
    return stored, previous
