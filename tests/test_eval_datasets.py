"""Benchmark loaders: each reads small files in its benchmark's released format.

The fixtures under ``tests/fixtures/eval/<benchmark>/`` are written by hand in the shapes the
benchmarks publish (Video-MME's trailing-comma template and ``<font>`` subtitles, LVBench's
inlined options, LongVideoBench's 5 candidates and subtitle offsets, EgoSchema's spaced
option keys with a partial answer file). Malformed copies are made from them per test.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from videotapestry.asr import SubtitleSource, TranscriptLine
from videotapestry.eval import EvalQuestion, ResultRecord
from videotapestry.eval.datasets import (
    DatasetError,
    LoadOptions,
    egoschema_submission,
    load_benchmark,
    loaders,
    write_egoschema_submission,
)
from videotapestry.eval.datasets.common import strip_trailing_commas
from videotapestry.eval.datasets.lvbench import split_inline_options

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
TEMPLATE = FIXTURES / "videomme" / "template" / "output_test_template.json"
ROWS = FIXTURES / "videomme" / "rows" / "videomme.jsonl"
LVBENCH = FIXTURES / "lvbench" / "video_info.meta.jsonl"
LVB = FIXTURES / "longvideobench"
EGO = FIXTURES / "egoschema"
EGO_IDS = (
    "0074f737-11cb-497d-8d07-77c3a8127391",
    "00b9a0de-c59e-49cb-a127-6081e2fb8c8e",
    "01a1c5d2-8f3b-4e6a-9c7d-2b4e6f8a0c1e",
)


def by_id(questions: list[EvalQuestion]) -> dict[str, EvalQuestion]:
    return {question.id: question for question in questions}


def copy_of(tmp_path: Path, source: Path) -> Path:
    target = tmp_path / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy(source, target)
    return target


def test_every_benchmark_name_is_registered() -> None:
    assert set(loaders()) == {
        "videomme",
        "lvbench",
        "longvideobench",
        "egoschema",
        "cgbench",
        "jsonl",
    }
    with pytest.raises(DatasetError, match=r"unknown benchmark 'mlvu'.*videomme"):
        load_benchmark("mlvu", FIXTURES)


# --------------------------------------------------------------------------- Video-MME


def test_trailing_commas_are_dropped_only_outside_strings() -> None:
    text = '{"a": [1, 2,], "b": "x,]", "c": "say \\"hi,}\\"",\n "d": {"e": 1 ,\n},\n}'
    cleaned = strip_trailing_commas(text)
    assert json.loads(cleaned) == {"a": [1, 2], "b": "x,]", "c": 'say "hi,}"', "d": {"e": 1}}
    # Commas are blanked, not removed, so later error positions still match the file.
    assert len(cleaned) == len(text)
    assert cleaned.count("\n") == text.count("\n")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=',]}[{"\\ ab\n'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet=',]}" k', max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_strict_json_is_left_as_it_means(value: object) -> None:
    """Whatever strings hold (commas, brackets, escaped quotes), strict JSON reads the same."""
    for text in (json.dumps(value), json.dumps(value, indent=1)):
        assert json.loads(strip_trailing_commas(text)) == value


def test_videomme_template_with_trailing_commas() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(TEMPLATE.read_text(encoding="utf-8"))  # really not strict JSON, as upstream
    questions = load_benchmark("videomme", TEMPLATE.parent)  # the directory holding it
    assert [q.id for q in questions] == ["001-1", "001-2", "601-1"]
    first, ocr, long = questions
    assert first.options == ["A. Two.", "B. Three.", "C. Five.", "D. Seven."]
    assert (first.answer, first.categories, first.duration_group) == (
        "C",
        ["Counting Problem"],
        "short",
    )
    assert first.extra["domain"] == "Knowledge"
    assert first.extra["sub_category"] == "Humanity & History"
    # Commas and brackets inside strings survive the trailing-comma cleanup.
    assert ocr.question == 'The sign reads "open: [mon, tue,]" - which day is missing, {sat,}?'
    assert ocr.options[-1] == "D. None, all are listed."
    # The template has no videoID: a YouTube url names the files, else the video number does.
    assert (long.video_id, long.video, long.subtitles) == (
        "Zq3xY7pLm0A",
        "Zq3xY7pLm0A.mp4",
        "Zq3xY7pLm0A.srt",
    )
    assert long.extra["video_file_from"] == "url"
    assert (first.video, first.extra["video_file_from"]) == ("001.mp4", "video_id")


def test_videomme_old_template_field_names(tmp_path: Path) -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    for new, old in [
        ('"duration"', '"duration_category"'),
        ('"domain"', '"video_category"'),
        ('"sub_category"', '"video_subcategory"'),
        ('"options"', '"choices"'),
    ]:
        text = text.replace(new, old)
    path = tmp_path / "output_test_template.json"
    path.write_text(text, encoding="utf-8")
    old = by_id(load_benchmark("videomme", path))
    assert old["601-1"].duration_group == "long"
    assert old["601-1"].extra["domain"] == "Sports Competition"
    assert old["601-1"].options[1] == "B. The referee calls a foul."


def test_videomme_dataset_rows() -> None:
    questions = by_id(load_benchmark("videomme", ROWS))
    assert list(questions) == ["001-1", "301-2", "601-1", "601-3"]
    medium = questions["301-2"]
    assert (medium.video_id, medium.video, medium.subtitles) == (
        "b8Ln-0xQ4rU",
        "b8Ln-0xQ4rU.mp4",
        "b8Ln-0xQ4rU.srt",
    )
    assert (medium.answer, medium.categories, medium.duration_group) == (
        "A",
        ["Action Recognition"],
        "medium",
    )
    assert medium.extra["video_number"] == "301"
    assert "video_file_from" not in medium.extra


def test_videomme_duration_long_selects_videomme_long() -> None:
    long = load_benchmark("videomme", ROWS, LoadOptions(duration="long"))
    assert [q.id for q in long] == ["601-1", "601-3"]
    assert {q.duration_group for q in long} == {"long"}
    several = load_benchmark("videomme", ROWS, LoadOptions(duration="medium, LONG"))
    assert [q.id for q in several] == ["301-2", "601-1", "601-3"]
    assert [q.id for q in load_benchmark("videomme", TEMPLATE, LoadOptions("long"))] == ["601-1"]
    with pytest.raises(DatasetError, match=r"no duration group 'hour'.*short, medium, long"):
        load_benchmark("videomme", ROWS, LoadOptions(duration="hour"))


def test_videomme_duration_absent_from_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "short.jsonl"
    path.write_text(ROWS.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"no question in .*short\.jsonl.*present: short"):
        load_benchmark("videomme", path, LoadOptions(duration="long"))


def test_videomme_subtitles_drop_font_tags() -> None:
    question = by_id(load_benchmark("videomme", ROWS))["601-1"]
    source = SubtitleSource(FIXTURES / "videomme" / "subtitle" / question.subtitles)
    raw = source.path.read_text(encoding="utf-8")
    assert raw.count('<font color="#ffffff"') == 3  # the fixture really is tag-wrapped
    assert source.lines() == [
        TranscriptLine(0.03, 3.24, "welcome back to the game"),
        TranscriptLine(3.24, 6.5, "the home team calls its first timeout"),
        TranscriptLine(2467.1, 2469.0, "and that's the foul"),
    ]


def test_videomme_parquet_rows(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    rows = [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "videomme").mkdir()
    parquet.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "videomme" / "test.parquet")
    assert load_benchmark("videomme", tmp_path) == load_benchmark("videomme", ROWS)


def test_videomme_parquet_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "videomme" / "test-00000-of-00001.parquet"
    path.parent.mkdir()
    path.write_bytes(b"PAR1")
    with pytest.raises(DatasetError, match=r"needs pyarrow.*pip install pyarrow"):
        load_benchmark("videomme", tmp_path)


def test_videomme_directory_with_several_files_asks_for_one(tmp_path: Path) -> None:
    shutil.copy(ROWS, tmp_path / "a.jsonl")
    shutil.copy(ROWS, tmp_path / "b.jsonl")
    with pytest.raises(DatasetError, match=r"several annotation files \(a.jsonl, b.jsonl\)"):
        load_benchmark("videomme", tmp_path)
    with pytest.raises(DatasetError, match="holds no Video-MME annotations"):
        load_benchmark("videomme", FIXTURES / "videomme" / "subtitle")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"answer": "A",', '"answer": "E",', r"question 2 \(question_id 001-2\): answer 'E'"),
        ('"answer": "A",', "", r"question 2 \(question_id 001-2\) lacks answer"),
        ('"D. None, all are listed.",', "", r"question_id 001-2\): expected 4 options, got 3"),
        ('"B. Monday.",', '"B. Monday.", "B. Tuesday?",', "expected 4 options, got 5"),
        ('"C. Tuesday."', '"E. Tuesday."', r"001-2\): options are labelled A, B, E, D"),
        ('"duration": "long"', '"duration": "hour-long"', r"video 2 .*duration must be one"),
        ('"questions": [', '"questions": {', r"is not valid JSON \(line 8"),
    ],
)
def test_videomme_malformed_template(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "output_test_template.json"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("videomme", path)
    assert str(path) in str(caught.value)


def test_videomme_malformed_rows_name_the_line(tmp_path: Path) -> None:
    lines = ROWS.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    del row["question_id"]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([lines[0], lines[1], json.dumps(row)]), encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"{path}:3 lacks question_id"):
        load_benchmark("videomme", path)
    path.write_text(lines[0] + "\n" + lines[0] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="question id '001-1' appears more than once"):
        load_benchmark("videomme", path)


# --------------------------------------------------------------------------- LVBench


def test_inline_options_are_split_off_the_question() -> None:
    stem, options = split_inline_options("Who speaks first?\n(A) The host\n(b) A guest\nin red")
    assert stem == "Who speaks first?"
    assert options == ["A. The host", "B. A guest in red"]
    assert split_inline_options("No options (A) inline here") == (
        "No options (A) inline here",
        [],
    )


def test_lvbench_questions() -> None:
    questions = load_benchmark("lvbench", LVBENCH.parent)
    assert [q.id for q in questions] == ["1", "2", "140"]  # integer and string uids alike
    first, second, third = questions
    assert (
        first.question == "What year appears in the caption when the first ship leaves the harbour?"
    )
    assert first.options == ["A. 1636", "B. 1366", "C. 1363", "D. 1633"]
    assert (first.answer, first.video_id, first.video) == ("B", "Cm73ma6Ibcs", "Cm73ma6Ibcs.mp4")
    assert first.duration_s == pytest.approx(118.25 * 60)
    assert first.duration_group is None
    assert (first.extra["uid"], second.extra["uid"]) == (1, "2")  # as the scorer's keys
    assert second.categories == ["reasoning", "event understanding"]  # counts in both
    assert second.options[3] == "D. The harbour signals that the channel is closed"
    assert second.extra["time_reference"] == "75:40-77:02"
    assert second.evidence_spans == [(4540.0, 4622.0)]
    assert third.categories == ["temporal grounding", "entity recognition"]
    assert third.options[0] == "A. 12:00-12:30"  # option text that looks like a time range
    assert (third.extra["video_type"], third.extra["fps"]) == ("sport", 30.0)
    with pytest.raises(DatasetError, match="lvbench has no duration groups"):
        load_benchmark("lvbench", LVBENCH, LoadOptions(duration="long"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda qa: qa.update(question="A question without options?"), "no inlined"),
        (lambda qa: qa.update(answer="E"), "answer 'E' is not one of the option letters"),
        (lambda qa: qa.update(question=qa["question"] + "\n(E) 1999"), "expected 4 options"),
        (lambda qa: qa.update(question_type=3), "question_type must be a list"),
        (lambda qa: qa.pop("uid"), "qa 2 lacks uid"),
        (lambda qa: qa.update(question="\n(A) w\n(B) x\n(C) y\n(D) z"), "no question text"),
    ],
)
def test_lvbench_malformed_rows(tmp_path: Path, change, message: str) -> None:
    lines = LVBENCH.read_text(encoding="utf-8").splitlines()
    video = json.loads(lines[0])
    change(video["qa"][1])
    path = tmp_path / "video_info.meta.jsonl"
    path.write_text(json.dumps(video) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("lvbench", tmp_path)
    assert f"{path}:1 (key Cm73ma6Ibcs), qa 2" in str(caught.value)


def test_lvbench_line_that_is_not_json(tmp_path: Path) -> None:
    path = copy_of(tmp_path, LVBENCH)
    path.write_text(LVBENCH.read_text(encoding="utf-8") + '{"key": "x", "qa": [\n', "utf-8")
    with pytest.raises(DatasetError, match=rf"{path}:4 is not valid JSON"):
        load_benchmark("lvbench", path)


# --------------------------------------------------------------------------- LongVideoBench


def test_longvideobench_validation_questions() -> None:
    questions = by_id(load_benchmark("longvideobench", LVB))  # the directory: lvb_val.json
    assert list(questions) == ["86CxyhFV9MI_0", "86CxyhFV9MI_1", "p4QwErT8yU2_0"]
    five = questions["86CxyhFV9MI_0"]
    assert five.options == [
        "A. good evening everyone",
        "B. thank you for coming",
        "C. let us begin",
        "D. the night is young",
        "E. please take your seats",
    ]
    assert (five.answer, five.answer_index) == ("E", 4)  # correct_choice is a 0-based index
    assert (five.categories, five.duration_group, five.duration_s) == (["TOS"], "600", 528.0)
    four = questions["86CxyhFV9MI_1"]
    assert (len(four.options), four.answer) == (4, "B")
    long = questions["p4QwErT8yU2_0"]
    # A candidate that starts like a label keeps its position's letter and its whole text.
    assert long.options[1] == "B. C. elegans culture dish"
    assert (long.video, long.subtitles) == ("p4QwErT8yU2.mp4", "p4QwErT8yU2_en.json")
    assert (long.duration_group, long.duration_s, long.subtitle_offset_s) == (
        "3600",
        2874.2,
        1254.5,
    )
    assert long.extra["level"] == "L2-Relation"


def test_longvideobench_duration_long_is_the_3600_bucket() -> None:
    long = load_benchmark("longvideobench", LVB, LoadOptions(duration="long"))
    assert [q.id for q in long] == ["p4QwErT8yU2_0"]
    by_bucket = load_benchmark("longvideobench", LVB, LoadOptions(duration="600"))
    assert [q.id for q in by_bucket] == ["86CxyhFV9MI_0", "86CxyhFV9MI_1"]


def test_longvideobench_test_file_has_no_answers() -> None:
    questions = load_benchmark("longvideobench", LVB / "lvb_test_wo_gt.json")
    assert [(q.id, q.answer, len(q.options)) for q in questions] == [
        ("zX9cVbN3mQ0_0", None, 5),
        ("zX9cVbN3mQ0_1", None, 4),
    ]
    assert questions[0].duration_group == "60"


def test_longvideobench_entries_without_id_are_numbered_per_video(tmp_path: Path) -> None:
    rows = json.loads((LVB / "lvb_val.json").read_text(encoding="utf-8"))
    for row in rows:
        del row["id"]
    path = tmp_path / "lvb_val.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    ids = [q.id for q in load_benchmark("longvideobench", path)]
    assert ids == ["86CxyhFV9MI_0", "86CxyhFV9MI_1", "p4QwErT8yU2_0"]


def test_longvideobench_subtitles_are_shifted_by_the_question_offset() -> None:
    questions = by_id(load_benchmark("longvideobench", LVB))
    long = questions["p4QwErT8yU2_0"]
    source = SubtitleSource(LVB / "subtitles" / long.subtitles, offset_s=long.subtitle_offset_s)
    assert source.lines(long.duration_s) == [
        TranscriptLine(0.0, 3.5, "first the garlic goes in"),
        TranscriptLine(15.75, 17.5, "now a little whisking"),
    ]  # the cue from before the cut is dropped
    short = questions["86CxyhFV9MI_0"]
    lines = SubtitleSource(LVB / "subtitles" / short.subtitles).lines(short.duration_s)
    assert lines[-1] == TranscriptLine(520.0, 528.0, "goodnight")  # null end = end of video


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda row: row.update(correct_choice=4), "answer index 4 is out of range for 4"),
        (lambda row: row.update(correct_choice="E"), "correct_choice must be an integer"),
        (lambda row: row.update(candidates=["a", "b", "c"]), "expected 4 or 5 options, got 3"),
        (lambda row: row.update(candidates=["a", "", "c", "d"]), r"option 2 \(''\) has no text"),
        (lambda row: row.pop("candidates"), "lacks candidates"),
        (lambda row: row.update(duration="long"), "duration must be a number"),
    ],
)
def test_longvideobench_malformed_entries(tmp_path: Path, change, message: str) -> None:
    rows = json.loads((LVB / "lvb_val.json").read_text(encoding="utf-8"))
    change(rows[1])
    path = tmp_path / "lvb_val.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("longvideobench", tmp_path)
    assert f"{path}: entry 2" in str(caught.value)


def test_longvideobench_file_that_is_not_a_list(tmp_path: Path) -> None:
    path = tmp_path / "lvb_val.json"
    path.write_text('{"video_id": "x"}', encoding="utf-8")
    with pytest.raises(
        DatasetError, match=r"lvb_val.json must hold a JSON list, one object per entry, got dict"
    ):
        load_benchmark("longvideobench", path)
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"lvb_val.json is not valid JSON \(line 1"):
        load_benchmark("longvideobench", path)


# --------------------------------------------------------------------------- EgoSchema


def test_egoschema_questions_with_partial_answers() -> None:
    questions = load_benchmark("egoschema", EGO)
    assert tuple(q.id for q in questions) == EGO_IDS
    first, unanswered, third = questions
    assert first.options == [
        "A. C is repairing a bicycle wheel.",
        "B. C is preparing a meal in the kitchen.",
        "C. C is cleaning the workshop floor.",
        "D. C is painting a wooden fence.",
        "E. C is sorting laundry.",
    ]  # option texts start with "C is": the position, not the text, gives the letter
    assert (first.answer, third.answer, unanswered.answer) == ("B", "D", None)
    assert (first.extra["in_subset"], unanswered.extra["in_subset"]) == (True, False)
    assert (first.video_id, first.video) == (EGO_IDS[0], f"{EGO_IDS[0]}.mp4")
    assert first.extra["google_drive_id"] == "1fE2qk0pYqH8Gm3sV7aT4xRwB9dZcLnK2"
    # questions.json itself also finds the answers beside it.
    assert load_benchmark("egoschema", EGO / "questions.json") == questions


def test_egoschema_without_answer_file(tmp_path: Path) -> None:
    shutil.copy(EGO / "questions.json", tmp_path / "questions.json")
    assert [q.answer for q in load_benchmark("egoschema", tmp_path)] == [None, None, None]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda rows, answers: rows[1].update({"option4": rows[1].pop("option 4")}),
            r"question 2 \(q_uid 00b9a0de.*\) lacks 'option 4'",
        ),
        (lambda rows, answers: rows[1].update({"option 2": ""}), "option 3 .* has no text"),
        (lambda rows, answers: rows[1].pop("q_uid"), "question 2 lacks q_uid"),
        (lambda rows, answers: rows.append(dict(rows[0])), "appears more than once"),
        (lambda rows, answers: answers.update({EGO_IDS[1]: 7}), "must be an index 0-4, got 7"),
        (lambda rows, answers: answers.update({"no-such-uid": 0}), "does not hold"),
    ],
)
def test_egoschema_malformed_files(tmp_path: Path, edit, message: str) -> None:
    rows = json.loads((EGO / "questions.json").read_text(encoding="utf-8"))
    answers = json.loads((EGO / "subset_answers.json").read_text(encoding="utf-8"))
    edit(rows, answers)
    (tmp_path / "questions.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "subset_answers.json").write_text(json.dumps(answers), encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as caught:
        load_benchmark("egoschema", tmp_path)
    assert str(tmp_path) in str(caught.value)


def egoschema_rows(answers: bool = True) -> list[dict]:
    """The fixture's questions in the per-row form of the Hugging Face release."""
    release = json.loads((EGO / "questions.json").read_text(encoding="utf-8"))
    known = json.loads((EGO / "subset_answers.json").read_text(encoding="utf-8"))
    return [
        {
            "question_idx": str(number),
            "question": row["question"],
            "video_idx": row["q_uid"],
            "option": [f"{'ABCDE'[k]}. {row[f'option {k}']}" for k in range(5)],
            "answer": str(known[row["q_uid"]]) if answers and row["q_uid"] in known else "",
        }
        for number, row in enumerate(release)
    ]


def test_egoschema_rows_read_like_the_release(tmp_path: Path) -> None:
    release = load_benchmark("egoschema", EGO)
    rows = egoschema_rows()
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    for path in (tmp_path / "rows.jsonl", tmp_path / "rows.json"):
        questions = load_benchmark("egoschema", path)
        assert [(q.id, q.video, q.question, q.options, q.answer) for q in questions] == [
            (q.id, q.video, q.question, q.options, q.answer) for q in release
        ]
        assert [q.extra["in_subset"] for q in questions] == [True, False, True]
    # The numbers of an int64 parquet column read the same as digit strings.
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    subset = tmp_path / "hf" / "Subset"
    subset.mkdir(parents=True)
    numeric = [r | {"answer": int(r["answer"]) if r["answer"] else None} for r in rows]
    parquet.write_table(pyarrow.Table.from_pylist(numeric), subset / "test-00000-of-00001.parquet")
    from_parquet = load_benchmark("egoschema", tmp_path / "hf")  # the directory is enough
    assert [q.answer for q in from_parquet] == [q.answer for q in release]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows[1].update({"answer": "7"}), r"row 2 \(video_idx .*\).*out of range"),
        (lambda rows: rows[0]["option"].pop(), "expected 5 options, got 4"),
        (lambda rows: rows[2].pop("video_idx"), "row 3 lacks video_idx"),
        (lambda rows: rows[2].update({"video_idx": rows[0]["video_idx"]}), "more than once"),
    ],
)
def test_egoschema_malformed_rows(tmp_path: Path, edit, message: str) -> None:
    rows = egoschema_rows()
    edit(rows)
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(DatasetError, match=message):
        load_benchmark("egoschema", tmp_path / "rows.json")


def test_an_egoschema_directory_with_two_row_files_is_refused(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps(egoschema_rows()[0]) + "\n")
    with pytest.raises(DatasetError, match=r"several EgoSchema row files \(a.jsonl, b.jsonl\)"):
        load_benchmark("egoschema", tmp_path)


def test_egoschema_submission_in_the_servers_form(tmp_path: Path) -> None:
    first, second, third = load_benchmark("egoschema", EGO)
    records = [
        ResultRecord.for_question(first, "full", status="answered", prediction="A"),
        ResultRecord.for_question(second, "full", status="answered", prediction="E"),
        ResultRecord.for_question(third, "full", status="failed", error="boom"),
        ResultRecord.for_question(first, "full", status="answered", prediction="B"),  # rerun
        ResultRecord.for_question(first, "direct", status="answered", prediction="C"),
    ]
    assert egoschema_submission(records, variant="full") == {EGO_IDS[0]: 1, EGO_IDS[1]: 4}
    with pytest.raises(DatasetError, match=r"several variants \(direct, full\)"):
        egoschema_submission(records)
    written = write_egoschema_submission(
        records, tmp_path / "sub" / "egoschema.json", variant="direct"
    )
    assert written == {EGO_IDS[0]: 2}
    assert json.loads((tmp_path / "sub" / "egoschema.json").read_text()) == {EGO_IDS[0]: 2}
    bad = [ResultRecord.for_question(first, "full", status="answered", prediction="F")]
    with pytest.raises(DatasetError, match="prediction 'F' is not one of A-E"):
        egoschema_submission(bad)


# --------------------------------------------------------------------------- generic JSONL


def test_jsonl_duration_selects_by_its_duration_group(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    rows = [
        {
            "id": "q1",
            "video": "a.mp4",
            "question": "?",
            "options": ["x", "y"],
            "duration_group": "long",
        },
        {
            "id": "q2",
            "video": "b.mp4",
            "question": "?",
            "options": ["x", "y"],
            "duration_group": "short",
        },
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    assert [q.id for q in load_benchmark("jsonl", path, LoadOptions(duration="long"))] == ["q1"]
    with pytest.raises(DatasetError, match="no duration group 'medium'"):
        load_benchmark("jsonl", path, LoadOptions(duration="medium"))


def test_listing_lines_need_no_videos() -> None:
    for name, path in [
        ("videomme", TEMPLATE),
        ("lvbench", LVBENCH),
        ("longvideobench", LVB),
        ("egoschema", EGO),
        ("cgbench", FIXTURES / "cgbench"),
    ]:
        for question in load_benchmark(name, path):
            line = json.loads(question.to_json_line())
            assert {"id", "video_id", "question", "options", "answer", "categories"} <= set(line)
            assert line["benchmark"] == name
