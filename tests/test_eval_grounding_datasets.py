"""Evidence times and free-form questions as the loaders read them.

CG-Bench's fixture (``tests/fixtures/eval/cgbench/cgbench_mini.json``) is written in its
release's shape: a JSON list of rows with ``qid``, ``video_uid``, ``question``, ``answer``
(the gold text), unlabelled ``choices``, ``right_answer`` (a letter), ``clue_intervals``
([start, end] seconds), ``duration``, ``domain`` and ``sub_category``. LVBench's time
references are varied on copies of its fixture; JSONL rows take the demo's span objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from videotapestry.eval import EvalQuestion
from videotapestry.eval.datasets import DatasetError, LoadOptions, load_benchmark
from videotapestry.eval.datasets.common import clock_spans

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
CGBENCH = FIXTURES / "cgbench" / "cgbench_mini.json"
LVBENCH = FIXTURES / "lvbench" / "video_info.meta.jsonl"
SAMPLE = Path(__file__).parents[1] / "videotapestry" / "demo" / "data" / "questions.json"


def cg_rows() -> list[dict[str, Any]]:
    return json.loads(CGBENCH.read_text(encoding="utf-8"))


def write_cg(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "cgbench.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- CG-Bench


def test_cgbench_multiple_choice_questions() -> None:
    questions = load_benchmark("cgbench", CGBENCH.parent)  # the directory: cgbench_mini.json
    assert [q.id for q in questions] == ["1043", "1044", "2210"]
    banner, shoelace, eggs = questions
    assert banner.options == [
        "A. City Marathon 2018",
        "B. City Half Marathon 2019",
        "C. Run for Hope 2019",
        "D. Harbour 10K",
        "E. City Half Marathon 2016",
    ]
    assert (banner.answer, shoelace.answer, eggs.answer) == ("B", "C", "D")
    assert (banner.video_id, banner.video, banner.subtitles) == (
        "1a7c0d2e9b",
        "1a7c0d2e9b.mp4",
        "1a7c0d2e9b.srt",
    )
    assert banner.evidence_spans == [(612.5, 618.0), (1204.0, 1210.5)]
    assert eggs.evidence_spans == [(95.0, 121.5)]
    assert banner.categories == ["Text Recognition"] and banner.extra == {"domain": "Sports"}
    assert banner.duration_s == pytest.approx(2712.4)
    assert banner.reference_answer is None and not banner.free_form


def test_cgbench_open_ended_mode_asks_in_words_with_the_answer_as_reference() -> None:
    questions = load_benchmark("cgbench", CGBENCH, LoadOptions(mode="open"))
    banner, shoelace, eggs = questions
    assert all(q.free_form and q.options == [] and q.answer is None for q in questions)
    assert banner.reference_answer == "City Half Marathon 2019"
    assert shoelace.reference_answer == "She ties her shoelace"
    assert eggs.question == "How many eggs does the cook crack into the bowl?"
    assert eggs.evidence_spans == [(95.0, 121.5)]  # grounding is scored in both modes


def test_cgbench_answer_as_option_text(tmp_path: Path) -> None:
    rows = cg_rows()
    rows[0]["right_answer"] = "city half marathon  2019"  # the text, case and spacing aside
    del rows[1]["right_answer"]  # only the gold text: the option whose text it is
    del rows[2]["answer"]  # no gold text: the open reference is the gold option's text
    path = write_cg(tmp_path, rows)
    banner, shoelace, eggs = load_benchmark("cgbench", path)
    assert (banner.answer, shoelace.answer, eggs.answer) == ("B", "C", "D")
    assert load_benchmark("cgbench", path, LoadOptions(mode="open"))[2].reference_answer == "three"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda row: row.update(right_answer="F"), "right_answer 'F' is neither an option"),
        (lambda row: row.update(right_answer="Marathon"), "neither an option letter"),
        (
            lambda row: (row.pop("right_answer"), row.update(answer="Paris")),
            "no right_answer and its answer 'Paris'",
        ),
        (lambda row: row.update(choices="A, B"), "options must be a list"),
        (lambda row: row.update(choices=["only one"]), "expected 2 or 3"),
        (lambda row: row.pop("video_uid"), "lacks video_uid"),
        (lambda row: row.update(clue_intervals=[[-1, 612.5]]), "item 1 .*before 0 s"),
        (lambda row: row.update(clue_intervals=[[1, 2, 3]]), r"clue_intervals item 1 \(\[1, 2"),
        (lambda row: row.update(clue_intervals="612-618"), "must be a list of \\[start, end\\]"),
        (lambda row: row.update(duration="long"), "duration must be a number"),
    ],
)
def test_cgbench_malformed_rows_name_the_row_and_field(
    tmp_path: Path, change: Any, message: str
) -> None:
    rows = cg_rows()
    change(rows[1])
    path = write_cg(tmp_path, rows)
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("cgbench", path)
    assert f"{path}: question 2 (qid 1044)" in str(caught.value)


def test_cgbench_file_must_be_a_list_and_ids_unique(tmp_path: Path) -> None:
    path = tmp_path / "cgbench.json"
    path.write_text('{"qid": 1}', encoding="utf-8")
    with pytest.raises(DatasetError, match="must hold a JSON list, one object per question"):
        load_benchmark("cgbench", path)
    rows = cg_rows()
    rows[2]["qid"] = 1043
    with pytest.raises(DatasetError, match="question id '1043' appears more than once"):
        load_benchmark("cgbench", write_cg(tmp_path, rows))
    with pytest.raises(DatasetError, match="cgbench has no duration groups"):
        load_benchmark("cgbench", CGBENCH, LoadOptions(duration="long"))


def test_an_open_mode_only_where_the_benchmark_has_one() -> None:
    with pytest.raises(DatasetError, match="lvbench has no 'open' mode"):
        load_benchmark("lvbench", LVBENCH, LoadOptions(mode="open"))


# --------------------------------------------------------------------------- LVBench


def test_lvbench_time_reference_is_the_evidence() -> None:
    first, second, third = load_benchmark("lvbench", LVBENCH)
    assert first.evidence_spans == [(65.0, 72.0)]  # "01:05-01:12"
    assert second.evidence_spans == [(4540.0, 4622.0)]  # "75:40-77:02": minutes past 59
    assert third.evidence_spans == [(2645.0, 2675.0)]  # "44:05-44:35"
    assert second.extra["time_reference"] == "75:40-77:02"  # kept as written


@pytest.mark.parametrize(
    ("reference", "spans"),
    [
        ("01:02:05-01:02:40", [(3725.0, 3760.0)]),  # HH:MM:SS
        ("117:05-117:30", [(7025.0, 7050.0)]),  # three-digit minutes
        ("00:15 - 00:19", [(15.0, 19.0)]),
        ("00:15-00:19, 03:00-03:10", [(15.0, 19.0), (180.0, 190.0)]),
        ("00:15-00:19;03:00-03:10", [(15.0, 19.0), (180.0, 190.0)]),
        ("12:30.5-12:40", [(750.5, 760.0)]),
    ],
)
def test_lvbench_time_reference_forms(
    tmp_path: Path, reference: str, spans: list[tuple[float, float]]
) -> None:
    video = json.loads(LVBENCH.read_text(encoding="utf-8").splitlines()[0])
    video["qa"][0]["time_reference"] = reference
    (tmp_path / "video_info.meta.jsonl").write_text(json.dumps(video) + "\n", encoding="utf-8")
    assert load_benchmark("lvbench", tmp_path)[0].evidence_spans == spans


@pytest.mark.parametrize("text", ["", "around the middle", "01:75-02:00", None, 3])
def test_a_time_reference_that_is_not_times_gives_no_spans(text: Any) -> None:
    assert clock_spans(text) is None


# --------------------------------------------------------------------------- JSONL


def jsonl(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_jsonl_evidence_spans_as_pairs_or_as_the_demo_writes_them(tmp_path: Path) -> None:
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))["questions"][0]
    row = {**sample, "id": "s", "video": "sample.mp4"}
    pairs = {"id": "p", "video": "v.mp4", "question": "?", "options": ["x", "y"]}
    pairs["evidence_spans"] = [[10, 20.5], ["01:00", "01:05"]]
    got = {q.id: q for q in load_benchmark("jsonl", jsonl(tmp_path, row, pairs))}
    first = sample["evidence_spans"][0]
    assert got["s"].evidence_spans == [(first["start_s"], first["end_s"])]
    assert got["p"].evidence_spans == [(10.0, 20.5), (60.0, 65.0)]


def test_jsonl_rows_without_options_are_free_form(tmp_path: Path) -> None:
    rows = (
        {"id": "a", "video": "v.mp4", "question": "What is the door code?", "answer": "4417"},
        {"id": "b", "video": "v.mp4", "question": "Who spoke?", "reference_answer": "Maria"},
        {"id": "c", "video": "v.mp4", "question": "Anything?", "options": []},
    )
    a, b, c = load_benchmark("jsonl", jsonl(tmp_path, *rows))
    assert (a.free_form, a.answer, a.reference_answer) == (True, None, "4417")
    assert b.reference_answer == "Maria" and c.free_form and c.reference_answer is None


def test_jsonl_open_mode_takes_the_gold_option_as_reference(tmp_path: Path) -> None:
    rows = (
        {"id": "a", "video": "v.mp4", "question": "Code?", "options": ["1447", "44"], "answer": 1},
        {
            "id": "b",
            "video": "v.mp4",
            "question": "Tent?",
            "options": ["A. green", "B. white"],
            "answer": "A",
            "reference_answer": "the green tent by the bridge",
        },
    )
    a, b = load_benchmark("jsonl", jsonl(tmp_path, *rows), LoadOptions(mode="open"))
    assert (a.options, a.answer, a.reference_answer) == ([], None, "44")
    assert b.reference_answer == "the green tent by the bridge"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"answer": 2}, "free-form; its answer must be the reference text"),
        ({"evidence_spans": [{"start_s": 5}]}, r"evidence_spans item 1 .*\{start_s, end_s\}"),
        ({"evidence_spans": [[-3, 4]]}, "before 0 s"),
        ({"evidence_spans": [[1, True]]}, "not a boolean"),
        ({"question": " "}, "question must be non-empty text"),
        ({"reference_answer": 7}, "reference_answer must be text"),
    ],
)
def test_jsonl_bad_rows_name_the_line_and_field(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    base = {"id": "x", "video": "v.mp4", "question": "What happened?"}
    path = jsonl(tmp_path, {**base, "id": "ok"}, {**base, **row})
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("jsonl", path)
    assert f"{path}:2" in str(caught.value)


# --------------------------------------------------------------------------- the question


def test_a_free_form_question_has_no_letter() -> None:
    base = {"id": "q", "benchmark": "b", "video_id": "v", "video": "v.mp4", "question": "?"}
    with pytest.raises(ValidationError, match=r"free-form question .* has no answer letter"):
        EvalQuestion(**base, answer="A")
    with pytest.raises(ValidationError, match="answer 'C' is not the letter of one"):
        EvalQuestion(**base, options=["A. x", "B. y"], answer="C")
    with pytest.raises(ValidationError, match="end before it starts"):
        EvalQuestion(**base, evidence_spans=[(5.0, 1.0)])
    assert EvalQuestion(**base).free_form
