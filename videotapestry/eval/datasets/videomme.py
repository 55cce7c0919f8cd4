"""Video-MME: the released dataset rows or the official evaluation template.

Two shapes are accepted, as file or as the directory holding one:

- Dataset rows (the Hugging Face parquet ``videomme/test-00000-of-00001.parquet``, or the
  same rows exported as JSON / JSON lines): one question a row with ``video_id`` ("001"),
  ``videoID`` (the YouTube id that names the video and subtitle files), ``duration``
  (short / medium / long), ``domain``, ``sub_category``, ``url``, ``question_id``,
  ``task_type``, ``question``, ``options`` (["A. …", …]) and ``answer`` (a letter).
- The evaluation template (``output_test_template.json``): a list of videos, each with
  ``video_id``, ``duration``, ``domain``, ``sub_category`` and nested ``questions``. Upstream
  writes it with trailing commas, which are accepted. Older copies name the fields
  ``duration_category`` / ``video_category`` / ``video_subcategory`` / ``choices``; those
  are read too. The template carries no ``videoID``: a ``videoID`` or YouTube ``url`` on the
  video is used when present, else the video file is named by ``video_id``
  (``extra["video_file_from"]`` records which).

Normalized: ``video_id`` is the name of the video's files (``<videoID>.mp4``, subtitles
``<videoID>.srt``, which about one video in six lacks); ``categories`` is the task type, the
breakdown Video-MME results are reported by; ``duration_group`` is short / medium / long,
so ``--duration long`` selects Video-MME Long. Domain and sub-category stay in ``extra``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from videotapestry.eval.datasets.common import (
    DatasetError,
    LoadOptions,
    answer_letter,
    check_question,
    check_unique_ids,
    json_list_of_objects,
    normalized_options,
    read_json,
    read_json_lines,
    read_parquet_rows,
    require,
    require_mode,
    select_duration,
    text_field,
)
from videotapestry.eval.questions import EvalQuestion

BENCHMARK = "videomme"
DURATIONS = ("short", "medium", "long")
OPTION_COUNTS = (4,)
#: Names tried, in order, inside a directory given as ``--annotations``.
FILE_NAMES = (
    "videomme/test-00000-of-00001.parquet",
    "test-00000-of-00001.parquet",
    "output_test_template.json",
    "evaluation/output_test_template.json",
)
#: Older template copies' field names, mapped to the current ones.
_TEMPLATE_ALIASES = {
    "duration_category": "duration",
    "video_category": "domain",
    "video_subcategory": "sub_category",
    "choices": "options",
}


def load_videomme(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, BENCHMARK)
    path = _annotation_file(path)
    if path.suffix.lower() == ".parquet":
        questions = [
            _question(f"{path}: row {number}", row)
            for number, row in enumerate(read_parquet_rows(path), start=1)
        ]
    elif path.suffix.lower() == ".jsonl":
        questions = [_question(f"{path}:{number}", row) for number, row in read_json_lines(path)]
    else:
        rows = json_list_of_objects(path, read_json(path, lenient=True), "entry")
        if rows and "questions" in rows[0]:
            questions = _template_questions(path, rows)
        else:
            questions = [
                _question(f"{path}: entry {number}", row)
                for number, row in enumerate(rows, start=1)
            ]
    check_unique_ids(questions, path)
    return select_duration(questions, options, path, BENCHMARK, {d: d for d in DURATIONS})


def _annotation_file(path: Path) -> Path:
    if path.is_file():
        return path
    for name in FILE_NAMES:
        if (path / name).is_file():
            return path / name
    candidates = sorted(
        candidate
        for pattern in ("*.parquet", "*.json", "*.jsonl", "videomme/*.parquet")
        for candidate in path.glob(pattern)
    )
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        listed = ", ".join(str(candidate.relative_to(path)) for candidate in candidates)
        raise DatasetError(f"{path} holds several annotation files ({listed}); pass one of them")
    raise DatasetError(
        f"{path} holds no Video-MME annotations (looked for {', '.join(FILE_NAMES)} "
        "or a single .parquet / .json / .jsonl file)"
    )


def _template_questions(path: Path, videos: list[dict[str, Any]]) -> list[EvalQuestion]:
    questions = []
    for number, video in enumerate(videos, start=1):
        video = _renamed(video)
        where = f"{path}: video {number}"
        require(video, ("video_id", "questions"), where)
        where = f"{where} (video_id {video['video_id']})"
        if not isinstance(video["questions"], list):
            raise DatasetError(f"{where}: questions must be a list")
        file_id, source = _file_id(video)
        for index, item in enumerate(video["questions"], start=1):
            if not isinstance(item, dict):
                raise DatasetError(f"{where}, question {index} is not a JSON object")
            row = {**video, **_renamed(item), "videoID": file_id}
            questions.append(_question(f"{where}, question {index}", row, video_file_from=source))
    return questions


def _renamed(row: dict[str, Any]) -> dict[str, Any]:
    renamed = dict(row)
    for old, new in _TEMPLATE_ALIASES.items():
        if old in renamed and new not in renamed:
            renamed[new] = renamed.pop(old)
    return renamed


def _file_id(video: dict[str, Any]) -> tuple[str, str]:
    if video.get("videoID"):
        return str(video["videoID"]), "videoID"
    url = video.get("url")
    if isinstance(url, str):
        youtube = parse_qs(urlparse(url).query).get("v")
        if youtube and youtube[0]:
            return youtube[0], "url"
    return str(video["video_id"]), "video_id"


def _question(where: str, row: dict[str, Any], video_file_from: str | None = None) -> EvalQuestion:
    if row.get("question_id") is not None:
        where = f"{where} (question_id {row['question_id']})"
    require(row, ("question_id", "question", "options", "answer"), where)
    question_id = text_field(row, "question_id", where)
    if not row.get("videoID") and not row.get("video_id"):
        raise DatasetError(f"{where} lacks videoID and video_id")
    file_id = str(row.get("videoID") or row["video_id"])
    duration = row.get("duration")
    if duration is not None:
        duration = str(duration).strip().lower()
        if duration not in DURATIONS:
            raise DatasetError(
                f"{where}: duration must be one of {', '.join(DURATIONS)}, got {row['duration']!r}"
            )
    options = normalized_options(row["options"], where, OPTION_COUNTS)
    answer = answer_letter(row["answer"], options, where)
    question = text_field(row, "question", where)
    task_type = str(row["task_type"]).strip() if row.get("task_type") else None
    extra = {
        key: row[key] for key in ("domain", "sub_category", "url") if row.get(key) not in (None, "")
    }
    extra["video_number"] = str(row.get("video_id") or file_id)
    source = video_file_from or ("videoID" if row.get("videoID") else "video_id")
    if source != "videoID":
        extra["video_file_from"] = source
    return check_question(
        where,
        lambda: EvalQuestion(
            id=question_id,
            benchmark=BENCHMARK,
            video_id=file_id,
            video=f"{file_id}.mp4",
            question=question,
            options=options,
            answer=answer,
            categories=[task_type] if task_type else [],
            duration_group=duration,
            subtitles=f"{file_id}.srt",
            extra=extra,
        ),
    )
