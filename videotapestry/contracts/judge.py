"""What the judge of free-form answers must return (eval's prompt, not the method's).

``correct`` is the verdict the scores count; ``score`` says how much of the reference the
answer states, for reading a run, not for its accuracy. Judges reply loosely like every
model: a verdict as ``"yes"`` or ``1``, a score as a percentage or left out, so those are
read too; a reply without a verdict fails validation (and gets the repair retry).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from videotapestry.contracts.fields import RoleOutput, Text


class JudgeVerdict(RoleOutput):
    reasoning: Text = ""
    correct: bool
    score: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _score_from_the_verdict(cls, data: Any) -> Any:
        """A reply without a score scores 1 when correct, 0 when not."""
        if isinstance(data, dict) and data.get("score") is None and "correct" in data:
            return {**data, "score": 1.0 if cls._truthy(data["correct"]) else 0.0}
        return data

    @field_validator("score", mode="before")
    @classmethod
    def _percent_as_share(cls, value: Any) -> Any:
        """``80`` (a percentage) is 0.8; a share of 0..1 stays as it is."""
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 < value <= 100:
            return value / 100.0
        return value

    @staticmethod
    def _truthy(value: Any) -> bool:
        if isinstance(value, str):
            return value.strip().lower() in ("true", "yes", "1", "correct")
        return bool(value)


#: Eval's prompt name -> the model its reply must validate against.
EVAL_SCHEMAS: dict[str, type[RoleOutput]] = {"judge": JudgeVerdict}
