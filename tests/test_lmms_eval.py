"""lmms-eval runs the method as its ``videotapestry`` model, offline, end to end.

The task is Video-MME's own lmms-eval definition (its doc_to_visual, doc_to_text,
process_results and aggregation, imported from lmms-eval) over a local JSON file of the demo
sample's questions in Video-MME's record layout, so lmms-eval's evaluator, answer extraction
and metric score the method's answers. Videos are where lmms-eval's Video-MME task looks for
them (``$HF_HOME/videomme/data/<videoID>.mp4``); nothing is downloaded.

Needs the ``[lmms]`` extra; skipped without it, except in CI (``make test`` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI"):
    import lmms_eval  # noqa: F401  (CI installs the [lmms] extra: a missing one must fail)
else:
    pytest.importorskip("lmms_eval", reason="needs the [lmms] extra")

from videotapestry.cli import main
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_memory_dir
from videotapestry.eval.run_reader import read_records

pytestmark = [pytest.mark.slow, pytest.mark.lmms]

REPO = Path(__file__).resolve().parents[1]
TASK = "vt_demo_videomme"
FAILING_TASK = "vt_demo_videomme_failing"
VIDEOMME = "lmms_eval.tasks.videomme.utils"
#: The method's config for every run here; the cache (off in the offline profile) is on so
#: the lmms-eval run and the ``videotapestry eval`` run can share it.
PROFILE = "offline"


def videomme_row(question: dict, video_id: str) -> dict:
    """A demo question in the layout of lmms-eval's Video-MME dataset rows."""
    return {
        "video_id": "001",
        "duration": "long",
        "domain": "Knowledge",
        "sub_category": "Technology",
        "url": "",
        "videoID": video_id,
        "question_id": question["id"],
        "task_type": "OCR Problems",
        "question": question["question"],
        "options": question["options"],
        "answer": question["answer"],
    }


def task_yaml(name: str, data: Path) -> str:
    return f"""task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_visual: !function {VIDEOMME}.videomme_doc_to_visual
doc_to_text: !function {VIDEOMME}.videomme_doc_to_text
doc_to_target: "answer"
generation_kwargs:
  max_new_tokens: 16
  temperature: 0
  do_sample: false
process_results: !function {VIDEOMME}.videomme_process_results
metric_list:
  - metric: videomme_perception_score
    aggregation: !function {VIDEOMME}.videomme_aggregate_results
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: "\\nAnswer with the option's letter from the given choices directly."
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> Path:
    """HF_HOME with the demo video where Video-MME looks, the two tasks, their data, and the
    sample's memory under ``memories/`` (the run's one offline build of it)."""
    root = tmp_path_factory.mktemp("lmms")
    videos = root / "hf" / "videomme" / "data"
    videos.mkdir(parents=True)
    (videos / "sample.mp4").symlink_to(sample_video_path())
    shutil.copytree(demo_memory_dir(sample_video_path(), demo_cache), root / "memories" / "sample")
    questions = sample_questions()["questions"]
    tasks = root / "tasks"
    tasks.mkdir()
    rows = [videomme_row(q, "sample") for q in questions]
    (root / "demo.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # First a question whose video is not there, then one whose memory is not built.
    failing = [videomme_row(questions[0], "absent"), videomme_row(questions[1], "sample")]
    (root / "failing.jsonl").write_text("".join(json.dumps(r) + "\n" for r in failing))
    (tasks / f"{TASK}.yaml").write_text(task_yaml(TASK, root / "demo.jsonl"))
    (tasks / f"{FAILING_TASK}.yaml").write_text(task_yaml(FAILING_TASK, root / "failing.jsonl"))
    # The same questions in videotapestry's generic JSONL, for `videotapestry eval`.
    ours = [
        {"id": q["id"], "video": "sample.mp4", "question": q["question"], "options": q["options"]}
        | {"answer": q["answer"]}
        for q in questions
    ]
    (root / "ours.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ours))
    return root


def lmms_eval_run(work: Path, task: str, out: str, model_args: dict[str, str], *extra: str):
    """``python -m lmms_eval`` as a user runs it, offline; returns (process, results JSON)."""
    env = {
        **os.environ,
        "HF_HOME": str(work / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    output = work / out
    args = ",".join(f"{key}={value}" for key, value in model_args.items())
    command = [
        sys.executable, "-m", "lmms_eval",
        "--model", "videotapestry",
        "--model_args", args,
        "--tasks", task,
        "--include_path", str(work / "tasks"),
        "--output_path", str(output),
        "--log_samples",
        "--verbosity", "WARNING",
        *extra,
    ]  # fmt: skip
    process = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    found = sorted(output.rglob("*_results.json"))
    results = json.loads(found[-1].read_text()) if found else None
    return process, results


def samples(work: Path, out: str, task: str) -> list[dict]:
    [path] = sorted((work / out).rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def method_args(work: Path, memories: str, run: str, **more: str) -> dict[str, str]:
    return {
        "memory_root": str(work / memories),
        "output_dir": str(work / run),
        "profile": PROFILE,
        "cache.enabled": "true",
        "cache.path": str(work / "cache.sqlite"),
        **more,
    }


@pytest.fixture(scope="module")
def answered(work: Path):
    """One lmms-eval run over the first two questions, with build_missing=true: the memory
    is there, so the builder checks it and builds nothing (eval's build_missing builds: see
    test_eval_runner)."""
    return lmms_eval_run(
        work, TASK, "out", method_args(work, "memories", "run", build_missing="true"),
        "--limit", "2",
    )  # fmt: skip


def test_lmms_eval_finds_the_model_through_its_entry_point() -> None:
    from importlib.metadata import entry_points

    from lmms_eval.api.model import lmms
    from lmms_eval.models import get_model

    assert "videotapestry" in {ep.name for ep in entry_points(group="lmms_eval.models")}
    model = get_model("videotapestry")
    assert model.__name__ == "VideoTapestryLMMS" and issubclass(model, lmms)


ENTRY_POINT_FIRST = """
from importlib.metadata import entry_points
(point,) = [p for p in entry_points(group="lmms_eval.models") if p.name == "videotapestry"]
print(point.load().simple_class_path)
"""
LMMS_EVAL_FIRST = "import lmms_eval.models\n"
GET_MODEL = """
from lmms_eval.models import get_model
print(get_model("videotapestry").__name__)
"""


@pytest.mark.parametrize("first", [ENTRY_POINT_FIRST, LMMS_EVAL_FIRST], ids=["ours", "lmms"])
def test_the_manifest_imports_cleanly_whichever_is_loaded_first(first: str) -> None:
    # A fresh process each: which module is imported first is decided once per process.
    done = subprocess.run(
        [sys.executable, "-c", first + GET_MODEL],
        capture_output=True, text=True, cwd=REPO, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "circular import" not in done.stderr and "entry-point" not in done.stderr
    assert done.stdout.strip().endswith("VideoTapestryLMMS")


def test_an_lmms_eval_run_scores_the_methods_answers_with_the_tasks_metric(
    work: Path, answered
) -> None:
    process, results = answered
    assert process.returncode == 0, process.stderr[-3000:]
    assert results is not None, process.stdout[-2000:]
    assert results["config"]["model"] == "videotapestry"
    assert results["n-samples"][TASK] == {"original": 4, "effective": 2}
    # Video-MME's own extraction and aggregation: percent right of the two asked.
    assert results["results"][TASK]["videomme_perception_score,none"] == 100.0
    shipped = {q["id"]: q["answer"] for q in sample_questions()["questions"]}
    logged = samples(work, "out", TASK)
    assert len(logged) == 2
    for sample in logged:
        scored = sample["videomme_perception_score"]
        assert sample["filtered_resps"] == scored["pred_answer"] == shipped[scored["question_id"]]
        assert sample["token_counts"][0]["input_tokens"] > 0
    # The method's own records: one line per question with usage, and its trace.
    records = read_records(work / "run").records
    assert len(records) == 2 and all(r.status == "answered" and r.correct for r in records)
    assert all(r.usage.calls > 0 and (work / "run" / r.trace).is_file() for r in records)
    assert (work / "memories" / "sample").is_dir()
    assert (work / "run" / "report.md").is_file()


def test_videotapestry_eval_reuses_the_lmms_eval_runs_model_calls(work: Path, answered) -> None:
    assert answered[0].returncode == 0
    code = main(
        [
            "eval", "--benchmark", "jsonl", "--annotations", str(work / "ours.jsonl"),
            "--videos", str(work / "hf" / "videomme" / "data"),
            "--memories", str(work / "memories"), "--out", str(work / "eval-run"),
            "--limit", "2", "--quiet", "--profile", PROFILE,
            "-o", "cache.enabled=true", "-o", f"cache.path={work / 'cache.sqlite'}",
        ]
    )  # fmt: skip
    assert code == 0
    records = read_records(work / "eval-run").records
    assert len(records) == 2 and all(r.status == "answered" and r.correct for r in records)
    # Every call the method made was one the lmms-eval run had already paid for.
    assert all(r.usage.calls > 0 and r.usage.cached_calls == r.usage.calls for r in records)


def test_a_missing_video_or_memory_fails_its_request_not_the_run(work: Path) -> None:
    process, results = lmms_eval_run(
        work, FAILING_TASK, "out-failing", method_args(work, "no-memories", "run-failing")
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert results is not None and results["results"][FAILING_TASK]
    logged = samples(work, "out-failing", FAILING_TASK)
    responses = [s["filtered_resps"] for s in logged]
    missing_video, missing_memory = sorted(responses, key=lambda r: "missingmemory" in r)
    assert missing_video.startswith("[videotapestry error] missingvideoerror")
    assert "absent.mp4 does not exist" in missing_video
    assert missing_memory.startswith("[videotapestry error] missingmemoryerror")
    assert str(work / "no-memories" / "sample").lower() in missing_memory
    assert "add build_missing=true to --model_args" in missing_memory
    # Video-MME's extraction reads no letter from either, so both are scored wrong.
    assert [s["videomme_perception_score"]["pred_answer"] for s in logged] == ["", ""]
    assert results["results"][FAILING_TASK]["videomme_perception_score,none"] == 0.0
    # The log keeps each error as it was said.
    assert "MissingMemoryError: no memory" in process.stderr + process.stdout
    # Neither left a memory behind: build_missing was not given.
    assert not (work / "no-memories" / "sample").exists()
    [record] = read_records(work / "run-failing").records
    assert record.status == "failed" and record.error_type == "MissingMemoryError"


def test_the_same_failure_on_the_first_questions_stops_the_lmms_eval_run(work: Path) -> None:
    """With stop_after=1 the missing memory is a failure every question would repeat: the
    run stops with the reason instead of a results file that scores the rest as wrong."""
    args = method_args(work, "no-memories", "run-stopped", stop_after="1")
    process, results = lmms_eval_run(work, FAILING_TASK, "out-stopped", args)
    said = process.stdout + process.stderr
    assert results is None, "lmms-eval scored a run that stopped"
    assert "RunStoppedError" in said and "the run stopped early" in said
    assert "rerun with the same output_dir to resume" in said
    [record] = read_records(work / "run-stopped").records
    assert record.status == "failed" and record.error_type == "MissingMemoryError"


def test_log_likelihood_requests_are_refused_not_scored(work: Path) -> None:
    from videotapestry.integrations.lmms_eval import VideoTapestryLMMS

    model = VideoTapestryLMMS(
        memory_root=str(work / "memories"), output_dir=str(work / "run-ll"), profile=PROFILE
    )
    try:
        with pytest.raises(NotImplementedError, match="generate_until requests only"):
            model.loglikelihood([])
        with pytest.raises(NotImplementedError, match="multi-round"):
            model.generate_until_multi_round([])
    finally:
        model.clean()
