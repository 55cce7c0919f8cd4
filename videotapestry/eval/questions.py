"""The one question type every benchmark loader produces.

Benchmarks disagree on everything (option keys, answer as letter or index, categories as a
string or a list, durations as seconds or buckets); the runner and the reports should not
know which benchmark a question came from, so loaders normalize to this.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from videotapestry.question import LETTERS


class EvalQuestion(BaseModel):
    """A benchmark question, normalized.

    ``options`` are always labelled ``"A. …"`` in order; ``answer`` is the gold letter or
    None when the benchmark withholds it (EgoSchema outside its public subset).
    ``categories`` lists every category the question counts in (LVBench gives several).
    ``video`` is the video's file name relative to the ``--videos`` directory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    benchmark: str
    video_id: str
    video: str
    question: str
    options: list[str]
    answer: str | None = None
    categories: list[str] = Field(default_factory=list)
    duration_s: float | None = None
    #: The benchmark's own duration bucket (Video-MME short/medium/long, LongVideoBench 3600).
    duration_group: str | None = None
    #: A subtitle file (relative to ``--subtitles``, else to the annotations) when the
    #: benchmark ships one, and the video time its first cue is relative to.
    subtitles: str | None = None
    subtitle_offset_s: float = 0.0
    #: Benchmark-specific fields kept for submissions and debugging (original ids, indices).
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("answer")
    @classmethod
    def _answer_is_a_letter(cls, value: str | None) -> str | None:
        if value is not None and (len(value) != 1 or value not in LETTERS):
            raise ValueError(f"answer must be one capital letter, got {value!r}")
        return value

    @property
    def answer_index(self) -> int | None:
        return None if self.answer is None else LETTERS.index(self.answer)

    def listing(self) -> dict[str, Any]:
        """The ``eval --list`` line: what a researcher checks before paying for a run."""
        return self.model_dump(mode="json")

    def to_json_line(self) -> str:
        return json.dumps(self.listing(), ensure_ascii=False)
