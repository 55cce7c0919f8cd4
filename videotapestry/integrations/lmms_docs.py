"""An lmms-eval task record turned into the ``EvalQuestion`` our runner answers.

lmms-eval hands a model the prompt its task rendered (instructions, options, sometimes
subtitles) next to the record it came from. The method needs the question and the options
as separate fields, so they are read from the record, where each benchmark keeps them under
its own keys: Video-MME ``options`` (labelled "A. …"), EgoSchema ``option`` (labelled),
LongVideoBench ``option0`` … ``option4`` ("N/A" where a question has fewer), EgoSchema's
raw release ``option 0`` … ``option 4``, lists under ``candidates`` or ``choices``, and
LVBench options inlined in the question as "(A) …" lines. Parsing the rendered prompt
instead would depend on every task's wording.

Options are labelled with the same functions the benchmark loaders use, so a question reaches
the model worded as ``videotapestry eval`` words it, and the two share cached model calls.

Nothing here imports lmms-eval: the model class (``lmms_eval.py``) calls these.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.datasets.common import DatasetError, answer_letter, normalized_options
from videotapestry.eval.datasets.lvbench import split_inline_options
from videotapestry.eval.questions import EvalQuestion
from videotapestry.prompts import short_hash
from videotapestry.question import LETTERS, option_label

#: Record keys holding the options as a list, in the order they are tried.
OPTION_LISTS = ("options", "option", "candidates", "choices")
#: Record keys holding one option each: ``option0`` … (LongVideoBench), ``option 0`` …
#: (EgoSchema's release).
OPTION_KEY_PATTERNS = ("option{}", "option {}")
#: LongVideoBench fills the keys of absent options with this.
ABSENT_OPTION = "N/A"
#: Record keys of the gold answer: a letter, or a 0-based option index.
ANSWER_KEYS = ("answer", "correct_choice")
#: Record keys of a question's categories (one string or a list).
CATEGORY_KEYS = ("task_type", "question_category", "question_type", "category")
#: Record keys of the benchmark's own question id, kept in ``extra`` for cross-reference.
SOURCE_ID_KEYS = ("question_id", "id", "uid", "q_uid")
OPTION_COUNTS = range(2, len(LETTERS) + 1)


class DocError(VideoTapestryError):
    """A task record, or what its ``doc_to_visual`` gave, that cannot become a question."""


def question_from_doc(
    doc: Mapping[str, Any], *, task: str, split: str, doc_id: int | str, video: Path
) -> EvalQuestion:
    """The record of ``task``/``split``/``doc_id`` as a question about ``video``.

    The id is ``<task>.<split>.<doc_id>.<hash>``: the hash covers the question, its options
    and the video's name, so a run directory resumed after the task's dataset changed order
    asks a moved question again instead of reusing another question's answer.
    """
    where = f"task {task} ({split}) doc {doc_id}"
    if not isinstance(doc, Mapping):
        raise DocError(f"{where}: the record is a {type(doc).__name__}, not a mapping of fields")
    question, options = question_and_options(doc, where)
    content = json.dumps([question, options, video.name], ensure_ascii=False)
    extra: dict[str, Any] = {"lmms_task": task, "split": split, "doc_id": doc_id}
    source_id = _first(doc, SOURCE_ID_KEYS)
    if isinstance(source_id, (str, int)) and not isinstance(source_id, bool):
        extra["source_id"] = source_id
    # A benchmark's own duration bucket: LongVideoBench's duration_group, Video-MME's
    # duration (short/medium/long); a number under duration is seconds, not a bucket.
    duration = doc.get("duration_group")
    if duration is None and isinstance(doc.get("duration"), str):
        duration = doc["duration"]
    return EvalQuestion(
        id=f"{task}.{split}.{doc_id}.{short_hash(content)[:8]}",
        benchmark=task,
        video_id=video.stem,
        video=str(video),
        question=question,
        options=options,
        answer=_answer(doc, options, where),
        categories=_categories(doc),
        duration_group=None if duration is None else str(duration),
        extra=extra,
    )


def question_and_options(doc: Mapping[str, Any], where: str) -> tuple[str, list[str]]:
    """The question text and its options labelled "A. …", read from the record's fields."""
    text = doc.get("question")
    if not isinstance(text, str) or not text.strip():
        raise DocError(
            f"{where}: the record has no 'question' text (fields: {_fields(doc)}); "
            "videotapestry answers multiple-choice questions about a video"
        )
    raw, plain = _raw_options(doc)
    if raw is None:
        text, inline = split_inline_options(text)
        if not inline:
            raise DocError(
                f"{where}: no options found: none of the fields "
                f"{', '.join(OPTION_LISTS)}, option0…, 'option 0'… and no '(A) …' lines in "
                f"the question (fields: {_fields(doc)})"
            )
        raw, plain = inline, False
    try:
        options = normalized_options(raw, where, OPTION_COUNTS, plain=plain)
    except DatasetError as exc:
        raise DocError(str(exc)) from None
    return text.strip(), options


def video_from_visuals(visuals: Any, where: str) -> Path:
    """The one local video file a task's ``doc_to_visual`` names, made absolute.

    Tasks that decode frames themselves hand over images instead; the method needs the file
    (it samples its own frames at the times its memory points to), so those are refused with
    the reason.
    """
    items = list(visuals) if isinstance(visuals, (list, tuple)) else [visuals]
    paths = [item for item in items if isinstance(item, (str, os.PathLike))]
    if not items:
        raise DocError(f"{where}: doc_to_visual gave no visual; a video file is needed")
    if len(paths) != len(items):
        kinds = sorted({type(item).__name__ for item in items if item not in paths})
        raise DocError(
            f"{where}: doc_to_visual gave {', '.join(kinds)} instead of a video file path; "
            "videotapestry samples its own frames from the file, so use the variant of the "
            "task that gives video paths (e.g. longvideobench_val_v, not longvideobench_val_i)"
        )
    if len(paths) > 1:
        raise DocError(
            f"{where}: doc_to_visual gave {len(paths)} files; videotapestry answers about one "
            "video per question"
        )
    path = os.fspath(paths[0])
    if "://" in path:
        raise DocError(f"{where}: the video {path} is remote; download it to a local file first")
    return Path(path).expanduser().absolute()


def _raw_options(doc: Mapping[str, Any]) -> tuple[list[Any] | None, bool]:
    """The options as stored, and whether they are plain texts (to be labelled by position)."""
    for key in OPTION_LISTS:
        value = doc.get(key)
        if isinstance(value, (list, tuple)) and value:
            options = list(value)
            plain = not all(isinstance(o, str) and option_label(o) for o in options)
            return options, plain
    for pattern in OPTION_KEY_PATTERNS:
        options = []
        for index in range(len(LETTERS)):
            value = doc.get(pattern.format(index))
            if value is None or (isinstance(value, str) and value.strip() == ABSENT_OPTION):
                break
            options.append(value)
        if options:
            return options, True
    return None, False


def _answer(doc: Mapping[str, Any], options: Sequence[str], where: str) -> str | None:
    """The gold letter when the record has one, for our own report; lmms-eval scores with
    its own copy of the record, so an unreadable answer is left out, not an error."""
    value = _first(doc, ANSWER_KEYS)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if value is None:
        return None
    try:
        return answer_letter(value, options, where)
    except DatasetError:
        return None


def _categories(doc: Mapping[str, Any]) -> list[str]:
    value = _first(doc, CATEGORY_KEYS)
    if isinstance(value, str) and value.strip():
        return [value.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _first(doc: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if doc.get(key) is not None:
            return doc[key]
    return None


def _fields(doc: Mapping[str, Any]) -> str:
    return ", ".join(sorted(str(key) for key in doc)) or "none"
