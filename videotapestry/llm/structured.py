"""Reading a role's JSON reply: tolerant extraction, validation, and the repair message.

Models wrap JSON in code fences, add a sentence after it, or emit two objects. Extraction
takes the first complete JSON object found (inside a fence first), using the standard
decoder, and validation is the role's pydantic model. Truncated or otherwise broken JSON is
not patched up here: guessing where a cut-off answer ended would put words in the model's
mouth, so the caller asks the model once to repair it instead.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()

T = TypeVar("T", bound=BaseModel)


class OutputParseError(ValueError):
    """The reply holds no JSON object, or the object does not match the schema."""


def extract_json_object(text: str) -> dict[str, Any]:
    """The first complete JSON object in ``text`` (fenced blocks are looked at first)."""
    if not text or not text.strip():
        raise OutputParseError("the reply is empty")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = _DECODER.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    raise OutputParseError("the reply contains no complete JSON object")


def parse_output(text: str, output_model: type[T]) -> T:
    data = extract_json_object(text)
    try:
        return output_model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise OutputParseError(f"the JSON object does not match the schema: {problems}") from None


def repair_instruction(problem: str, output_model: type[BaseModel]) -> str:
    keys = ", ".join(output_model.model_fields)
    return (
        f"Your previous reply could not be used: {problem}. "
        f"Reply again with only one valid JSON object with the keys {keys}, "
        "and no other text."
    )


def json_schema_for(output_model: type[BaseModel]) -> dict[str, Any]:
    return output_model.model_json_schema()
