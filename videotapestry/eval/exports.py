"""A run's answers in each benchmark's own submission or results format.

Leaderboards and official scorers take their own files, not our ``results.jsonl``; a
number is only comparable to a published one if the benchmark's own script scored it. One
small function per format turns a run's latest records (one variant) into the file that
script reads, checked against each benchmark's released scorer:

- **Video-MME** (``eval_your_results.py`` in the Video-MME repository): a JSON list of
  videos, each with ``video_id``, ``duration_category`` (short / medium / long),
  ``video_category``, ``video_subcategory``, ``missing`` and ``questions``, each question
  with ``question_id``, ``task_type``, ``question``, ``options``, ``answer`` and
  ``response``. The template's own names (``duration``, ``domain``, ``sub_category``) are
  written too, so the file is also the filled-in ``output_test_template.json``.
- **LongVideoBench** (the test-set leaderboard, as lmms-eval's ``longvideobench_test``
  writes it): a JSON object ``{question id: answer}``; we write the letter.
- **EgoSchema** (the Kaggle competition ``egoschema-public``): a CSV with the header
  ``q_uid,answer`` and the option index 0-4.
- **LVBench** (``lvbench/metrics/compute_accuracy.py``): a JSON object ``{str(uid): letter}``.

A question without an answer (failed or skipped) has no letter to give. Where the format can
say so, it stays in the file with an empty answer, so the scorer counts it (LVBench counts it
wrong; LongVideoBench's parser then picks a letter at random, its own rule); Video-MME's
scorer leaves an empty ``response`` out of its denominator, and EgoSchema's CSV has no way to
write one, so such questions are listed in ``Export.unanswered`` for the caller to report.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.datasets.common import LoadOptions
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_reader import latest, read_run_info_if_present, require_records
from videotapestry.question import LETTERS

FORMATS = ("videomme", "longvideobench", "egoschema", "lvbench")
#: What each format does with a question that has no answer, for the command to say.
UNANSWERED = {
    "videomme": "written with an empty response, which eval_your_results.py leaves out",
    "longvideobench": "written with an empty answer, for which the scorer picks a letter at random",
    "egoschema": "left out of the CSV (it has no way to write one)",
    "lvbench": "written with an empty answer, which compute_accuracy counts as wrong",
}


class ExportError(VideoTapestryError):
    """A run that cannot be written in the format asked for."""


@dataclass(frozen=True)
class Export:
    """A format's file for one variant of a run, and what it could not hold."""

    format: str
    variant: str
    text: str
    answered: int
    #: Question ids with no answer, in run order (see the module docstring).
    unanswered: tuple[str, ...]


def letter(record: ResultRecord | None) -> str | None:
    """The answer letter a record gives, or None when it gives none."""
    if record is None or record.status != "answered" or not record.prediction:
        return None
    value = record.prediction.strip().upper()
    if len(value) != 1 or value not in LETTERS:
        raise ExportError(
            f"question {record.question_id}: prediction {record.prediction!r} is not a letter"
        )
    return value


def videomme_results(
    questions: Sequence[EvalQuestion], records: Mapping[str, ResultRecord]
) -> list[dict[str, Any]]:
    """Video-MME's results file: the run's questions grouped by video in the benchmark's
    order, each with the run's letter as ``response`` ("" when it has none)."""
    unknown = sorted(set(records) - {question.id for question in questions})
    if unknown:
        raise ExportError(
            f"{len(unknown)} question(s) of the run are not in the annotations (e.g. "
            f"{unknown[0]!r}); give the Video-MME annotations the run was made from"
        )
    videos: dict[str, dict[str, Any]] = {}
    for question in questions:
        if question.id not in records:
            continue
        number = str(question.extra.get("video_number") or question.video_id)
        video = videos.get(number)
        if video is None:
            category, subcategory = question.extra.get("domain"), question.extra.get("sub_category")
            video = videos[number] = {
                "video_id": number,
                "videoID": question.video_id,
                "duration": question.duration_group,
                "domain": category,
                "sub_category": subcategory,
                "duration_category": question.duration_group,
                "video_category": category,
                "video_subcategory": subcategory,
                "missing": True,
                "questions": [],
            }
        response = letter(records[question.id]) or ""
        video["missing"] = video["missing"] and not response
        video["questions"].append(
            {
                "question_id": question.id,
                "task_type": question.categories[0] if question.categories else "",
                "question": question.question,
                "options": list(question.options),
                "answer": question.answer,
                "response": response,
            }
        )
    return list(videos.values())


def longvideobench_submission(records: Iterable[ResultRecord]) -> dict[str, str]:
    """LongVideoBench's ``{id: letter}`` ("" for a question without an answer)."""
    return {record.question_id: letter(record) or "" for record in records}


def lvbench_answers(records: Iterable[ResultRecord]) -> dict[str, str]:
    """LVBench's ``{uid: letter}`` (ids are ``str(uid)`` already; "" without an answer)."""
    return {record.question_id: letter(record) or "" for record in records}


def egoschema_rows(records: Iterable[ResultRecord]) -> list[tuple[str, int]]:
    """EgoSchema's ``(q_uid, option index)`` rows, for the questions with an answer."""
    rows = []
    for record in records:
        chosen = letter(record)
        if chosen is None:
            continue
        index = LETTERS.index(chosen)
        if index >= 5:
            raise ExportError(f"question {record.question_id}: {chosen} is not one of A-E")
        rows.append((record.question_id, index))
    return rows


def egoschema_csv(records: Iterable[ResultRecord]) -> str:
    """The Kaggle CSV: a ``q_uid,answer`` header, then one row per answered question."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["q_uid", "answer"])
    writer.writerows(egoschema_rows(records))
    return out.getvalue()


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def export_run(
    run_dir: str | Path,
    fmt: str,
    *,
    variant: str | None = None,
    annotations: str | Path | None = None,
) -> Export:
    """The run's answers under ``variant`` (needed when it holds several) in format
    ``fmt``. Video-MME's file repeats each question's text, options and video fields, so it
    reads the annotations: ``annotations``, else those recorded in ``run.json``."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    run = Path(run_dir)
    info = read_run_info_if_present(run)
    if info is not None and info.benchmark and info.benchmark != fmt:
        raise ExportError(f"{run} is a {info.benchmark} run; --export {fmt} needs a run of {fmt}")
    chosen = _variant_records(run, variant)
    name = next(iter(chosen.values())).variant
    if any(record.free_form for record in chosen.values()):
        raise ExportError(
            f"{run} holds answers in words (--mode open); {fmt}'s format takes option letters"
        )
    unanswered = tuple(qid for qid, record in chosen.items() if letter(record) is None)
    writers: dict[str, Callable[[], str]] = {
        "videomme": lambda: _json(
            videomme_results(
                _questions(fmt, annotations, info.annotations if info else None), chosen
            )
        ),
        "longvideobench": lambda: _json(longvideobench_submission(chosen.values())),
        "egoschema": lambda: egoschema_csv(chosen.values()),
        "lvbench": lambda: _json(lvbench_answers(chosen.values())),
    }
    return Export(
        format=fmt,
        variant=name,
        text=writers[fmt](),
        answered=len(chosen) - len(unanswered),
        unanswered=unanswered,
    )


def _variant_records(run: Path, variant: str | None) -> dict[str, ResultRecord]:
    """Question id -> the latest record of the one variant exported, in run order."""
    records = list(latest(require_records(run).records).values())
    variants = list(dict.fromkeys(record.variant for record in records))
    if variant is None:
        if len(variants) > 1:
            raise ExportError(
                f"{run} holds several variants ({', '.join(variants)}); choose one with --variant"
            )
        variant = variants[0]
    chosen = {r.question_id: r for r in records if r.variant == variant}
    if not chosen:
        raise ExportError(f"{run} has no records of variant {variant!r} ({', '.join(variants)})")
    return chosen


def _questions(
    benchmark: str, annotations: str | Path | None, recorded: str | None
) -> list[EvalQuestion]:
    from videotapestry.eval.datasets import load_benchmark

    source = annotations or recorded
    if not source:
        raise ExportError(
            f"{benchmark}'s results file repeats each question's fields: give --annotations"
        )
    return load_benchmark(benchmark, source, LoadOptions())


__all__ = [
    "FORMATS",
    "UNANSWERED",
    "Export",
    "ExportError",
    "egoschema_csv",
    "egoschema_rows",
    "export_run",
    "letter",
    "longvideobench_submission",
    "lvbench_answers",
    "videomme_results",
]
