"""``eval --executor ray`` (issue 14): the local Ray instance on 127.0.0.1 with 2 CPUs, eval
workers answering over synthetic memories against the fake server, the driver writing.

Each test video's memory carries its own title and every question asks for the title, so
the scripted Answer agent answers right only when the worker read that question's memory.
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
from conftest import RAY_TEST_KEY
from title_eval import annotations, asked_questions, title_data
from title_eval import eval_args as title_eval_args

from videotapestry.cli import main
from videotapestry.eval.run_reader import latest, read_records, read_run_info
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.scripted import ScriptedModel

pytestmark = [pytest.mark.usefixtures("ray_deadline"), pytest.mark.slow, pytest.mark.ray]
ROOT = Path(__file__).resolve().parents[2]
VARIANTS = "full,refined_super_only"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", RAY_TEST_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """Four 3-minute videos with memories titled apart."""
    return title_data(tmp_path_factory.mktemp("ray-eval"), embedder, duration_s=180, supers=2)


def eval_args(data: Path, questions: Path, run: Path, server: FakeOpenAIServer, *extra: str):
    return title_eval_args(data, questions, run, server, "--variant", VARIANTS, *extra)


def comparable(run: Path) -> dict:
    """Each (variant, question)'s record without what depends on timing: latency, and which
    calls a concurrent question had already put in the response cache."""
    records = latest(read_records(run).records)
    shown = {}
    for key, record in records.items():
        data = record.model_dump(mode="json")
        data.pop("elapsed_s")
        data["usage"].pop("latency_s")
        data["usage"].pop("cached_calls")
        shown[key] = data
    return shown


def cached_calls(run: Path) -> int:
    return sum(r.usage.cached_calls for r in latest(read_records(run).records).values())


def test_ray_eval_writes_the_same_results_as_local_and_shares_the_cache(
    ray_cluster, data: Path, tmp_path: Path
) -> None:
    count = 8
    questions = annotations(tmp_path / "q.jsonl", count)

    def cache(name: str) -> tuple[str, ...]:
        return ("-o", "cache.enabled=true", "-o", f"cache.path={tmp_path / name}")

    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        assert main(eval_args(data, questions, tmp_path / "local", server, *cache("l.sqlite"))) == 0
        local_requests = len(server.requests)
        server.reset()
        server.on(None, ScriptedModel())
        ray_args = eval_args(
            data, questions, tmp_path / "ray", server, "--executor", "ray", *cache("r.sqlite")
        )
        assert main([*ray_args, "--concurrency", "2"]) == 0
        ray_requests = len(server.requests)

        local, ray = comparable(tmp_path / "local"), comparable(tmp_path / "ray")
        assert local == ray  # every record field: answer, correctness, usage, trace path ...
        assert len(ray) == 2 * count and all(r["correct"] for r in ray.values())
        # The workers asked the server themselves; each call is counted once, as sent or as
        # served from the cache the two workers fill together.
        assert ray_requests > 0
        assert ray_requests + cached_calls(tmp_path / "ray") == local_requests + cached_calls(
            tmp_path / "local"
        )
        for record in ray.values():  # each trace was written by the driver beside its line
            assert (tmp_path / "ray" / record["trace"]).is_file()
        # The models the server named reach run.json from the workers' traces too.
        served = read_run_info(tmp_path / "ray").served_models
        assert served == read_run_info(tmp_path / "local").served_models and "answer" in served

        # The same questions again on Ray, a new run with the cache the workers filled: no
        # request reaches the server and every call counts as cached.
        server.reset()
        again = eval_args(
            data, questions, tmp_path / "again", server, "--executor", "ray", *cache("r.sqlite")
        )
        assert main(again) == 0
        assert server.requests == []
        for record in read_records(tmp_path / "again").records:
            assert record.usage.calls > 0 and record.usage.cached_calls == record.usage.calls

        # A run made on Ray resumes locally (the executor is not part of a run's identity).
        assert main(eval_args(data, questions, tmp_path / "ray", server)) == 0
        assert server.requests == []


def test_a_killed_ray_driver_resumes_without_asking_a_finished_question_again(
    ray_cluster, data: Path, tmp_path: Path
) -> None:
    count, run = 8, tmp_path / "run"
    questions = annotations(tmp_path / "q.jsonl", count)
    process: dict[str, subprocess.Popen] = {}
    lock = threading.Lock()
    scripted = ScriptedModel()
    results = run / "results.jsonl"

    def kill_the_driver_once_it_has_written(request):
        # A question is being answered (so some are unfinished) and the driver has written
        # at least one record: kill it now.
        if request.prompt == "final_answer":
            with lock:
                written = results.is_file() and results.read_bytes().count(b"\n") >= 1
                if written and "run" in process and "killed" not in process:
                    os.kill(process["run"].pid, signal.SIGKILL)
                    process["killed"] = process["run"]
        return scripted(request)

    env = {**os.environ, **ray_cluster.worker_env(), "PYTHONPATH": str(ROOT)}
    with FakeOpenAIServer(latency_s=0.05) as server:
        server.on(None, kill_the_driver_once_it_has_written)
        command = [
            sys.executable, "-m", "videotapestry.cli",
            *eval_args(data, questions, run, server, "--concurrency", "2"),
            "--executor", "ray", "--ray-address", ray_cluster.address,
            # This job's workers import this checkout (as an installed copy would be found).
            "-o", f"executor.ray.runtime_env={{env_vars: {{PYTHONPATH: '{ROOT}'}}}}",
        ]  # fmt: skip
        process["run"] = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        _, stderr = process["run"].communicate(timeout=280)
        assert process["run"].returncode == -signal.SIGKILL, stderr.decode()[-3000:]
        del process["run"]  # the rerun is not killed
        first = read_records(run)
        done = {r.key for r in first.records if r.finished}
        assert 1 <= len(done) < 2 * count  # killed mid-run, some records on disk
        assert all((run / r.trace).is_file() for r in first.records)

        server.reset()
        server.on(None, scripted)
        rerun = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280
        )
        assert rerun.returncode == 0, rerun.stderr[-3000:]

    finished_fully = {qid for v, qid in done if v == "full" and ("refined_super_only", qid) in done}
    again = asked_questions(server, count)
    assert not finished_fully & set(again)  # not one request for a finished question
    final = latest(read_records(run).records)
    assert set(final) == {(v, f"q{n}") for v in VARIANTS.split(",") for n in range(count)}
    assert all(r.status == "answered" and r.correct for r in final.values())
    rows = (run / "results.jsonl").read_text().splitlines()
    keys = Counter((json.loads(row)["variant"], json.loads(row)["question_id"]) for row in rows)
    assert set(keys.values()) == {1}  # every question written once per variant


def test_a_killed_eval_worker_is_restarted_and_its_questions_are_answered(
    ray_cluster, data: Path, tmp_path: Path
) -> None:
    from videotapestry.testing.ray_cluster import ray_worker_pids

    count = 8
    questions = annotations(tmp_path / "q.jsonl", count)
    scripted = ScriptedModel()
    lock = threading.Lock()
    state: dict = {"answers": 0, "killed": None}

    def kill_a_worker_at_the_third_answer(request):
        if request.prompt == "final_answer":
            with lock:
                state["answers"] += 1
                if state["answers"] == 3:
                    pids = ray_worker_pids("EvalWorker")
                    assert len(pids) == 2, pids  # the two workers of this run
                    os.kill(pids[0], signal.SIGKILL)
                    state["killed"] = pids[0]
        return scripted(request)

    with FakeOpenAIServer(latency_s=0.05) as server:
        server.on(None, kill_a_worker_at_the_third_answer)
        args = eval_args(data, questions, tmp_path / "run", server, "--executor", "ray")
        assert main([*args, "--concurrency", "2"]) == 0
    assert state["killed"] is not None
    final = latest(read_records(tmp_path / "run").records)
    assert len(final) == 2 * count
    assert all(r.status == "answered" and r.correct for r in final.values())
