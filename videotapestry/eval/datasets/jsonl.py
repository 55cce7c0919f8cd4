"""A generic JSONL: one question a line, for your own benchmark.

Keys: ``id``, ``video`` (a file name under ``--videos``), ``question``, and optionally
``options`` (labelled or plain texts; a row without them is a free-form question, answered
in words), ``answer`` (a letter or a 0-based index; for a free-form row, the reference
answer's text), ``reference_answer`` (the answer in words a judge compares a free-form
answer with), ``evidence_spans`` (where the answer can be seen or heard: a list of
``[start, end]`` seconds or of objects with ``start_s`` / ``end_s``, as the demo's
``questions.json`` writes them), ``categories`` (a string or a list), ``subtitles``,
``video_id``, ``duration``, ``duration_group`` (which ``--duration`` selects by).

Evidence spans given end first are put in order, and with a ``duration`` those past the
end are clipped (or dropped when they start after it), as for every benchmark: each is
counted in the question's ``evidence_notes`` and the run's report.

``--mode open`` asks every row in words: options are dropped and the reference is the
row's ``reference_answer``, else the text of its gold option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videotapestry.errors import QuestionError
from videotapestry.eval.datasets.common import (
    MODES,
    DatasetError,
    LoadOptions,
    check_question,
    check_unique_ids,
    evidence_spans,
    read_json_lines,
    require_mode,
    select_duration,
)
from videotapestry.eval.questions import EvalQuestion, EvidenceNotes
from videotapestry.question import (
    LETTERS,
    labelled_options,
    option_body,
    option_letters,
    validate_question,
)


def load_jsonl(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, "jsonl", MODES)
    if path.is_dir():
        candidates = sorted(path.glob("*.jsonl"))
        if len(candidates) != 1:
            raise DatasetError(f"{path} must hold exactly one .jsonl file, found {len(candidates)}")
        path = candidates[0]
    questions = [
        _question(path, number, row, open_ended=options.mode == "open")
        for number, row in read_json_lines(path)
    ]
    check_unique_ids(questions, path)
    groups = {
        str(q.duration_group).lower(): q.duration_group for q in questions if q.duration_group
    }
    return select_duration(questions, options, path, "jsonl", groups or None)


def _question(path: Path, number: int, row: dict[str, Any], *, open_ended: bool) -> EvalQuestion:
    where = f"{path}:{number}"
    missing = [key for key in ("id", "video", "question") if key not in row]
    if missing:
        raise DatasetError(f"{where} lacks {', '.join(missing)}")
    if not isinstance(row["question"], str) or not row["question"].strip():
        raise DatasetError(f"{where}: question must be non-empty text")
    raw_options = row.get("options") or []
    if not isinstance(raw_options, list):
        raise DatasetError(f"{where}: options must be a list")
    reference = row.get("reference_answer")
    if reference is not None and not isinstance(reference, str):
        raise DatasetError(f"{where}: reference_answer must be text, got {reference!r}")
    answer: str | None = None
    options: list[str] = []
    if raw_options:
        options, answer = _choices(where, row, raw_options)
    elif row.get("answer") is not None:
        if not isinstance(row["answer"], str) or not row["answer"].strip():
            raise DatasetError(
                f"{where}: a row without options is free-form; its answer must be the "
                f"reference text, got {row['answer']!r}"
            )
        reference = reference or row["answer"]
    if open_ended and options:
        gold = options[option_letters(options).index(answer)] if answer is not None else None
        reference = reference or (option_body(gold) if gold is not None else None)
        options, answer = [], None
    categories = row.get("categories") or []
    if isinstance(categories, str):
        categories = [categories]
    video = str(row["video"])
    duration = row.get("duration")
    spans, reversed_spans = evidence_spans(row.get("evidence_spans"), where, "evidence_spans")
    return check_question(
        where,
        lambda: EvalQuestion(
            id=str(row["id"]),
            benchmark="jsonl",
            video_id=str(row.get("video_id") or Path(video).stem),
            video=video,
            question=row["question"],
            options=options,
            answer=answer,
            reference_answer=reference.strip() if reference else None,
            categories=[str(category) for category in categories],
            duration_s=float(duration) if isinstance(duration, (int, float)) else None,
            duration_group=str(row["duration_group"]) if row.get("duration_group") else None,
            subtitles=row.get("subtitles"),
            evidence_spans=spans,
            evidence_notes=EvidenceNotes(reversed=reversed_spans),
        ),
    )


def _choices(where: str, row: dict[str, Any], raw: list[Any]) -> tuple[list[str], str | None]:
    """A multiple-choice row's options, labelled, and its gold letter (None when absent)."""
    try:
        # The length is checked against the run's config (question.max_chars) before it starts.
        validate_question(row["question"], raw, max_chars=None)
    except QuestionError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    options = labelled_options([str(option) for option in raw])
    answer = row.get("answer")
    if isinstance(answer, int) and not isinstance(answer, bool):
        if not 0 <= answer < len(options):
            raise DatasetError(f"{where}: answer index {answer} is out of range")
        return options, LETTERS[answer]
    if isinstance(answer, str):
        answer = answer.strip().upper()
        if answer not in option_letters(options):
            raise DatasetError(f"{where}: answer {answer!r} is not one of the options' letters")
        return options, answer
    if answer is not None:
        raise DatasetError(f"{where}: answer must be a letter or an index")
    return options, None
