"""``Config``, the root of the tree: every section one run reads, and the variant it runs."""

from __future__ import annotations

from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, Field

from videotapestry.config.agents import AgentsConfig, AnswerConfig
from videotapestry.config.asr import AsrConfig
from videotapestry.config.base import StrictModel
from videotapestry.config.budget import BudgetConfig
from videotapestry.config.builder import BuilderConfig
from videotapestry.config.executor import ExecutorConfig
from videotapestry.config.models import CacheConfig, ModelsConfig, Price
from videotapestry.config.retrieval import EmbeddingConfig, EvidenceConfig
from videotapestry.config.serve import ServeConfig
from videotapestry.config.video import ImagesConfig, VideoConfig
from videotapestry.errors import ConfigError
from videotapestry.question import DEFAULT_MAX_QUESTION_CHARS
from videotapestry.variants import VARIANT_NAMES, variant_named


class PromptsConfig(StrictModel):
    """Where prompt templates come from: the shipped ones, each replaceable by file name."""

    override_dir: str | None = Field(
        None, description="a directory whose template files replace the shipped ones by name"
    )


class QuestionConfig(StrictModel):
    """What a question may be, checked where every question enters (``ask``, ``chat``, eval
    rows, the REST API and MCP) before anything is stored or asked."""

    max_chars: int = Field(
        DEFAULT_MAX_QUESTION_CHARS,
        ge=100,
        description="longest question, its options included, in characters; a longer one is "
        "refused with this limit named (benchmark questions stay under 2,000)",
    )
    relative_time: Literal["live", "always", "never"] = Field(
        "live",
        description="when 'in the last 10 minutes', 'just now', 'so far' and a time past the "
        "memory's end are read against the time the memory covers: live: for a followed "
        "memory (build-memory --follow), whose end is now; always: for every memory (its end "
        "is then the video's); never: questions are asked as written. Benchmarks keep their "
        "wording under the default, as their memories are never live",
    )


def _known_variant(name: str) -> str:
    try:
        variant_named(name)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return name


#: The method or one of its ablations: a name of ``videotapestry.variants.VARIANTS`` (paper
#: Table 3, SPEC §5); PACE-Mem's own switches are in ``evidence``.
VariantName = Annotated[str, AfterValidator(_known_variant)]


class Config(StrictModel):
    """Everything a run needs to know, validated once at start-up."""

    profile: str | None = None
    variant: VariantName = Field(
        "full", description="the method or an ablation: " + ", ".join(VARIANT_NAMES)
    )
    models: ModelsConfig = ModelsConfig()
    pricing: dict[str, Price] = Field(default_factory=dict)
    cache: CacheConfig = CacheConfig()
    images: ImagesConfig = ImagesConfig()
    agents: AgentsConfig = AgentsConfig()
    answer: AnswerConfig = AnswerConfig()
    asr: AsrConfig = AsrConfig()
    video: VideoConfig = VideoConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    evidence: EvidenceConfig = EvidenceConfig()
    prompts: PromptsConfig = PromptsConfig()
    question: QuestionConfig = QuestionConfig()
    budget: BudgetConfig = BudgetConfig()
    builder: BuilderConfig = BuilderConfig()
    executor: ExecutorConfig = ExecutorConfig()
    serve: ServeConfig = ServeConfig()

    def to_yaml(self) -> str:
        """The whole config as YAML that ``load_config`` reads back to an equal ``Config``."""
        data = self.model_dump(mode="json")
        # Unset role fields inherit from models.default; printing them as null only adds noise.
        data["models"]["roles"] = self.models.roles.model_dump(mode="json", exclude_none=True)
        text: str = yaml.safe_dump(data, sort_keys=False)
        return text
