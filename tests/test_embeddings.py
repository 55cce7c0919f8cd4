"""The packaged MiniLM loads offline and gives normalized vectors that rank by meaning."""

from __future__ import annotations

import numpy as np
import pytest

from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import EmbeddingError, SentenceTransformerEmbedder, resolve_model_path

PACKAGED = "packaged:all-MiniLM-L6-v2"


def test_vectors_are_normalized_and_rank_by_meaning(embedder: SentenceTransformerEmbedder) -> None:
    docs = embedder.embed(
        ["The oven is set to 220 degrees.", "A man rides a bicycle.", "Tom holds a score card."]
    )
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = embedder.embed(["what temperature was the oven set to"], query=True)
    assert int(np.argmax(docs @ query[0])) == 0
    assert embedder.embed([]).shape == (0, 384)


def test_unknown_packaged_model_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="unknown packaged embedding model"):
        resolve_model_path("packaged:nope")


def test_missing_local_model_directory_is_a_clear_error(tmp_path) -> None:
    embedder = SentenceTransformerEmbedder(EmbeddingConfig(model=str(tmp_path / "absent")))
    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        embedder.embed(["x"])


def test_a_query_prompt_the_model_lacks_is_not_sent() -> None:
    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model=PACKAGED, query_prompt_name="query")
    )
    plain = SentenceTransformerEmbedder(EmbeddingConfig(model=PACKAGED, query_prompt_name=None))
    text = ["what temperature was the oven set to"]
    assert np.allclose(embedder.embed(text, query=True), plain.embed(text, query=True))
