"""Run configuration: one validated ``Config`` per run, its sections and how it is loaded.

Each section's settings live in the module named after it (``models``, ``agents``, ``asr``,
``video``, ``retrieval``, ``budget``, ``builder``, ``executor``, ``serve``), the root in
``run`` and the layering of files, profiles and overrides in ``loading``. Import from here:
the names below are the package's public face, and the modules behind them may be
rearranged.
"""

from videotapestry.config.agents import (
    AgentsConfig,
    AnswerConfig,
    FocusSettings,
    LevelLimits,
    LevelSettings,
    OverviewSettings,
    SingleAgentSettings,
)
from videotapestry.config.asr import AsrConfig
from videotapestry.config.base import StrictModel
from videotapestry.config.budget import BudgetConfig
from videotapestry.config.builder import (
    BuilderClipSettings,
    BuilderConfig,
    BuilderEntitySettings,
    BuilderFollowSettings,
    BuilderFrameProxySettings,
    BuilderMacroSettings,
    BuilderOcrSettings,
    BuilderPerceptionSettings,
    BuilderScanSettings,
    BuilderSuperSettings,
    BuilderTranscriptSettings,
)
from videotapestry.config.executor import (
    ExecutorConfig,
    RayBuildSettings,
    RayConfig,
    RayEvalSettings,
    RayResources,
)
from videotapestry.config.loading import (
    available_profiles,
    deep_merge,
    load_config,
    parse_override,
    validate_config,
)
from videotapestry.config.models import (
    BUILDER_ROLES,
    JUDGE_ROLE,
    MODEL_ROLES,
    CacheConfig,
    JsonMode,
    ModelsConfig,
    ModelSettings,
    ModelSettingsOverride,
    Price,
    ReasoningEffort,
    RoleModels,
)
from videotapestry.config.renames import RENAMED_KEYS, RenamedKey
from videotapestry.config.retrieval import EmbeddingConfig, EvidenceConfig
from videotapestry.config.run import Config, PromptsConfig, QuestionConfig, VariantName
from videotapestry.config.serve import ServeConfig
from videotapestry.config.video import ImagesConfig, VideoConfig

__all__ = [
    "BUILDER_ROLES",
    "JUDGE_ROLE",
    "MODEL_ROLES",
    "RENAMED_KEYS",
    "AgentsConfig",
    "AnswerConfig",
    "AsrConfig",
    "BudgetConfig",
    "BuilderClipSettings",
    "BuilderConfig",
    "BuilderEntitySettings",
    "BuilderFollowSettings",
    "BuilderFrameProxySettings",
    "BuilderMacroSettings",
    "BuilderOcrSettings",
    "BuilderPerceptionSettings",
    "BuilderScanSettings",
    "BuilderSuperSettings",
    "BuilderTranscriptSettings",
    "CacheConfig",
    "Config",
    "EmbeddingConfig",
    "EvidenceConfig",
    "ExecutorConfig",
    "FocusSettings",
    "ImagesConfig",
    "JsonMode",
    "LevelLimits",
    "LevelSettings",
    "ModelSettings",
    "ModelSettingsOverride",
    "ModelsConfig",
    "OverviewSettings",
    "Price",
    "PromptsConfig",
    "QuestionConfig",
    "RayBuildSettings",
    "RayConfig",
    "RayEvalSettings",
    "RayResources",
    "ReasoningEffort",
    "RenamedKey",
    "RoleModels",
    "ServeConfig",
    "SingleAgentSettings",
    "StrictModel",
    "VariantName",
    "VideoConfig",
    "available_profiles",
    "deep_merge",
    "load_config",
    "parse_override",
    "validate_config",
]
