"""LongVideoBench: ``lvb_val.json`` (or ``lvb_test_wo_gt.json``), a list of questions.

An entry holds ``id``, ``video_id``, ``question``, ``candidates`` (4 or 5 plain texts),
``correct_choice`` (a 0-based index; absent from the test file, whose answers are withheld),
``question_category``, ``duration_group`` (a bucket in seconds, 15 / 60 / 600 / 3600, not
the video's length), ``duration`` (the length, in seconds), ``video_path``,
``subtitle_path`` (``<video_id>_en.json``) and ``starting_timestamp_for_subtitles``: the
videos are cut from longer ones whose subtitles keep the original clock, and that time is
subtracted from every cue (``SubtitleSource(offset_s=…)`` does it, SPEC §8).

Normalized: ``categories`` is the question category; ``duration_group`` is the bucket as a
string; ``--duration long`` selects the 3600 bucket (also ``medium`` 600, ``short`` 60,
``very_short`` 15, or a bucket number). An entry without ``id`` is named
``<video_id>_<n>``, n counting that video's questions from 0 in file order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videotapestry.eval.datasets.common import (
    DatasetError,
    LoadOptions,
    answer_letter,
    check_question,
    check_unique_ids,
    find_file,
    json_list_of_objects,
    normalized_options,
    number_field,
    read_json,
    require,
    require_mode,
    select_duration,
    text_field,
)
from videotapestry.eval.questions import EvalQuestion

BENCHMARK = "longvideobench"
FILE_NAMES = ("lvb_val.json", "lvb_test_wo_gt.json")
OPTION_COUNTS = (4, 5)
#: Names ``--duration`` accepts, with the bucket each selects.
DURATION_GROUPS = {
    "very_short": "15",
    "short": "60",
    "medium": "600",
    "long": "3600",
    "15": "15",
    "60": "60",
    "600": "600",
    "3600": "3600",
}


def load_longvideobench(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, BENCHMARK)
    path = find_file(path, FILE_NAMES)
    rows = json_list_of_objects(path, read_json(path), "entry")
    per_video: dict[str, int] = {}
    questions = []
    for number, row in enumerate(rows, start=1):
        where = f"{path}: entry {number}"
        require(row, ("video_id", "question", "candidates"), where)
        video_id = text_field(row, "video_id", where)
        ordinal = per_video.get(video_id, 0)
        per_video[video_id] = ordinal + 1
        question_id = text_field(row, "id", where) if "id" in row else f"{video_id}_{ordinal}"
        questions.append(_question(f"{where} (id {question_id})", question_id, video_id, row))
    check_unique_ids(questions, path)
    return select_duration(questions, options, path, BENCHMARK, DURATION_GROUPS)


def _question(where: str, question_id: str, video_id: str, row: dict[str, Any]) -> EvalQuestion:
    options = normalized_options(row["candidates"], where, OPTION_COUNTS, plain=True)
    text = text_field(row, "question", where)
    duration = number_field(row, "duration", where)
    choice = row.get("correct_choice")
    if choice is not None and not isinstance(choice, int):
        raise DatasetError(f"{where}: correct_choice must be an integer index, got {choice!r}")
    answer = None if choice is None else answer_letter(choice, options, where)
    group = row.get("duration_group")
    if group is not None:
        bucket = number_field(row, "duration_group", where)
        group = str(int(bucket)) if bucket is not None and bucket.is_integer() else str(group)
    offset = number_field(row, "starting_timestamp_for_subtitles", where) or 0.0
    category = row.get("question_category")
    extra = {
        key: row[key]
        for key in ("topic_category", "level", "question_wo_referring_query")
        if row.get(key) not in (None, "")
    }
    if choice is not None:
        extra["correct_choice"] = choice
    return check_question(
        where,
        lambda: EvalQuestion(
            id=question_id,
            benchmark=BENCHMARK,
            video_id=video_id,
            video=str(row.get("video_path") or f"{video_id}.mp4"),
            question=text,
            options=options,
            answer=answer,
            categories=[str(category)] if category not in (None, "") else [],
            duration_s=duration,
            duration_group=group,
            subtitles=str(row["subtitle_path"]) if row.get("subtitle_path") else None,
            subtitle_offset_s=offset,
            extra=extra,
        ),
    )
