"""CG-Bench: ``cgbench.json`` (or ``cgbench_mini.json``), a JSON list of questions.

Each row holds ``qid`` (the question's id), ``video_uid`` (its video is
``<video_uid>.mp4``, under ``cg_videos_720p/`` in the release; its subtitles
``<video_uid>.srt`` under ``cg_subtitles/``, which some videos lack), ``question``,
``choices`` (the option texts, unlabelled), ``right_answer`` (the gold option's letter),
``answer`` (the gold option's text, the reference of the open-ended mode),
``clue_intervals`` (a list of ``[start, end]`` seconds: where the clues to the answer are,
which CG-Bench scores by mIoU and recall@IoU), ``duration`` (seconds), ``domain`` and
``sub_category``. Copies that give ``right_answer`` as the option's text, or only
``answer``, are read too: the gold letter is the option whose text it is.

Two modes, as CG-Bench has them:

- ``mc`` (default): the question with its options, scored by letter.
- ``open`` (``--mode open``): the question alone, answered in words; the reference is
  ``answer`` (else the gold option's text) and a judge model scores the answer against it.

Normalized: ``id`` is ``str(qid)``; ``categories`` is the sub-category (CG-Bench's
per-task table); ``evidence_spans`` are the clue intervals; the domain stays in ``extra``.
CG-Bench has no duration groups.

Clue intervals are made spans of the video, never silently: one given end first is put in
order (as in every loader), one that runs past ``duration`` is cut at it, one that starts
at or after it is dropped; each is counted in the question's ``evidence_notes`` and the
run's report. Negative or non-numeric times are refused, naming the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videotapestry.eval.datasets.common import (
    MODES,
    DatasetError,
    LoadOptions,
    answer_letter,
    check_question,
    check_unique_ids,
    evidence_spans,
    find_file,
    json_list_of_objects,
    normalized_options,
    number_field,
    option_index,
    read_json,
    require,
    require_mode,
    select_duration,
    text_field,
)
from videotapestry.eval.questions import EvalQuestion, EvidenceNotes
from videotapestry.question import LETTERS, MAX_OPTIONS, option_body, option_letters

BENCHMARK = "cgbench"
FILE_NAMES = ("cgbench.json", "cgbench_mini.json")
#: Any count the prompts can letter; CG-Bench's own rows have 4 to 8.
OPTION_COUNTS = tuple(range(2, MAX_OPTIONS + 1))


def load_cgbench(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, BENCHMARK, MODES)
    path = find_file(path, FILE_NAMES)
    rows = json_list_of_objects(path, read_json(path), "question")
    questions = [
        _question(f"{path}: question {number}", row, open_ended=options.mode == "open")
        for number, row in enumerate(rows, start=1)
    ]
    check_unique_ids(questions, path)
    return select_duration(questions, options, path, BENCHMARK, None)


def _question(where: str, row: dict[str, Any], *, open_ended: bool) -> EvalQuestion:
    if row.get("qid") is not None:
        where = f"{where} (qid {row['qid']})"
    require(row, ("qid", "video_uid", "question", "choices"), where)
    qid = text_field(row, "qid", where)
    video_uid = text_field(row, "video_uid", where)
    question = text_field(row, "question", where)
    options = normalized_options(row["choices"], where, OPTION_COUNTS, plain=True)
    gold = _gold_letter(row, options, where)
    reference = _reference(row, options, gold, where)
    extra = {key: row[key] for key in ("domain",) if row.get(key) not in (None, "")}
    sub_category = row.get("sub_category")
    spans, reversed_spans = evidence_spans(row.get("clue_intervals"), where, "clue_intervals")
    return check_question(
        where,
        lambda: EvalQuestion(
            id=qid,
            benchmark=BENCHMARK,
            video_id=video_uid,
            video=f"{video_uid}.mp4",
            question=question,
            options=[] if open_ended else options,
            answer=None if open_ended else gold,
            reference_answer=reference if open_ended else None,
            categories=[str(sub_category).strip()] if sub_category else [],
            duration_s=number_field(row, "duration", where),
            subtitles=f"{video_uid}.srt",
            evidence_spans=spans,
            evidence_notes=EvidenceNotes(reversed=reversed_spans),
            extra=extra,
        ),
    )


def _gold_letter(row: dict[str, Any], options: list[str], where: str) -> str | None:
    """The gold letter from ``right_answer`` (a letter, as CG-Bench writes it, or an
    option's text), else from ``answer`` when it is an option's text; None when the row
    gives neither. A letter wins over an option whose whole text is that letter."""
    for key in ("right_answer", "answer"):
        given = row.get(key)
        if given is None or (isinstance(given, str) and not given.strip()):
            continue
        if isinstance(given, str):
            letter = given.strip().strip("().:").strip().upper()
            if key == "right_answer" and letter in option_letters(options):
                return letter
            index = option_index(given, options)
            if index is not None:
                return LETTERS[index]
            if key == "answer":
                raise DatasetError(
                    f"{where}: the row has no right_answer and its answer {given!r} is not "
                    "the text of one of the choices"
                )
            raise DatasetError(
                f"{where}: right_answer {given!r} is neither an option letter "
                f"({', '.join(option_letters(options))}) nor the text of one of the choices"
            )
        if key == "right_answer":
            return answer_letter(given, options, where)  # an index, or a refusal naming it
    return None


def _reference(row: dict[str, Any], options: list[str], gold: str | None, where: str) -> str | None:
    """The open-ended reference: ``answer``, else the gold option's text."""
    text = row.get("answer")
    if text is not None and not isinstance(text, str):
        raise DatasetError(f"{where}: answer must be the right answer's text, got {text!r}")
    if text and text.strip():
        return " ".join(text.split())
    return option_body(options[LETTERS.index(gold)]) if gold is not None else None
