"""Each benchmark's official format, written from a run and read the way its scorer reads it.

The runs are hand-made records of the questions in the small copies of each benchmark's
released files (tests/fixtures/eval/). Each export is then read as the benchmark's own
script reads it (Video-MME's ``eval_your_results.py``, LVBench's ``compute_accuracy``, the
LongVideoBench leaderboard's ``{id: answer}``, EgoSchema's Kaggle CSV), re-stated here in a
few lines, and scored: the score must be the one worked out by hand from the records.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from eval_support import header, record, write_run

from videotapestry.cli import main
from videotapestry.eval.datasets import LoadOptions, load_benchmark

FIXTURES = Path(__file__).parent / "fixtures" / "eval"

#: The names Video-MME's scorer keeps its tables under: an unknown one is a KeyError there.
VIDEOMME_CATEGORIES = {"Knowledge", "Life Record", "Sports Competition"}
VIDEOMME_SUBCATEGORIES = {"Humanity & History", "Food", "Basketball"}
VIDEOMME_TASKS = {
    "Temporal Perception", "Spatial Perception", "Attribute Perception", "Action Recognition",
    "Object Recognition", "OCR Problems", "Counting Problem", "Temporal Reasoning",
    "Spatial Reasoning", "Action Reasoning", "Object Reasoning", "Information Synopsis",
}  # fmt: skip


def _export(capsys: pytest.CaptureFixture[str], run: Path, fmt: str, out: Path, *extra: str) -> str:
    assert main(["eval-report", str(run), "--export", fmt, "-o", str(out), *extra]) == 0
    return capsys.readouterr().err


def test_videomme_results_score_under_its_evaluation_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = FIXTURES / "videomme" / "rows" / "videomme.jsonl"
    run = write_run(
        tmp_path / "run",
        [
            record("001-1", "C", "C"),
            record("301-2", "A", "B"),
            record("601-1", "B", "B"),
            record("601-3", "A", None),  # failed: no response
        ],
        header(benchmark="videomme", annotations=str(annotations)),
    )
    out = tmp_path / "results.json"
    err = _export(capsys, run, "videomme", out)
    assert "3 answer(s)" in err and "1 question(s) have no answer (601-3)" in err

    results = json.loads(out.read_text(encoding="utf-8"))  # strict JSON, as json.load reads it
    correct: dict[str, int] = defaultdict(int)
    answered: dict[str, int] = defaultdict(int)
    for duration in ("short", "medium", "long"):
        for item in (v for v in results if v["duration_category"] == duration):
            assert item["video_category"] in VIDEOMME_CATEGORIES
            assert item["video_subcategory"] in VIDEOMME_SUBCATEGORIES
            assert isinstance(item["missing"], bool)
            for question in item["questions"]:
                assert question["task_type"] in VIDEOMME_TASKS
                found = re.search(r"[ABCD]", question["response"].strip())
                if found:
                    answered[duration] += 1
                    correct[duration] += found[0] == question["answer"]
    assert dict(answered) == {"short": 1, "medium": 1, "long": 1}
    assert dict(correct) == {"short": 1, "medium": 0, "long": 1}
    assert [v["video_id"] for v in results] == ["001", "301", "601"]
    assert [q["question_id"] for q in results[2]["questions"]] == ["601-1", "601-3"]
    assert results[2]["missing"] is False

    # It is also the filled-in evaluation template, which the loader reads back.
    again = load_benchmark("videomme", out, LoadOptions())
    assert [q.id for q in again] == ["001-1", "301-2", "601-1", "601-3"]
    assert [q.answer for q in again] == ["C", "A", "B", "A"]


def test_longvideobench_submission_maps_each_test_id_to_a_letter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = FIXTURES / "longvideobench" / "lvb_test_wo_gt.json"
    rows = {row["id"]: row for row in json.loads(annotations.read_text(encoding="utf-8"))}
    run = write_run(
        tmp_path / "run",
        [record("zX9cVbN3mQ0_0", None, "E"), record("zX9cVbN3mQ0_1", None, None)],
        header(benchmark="longvideobench", annotations=str(annotations)),
    )
    out = tmp_path / "submission.json"
    _export(capsys, run, "longvideobench", out)
    submission = json.loads(out.read_text(encoding="utf-8"))
    assert submission == {"zX9cVbN3mQ0_0": "E", "zX9cVbN3mQ0_1": ""}
    for qid, response in submission.items():  # the leaderboard's parse of a response
        letters = "ABCDE"[: len(rows[qid]["candidates"])]
        found = re.search(r"[ABCDE]", response)
        assert found is None or found[0] in letters


def test_egoschema_csv_is_what_kaggle_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = FIXTURES / "egoschema"
    answers = json.loads((folder / "subset_answers.json").read_text(encoding="utf-8"))
    ids = [row["q_uid"] for row in json.loads((folder / "questions.json").read_text())]
    run = write_run(
        tmp_path / "run",
        [
            record(ids[0], "B", "B"),  # gold index 1
            record(ids[1], None, "E"),  # outside the public subset
            record(ids[2], "D", None),  # failed: left out
        ],
        header(benchmark="egoschema", annotations=str(folder)),
    )
    out = tmp_path / "submission.csv"
    err = _export(capsys, run, "egoschema", out)
    assert "left out of the CSV" in err
    with out.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == ["q_uid", "answer"]
        rows = {row["q_uid"]: int(row["answer"]) for row in reader}
    assert rows == {ids[0]: 1, ids[1]: 4}
    scored = [rows[q_uid] == index for q_uid, index in answers.items() if q_uid in rows]
    assert scored == [True]


def test_lvbench_answers_score_under_compute_accuracy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = FIXTURES / "lvbench" / "video_info.meta.jsonl"
    run = write_run(
        tmp_path / "run",
        [record("1", "B", "B"), record("2", "D", "A"), record("140", "C", None)],
        header(benchmark="lvbench", annotations=str(meta)),
    )
    out = tmp_path / "answers.json"
    _export(capsys, run, "lvbench", out)
    model_answers = json.loads(out.read_text(encoding="utf-8"))
    right, total = 0, 0
    by_type: dict[str, list[bool]] = defaultdict(list)
    for line in meta.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for qa in json.loads(line)["qa"]:
            uid = str(qa["uid"])
            if uid in model_answers:
                hit = model_answers[uid] == qa["answer"]
                for kind in qa["question_type"]:
                    by_type[kind].append(hit)
                right += hit
                total += 1
    assert (right, total) == (1, 3)  # the failed question stays in, counted wrong
    assert by_type["reasoning"] == [False] and by_type["key information retrieval"] == [True]


def test_an_export_refuses_another_benchmark_and_an_ambiguous_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [record("1", "B", "B"), record("1", "B", "A", variant="direct")]
    run = write_run(tmp_path / "run", records, header(benchmark="lvbench"))
    out = tmp_path / "out.json"
    assert main(["eval-report", str(run), "--export", "videomme", "-o", str(out)]) == 2
    assert "is a lvbench run" in capsys.readouterr().err
    assert main(["eval-report", str(run), "--export", "lvbench", "-o", str(out)]) == 2
    assert "choose one with --variant" in capsys.readouterr().err
    _export(capsys, run, "lvbench", out, "--variant", "direct")
    assert json.loads(out.read_text(encoding="utf-8")) == {"1": "A"}
