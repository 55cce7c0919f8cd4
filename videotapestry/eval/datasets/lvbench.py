"""LVBench: ``video_info.meta.jsonl``, one video a line with its questions.

A line holds ``key`` (the video's id; its file is ``<key>.mp4``), ``type`` (the video's
genre), ``video_info`` ({duration_minutes, fps, resolution}) and ``qa``, a list of
{``uid`` (a string or an integer), ``question``, ``answer`` (a letter), ``question_type``
(a list: a question counts in every dimension it names), ``time_reference``
("MM:SS-MM:SS")}. The options are not a field: they are inlined at the end of the question
text as ``"\\n(A) …"`` lines, and are split off here.

Normalized: ``id`` is ``str(uid)`` (the key LVBench's own scorer uses); ``categories`` are
the question types, LVBench's per-dimension table; ``duration_s`` comes from
``duration_minutes``; ``evidence_spans`` is the time reference in seconds, which grounding
is scored against. Read (``common.clock_spans``): ``MM:SS-MM:SS`` (minutes past 59 in long
videos), ``HH:MM:SS``, plain seconds (``30-60``, ``30s-60s``), decimals, spaces around the
separator, which may be any dash, ``~`` or ``to``, brackets (``[00:30, 01:00]``), several
spans separated by ``,`` or ``;``, and a single time (``01:23``: the one second it names).

Never silently: a span given end first is put in order, as in every loader; a span past
the video's end (``duration_minutes``) is cut at it, or dropped when it starts after it; a
time reference that still does not read as times gives no evidence spans rather than
refusing the question (it stays answerable) and is kept raw. Each is counted in the
question's ``evidence_notes`` and shown in the run's report. LVBench has no duration groups
and no open-ended mode. The genre, the raw time reference, fps and resolution stay in
``extra``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from videotapestry.eval.datasets.common import (
    DatasetError,
    LoadOptions,
    answer_letter,
    check_question,
    check_unique_ids,
    clock_spans,
    find_file,
    normalized_options,
    number_field,
    read_json_lines,
    require,
    require_mode,
    select_duration,
    text_field,
)
from videotapestry.eval.questions import EvalQuestion, EvidenceNotes

BENCHMARK = "lvbench"
FILE_NAMES = ("video_info.meta.jsonl", "data/video_info.meta.jsonl")
OPTION_COUNTS = (4,)
#: An inlined option: a line break, then "(A)".
_INLINE_OPTION = re.compile(r"\n[ \t]*\(([A-Za-z])\)[ \t]*")


def load_lvbench(path: Path, options: LoadOptions) -> list[EvalQuestion]:
    require_mode(options, BENCHMARK)
    path = find_file(path, FILE_NAMES)
    questions = []
    for number, row in read_json_lines(path):
        questions.extend(_video_questions(f"{path}:{number}", row))
    check_unique_ids(questions, path)
    return select_duration(questions, options, path, BENCHMARK, None)


def split_inline_options(text: str) -> tuple[str, list[str]]:
    """The question stem and its ``"(A) …"`` option lines, each labelled ``"A. …"``.

    An option's text may run over several lines; only a line that starts with a letter in
    parentheses begins the next option.
    """
    parts = _INLINE_OPTION.split(text)
    stem, rest = parts[0].strip(), parts[1:]
    options = [
        f"{letter.upper()}. {' '.join(body.split())}"
        for letter, body in zip(rest[::2], rest[1::2], strict=True)
    ]
    return stem, options


def _video_questions(where: str, row: dict[str, Any]) -> list[EvalQuestion]:
    require(row, ("key", "qa"), where)
    key = text_field(row, "key", where)
    where = f"{where} (key {key})"
    if not isinstance(row["qa"], list):
        raise DatasetError(f"{where}: qa must be a list")
    info = row.get("video_info") or {}
    if not isinstance(info, dict):
        raise DatasetError(f"{where}: video_info must be an object")
    minutes = number_field(info, "duration_minutes", f"{where}: video_info")
    extra_video = {"video_type": row.get("type")}
    for name in ("fps", "resolution"):
        if info.get(name) is not None:
            extra_video[name] = info[name]
    return [
        _question(f"{where}, qa {index}", key, item, minutes, extra_video)
        for index, item in enumerate(row["qa"], start=1)
    ]


def _question(
    where: str,
    key: str,
    item: Any,
    minutes: float | None,
    extra_video: dict[str, Any],
) -> EvalQuestion:
    if not isinstance(item, dict):
        raise DatasetError(f"{where} is not a JSON object")
    require(item, ("uid", "question", "answer", "question_type"), where)
    uid = text_field(item, "uid", where)
    where = f"{where} (uid {uid})"
    text_field(item, "question", where)
    stem, options = split_inline_options(item["question"])
    if not options:
        raise DatasetError(f'{where}: the question has no inlined "\\n(A) ..." option lines')
    if not stem:
        raise DatasetError(f"{where}: the question has options but no question text")
    options = normalized_options(options, where, OPTION_COUNTS)
    answer = answer_letter(item["answer"], options, where)
    types = item["question_type"]
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list) or not all(isinstance(t, str) and t.strip() for t in types):
        raise DatasetError(f"{where}: question_type must be a list of names, got {types!r}")
    extra = {**extra_video, "uid": item["uid"]}
    reference = item.get("time_reference")
    spans: list[tuple[float, float]] = []
    notes = EvidenceNotes()
    if reference is not None and str(reference).strip():
        extra["time_reference"] = reference
        read = clock_spans(reference)
        if read is None:
            notes = EvidenceNotes(unreadable=str(reference))
        else:
            spans, reversed_spans = read
            notes = EvidenceNotes(reversed=reversed_spans)
    return check_question(
        where,
        lambda: EvalQuestion(
            id=uid,
            benchmark=BENCHMARK,
            video_id=key,
            video=f"{key}.mp4",
            question=stem,
            options=options,
            answer=answer,
            categories=list(dict.fromkeys(t.strip() for t in types)),
            duration_s=None if minutes is None else round(minutes * 60.0, 3),
            evidence_spans=spans,
            evidence_notes=notes,
            extra=extra,
        ),
    )
