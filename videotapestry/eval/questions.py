"""The one question type every benchmark loader produces.

Benchmarks disagree on everything (option keys, answer as letter or index, categories as a
string or a list, durations as seconds or buckets, evidence times as "MM:SS-MM:SS" or as
seconds); the runner and the reports should not know which benchmark a question came from,
so loaders normalize to this.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from videotapestry.question import LETTERS, option_letters
from videotapestry.time_spans import Span, checked


class EvidenceNotes(BaseModel):
    """What was done to a question's evidence times to make them spans of its video.

    Never silent: ``reversed`` spans (end before start) were put in order, ``clipped`` spans
    ran past the video's end and were cut at it, ``past_end`` spans began at or after the
    end and were dropped; ``unreadable`` is a time reference kept raw because it does not
    read as times (the question then has no evidence spans). The report counts them.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    reversed: int = 0
    clipped: int = 0
    past_end: int = 0
    unreadable: str | None = None

    @property
    def noted(self) -> bool:
        """Whether anything was done (or left unread)."""
        return bool(self.reversed or self.clipped or self.past_end or self.unreadable)


def clip_spans(spans: list[Span], duration_s: float | None) -> tuple[list[Span], int, int]:
    """``spans`` within ``[0, duration_s]``, and how many were clipped and dropped.

    A span that runs past the end is cut at it; one that starts at or after the end (and
    is not the moment of the end itself) is dropped. An unknown or zero duration keeps them.
    """
    if not duration_s or duration_s <= 0:
        return list(spans), 0, 0
    kept: list[Span] = []
    clipped = dropped = 0
    for start, end in spans:
        if end <= duration_s:
            kept.append((start, end))
        elif start >= duration_s:
            dropped += 1
        else:
            kept.append((start, duration_s))
            clipped += 1
    return kept, clipped, dropped


class EvalQuestion(BaseModel):
    """A benchmark question, normalized.

    ``options`` are always labelled ``"A. …"`` in order; ``answer`` is the gold letter or
    None when the benchmark withholds it (EgoSchema outside its public subset). A question
    without options is free-form (CG-Bench's open-ended mode, a JSONL row without options):
    it is answered in words and has no letter; ``reference_answer`` is the answer a judge
    compares it with. ``categories`` lists every category the question counts in (LVBench
    gives several). ``video`` is the video's file name relative to the ``--videos``
    directory. ``evidence_spans`` are where the benchmark says the answer can be seen or
    heard, in seconds (empty when it says nothing); grounding is scored against them.
    ``evidence_notes`` counts what was done to them to fit the video (``within_video``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    benchmark: str
    video_id: str
    video: str
    question: str
    options: list[str] = Field(default_factory=list)
    answer: str | None = None
    reference_answer: str | None = None
    categories: list[str] = Field(default_factory=list)
    duration_s: float | None = None
    #: The benchmark's own duration bucket (Video-MME short/medium/long, LongVideoBench 3600).
    duration_group: str | None = None
    #: A subtitle file (relative to ``--subtitles``, else to the annotations) when the
    #: benchmark ships one, and the video time its first cue is relative to.
    subtitles: str | None = None
    subtitle_offset_s: float = 0.0
    #: (start, end) seconds of the annotated evidence, as the benchmark lists them.
    evidence_spans: list[tuple[float, float]] = Field(default_factory=list)
    #: Spans put in order, clipped or dropped, and a time reference that could not be read.
    evidence_notes: EvidenceNotes = Field(default_factory=EvidenceNotes)
    #: Benchmark-specific fields kept for submissions and debugging (original ids, indices).
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("answer")
    @classmethod
    def _answer_is_a_letter(cls, value: str | None) -> str | None:
        if value is not None and (len(value) != 1 or value not in LETTERS):
            raise ValueError(f"answer must be one capital letter, got {value!r}")
        return value

    @field_validator("evidence_spans")
    @classmethod
    def _spans_are_spans(cls, value: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [checked(start, end) for start, end in value]

    @model_validator(mode="after")
    def _answer_fits_the_options(self) -> EvalQuestion:
        if self.answer is None:
            return self
        if not self.options:
            raise ValueError(
                f"a free-form question (no options) has no answer letter, got {self.answer!r}; "
                "give its answer as reference_answer"
            )
        if self.answer not in option_letters(self.options):
            raise ValueError(f"answer {self.answer!r} is not the letter of one of the options")
        return self

    def within_video(self, duration_s: float | None) -> EvalQuestion:
        """The question with its evidence spans clipped to ``[0, duration_s]`` (the
        benchmark's duration at load, the probed video's at run time), counted in
        ``evidence_notes``; itself when nothing changes."""
        spans, clipped, dropped = clip_spans(list(self.evidence_spans), duration_s)
        if not (clipped or dropped):
            return self
        notes = self.evidence_notes.model_copy(
            update={
                "clipped": self.evidence_notes.clipped + clipped,
                "past_end": self.evidence_notes.past_end + dropped,
            }
        )
        return self.model_copy(update={"evidence_spans": spans, "evidence_notes": notes})

    @property
    def free_form(self) -> bool:
        """Answered in words: the question has no options to choose from."""
        return not self.options

    @property
    def answer_index(self) -> int | None:
        return None if self.answer is None else LETTERS.index(self.answer)

    def listing(self) -> dict[str, Any]:
        """The ``eval --list`` line: what a researcher checks before paying for a run."""
        return self.model_dump(mode="json")

    def to_json_line(self) -> str:
        return json.dumps(self.listing(), ensure_ascii=False)
