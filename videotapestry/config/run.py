"""``Config``, the root of the tree: every section one run reads, and the variant it runs."""

from __future__ import annotations

from typing import Literal

import yaml
from pydantic import Field

from videotapestry.config.agents import AgentsConfig
from videotapestry.config.asr import AsrConfig
from videotapestry.config.base import StrictModel
from videotapestry.config.builder import BuilderConfig
from videotapestry.config.executor import ExecutorConfig
from videotapestry.config.models import CacheConfig, ModelsConfig, Price
from videotapestry.config.retrieval import EmbeddingConfig, EvidenceConfig
from videotapestry.config.video import ImagesConfig, VideoConfig


class PromptsConfig(StrictModel):
    """Where prompt templates come from: the shipped ones, each replaceable by file name."""

    override_dir: str | None = Field(
        None, description="a directory whose template files replace the shipped ones by name"
    )


#: The method and its ablations (paper Table 3, SPEC §5); PACE-Mem switches are in ``evidence``.
Variant = Literal[
    "full",  # VideoTapestry
    "wo_visual",  # no visual observation at any level
    "wo_asr",  # no ASR planning or transcript observation
    "append_only",  # observations kept as a flat evidence log; no node rewrites
    "single_agent",  # one controller for all levels, same budgets, one shared context
    "static_memory",  # hierarchical retrieval only: no observation, update or compression
    "refined_super_only",  # full exploration; the Answer agent sees only the Super scaffold
    "refined_paths_only",  # full exploration; only the refined Macro/Subgraph paths
    "direct",  # uniformly sampled frames straight to the model (the Direct baseline)
]


class Config(StrictModel):
    """Everything a run needs to know, validated once at start-up."""

    profile: str | None = None
    variant: Variant = "full"
    models: ModelsConfig = ModelsConfig()
    pricing: dict[str, Price] = Field(default_factory=dict)
    cache: CacheConfig = CacheConfig()
    images: ImagesConfig = ImagesConfig()
    agents: AgentsConfig = AgentsConfig()
    asr: AsrConfig = AsrConfig()
    video: VideoConfig = VideoConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    evidence: EvidenceConfig = EvidenceConfig()
    prompts: PromptsConfig = PromptsConfig()
    builder: BuilderConfig = BuilderConfig()
    executor: ExecutorConfig = ExecutorConfig()

    def to_yaml(self) -> str:
        """The whole config as YAML that ``load_config`` reads back to an equal ``Config``."""
        data = self.model_dump(mode="json")
        # Unset role fields inherit from models.default; printing them as null only adds noise.
        data["models"]["roles"] = self.models.roles.model_dump(mode="json", exclude_none=True)
        text: str = yaml.safe_dump(data, sort_keys=False)
        return text
