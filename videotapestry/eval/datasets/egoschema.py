"""EgoSchema, in either of its two released forms.

- The release (``questions.json`` and, when present, ``subset_answers.json``):
  ``questions.json`` is a list of {``q_uid``, ``google_drive_id``, ``question``,
  ``"option 0"`` … ``"option 4"``} (the option keys have a space in them). Only the
  500-question subset has public answers, in ``subset_answers.json`` as ``{q_uid: index}``.
- The per-row multiple-choice form (the Hugging Face ``Subset`` and ``MC`` parquet files
  that lmms-eval reads, or those rows as JSON / JSON lines): one question a row with
  ``video_idx`` (the q_uid), ``question``, ``option`` (five "A. …" texts) and ``answer``
  (the index, as a number or a digit string; empty or absent where it is not public).

The video of a question is ``<q_uid>.mp4``. Questions without a public answer load with
answer None and are scored by the official server, which takes predictions in the
``{q_uid: index}`` form: ``egoschema_submission`` turns a run's records into it.

``--annotations`` is the directory holding ``questions.json`` (or that file itself, with
``subset_answers.json`` looked for beside it), or a per-row file, or a directory holding
one (``Subset/test-00000-of-00001.parquet``). EgoSchema has no categories and no duration
groups (every clip is three minutes long).
"""

from __future__ import annotations

from collections.abc import Iterable
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
    read_json,
    read_json_lines,
    read_parquet_rows,
    require,
    require_mode,
    select_duration,
    text_field,
)
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import ResultRecord
from videotapestry.files import write_json_atomic
from videotapestry.question import LETTERS

BENCHMARK = "egoschema"
QUESTIONS_FILE = "questions.json"
ANSWERS_FILE = "subset_answers.json"
OPTION_KEYS = tuple(f"option {index}" for index in range(5))


#: Per-row files a directory without ``questions.json`` is searched for (a ``.json`` file of
#: rows is told from the release's ``questions.json`` by its keys, once read).
ROW_FILE_PATTERNS = ("*.parquet", "*.jsonl", "Subset/*.parquet", "Subset/*.jsonl")


def load_egoschema(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, BENCHMARK)
    rows_path = _row_file(path)
    if rows_path is not None:
        if rows_path.suffix.lower() == ".parquet":
            numbered = enumerate(read_parquet_rows(rows_path), start=1)
            rows = [(f"{rows_path}: row {n}", row) for n, row in numbered]
        else:
            rows = [(f"{rows_path}:{n}", row) for n, row in read_json_lines(rows_path)]
        return _row_questions(rows_path, rows, options)
    questions_path = find_file(path, (QUESTIONS_FILE,))
    release = json_list_of_objects(questions_path, read_json(questions_path), "question")
    if release and "video_idx" in release[0]:  # per-row form, as one JSON list
        numbered = enumerate(release, start=1)
        rows = [(f"{questions_path}: row {n}", row) for n, row in numbered]
        return _row_questions(questions_path, rows, options)
    answers = _subset_answers(questions_path.parent / ANSWERS_FILE)
    questions = [
        _question(f"{questions_path}: question {number}", row, answers)
        for number, row in enumerate(release, start=1)
    ]
    check_unique_ids(questions, questions_path)
    known = {question.id for question in questions}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise DatasetError(
            f"{questions_path.parent / ANSWERS_FILE} answers {len(unknown)} q_uid(s) that "
            f"{questions_path} does not hold (first: {unknown[0]}); are they from the same release?"
        )
    return select_duration(questions, options, questions_path, BENCHMARK, None)


def _row_file(path: Path) -> Path | None:
    """The parquet or JSON-lines file of rows ``path`` names or holds, else None."""
    if path.is_file():
        return path if path.suffix.lower() in (".parquet", ".jsonl") else None
    if (path / QUESTIONS_FILE).is_file() or not path.is_dir():
        return None
    found = sorted({c for pattern in ROW_FILE_PATTERNS for c in path.glob(pattern)})
    if len(found) > 1:
        listed = ", ".join(str(candidate.relative_to(path)) for candidate in found)
        raise DatasetError(f"{path} holds several EgoSchema row files ({listed}); pass one")
    return found[0] if found else None


def _row_questions(
    path: Path, rows: list[tuple[str, dict[str, Any]]], options: LoadOptions
) -> list[EvalQuestion]:
    questions = [_row_question(where, row) for where, row in rows]
    check_unique_ids(questions, path)
    return select_duration(questions, options, path, BENCHMARK, None)


def _row_question(where: str, row: dict[str, Any]) -> EvalQuestion:
    require(row, ("video_idx", "question", "option"), where)
    q_uid = text_field(row, "video_idx", where)
    where = f"{where} (video_idx {q_uid})"
    options = normalized_options(row["option"], where, (5,))
    answer = row.get("answer")
    if isinstance(answer, str) and answer.strip().isdigit():
        answer = int(answer.strip())  # the Hugging Face rows keep the index as text
    public = answer is not None and answer != ""
    extra: dict[str, Any] = {"in_subset": public}
    if row.get("question_idx"):
        extra["question_idx"] = row["question_idx"]
    return _egoschema_question(
        where,
        q_uid,
        text_field(row, "question", where),
        options,
        answer_letter(answer, options, where) if public else None,
        extra,
    )


def _subset_answers(path: Path) -> dict[str, int]:
    if not path.is_file():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path} must hold a JSON object {{q_uid: answer index}}")
    for q_uid, index in data.items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 5:
            raise DatasetError(f"{path}: the answer of {q_uid} must be an index 0-4, got {index!r}")
    return data


def _question(where: str, row: dict[str, Any], answers: dict[str, int]) -> EvalQuestion:
    require(row, ("q_uid", "question"), where)
    q_uid = text_field(row, "q_uid", where)
    where = f"{where} (q_uid {q_uid})"
    missing = [key for key in OPTION_KEYS if key not in row]
    if missing:
        present = sorted(key for key in row if key.startswith("option"))
        raise DatasetError(
            f"{where} lacks {', '.join(repr(key) for key in missing)} "
            f"(EgoSchema's option keys are 'option 0' … 'option 4'; found {present})"
        )
    options = normalized_options([row[key] for key in OPTION_KEYS], where, (5,), plain=True)
    text = text_field(row, "question", where)
    answer = answer_letter(answers[q_uid], options, where) if q_uid in answers else None
    extra: dict[str, Any] = {"in_subset": q_uid in answers}
    if row.get("google_drive_id"):
        extra["google_drive_id"] = row["google_drive_id"]
    return _egoschema_question(where, q_uid, text, options, answer, extra)


def _egoschema_question(
    where: str,
    q_uid: str,
    text: str,
    options: list[str],
    answer: str | None,
    extra: dict[str, Any],
) -> EvalQuestion:
    """Either form's question: its id, video id and video file are all the q_uid."""
    return check_question(
        where,
        lambda: EvalQuestion(
            id=q_uid,
            benchmark=BENCHMARK,
            video_id=q_uid,
            video=f"{q_uid}.mp4",
            question=text,
            options=options,
            answer=answer,
            extra=extra,
        ),
    )


def egoschema_submission(
    records: Iterable[ResultRecord], *, variant: str | None = None
) -> dict[str, int]:
    """The official server's ``{q_uid: index}`` from a run's records, in first-seen order.

    The last record of a question wins (as in ``results.jsonl``); questions without a
    predicted letter (failed, skipped) are left out. Records of several variants need
    ``variant`` to say which one is submitted.
    """
    chosen = [record for record in records if variant is None or record.variant == variant]
    variants = sorted({record.variant for record in chosen})
    if len(variants) > 1:
        raise DatasetError(
            f"the records hold several variants ({', '.join(variants)}); choose one to submit"
        )
    latest: dict[str, ResultRecord] = {}
    for record in chosen:
        latest[record.question_id] = record
    submission = {}
    for q_uid, record in latest.items():
        letter = (record.prediction or "").strip().upper()
        if record.status != "answered" or not letter:
            continue
        if letter not in LETTERS[:5]:
            raise DatasetError(
                f"question {q_uid}: prediction {record.prediction!r} is not one of A-E"
            )
        submission[q_uid] = LETTERS.index(letter)
    return submission


def write_egoschema_submission(
    records: Iterable[ResultRecord], path: str | Path, *, variant: str | None = None
) -> dict[str, int]:
    """Write ``egoschema_submission(records)`` to ``path`` as JSON (replaced atomically)."""
    submission = egoschema_submission(records, variant=variant)
    write_json_atomic(path, submission)
    return submission
