"""``videotapestry eval``: the runner against the fake server, over synthetic memories.

Each test video's memory carries its own title and every question asks for the title, so
the scripted Answer agent (it picks the option the composite memory mentions most) answers
right only when the run read that question's memory. The kill test runs the command in a
subprocess and kills it with SIGKILL mid-run; the rest call ``main`` in-process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from title_eval import annotations, asked_questions, eval_args, question_text, title_data

from videotapestry.cli import main
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_reader import read_records, read_run_info
from videotapestry.eval.run_writer import ResultsWriter, identity_differences, trace_name
from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, perception_requests

ROOT = Path(__file__).resolve().parents[1]
#: Four 5-minute videos.
FIXTURE_NEEDS = {"data": "long_video"}
REASSEMBLY = "full,refined_super_only,refined_paths_only"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """Four 5-minute videos with memories titled apart."""
    return title_data(tmp_path_factory.mktemp("eval"), embedder, duration_s=300, supers=3)


def lines(run: Path) -> list[dict]:
    """Every line of results.jsonl, each of which must be one JSON object."""
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------- (a) kill -9


@pytest.mark.slow
def test_a_killed_run_resumes_without_asking_a_finished_question_again(
    data: Path, tmp_path: Path
) -> None:
    count, run = 8, tmp_path / "run"
    questions = annotations(tmp_path / "q.jsonl", count)
    process: dict[str, subprocess.Popen] = {}
    answers = {"seen": 0}
    lock = threading.Lock()
    scripted = ScriptedModel()

    def kill_at_the_fifth_answer(request):
        if request.prompt == "final_answer":
            with lock:
                answers["seen"] += 1
                if answers["seen"] == 5 and "run" in process:
                    os.kill(process["run"].pid, signal.SIGKILL)
        return scripted(request)

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    env["OPENAI_API_KEY"] = "sk-test-eval-0123456789abcdef"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    with FakeOpenAIServer(latency_s=0.05) as server:
        server.on(None, kill_at_the_fifth_answer)
        variants = ("--variant", "full,refined_super_only")
        command = [
            sys.executable, "-m", "videotapestry.cli",
            *eval_args(data, questions, run, server, "--concurrency", "2", *variants),
        ]  # fmt: skip
        process["run"] = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        _, stderr = process["run"].communicate(timeout=240)
        assert process["run"].returncode == -signal.SIGKILL, stderr.decode()[-2000:]
        del process["run"]
        first = read_records(run)
        done = {r.key for r in first.records if r.finished}
        assert 1 <= len(done) < 2 * count  # killed mid-run, some records on disk
        for record in first.records:  # each finished one has its trace beside it
            assert (run / record.trace).is_file()

        server.reset()
        server.on(None, scripted)
        rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr

    explored = {qid for variant, qid in done if variant == "full"}
    asked = asked_questions(server, count)
    answer_calls = Counter(
        qid
        for r in server.requests_for("answer")
        for qid in (f"q{n}" for n in range(count))
        if question_text(int(qid[1:])) in r.text
    )
    for n in range(count):
        qid = f"q{n}"
        missing = [v for v in ("full", "refined_super_only") if (v, qid) not in done]
        # A finished question is not asked again; the Answer agent runs once per missing variant.
        assert answer_calls[qid] == len(missing), (qid, missing)
        if qid in explored:
            assert asked[qid] == answer_calls[qid]  # no exploration call repeated
    rows = lines(run)  # parses line by line
    keys = Counter((row["variant"], row["question_id"]) for row in rows)
    assert set(keys) == {(v, f"q{n}") for v in ("full", "refined_super_only") for n in range(count)}
    assert set(keys.values()) == {1}  # every question exactly once per variant
    assert all(row["status"] == "answered" for row in rows)
    # Every answer read its own video's memory (the title only that memory names).
    assert all(row["correct"] for row in rows if row["variant"] == "full")
    reassembled = [row for row in rows if row["variant"] == "refined_super_only"]
    assert all(
        row["usage"]["calls"] == 1 and row["reassembled_from"] == "full" for row in reassembled
    )
    # The report written at the end of the rerun counts what results.jsonl holds.
    report = json.loads((run / "report.json").read_text())
    for variant in ("full", "refined_super_only"):
        mine = [row for row in rows if row["variant"] == variant]
        numbers = report["variants"][variant]
        right = sum(row["prediction"] == row["gold"] for row in mine)
        assert numbers["accuracy"] == {
            "correct": right,
            "total": len(mine),
            "accuracy": right / len(mine),
        }
        calls = sum(row["usage"]["calls"] for row in mine) / len(mine)
        assert numbers["usage"]["calls"] == pytest.approx(calls)
    assert (run / "report.md").is_file()


# --------------------------------------------------------------------------- (b) early stop


def test_an_unknown_model_stops_the_run_after_one_request(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = annotations(tmp_path / "q.jsonl", 6)
    server.on(None, lambda r: FakeReply(content="The model `nope` does not exist", status=404))
    code = main(eval_args(data, questions, tmp_path / "run", server, "--concurrency", "1"))
    err = capsys.readouterr().err
    assert code == 2
    assert "stopped early" in err and "does not exist" in err
    assert len(server.requests) == 1
    statuses = Counter(row["status"] for row in lines(tmp_path / "run"))
    assert statuses == {"failed": 1, "skipped": 5}
    skipped = [row for row in lines(tmp_path / "run") if row["status"] == "skipped"]
    assert all("does not exist" in row["error"] for row in skipped)


def test_a_key_echoed_by_the_server_reaches_neither_stderr_nor_the_run(
    data: Path,
    tmp_path: Path,
    server: FakeOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "local-credential-5d1e8b0a93c7"  # not shaped like a token: found by its value
    monkeypatch.setenv("OPENAI_API_KEY", key)
    server.on(None, lambda r: FakeReply(content=f"Incorrect API key provided: {key}", status=400))
    run = tmp_path / "run"
    assert main(eval_args(data, annotations(tmp_path / "q.jsonl", 2), run, server)) == 2
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    captured = capsys.readouterr()
    assert "Incorrect API key provided: [REDACTED]" in captured.err
    assert key not in captured.err + captured.out
    assert any("[REDACTED]" in (row["error"] or "") for row in lines(run))
    for path in run.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_a_full_disk_stops_the_run_naming_the_directory_and_a_rerun_resumes(
    data: Path,
    tmp_path: Path,
    server: FakeOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ENOSPC is simulated on the results file's own write path (its ``os.write``)."""
    import errno
    import types

    from videotapestry.eval import run_writer

    def write_one_line(fd: int, data: bytes) -> int:
        if (tmp_path / "run" / "results.jsonl").stat().st_size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)

    full = types.SimpleNamespace(**{**vars(os), "write": write_one_line})
    monkeypatch.setattr(run_writer, "os", full)
    server.on(None, ScriptedModel())
    questions, run = annotations(tmp_path / "q.jsonl", 3), tmp_path / "run"
    assert main(eval_args(data, questions, run, server, "--concurrency", "1")) == 2
    err = capsys.readouterr().err
    assert f"No space left on device while writing in {run};" in err and "Traceback" not in err
    first = lines(run)
    assert len(first) == 1 and first[0]["status"] == "answered"  # the records before stand

    monkeypatch.setattr(run_writer, "os", os)  # space freed
    server.reset()
    server.on(None, ScriptedModel())
    assert main(eval_args(data, questions, run, server)) == 0
    assert first[0]["question_id"] not in asked_questions(server, 3)  # not asked again
    assert len(lines(run)) == 3


def test_the_same_failure_on_the_first_questions_stops_the_run(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prompt override that cannot render fails every question the same way, after its
    exploration: such failures stop the run instead of asking all ten. The first three to
    finish are v0's (questions go video by video), so v1's first question, failing the same
    way, is what shows the error is not v0's own."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    shipped = (ROOT / "prompts" / "final_answer.jinja").read_text()
    assert "{{ memory }}" in shipped
    broken = shipped.replace("{{ memory }}", "{{ video_memory }}")
    (prompts / "final_answer.jinja").write_text(broken)
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 10)
    run = tmp_path / "run"
    args = eval_args(
        data, questions, run, server, "--concurrency", "1", "--prompts-dir", str(prompts)
    )
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2 and "the first 3 questions of variant full all failed" in err
    statuses = Counter(row["status"] for row in lines(run))
    assert statuses == {"failed": 4, "skipped": 6}
    assert len({row["error"] for row in lines(run) if row["status"] == "failed"}) == 1
    asked = asked_questions(server, 10)
    assert asked.keys() == {"q0", "q4", "q8", "q1"}
    # Each failure carries what its exploration cost: together, every request the server saw.
    failed = {row["question_id"]: row["usage"] for row in lines(run) if row["status"] == "failed"}
    assert all(failed[qid]["calls"] >= count for qid, count in asked.items())
    # The Focus decision runs beside the Answer agent, whose failure cancels it: counted as a
    # failed call either way, it reaches the server only if it was sent before the cancel.
    counted = sum(u["calls"] - u["cached_calls"] for u in failed.values())
    assert len(server.requests) <= counted <= len(server.requests) + len(failed)
    assert all(usage["prompt_tokens"] > 0 for usage in failed.values())


def test_a_run_stops_at_its_budget_keeps_its_records_and_resumes_with_a_larger_one(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-usd``: priced calls over real HTTP; the first answered question spends past a
    tiny budget, so no other starts (concurrency 1). The same command with a larger budget
    asks only the questions the first invocation did not."""
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 5)
    run = tmp_path / "run"
    price = "pricing={gpt-5.5: {input_per_mtok: 2.0, output_per_mtok: 10.0}}"
    args = eval_args(data, questions, run, server, "--concurrency", "1", "-o", price)
    assert main([*args, "--max-usd", "0.000001"]) == 4
    err = capsys.readouterr().err
    assert "its budget of $1e-06 was reached" in err and "4 question(s) not asked" in err
    first = {row["question_id"]: row for row in lines(run)}
    answered = [q for q, row in first.items() if row["status"] == "answered"]
    assert len(answered) == 1 and first[answered[0]]["usage"]["cost_usd"] > 0.000001
    assert sorted(row["status"] for row in first.values()) == ["answered"] + ["skipped"] * 4
    assert asked_questions(server, 5).keys() == set(answered)

    # Resumed with a larger budget: the four others, and never the one already answered.
    server.reset()
    server.on(None, ScriptedModel())
    assert main([*args, "--max-usd", "100"]) == 0
    assert asked_questions(server, 5).keys() == {f"q{n}" for n in range(5)} - set(answered)
    latest = {row["question_id"]: row["status"] for row in lines(run)}
    assert set(latest.values()) == {"answered"} and len(latest) == 5

    # A run already past its budget starts nothing at all.
    server.reset()
    assert main([*args, "--max-calls", "1", "--keep-failed"]) == 0
    assert server.requests == []


def test_a_budget_sweep_writes_one_run_per_budget_and_the_accuracy_cost_table(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--budgets calls=1,none``: calls=1 answers from the stored memory (one call per
    question, each run recording budget_reached), none runs the method; both are rows of
    the table, each run a run directory of its own."""
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 2)
    run = tmp_path / "run"
    price = "pricing={gpt-5.5: {input_per_mtok: 2.0, output_per_mtok: 10.0}}"
    args = eval_args(data, questions, run, server, "-o", price, "--allow-degraded")
    assert main([*args, "--budgets", "calls=1,none"]) == 0
    out = capsys.readouterr().out
    assert f"accuracy against cost: {run / 'accuracy_cost.md'}" in out
    capped = lines(run / "budget-calls1")
    assert all(row["usage"]["calls"] == 1 for row in capped)
    assert all("budget_reached" in row["degraded"] for row in capped)
    uncapped = lines(run / "budget-none")
    assert all(row["usage"]["calls"] > 1 and not row["degraded"] for row in uncapped)
    table = (run / "accuracy_cost.md").read_text()
    assert "Cost axis: mean cost per question (USD)" in table  # priced above zero
    rows = [line for line in table.splitlines() if line.startswith("| full |")]
    assert [row.split("|")[2].strip() for row in rows] == ["calls1", "none"]
    assert (run / "accuracy_cost.png").stat().st_size > 0


# --------------------------------------------------------------------------- (c) missing memory


def memories_of(data: Path, tmp_path: Path, *videos: int) -> Path:
    """A memories directory holding only these videos' memories (linked from ``data``)."""
    memories = tmp_path / "memories"
    memories.mkdir()
    for n in videos:
        (memories / f"v{n}").symlink_to(data / "memories" / f"v{n}")
    return memories


def test_a_missing_memory_fails_its_questions_and_the_others_are_answered(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    memories = memories_of(data, tmp_path, 0, 2)  # v1 has no memory
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 6, videos=3)
    run = tmp_path / "run"
    args = eval_args(data, questions, run, server, "--concurrency", "2")
    args[args.index("--memories") + 1] = str(memories)
    code = main(args)
    captured = capsys.readouterr()
    assert code == 1
    rows = {row["question_id"]: row for row in lines(run)}
    for qid in ("q1", "q4"):
        assert rows[qid]["status"] == "failed"
        assert rows[qid]["error_type"] == "MissingMemoryError"
        assert (
            str(memories / "v1") in rows[qid]["error"] and "--build-missing" in rows[qid]["error"]
        )
    for qid in ("q0", "q2", "q3", "q5"):
        assert rows[qid]["status"] == "answered" and rows[qid]["correct"]
    assert "2 question(s) failed" in captured.err
    assert asked_questions(server, 6).keys() == {"q0", "q2", "q3", "q5"}

    # A rerun retries the failures, which fail the same way for free: no new line, no call.
    server.reset()
    server.on(None, ScriptedModel())
    assert main(args) == 1
    assert len(lines(run)) == 6 and server.requests == []


def test_questions_go_video_by_video_and_one_videos_failures_do_not_stop_the_run(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The annotations cycle over two videos; the runner asks v0's questions first, so the
    first three to finish are all v0's, failing the same way (its memory is missing). That
    fault is v0's own, not one that repeats on every question: v1 is still answered."""
    memories = memories_of(data, tmp_path, 1)  # v0 has no memory
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 8, videos=2)
    run = tmp_path / "run"
    args = eval_args(data, questions, run, server, "--concurrency", "1")
    args[args.index("--memories") + 1] = str(memories)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1 and "all failed with the same error" not in err
    order = [row["question_id"] for row in lines(run)]
    # Video by video. v0's four fail before they take a slot, together, and their records
    # are written in whichever order the writes finish; v1's are answered one at a time.
    assert sorted(order[:4]) == ["q0", "q2", "q4", "q6"]
    assert order[4:] == ["q1", "q3", "q5", "q7"]
    rows = {row["question_id"]: row for row in lines(run)}
    assert {rows[q]["status"] for q in ("q0", "q2", "q4", "q6")} == {"failed"}
    assert all(rows[q]["status"] == "answered" and rows[q]["correct"] for q in order[4:])


def test_eval_freezes_each_memory_it_loads_and_unfreezes_at_the_end(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eval`` moves each memory, once loaded, out of the collector's reach: the frozen
    count the server sees grows from v0's questions to v1's (v1's memory loaded later), and
    nothing stays frozen once the run is over."""
    import gc

    scripted = ScriptedModel()
    frozen: dict[str, list[int]] = {"v0": [], "v1": []}

    def answer(request):
        text = json.dumps(request.body["messages"])
        for n in range(4):
            if question_text(n) in text:
                frozen[f"v{n % 2}"].append(gc.get_freeze_count())
        return scripted(request)

    server.on(None, answer)
    questions = annotations(tmp_path / "q.jsonl", 4, videos=2)
    run = tmp_path / "run"
    assert main(eval_args(data, questions, run, server, "--concurrency", "1")) == 0, (
        capsys.readouterr().err
    )
    assert [row["question_id"] for row in lines(run)] == ["q0", "q2", "q1", "q3"]
    assert frozen["v0"] and frozen["v1"]
    assert min(frozen["v1"]) > max(frozen["v0"]) > 0
    assert gc.get_freeze_count() == 0


def test_build_missing_builds_each_video_once_for_all_its_questions(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    video = make_test_video(tmp_path / "videos" / "v0.mp4", 60, fps=4, size=(192, 108), scene_s=10)
    builder, answerer = ScriptedBuilderModel(video.fps, video.scenes), ScriptedModel()
    server.on(None, lambda r: (builder if (r.role or "").startswith("builder_") else answerer)(r))
    questions = annotations(tmp_path / "q.jsonl", 3, videos=1)
    run, memories = tmp_path / "run", tmp_path / "memories"
    args = eval_args(data, questions, run, server, "--concurrency", "3", "--build-missing")
    args[args.index("--videos") + 1] = str(tmp_path / "videos")
    args[args.index("--memories") + 1] = str(memories)
    args += ["-o", "builder.ocr.engine=none", "-o", "builder.macro.min_s=30"]
    assert main(args) in (0, 3), capsys.readouterr().err
    perception = perception_requests(server.requests)
    assert len(perception) == 6 and set(perception.values()) == {1}  # one build, each clip once
    assert len(load_memory(memories / "v0").clips) == 6
    rows = lines(run)
    assert len(rows) == 3 and {row["status"] for row in rows} == {"answered"}
    assert len(server.requests_for("answer")) == 3


# ------------------------------------------------------------------ a made-up citation


def test_a_made_up_citation_on_a_right_answer_warns_and_leaves_it_clean(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = ScriptedModel()  # the option the memory names: right when it read its memory
    made_up = [{"claim": "The title is on the first card.", "ids": ["Z99"]}]
    server.on(None, ScriptedModel(final_answer=lambda r: {**plain(r), "citations": made_up}))
    questions = annotations(tmp_path / "q.jsonl", 2)
    run = tmp_path / "run"
    code = main(eval_args(data, questions, run, server))
    out = capsys.readouterr().out
    assert code == 0, out  # a warning is no degradation: no status 3
    rows = lines(run)
    assert [row["correct"] for row in rows] == [True, True]
    assert all(row["degraded"] == [] and row["warnings"] == ["citation_invalid"] for row in rows)
    summary = next(line for line in out.splitlines() if line.startswith("full"))
    assert "degraded 0, warned 2" in summary
    full = json.loads((run / "report.json").read_text())["variants"]["full"]
    assert (full["counts"]["clean"], full["counts"]["warned"]) == (2, 2)
    assert full["counts"]["warning_kinds"] == {"citation_invalid": 2}
    assert full["accuracy_clean"] == {"correct": 2, "total": 2, "accuracy": 1.0}
    markdown = (run / "report.md").read_text()
    assert "| full | 2 | 2 | 0 | 0 | 0 | 0 | 0 | 2 | 2 |" in markdown


# --------------------------------------------------------------------------- (d) Table 3(b)


def test_reassembly_variants_cost_one_answer_call_each(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on(None, ScriptedModel())
    count = 4
    questions = annotations(tmp_path / "q.jsonl", count)
    run = tmp_path / "run"
    code = main(eval_args(data, questions, run, server, "--variant", REASSEMBLY))
    out = capsys.readouterr().out
    assert code == 0, out
    rows = lines(run)
    full = [row for row in rows if row["variant"] == "full"]
    calls = Counter(r.role for r in server.requests)
    assert calls["answer"] == 3 * count  # full's own, then one per reassembly variant
    assert len(server.requests) == sum(row["usage"]["calls"] for row in full) + 2 * count
    for variant in ("refined_super_only", "refined_paths_only"):
        records = [row for row in rows if row["variant"] == variant]
        assert len(records) == count
        assert all(r["usage"]["calls"] == 1 and r["reassembled_from"] == "full" for r in records)
        assert all(r["memory_tokens"] > 0 for r in records)
        assert "accuracy" in next(line for line in out.splitlines() if line.startswith(variant))
    # Super-only keeps the root and SuperEvents only, so it is the smallest memory.
    tokens = {row["variant"]: row["memory_tokens"] for row in rows if row["question_id"] == "q0"}
    assert tokens["refined_super_only"] < tokens["full"]

    # Added to a finished full run, they are reassembled from its saved traces.
    run2 = tmp_path / "run2"
    assert main(eval_args(data, questions, run2, server)) == 0
    server.reset()
    server.on(None, ScriptedModel())
    assert main(eval_args(data, questions, run2, server, "--variant", REASSEMBLY)) == 0
    assert len(server.requests) == 2 * count
    assert {r.role for r in server.requests} == {"answer"}
    assert read_run_info(run2).variants == REASSEMBLY.split(",")


def test_reassembly_without_full_is_a_usage_error(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = annotations(tmp_path / "q.jsonl", 1)
    args = eval_args(data, questions, tmp_path / "run", server, "--variant", "refined_paths_only")
    assert main(args) == 2
    assert "add full to --variant" in capsys.readouterr().err
    assert server.requests == []


# --------------------------------------------------------------------------- (e) identity


def test_a_run_made_with_another_config_is_refused_without_force(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 3)
    run = tmp_path / "run"
    assert main(eval_args(data, questions, run, server, "--limit", "2")) == 0
    header = read_run_info(run)
    assert header.command[:4] == ["videotapestry", "eval", "--benchmark", "jsonl"]
    assert header.prompt_hashes["final_answer"] and header.models["answer"] == "gpt-5.5"
    before = (run / "results.jsonl").read_bytes()
    server.reset()
    server.on(None, ScriptedModel())

    other = eval_args(data, questions, run, server, "-o", "agents.overview.max_frames=10")
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "agents.overview.max_frames: 120 in the run, 10 now" in err and "--force" in err
    assert server.requests == [] and (run / "results.jsonl").read_bytes() == before

    # --limit, --concurrency and the timeout are not identity: a larger limit extends the run.
    same = eval_args(data, questions, run, server, "--concurrency", "3")
    assert main([*same, "-o", "models.default.timeout_s=60"]) == 0
    assert asked_questions(server, 3).keys() == {"q2"}

    assert main([*other, "--force", "--limit", "3"]) == 0
    info = read_run_info(run)
    assert info.model_extra["amended"][0]["differences"] == [
        "config agents.overview.max_frames: 120 in the run, 10 now"
    ]
    assert len(lines(run)) == 3  # finished records kept, nothing asked again


HOLD_THE_RUN = """
import sys, time
from pathlib import Path
from videotapestry.eval.run_lock import RunLock
Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
lock = RunLock(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def test_a_second_eval_of_a_run_directory_in_use_is_refused_until_the_first_dies(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lock is the kernel's (flock), so SIGKILLing its holder frees it: no stale lock."""
    questions, run = annotations(tmp_path / "q.jsonl", 2), tmp_path / "run"
    server.on(None, ScriptedModel())
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_RUN, str(run)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert main(eval_args(data, questions, run, server)) == 2
        err = capsys.readouterr().err
        assert f"{run} is being written by another eval (pid {holder.pid})" in err
        assert server.requests == [] and not (run / "results.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(eval_args(data, questions, run, server)) == 0
    assert len(lines(run)) == 2


def test_an_open_run_directory_refuses_a_second_opener_in_the_same_process(
    tmp_path: Path,
) -> None:
    from videotapestry.config import load_config
    from videotapestry.eval.run_lock import RunLockedError
    from videotapestry.eval.run_writer import RunDirectory, new_run_info
    from videotapestry.prompts import PromptRegistry

    info = new_run_info(
        benchmark="jsonl",
        annotations=tmp_path / "q.jsonl",
        variants=["full"],
        config=load_config(),
        prompts=PromptRegistry(),
    )
    first = RunDirectory.open(tmp_path / "run", info)
    with pytest.raises(RunLockedError, match=f"pid {os.getpid()}"):
        RunDirectory.open(tmp_path / "run", info)
    first.close()
    RunDirectory.open(tmp_path / "run", info).close()  # closing released it
    assert (tmp_path / "run" / "run.lock").is_file()


def test_identity_names_prompt_and_model_changes(data: Path) -> None:
    from videotapestry.config import load_config
    from videotapestry.eval.run_writer import new_run_info
    from videotapestry.prompts import PromptRegistry

    def info(*overrides: str, prompts: PromptRegistry | None = None):
        return new_run_info(
            benchmark="jsonl",
            annotations=data,
            variants=["full"],
            config=load_config(overrides=list(overrides)),
            prompts=prompts or PromptRegistry(),
        )

    base = info()
    assert identity_differences(base, info("variant=wo_asr", "cache.enabled=false")) == []
    assert identity_differences(base, info("models.default.model=m2")) == [
        "config models.*.model: 'gpt-5.5' in the run, 'm2' now"
    ]
    assert identity_differences(base, info("models.roles.answer.model=m2")) == [
        "config models.answer.model: 'gpt-5.5' in the run, 'm2' now"
    ]
    override = data / "prompt-override"
    override.mkdir(exist_ok=True)
    (override / "_no_steering.jinja").write_text("Different partial text.\n")
    [line] = identity_differences(base, info(prompts=PromptRegistry(override)))
    assert line.startswith("prompt _no_steering: ")


def test_no_video_answers_from_the_memories_and_is_part_of_the_identity(
    data: Path, tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on(None, ScriptedModel())
    questions = annotations(tmp_path / "q.jsonl", 2)
    run = tmp_path / "run"
    args = eval_args(data, questions, run, server, "--no-video")
    args[args.index("--videos") + 1] = str(tmp_path / "absent")  # not needed, not read
    assert main(args) == 0
    assert server.requests and not server.requests_for("observation")
    assert all(row["correct"] for row in lines(run))  # the titles are in the memories
    assert read_run_info(run).model_extra["no_video"] is True
    capsys.readouterr()
    with_video = eval_args(data, questions, run, server)
    assert main(with_video) == 2
    assert "no_video: True in the run, False now" in capsys.readouterr().err


# --------------------------------------------------------------------------- (f) --list


def test_list_prints_the_normalized_questions_without_videos_or_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps({"id": 7, "video": "a.mp4", "question": "Who?", "options": ["x", "y"],
                    "answer": 1, "categories": "people"}) + "\n"
        + json.dumps({"id": "b", "video": "clips/b.mkv", "question": "Where?",
                      "options": ["A. here", "B. there", "C. nowhere"]}) + "\n"
    )  # fmt: skip
    assert main(["eval", "--benchmark", "jsonl", "--annotations", str(path), "--list"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["video_id"], r["answer"], r["categories"]) for r in rows] == [
        ("7", "a", "B", ["people"]),
        ("b", "b", None, []),
    ]
    assert rows[0]["options"] == ["A. x", "B. y"] and rows[1]["question"] == "Where?"
    assert (
        main(["eval", "--benchmark", "jsonl", "--annotations", str(path), "--list", "--limit", "1"])
        == 0
    )
    assert len(capsys.readouterr().out.splitlines()) == 1


@pytest.mark.parametrize("benchmark", ["jsonl", "lvbench", "videomme", "egoschema"])
def test_an_empty_annotations_file_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], benchmark: str
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    for extra in (["--list"], ["--videos", "v", "--memories", "m", "--out", str(tmp_path / "r")]):
        assert main(["eval", "--benchmark", benchmark, "--annotations", str(path), *extra]) == 2
        assert f"{path} holds no {benchmark} questions" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before a run directory is made


def test_a_selection_of_no_question_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = annotations(tmp_path / "q.jsonl", 2)
    run = tmp_path / "run"
    command = ["eval", "--benchmark", "jsonl", "--annotations", str(path), "--limit", "0"]
    assert main([*command, "--list"]) == 2
    assert "--limit 0 selects no question" in capsys.readouterr().err
    assert main([*command, "--videos", "v", "--memories", "m", "--out", str(run)]) == 2
    assert not run.exists()


def test_running_needs_the_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = annotations(tmp_path / "q.jsonl", 1)
    assert main(["eval", "--benchmark", "jsonl", "--annotations", str(path)]) == 2
    assert "--videos, --memories, --out" in capsys.readouterr().err


# --------------------------------------------------------------------------- the writer


def test_appends_from_many_threads_stay_whole_lines(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "results.jsonl")
    long_error = "x" * 20000  # larger than a pipe buffer: one write per line still

    def write(n: int) -> None:
        for k in range(20):
            writer.append(
                ResultRecord(
                    question_id=f"q{n}-{k}", variant="full", video_id="v", status="failed",
                    error=long_error,
                )
            )  # fmt: skip

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    read = read_records(tmp_path)
    assert len(read.records) == 160 and read.skipped_lines == 0


def test_trace_names_are_safe_and_distinct() -> None:
    assert trace_name("q1") == "q1.json"
    assert trace_name("001-2") == "001-2.json"
    odd = [trace_name("a/b"), trace_name("a:b"), trace_name("..")]
    assert all("/" not in name and not name.startswith(".") for name in odd)
    assert len(set(odd)) == 3
