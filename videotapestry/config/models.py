"""The ``models``, ``pricing`` and ``cache`` sections: which model each role calls, how, and
what its tokens cost.

Every call site that talks to a model has a role, and each role can get its own model; a
role's settings fall back field by field to ``models.default``, so one line switches the
backbone of every agent while another gives the Answer agent more reasoning effort.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from videotapestry.config.base import StrictModel, user_cache_dir
from videotapestry.config.renames import renamed_role
from videotapestry.errors import ConfigError
from videotapestry.variants import CONTROLLER_ROLE, DIRECT_ROLE, METHOD_ROLES

#: The memory builder's roles: one per builder prompt and named as the prompt, so
#: ``models.roles.<prompt name>`` sets the model of that step of a build.
BUILDER_ROLES: tuple[str, ...] = (
    "builder_clip",  # per-clip perception
    "builder_macro_boundaries",  # where each MacroEvent begins
    "builder_macro",  # a MacroEvent's label, summary, key entities and relations
    "builder_entity_merge",  # whether two entity names are one entity
    "builder_super",  # SuperEvents: contiguous stages of MacroEvents
    "builder_root",  # the global summary of the video
)

#: The judge of free-form answers in an eval run (CG-Bench's open-ended mode, JSONL rows
#: without options): it compares an answer with the benchmark's reference answer. Not part
#: of the method, so no variant calls it; the offline profile's judge is an approximate
#: rule (key terms and embedding agreement), not a model.
JUDGE_ROLE = "judge"

#: Every call site that talks to a model has one of these roles; each can get its own model.
#: The method's roles and what each does are listed with the variants that call them.
MODEL_ROLES: tuple[str, ...] = (
    *METHOD_ROLES,
    CONTROLLER_ROLE,
    DIRECT_ROLE,
    JUDGE_ROLE,
    *BUILDER_ROLES,
)

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
JsonMode = Literal["auto", "json_schema", "json_object", "prompt"]


class ModelSettings(StrictModel):
    """How one role talks to its model. Roles inherit these from ``models.default``."""

    provider: str = Field(
        "openai", description="client registry name: 'openai' (any OpenAI-compatible server)"
    )
    model: str = Field("gpt-5.5", min_length=1)
    base_url: str | None = Field(
        None, description="endpoint URL; null uses OPENAI_BASE_URL or the SDK default"
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", min_length=1, description="environment variable holding the key"
    )
    temperature: float | None = Field(0.1, ge=0.0, le=2.0)
    reasoning_effort: ReasoningEffort | None = None
    max_tokens: int | None = Field(None, gt=0)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0, le=20)
    json_mode: JsonMode = Field(
        "auto", description="auto tries json_schema, then json_object, then prompt-only"
    )
    image_detail: Literal["auto", "low", "high"] | None = None
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="extra request fields for servers that need them (e.g. vLLM options)",
    )
    max_images: int | None = Field(
        None,
        gt=0,
        description="images one call of this role may carry (the gateway's upload limit for "
        "its model); null uses images.max_per_call. The Direct baseline sends this many "
        "uniform frames at most",
    )
    harness_headers: bool = Field(
        False,
        description="send x-videotapestry-role/prompt/level headers with each call, for the "
        "fake test server and proxies that route by role; off, an endpoint sees only what "
        "the SDK sends",
    )
    prompt_cache_key: bool = Field(
        False,
        description="send OpenAI's prompt_cache_key with each call, one key per video (from "
        "its fingerprint), so the calls of a video reach the servers holding its prompt "
        "prefixes; false sends none (a server may refuse a field it does not know)",
    )


def _all_optional(model: type[BaseModel], name: str) -> type[BaseModel]:
    """A copy of ``model`` whose every field may be left unset (None).

    Derived rather than written out, so a setting added to ``ModelSettings`` can be set per
    role without a second list to keep in step.
    """
    fields: dict[str, Any] = {
        field_name: (info.annotation | None, None)  # type: ignore[operator]
        for field_name, info in model.model_fields.items()
    }
    return create_model(name, __base__=StrictModel, **fields)


#: A role's partial settings; unset fields fall back to ``models.default``.
ModelSettingsOverride = _all_optional(ModelSettings, "ModelSettingsOverride")

#: One optional ``ModelSettingsOverride`` per role, so a misspelt role name is refused.
RoleModels = create_model(  # type: ignore[call-overload]
    "RoleModels",
    __base__=StrictModel,
    **{role: (ModelSettingsOverride, ModelSettingsOverride()) for role in MODEL_ROLES},
)


class ModelsConfig(StrictModel):
    """The default model settings, each role's changes to them, and the call limits."""

    default: ModelSettings = ModelSettings()
    roles: RoleModels = RoleModels()
    max_concurrency_per_endpoint: int = Field(8, ge=1, le=1024)
    wait_report_s: float = Field(
        10.0,
        gt=0,
        description="while a model call is open, report 'waiting' (role, attempt, seconds) "
        "this often to the progress display",
    )

    def settings_for(self, role: str) -> ModelSettings:
        """The effective settings of ``role``: the default with the role's own values on top."""
        if role not in MODEL_ROLES:
            renamed = renamed_role(role)
            if renamed is not None:
                raise ConfigError(renamed)
            raise ConfigError(f"unknown model role {role!r}; known roles: {', '.join(MODEL_ROLES)}")
        override = getattr(self.roles, role).model_dump(exclude_none=True)
        merged = self.default.model_dump() | override
        return ModelSettings.model_validate(merged)


class Price(StrictModel):
    """US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(
        None,
        ge=0,
        description="prompt tokens the provider served from its prefix cache; null bills them "
        "at input_per_mtok (never less than the provider may charge)",
    )


class CacheConfig(StrictModel):
    """The response cache: a rerun of the same request is answered from disk for free."""

    enabled: bool = True
    path: str | None = Field(
        None, description="SQLite file; null uses $XDG_CACHE_HOME/videotapestry/responses.sqlite"
    )
    keep_failed_replies: bool = Field(
        False,
        description="false: store a JSON reply only once it parsed and validated (a rerun asks "
        "again what failed, and a failed reply found in the cache is asked afresh); true: "
        "store every non-empty reply on arrival, failures included",
    )

    def resolved_path(self) -> Path:
        """The cache file: ``path`` when set, else one in the user's cache directory."""
        if self.path:
            return Path(self.path).expanduser()
        return user_cache_dir() / "responses.sqlite"
