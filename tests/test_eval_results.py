"""Reading results.jsonl back: torn tails, rewrites of a question, the run.json header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_reader import (
    RunDirectoryError,
    finished_keys,
    latest,
    mend_torn_tail,
    read_records,
    read_run_info,
)


def _record(qid: str, variant: str = "full", status: str = "answered", **fields) -> ResultRecord:
    return ResultRecord(question_id=qid, variant=variant, video_id="v1", status=status, **fields)


def _write(run: Path, *records: ResultRecord, tail: bytes = b"") -> Path:
    run.mkdir(parents=True, exist_ok=True)
    body = b"".join((r.to_json_line() + "\n").encode() for r in records)
    (run / "results.jsonl").write_bytes(body + tail)
    return run


def test_a_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    whole = _record("q2", prediction="B").to_json_line().encode()
    # Cut inside a multi-byte character too: the line must not poison the decode of the file.
    torn = _record("q3", error="café ☕").to_json_line().encode()
    cut = torn[: torn.index("☕".encode()) + 1]
    run = _write(tmp_path / "run", _record("q1", prediction="A"), tail=whole + b"\n" + cut)

    read = read_records(run)

    assert [r.question_id for r in read.records] == ["q1", "q2"]
    assert read.torn_lines == 1
    assert read.invalid_lines == ()


def test_a_bad_line_in_the_middle_is_reported_by_number_not_as_torn(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", _record("q1"))
    with (run / "results.jsonl").open("ab") as handle:
        handle.write(b'{"question_id": "q2", "vari\n')  # glued fragment, not the last line
        handle.write(b'{"not": "a record"}\n')
        handle.write((_record("q3").to_json_line() + "\n").encode())

    read = read_records(run)

    assert [r.question_id for r in read.records] == ["q1", "q3"]
    assert read.torn_lines == 0
    assert read.invalid_lines == (2, 3)
    assert read.skipped_lines == 2


def test_the_last_record_of_a_question_wins_and_skipped_ones_are_not_finished(
    tmp_path: Path,
) -> None:
    run = _write(
        tmp_path / "run",
        _record("q1", status="failed", error="timeout"),
        _record("q2", status="skipped"),
        _record("q1", prediction="C"),
        _record("q1", variant="wo_asr", prediction="D"),
        _record("q3", status="failed", error="no memory"),
    )
    records = read_records(run).records

    chosen = latest(records)

    assert list(chosen) == [("full", "q1"), ("full", "q2"), ("wo_asr", "q1"), ("full", "q3")]
    assert chosen[("full", "q1")].prediction == "C"
    assert finished_keys(records) == {("full", "q1"), ("wo_asr", "q1"), ("full", "q3")}


def test_a_missing_results_file_is_an_empty_run(tmp_path: Path) -> None:
    read = read_records(tmp_path / "nothing-yet")
    assert read.records == [] and read.torn_lines == 0


def test_mending_cuts_a_torn_tail_so_the_next_append_starts_on_its_own_line(
    tmp_path: Path,
) -> None:
    run = _write(tmp_path / "run", _record("q1"), tail=b'{"question_id": "q2", "var')

    assert mend_torn_tail(run) == len(b'{"question_id": "q2", "var')
    with (run / "results.jsonl").open("ab") as handle:
        handle.write((_record("q2").to_json_line() + "\n").encode())

    read = read_records(run)
    assert [r.question_id for r in read.records] == ["q1", "q2"]
    assert read.skipped_lines == 0


def test_mending_keeps_a_complete_record_that_lacks_its_newline(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", _record("q1"), tail=_record("q2").to_json_line().encode())

    assert mend_torn_tail(run) == 0
    assert (run / "results.jsonl").read_bytes().endswith(b"}\n")
    assert [r.question_id for r in read_records(run).records] == ["q1", "q2"]
    assert mend_torn_tail(tmp_path / "absent") == 0


def test_run_info_reads_the_agreed_header(tmp_path: Path) -> None:
    header = {
        "format": 1,
        "benchmark": "jsonl",
        "annotations": "qs.jsonl",
        "variants": ["full"],
        "config": {"variant": "full", "agents": {"overview": {"max_frames": 32}}},
        "config_hash": "abc",
        "prompt_hashes": {"final_answer": "1234"},
        "models": {"answer": "gpt-x"},
        "created": "2026-01-01T00:00:00Z",
        "command": ["videotapestry", "eval"],
    }
    (tmp_path / "run.json").write_text(json.dumps(header))

    info = read_run_info(tmp_path)

    assert info.models == {"answer": "gpt-x"}
    assert info.config["agents"]["overview"]["max_frames"] == 32


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{nope", "is not JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"format": 2}', "has format 2"),
        ('{"variants": "full"}', "variants"),
    ],
)
def test_a_bad_run_header_names_the_file(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "run.json").write_text(content)
    with pytest.raises(RunDirectoryError, match=message) as caught:
        read_run_info(tmp_path)
    assert "run.json" in str(caught.value)
