"""A generic JSONL: one question a line, for your own benchmark.

Keys: ``id``, ``video`` (a file name under ``--videos``), ``question``, ``options`` (labelled
or plain texts), and optionally ``answer`` (a letter or a 0-based index), ``categories`` (a
string or a list), ``subtitles``, ``video_id``, ``duration``, ``duration_group`` (which
``--duration`` selects by).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videotapestry.errors import QuestionError
from videotapestry.eval.datasets.common import (
    DatasetError,
    LoadOptions,
    check_unique_ids,
    read_json_lines,
    select_duration,
)
from videotapestry.eval.questions import EvalQuestion
from videotapestry.question import LETTERS, labelled_options, option_letters, validate_question


def load_jsonl(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    if path.is_dir():
        candidates = sorted(path.glob("*.jsonl"))
        if len(candidates) != 1:
            raise DatasetError(f"{path} must hold exactly one .jsonl file, found {len(candidates)}")
        path = candidates[0]
    questions = [_question(path, number, row) for number, row in read_json_lines(path)]
    check_unique_ids(questions, path)
    groups = {
        str(q.duration_group).lower(): q.duration_group for q in questions if q.duration_group
    }
    return select_duration(questions, options, path, "jsonl", groups or None)


def _question(path: Path, number: int, row: dict[str, Any]) -> EvalQuestion:
    where = f"{path}:{number}"
    missing = [key for key in ("id", "video", "question", "options") if key not in row]
    if missing:
        raise DatasetError(f"{where} lacks {', '.join(missing)}")
    if not isinstance(row["options"], list):
        raise DatasetError(f"{where}: options must be a list")
    try:
        validate_question(row["question"], row["options"])
    except QuestionError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    options = labelled_options([str(option) for option in row["options"]])
    answer = row.get("answer")
    if isinstance(answer, int) and not isinstance(answer, bool):
        if not 0 <= answer < len(options):
            raise DatasetError(f"{where}: answer index {answer} is out of range")
        answer = LETTERS[answer]
    elif isinstance(answer, str):
        answer = answer.strip().upper()
        if answer not in option_letters(options):
            raise DatasetError(f"{where}: answer {answer!r} is not one of the options' letters")
    elif answer is not None:
        raise DatasetError(f"{where}: answer must be a letter or an index")
    categories = row.get("categories") or []
    if isinstance(categories, str):
        categories = [categories]
    video = str(row["video"])
    duration = row.get("duration")
    return EvalQuestion(
        id=str(row["id"]),
        benchmark="jsonl",
        video_id=str(row.get("video_id") or Path(video).stem),
        video=video,
        question=row["question"],
        options=options,
        answer=answer,
        categories=[str(category) for category in categories],
        duration_s=float(duration) if isinstance(duration, (int, float)) else None,
        duration_group=str(row["duration_group"]) if row.get("duration_group") else None,
        subtitles=row.get("subtitles"),
    )
