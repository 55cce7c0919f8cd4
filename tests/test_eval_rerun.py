"""A run directory another lab can repeat: what ``run.json`` records, and ``eval --rerun``.

The record is checked against a run on the fake server that answers with a dated model
snapshot (so the model the server reported is told apart from the one configured); the
repeat against a finished run of the offline model (deterministic, so a repeat must give
the same records), with a shipped template edited between the run and its repeat.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
from pathlib import Path

import pytest
from eval_support import header, write_run
from method_support import MINILM
from title_eval import TITLES, annotations, eval_args

from videotapestry.cli import main
from videotapestry.config import load_config
from videotapestry.errors import ConfigError
from videotapestry.eval.provenance import (
    NOT_INSTALLED,
    PACKAGES,
    memory_fingerprint,
    package_versions,
    print_differences,
)
from videotapestry.eval.rerun import prompt_drift, rerun_config
from videotapestry.eval.run_reader import PromptRecord, VideoPrints, read_run_info
from videotapestry.memory import ensure_embeddings, save_memory
from videotapestry.prompts import short_hash
from videotapestry.resources import prompts_dir
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.memories import synthetic_memory
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import fingerprint

SNAPSHOT = "gpt-5.5-2026-03-05"
#: What a record holds that a repeat cannot: how long things took.
TIMINGS = re.compile(r'"(elapsed_s|latency_s)": [0-9.e-]+')


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """Three one-minute videos (one file, three names) with small memories titled apart."""
    root = tmp_path_factory.mktemp("rerun")
    videos = root / "videos"
    make_test_video(videos / "v0.mp4", 60, fps=2, size=(160, 90), scene_s=30)
    for n in (1, 2):
        (videos / f"v{n}.mp4").symlink_to(videos / "v0.mp4")
    video_print = fingerprint(videos / "v0.mp4")
    for n in range(3):
        memory = synthetic_memory(
            duration_s=60,
            supers=1,
            macros_per_super=2,
            seed=n,
            fingerprint=video_print,
            title=TITLES[n],
        )
        save_memory(ensure_embeddings(memory, embedder), root / "memories" / f"v{n}")
    return root


def _overrides(args: list[str]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == "-o"]


@pytest.mark.slow
def test_run_json_records_what_a_repeat_needs(data: Path, tmp_path: Path, api_key: str) -> None:
    questions = annotations(tmp_path / "q.jsonl", 3)
    run = tmp_path / "run"
    with FakeOpenAIServer(served_model=SNAPSHOT) as server:
        server.on(None, ScriptedModel())
        args = eval_args(data, questions, run, server, "--limit", "2")
        assert main(args) == 0
        info = read_run_info(run)

        # The full resolved config, as the command's options resolve it.
        assert info.config == load_config(overrides=_overrides(args)).model_dump(mode="json")
        # Every template's hash and full text, partials included.
        assert set(info.prompts) == set(info.prompt_hashes)
        assert any(name.startswith("_") for name in info.prompts)
        for name, record in info.prompts.items():
            assert record.hash == info.prompt_hashes[name] == short_hash(record.text)
            assert not record.overridden
        shipped = (prompts_dir() / "final_answer.jinja").read_text(encoding="utf-8")
        assert info.prompts["final_answer"].text == shipped
        # The model the server reported, beside the one the config names.
        assert info.models["answer"] == "gpt-5.5"
        assert info.served_models["answer"] == [SNAPSHOT]
        # Package versions.
        assert set(info.packages) == {"python", *PACKAGES}
        assert info.packages["openai"] == importlib.metadata.version("openai")
        # Each video's and memory's fingerprint.
        assert set(info.fingerprints) == {"v0.mp4", "v1.mp4"}
        prints = info.fingerprints["v1.mp4"]
        assert prints.video == fingerprint(data / "videos" / "v1.mp4")
        assert prints.memory == memory_fingerprint(data / "memories" / "v1")
        assert prints.memory_video == prints.video  # the memory was built from this video
        assert info.fingerprints["v0.mp4"].memory != prints.memory  # titled apart
        # The command line, the questions and the files.
        assert info.command == ["videotapestry", *args]
        assert info.selection is not None and info.inputs is not None
        assert (info.selection.limit, info.selection.question_ids) == (2, ["q0", "q1"])
        assert info.inputs.videos == str((data / "videos").resolve())
        assert info.inputs.memories == str((data / "memories").resolve())

        # A resumed run with a larger --limit adds to what the first invocation recorded.
        assert main(eval_args(data, questions, run, server, "--limit", "3")) == 0
    info = read_run_info(run)
    assert info.selection is not None and info.selection.question_ids == ["q0", "q1", "q2"]
    assert set(info.fingerprints) == {"v0.mp4", "v1.mp4", "v2.mp4"}
    assert info.served_models["answer"] == [SNAPSHOT]


def test_a_run_json_written_before_these_fields_still_reads_but_cannot_be_repeated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "old", [], header(command=["videotapestry", "eval", "--x"]))
    info = read_run_info(run)
    assert info.prompts == {} and info.selection is None and info.fingerprints == {}
    assert main(["eval", "--rerun", str(run), "--output", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert "records no prompt texts, question selection, input paths" in err
    assert "videotapestry eval --x" in err
    assert not (tmp_path / "new").exists()


# --------------------------------------------------------------------------- --rerun


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped templates standing in for them, so a test can edit one."""
    copy = tmp_path / "shipped-prompts"
    shutil.copytree(prompts_dir(), copy)
    monkeypatch.setattr("videotapestry.prompts.prompts_dir", lambda: copy)
    return copy


def _offline_run(data: Path, questions: Path, run: Path) -> list[str]:
    return [
        "eval", "--benchmark", "jsonl", "--annotations", str(questions),
        "--no-video", "--memories", str(data / "memories"),
        "--out", str(run), "--quiet", "--concurrency", "1", "--profile", "offline",
        "-o", "cache.enabled=false", "-o", f"embedding.model={MINILM}",
    ]  # fmt: skip


def _records(run: Path) -> list[str]:
    """results.jsonl's lines with the timings blanked: everything else must repeat."""
    text = (run / "results.jsonl").read_text(encoding="utf-8")
    return TIMINGS.sub(r'"\1": 0', text).splitlines()


@pytest.mark.slow
def test_a_rerun_repeats_an_offline_run_with_its_recorded_prompts(
    data: Path, tmp_path: Path, shipped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = annotations(tmp_path / "q.jsonl", 2)
    old, new = tmp_path / "old", tmp_path / "new"
    assert main(_offline_run(data, questions, old)) == 0
    recorded = read_run_info(old)
    capsys.readouterr()
    assert main(["eval", "--rerun", str(old), "--list"]) == 0  # what a rerun would ask
    listed = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["q0", "q1"]

    # The shipped Answer prompt is edited after the run.
    template = shipped / "final_answer.jinja"
    text = template.read_text(encoding="utf-8")
    template.write_text(text.replace("{% block system %}\n", "{% block system %}\nBe brief.\n", 1))

    assert main(["eval", "--rerun", str(old), "--output", str(new), "--quiet"]) == 0
    captured = capsys.readouterr()
    drift = [line for line in captured.err.splitlines() if "rerun: prompt" in line]
    assert len(drift) == 1 and drift[0].startswith("videotapestry: rerun: prompt final_answer:")
    assert f"videotapestry compare {old} {new}" in captured.out

    # Same records (each line byte for byte; the order is the order questions finished),
    # asked with the recorded texts, not the edited file, and the same config.
    assert sorted(_records(new)) == sorted(_records(old))
    repeat = read_run_info(new)
    assert (new / "prompts" / "final_answer.jinja").read_text(encoding="utf-8") == text
    assert repeat.prompt_hashes == recorded.prompt_hashes
    assert repeat.config_hash == recorded.config_hash
    assert repeat.config["prompts"]["override_dir"] == str((new / "prompts").resolve())
    assert repeat.rerun_of == str(old.resolve())
    assert repeat.selection is not None and recorded.selection is not None
    assert repeat.selection.question_ids == recorded.selection.question_ids
    assert repeat.fingerprints == recorded.fingerprints
    assert "answer" in repeat.served_models
    assert (
        repeat.served_models
        == recorded.served_models
        == {role: ["offline-rules"] for role in repeat.served_models}
    )

    # compare shows no flip between the run and its repeat.
    assert main(["compare", str(old), str(new)]) == 0
    shown = capsys.readouterr().out
    assert "right only in A 0, right only in B 0" in shown
    assert "prompts: same hashes" in shown
    # The one setting that differs is where the prompts were read from, not what they say.
    assert "config (1 keys):\n    prompts.override_dir: null -> " in shown


def test_a_rerun_refuses_what_would_change_the_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["eval", "--rerun", str(run), "--limit", "1", "--variant", "direct"]
    assert main(args) == 2
    assert "drop --limit, --variant" in capsys.readouterr().err

    config = load_config(profile="offline")
    info = read_run_info(
        write_run(run, [], header(config=config.model_dump(mode="json"), config_hash="x"))
    )
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    with pytest.raises(ConfigError, match=r"agents\.overview\.max_frames: 120 in the run, 10 now"):
        rerun_config(info, prompts, ["agents.overview.max_frames=10"])
    moved, notes = rerun_config(info, prompts, ["models.default.timeout_s=61"])
    assert moved.models.default.timeout_s == 61 and notes == []
    assert moved.prompts.override_dir == str(prompts)


def test_prompt_drift_names_each_template_that_differs() -> None:
    def record(text: str, overridden: bool = False) -> PromptRecord:
        return PromptRecord(hash=short_hash(text), text=text, overridden=overridden)

    recorded = {"a": record("same"), "b": record("old"), "c": record("mine", True)}
    shipped = {"a": record("same"), "b": record("new"), "d": record("added")}
    lines = prompt_drift(recorded, shipped)
    assert [line.split(":")[0] for line in lines] == ["prompt b", "prompt c", "prompt d"]
    assert f"({short_hash('old')}) differs from today's shipped template" in lines[0]
    assert "an override, not a shipped template" in lines[1]
    assert "today's text is used" in lines[2]


def test_provenance_helpers(tmp_path: Path) -> None:
    versions = package_versions(["videotapestry", "no-such-distribution-here"])
    assert versions["no-such-distribution-here"] == NOT_INSTALLED
    assert versions["videotapestry"] == importlib.metadata.version("videotapestry")

    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "memory.json").write_text("{}")
    first = memory_fingerprint(memory)
    assert first is not None and memory_fingerprint(tmp_path / "absent") is None
    (memory / "memory.json").write_text("{ }")
    assert memory_fingerprint(memory) != first

    recorded = {"v.mp4": VideoPrints(video="v1-a", memory="m1-a"), "w.mp4": VideoPrints()}
    now = {"v.mp4": VideoPrints(video="v1-a", memory="m1-b"), "w.mp4": VideoPrints(video="x")}
    assert print_differences(recorded, now) == [
        "v.mp4: the memory differs from the recorded run's (m1-a -> m1-b)"
    ]
