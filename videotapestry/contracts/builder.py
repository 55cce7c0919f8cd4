"""What each builder prompt must return, as pydantic models (tolerant of common reply shapes).

Like the query-time contracts (``videotapestry.contracts.method``), these accept the loose
shapes models produce (a time as ``"01:05"``, ids as numbers, a list where a string was asked
for) and reject replies that are not usable, which triggers the one repair retry and then the
stage's documented fallback or the clip's failure record.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from videotapestry.contracts.fields import Ids, RoleOutput, Text, TimeRange, parse_seconds


def _seconds_or_none(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("start", value.get("time"))
    try:
        return parse_seconds(value)
    except (TypeError, ValueError):
        return None


def _attributes(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, (list, tuple)):
        return {"details": [str(v) for v in value]}
    if isinstance(value, str):
        return {"details": [value]} if value.strip() else {}
    return value


def _names(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v.get("name", "")) if isinstance(v, dict) else str(v) for v in value]
    return value


OptionalSeconds = Annotated[float | None, BeforeValidator(_seconds_or_none)]
Names = Annotated[list[str], BeforeValidator(_names)]


class PerceivedEntity(RoleOutput):
    id: Annotated[str, BeforeValidator(lambda v: "" if v is None else str(v))] = ""
    name: Text
    type: Text = ""
    description: Text = ""
    attributes: Annotated[dict[str, Any], BeforeValidator(_attributes)] = Field(
        default_factory=dict
    )
    seen_at: OptionalSeconds = None


class PerceivedEvent(RoleOutput):
    action: Text
    description: Text = ""
    type: Text = ""
    subject_ids: Ids = Field(default_factory=list)
    object_ids: Ids = Field(default_factory=list)
    time_range: TimeRange | None = None

    @field_validator("time_range", mode="before")
    @classmethod
    def _lenient_range(cls, value: Any) -> Any:
        if value in (None, "", []):
            return None
        if isinstance(value, (int, float, str)) and not (isinstance(value, str) and "-" in value):
            return [value, value]
        return value


class PerceivedText(RoleOutput):
    text: Text
    type: Text = ""
    description: Text = ""
    seen_at: OptionalSeconds = None


class ClipPerception(RoleOutput):
    """builder_clip: one clip's caption, entities, events and on-screen text."""

    caption: Text
    entities: list[PerceivedEntity] = Field(default_factory=list)
    events: list[PerceivedEvent] = Field(default_factory=list)
    on_screen_text: list[PerceivedText] = Field(default_factory=list)

    @field_validator("caption")
    @classmethod
    def _caption_present(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("caption must describe the clip")
        return value.strip()

    @field_validator("on_screen_text", mode="before")
    @classmethod
    def _plain_texts(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value


class MacroBoundaries(RoleOutput):
    """builder_macro_boundaries: the clips at which a new MacroEvent begins."""

    boundaries: Ids = Field(default_factory=list)

    @field_validator("boundaries", mode="before")
    @classmethod
    def _clip_ids(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [v.get("clip_id", v.get("id", "")) if isinstance(v, dict) else v for v in value]
        return value


class ProposedRelation(RoleOutput):
    source: Annotated[str, BeforeValidator(str)]
    target: Annotated[str, BeforeValidator(str)]
    type: Text
    label: Text = ""
    reason: Text = ""


class MacroDetails(RoleOutput):
    """builder_macro: a MacroEvent's label, summary, key entities and typed relations."""

    label: Text
    summary: Text
    key_entities: Names = Field(default_factory=list)
    relations: list[ProposedRelation] = Field(default_factory=list)

    @field_validator("relations", mode="before")
    @classmethod
    def _drop_broken(cls, value: Any) -> Any:
        # One malformed relation should not cost the label and summary: keep the usable ones.
        if isinstance(value, list):
            return [
                v
                for v in value
                if isinstance(v, dict) and v.get("source") and v.get("target") and v.get("type")
            ]
        return value


class EntityMergeDecisions(RoleOutput):
    """builder_entity_merge: for each candidate pair id, whether both names are one entity."""

    decisions: dict[str, bool] = Field(default_factory=dict)

    @field_validator("decisions", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if isinstance(value, list):
            out = {}
            for item in value:
                if isinstance(item, dict) and "pair_id" in item:
                    out[str(item["pair_id"])] = bool(item.get("same", False))
            return out
        return value


class SuperStage(RoleOutput):
    first_macro_id: Annotated[str, BeforeValidator(str)]
    label: Text
    description: Text = ""
    key_entities: Names = Field(default_factory=list)
    transition: Text = ""


class SuperStages(RoleOutput):
    """builder_super: contiguous stages of MacroEvents."""

    stages: list[SuperStage]


class RootSummary(RoleOutput):
    """builder_root: the global summary of the video."""

    title: Text
    description: Text
    themes: Names = Field(default_factory=list)
    key_entities: Names = Field(default_factory=list)
    emotional_tone: Text = ""


#: Builder prompt name → the model its reply must validate against.
BUILDER_SCHEMAS: dict[str, type[RoleOutput]] = {
    "builder_clip": ClipPerception,
    "builder_macro_boundaries": MacroBoundaries,
    "builder_macro": MacroDetails,
    "builder_entity_merge": EntityMergeDecisions,
    "builder_super": SuperStages,
    "builder_root": RootSummary,
}

#: Builder prompt name → the model role (``models.roles``) it is sent with: each prompt has a
#: role of its own name, so one step of a build can get its own model.
BUILDER_PROMPT_ROLES: dict[str, str] = {name: name for name in BUILDER_SCHEMAS}
