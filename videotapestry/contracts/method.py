"""The JSON contract of every prompt: what each role must return, as pydantic models.

The keys follow the paper's prompts (appendix B.3). Models reply loosely in practice (a time
range as a dict, a list where a string was asked for, ids as numbers), so each model accepts
those common shapes and normalizes them; anything else fails validation and triggers the
client's single repair retry, then the caller's documented fallback.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from videotapestry.contracts.fields import Ids, RoleOutput, Text, TimeRange

#: Super→Macro handoff instruction types (the decision prompt lists the same names).
InstructionType = Literal[
    "main_idea",
    "temporal_order",
    "identity",
    "action_verification",
    "spatial_relation",
    "causal_result",
]
INSTRUCTION_TYPES: tuple[str, ...] = get_args(InstructionType)


class _ObservationPlan(RoleOutput):
    """Keys every planning reply shares."""

    thought: Text = ""
    observation_needed: bool = False
    observation_instruction: Text = ""
    candidate_memory_ids: Ids = Field(default_factory=list)
    time_ranges: list[TimeRange] = Field(default_factory=list)


class AnchorPlan(RoleOutput):
    thought: Text = ""
    anchors: list[Text] = Field(default_factory=list)

    @field_validator("anchors", mode="before")
    @classmethod
    def _one_anchor_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class OverviewPlan(_ObservationPlan):
    observation_needed: bool = True  # the Super level always looks first
    locator_time_hints_used: list[Text] = Field(default_factory=list)


class LevelPlan(_ObservationPlan):
    update_memory_ids: Ids = Field(default_factory=list)


class AsrPlan(RoleOutput):
    thought: Text = ""
    observation_instruction: Text
    time_ranges: list[TimeRange] = Field(default_factory=list)
    candidate_memory_ids: Ids = Field(default_factory=list)


class VisualObservation(RoleOutput):
    observation_result: Text
    uncertainty: Text = ""
    relevance_to_question: Text = ""


class AsrObservation(RoleOutput):
    observation_result: Text
    asr_evidence: Text = ""


class SuperMemoryUpdate(RoleOutput):
    is_relevant: bool
    visual_observation: Text = ""
    asr_observation: Text = ""
    irrelevant_summary: Text = ""


class NodeRewrite(RoleOutput):
    updated_text: Text
    #: Optional beyond the paper's keys: False lets code enforce the 10-character summary.
    is_relevant: bool | None = None


def _entry_problem(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(entry)'}: {err['msg']}" for err in exc.errors()
    )


class _EntryUpdates(RoleOutput):
    """An update reply validated memory by memory.

    One malformed entry (a missing ``is_relevant``, a number where text belongs) must not
    throw away the facts of every other memory in the reply: valid entries are kept, the
    bad ones are listed in ``rejected`` (id → problem) and their memories keep their
    original text. Only a reply with no usable entry at all fails validation (and so gets
    the repair retry).
    """

    _entry_model: ClassVar[type[RoleOutput]]
    _rejected: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def rejected(self) -> dict[str, str]:
        return dict(self._rejected)

    @model_validator(mode="wrap")
    @classmethod
    def _entry_by_entry(cls, data: Any, handler: Any) -> Any:
        rejected: dict[str, str] = {}
        if isinstance(data, dict) and isinstance(data.get("updated_memories"), dict):
            kept = {}
            for key, entry in data["updated_memories"].items():
                entry = cls._coerce_entry(entry)
                try:
                    kept[str(key)] = cls._entry_model.model_validate(entry)
                except ValidationError as exc:
                    rejected[str(key)] = _entry_problem(exc)
            if rejected and not kept:
                raise ValueError(
                    "no update entry is valid: "
                    + "; ".join(f"{k}: {v}" for k, v in rejected.items())
                )
            data = {**data, "updated_memories": kept}
        model = handler(data)
        model._rejected = rejected
        return model

    @classmethod
    def _coerce_entry(cls, entry: Any) -> Any:
        return entry


class SuperUpdate(_EntryUpdates):
    _entry_model = SuperMemoryUpdate
    updated_memories: dict[str, SuperMemoryUpdate]


class LevelUpdate(_EntryUpdates):
    _entry_model = NodeRewrite
    updated_memories: dict[str, NodeRewrite]

    @classmethod
    def _coerce_entry(cls, entry: Any) -> Any:
        # Models often answer {"macro_0003": "new text"} instead of {"updated_text": ...}.
        return {"updated_text": entry} if isinstance(entry, str) else entry


class Decision(RoleOutput):
    selected_child_memory_ids: Ids = Field(default_factory=list)
    stop_descending: bool = False
    next_instruct: str | None = None
    reason: Text = ""
    template_type: str | None = None


ControllerAction = Literal["observe_visual", "observe_asr", "update", "expand", "finish"]


class ControllerStep(RoleOutput):
    """One step of the single-agent controller (the Table 3(a) "Single Agent" ablation)."""

    thought: Text = ""
    action: ControllerAction
    mode: Literal["grids", "frames"] | None = None
    level: Literal["super", "macro", "subgraph"] | None = None
    memory_ids: Ids = Field(default_factory=list)
    time_ranges: list[TimeRange] = Field(default_factory=list)
    instruction: Text = ""


class CitedClaim(RoleOutput):
    """One claim the answer rests on and the ids of the evidence for it."""

    claim: Text = ""
    ids: Ids = Field(default_factory=list)


def _claims(value: Any) -> Any:
    """Tolerant shapes: one claim as a mapping, bare ids as strings, ``evidence`` for ids."""
    if value is None:
        return []
    if isinstance(value, (dict, str)):
        value = [value]
    claims: list[Any] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            claims.append({"claim": "", "ids": [item]})
        elif isinstance(item, dict) and "ids" not in item:
            ids = item.get("evidence", item.get("sources", item.get("id", [])))
            claims.append({**item, "ids": ids})
        else:
            claims.append(item)
    return claims


class FinalAnswer(RoleOutput):
    reasoning: Text = ""
    answer: Text
    #: The facts the answer rests on, each with the ids (frames, transcript lines, memory
    #: nodes) of the composite memory that show it.
    citations: Annotated[list[CitedClaim], BeforeValidator(_claims)] = Field(default_factory=list)


#: The final answer without citations (``answer.citations: false``): the paper's two keys, so
#: the schema a ``json_schema`` endpoint is sent asks for nothing the prompt does not. (No
#: docstring: it would be sent as the schema's description on every call.)
class UncitedAnswer(RoleOutput):
    reasoning: Text = ""
    answer: Text


def answer_model(citations: bool) -> type[FinalAnswer] | type[UncitedAnswer]:
    """The reply model of the Answer agent and the Direct baseline under ``answer.citations``."""
    return FinalAnswer if citations else UncitedAnswer


#: Prompt name → the model its reply must validate against.
OUTPUT_SCHEMAS: dict[str, type[RoleOutput]] = {
    "locator_anchors": AnchorPlan,
    "overview_planning": OverviewPlan,
    "level_planning": LevelPlan,
    "asr_planning": AsrPlan,
    "visual_observation": VisualObservation,
    "asr_observation": AsrObservation,
    "super_update": SuperUpdate,
    "level_update": LevelUpdate,
    "decision": Decision,
    "controller": ControllerStep,
    "final_answer": FinalAnswer,
    "direct_answer": FinalAnswer,
}
