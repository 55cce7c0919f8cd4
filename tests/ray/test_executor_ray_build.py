"""Building many videos' memories on Ray (issue 14): a local Ray instance on 127.0.0.1 with
2 CPUs, generated videos with scene changes, the real builder in Ray worker processes and
the scripted builder model on the fake server, which sees every request the workers make."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import RAY_TEST_KEY

from videotapestry.config import Config, load_config
from videotapestry.executors import BuildJob, LocalExecutor, build_memories
from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.ray_cluster import ray_worker_pids
from videotapestry.testing.scripted_builder import (
    ScriptedBuilderModel,
    offline_build_overrides,
    perception_requests,
)

pytestmark = [pytest.mark.usefixtures("ray_deadline"), pytest.mark.slow, pytest.mark.ray]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", RAY_TEST_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[TestVideo]:
    """Three short videos in 10 s scenes (4, 5 and 6 clips)."""
    folder = tmp_path_factory.mktemp("ray-videos")
    return [
        make_test_video(folder / f"{name}.mp4", seconds, fps=4, size=(192, 108), scene_s=10)
        for name, seconds in (("hall", 40), ("yard", 50), ("attic", 60))
    ]


def config(server: FakeOpenAIServer, *overrides: str) -> Config:
    # No response cache: each build computes every reply itself.
    return load_config(
        overrides=offline_build_overrides(
            server.base_url,
            "builder.ocr.engine=none",
            "builder.macro.min_s=30",
            "builder.concurrency=2",
            "cache.enabled=false",
            *overrides,
        )
    )


def jobs(videos: list[TestVideo], root: Path) -> list[BuildJob]:
    return [BuildJob(v.path, root / v.path.stem) for v in videos]


def test_ray_builds_the_same_memories_as_the_local_executor(
    ray_cluster, videos: list[TestVideo], embedder, tmp_path: Path
) -> None:
    longest = max(videos, key=lambda v: v.duration_s)
    with FakeOpenAIServer() as server:
        # The three videos share one scene schedule (10 s scenes from the same list).
        server.on(None, ScriptedBuilderModel(longest.fps, longest.scenes))
        local = LocalExecutor(embedder=embedder).build_memories(
            config(server), jobs(videos, tmp_path / "local")
        )
        local_requests = perception_requests(server.requests)
        server.reset()
        server.on(None, ScriptedBuilderModel(longest.fps, longest.scenes))
        cfg = config(server)
        assert cfg.executor.ray.build.num_cpus == 1  # two videos build at once on 2 CPUs
        ray = build_memories(cfg, jobs(videos, tmp_path / "ray"), executor="ray")
        ray_requests = perception_requests(server.requests)

    assert [o.status for o in local] == [o.status for o in ray] == ["complete"] * 3
    assert [o.job.video for o in ray] == [v.path for v in videos]  # in job order
    # Per clip id over the three videos: one perception call per clip, either way.
    assert ray_requests == local_requests and sum(ray_requests.values()) == 4 + 5 + 6
    for video in videos:
        a = load_memory(tmp_path / "local" / video.path.stem)
        b = load_memory(tmp_path / "ray" / video.path.stem)
        assert a == b  # nodes, relations, unification and clips
        assert len(b.clips) == video.duration_s // 10
        assert a.embeddings is not None and b.embeddings is not None
        assert a.embeddings.ids == b.embeddings.ids
        np.testing.assert_allclose(a.embeddings.vectors, b.embeddings.vectors, atol=1e-5)
    report = next(o.report for o in ray if o.job.video == videos[2].path)
    assert report is not None and report.stages["perception"].computed == 6


def test_a_worker_killed_mid_build_is_retried_and_repeats_no_finished_clip(
    ray_cluster, tmp_path: Path
) -> None:
    video = make_test_video(tmp_path / "rooms.mp4", 120, fps=4, size=(192, 108), scene_s=10)
    out = tmp_path / "memory"
    perception = out / "build" / "perception"
    lock = threading.Lock()
    state: dict = {"seen": 0, "killed": None, "finished": set(), "after": []}

    def kill_at_the_fifth_clip(request) -> None:
        if request.prompt != "builder_clip":
            return
        with lock:
            if state["killed"] is not None:
                state["after"].append(ScriptedBuilderModel.clip_of(request))
                return
            state["seen"] += 1
            if state["seen"] < 5:
                return
            pids = ray_worker_pids("videotapestry-build:rooms.mp4")
            assert len(pids) == 1, pids
            state["finished"] = {p.stem for p in perception.glob("*.json")}
            os.kill(pids[0], signal.SIGKILL)
            state["killed"] = pids[0]

    with FakeOpenAIServer() as server:
        model = ScriptedBuilderModel(video.fps, video.scenes, on_request=kill_at_the_fifth_clip)
        server.on(None, model)
        (outcome,) = build_memories(config(server), [BuildJob(video.path, out)], executor="ray")

    assert state["killed"] is not None, "the worker was never killed"
    assert outcome.status == "complete", outcome.error
    finished = state["finished"]
    assert 1 <= len(finished) < 12
    # The retried task resumed: it took the finished clips from their checkpoints ...
    assert outcome.report is not None
    assert outcome.report.stages["perception"].reused == len(finished)
    # ... and the server saw no perception request again for any of them.
    asked_after = [clip for clip in state["after"] if clip]
    assert not set(asked_after) & finished
    assert set(asked_after) == {f"clip_{k:04d}" for k in range(1, 13)} - finished
    # A clip in flight when the worker died may reach the server twice (the dead worker's
    # request, then the retry's); with concurrency 2 that is at most two clips.
    assert len(asked_after) <= len(set(asked_after)) + 2
    memory = load_memory(out)
    assert len(memory.clips) == 12 and all(c.captions for c in memory.clips)


def test_build_memory_cli_joins_a_cluster_and_reports_each_video(
    ray_cluster, videos: list[TestVideo], tmp_path: Path
) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    for video in videos[:2]:
        (folder / video.path.name).symlink_to(video.path)
    (folder / "broken.mp4").write_text("not a video")
    overrides = offline_build_overrides(
        "http://placeholder", "builder.ocr.engine=none", "builder.macro.min_s=30"
    )
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(videos[1].fps, videos[1].scenes))
        command = [
            sys.executable, "-m", "videotapestry.cli", "build-memory",
            "--videos", str(folder), "--out", str(tmp_path / "memories"), "--quiet", "--json",
            "--executor", "ray", "--ray-address", ray_cluster.address,
            "-o", f"models.default.base_url={server.base_url}", "-o", "cache.enabled=false",
            "-o", "models.default.harness_headers=true",
            # This job's workers import this checkout (as an installed copy would be found).
            "-o", f"executor.ray.runtime_env={{env_vars: {{PYTHONPATH: '{ROOT}'}}}}",
        ]  # fmt: skip
        for item in overrides[1:]:
            command += ["-o", item]
        env = {**os.environ, **ray_cluster.worker_env(), "PYTHONPATH": str(ROOT)}
        result = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280
        )
    assert result.returncode == 2, result.stderr  # one video could not be built
    assert "broken.mp4" in result.stderr and "Traceback" not in result.stderr
    reports = json.loads(result.stdout)
    assert sorted(Path(r["out"]).name for r in reports) == ["hall", "yard"]
    assert all(r["status"] == "complete" for r in reports)
    for video in videos[:2]:
        memory = load_memory(tmp_path / "memories" / video.path.stem)
        assert len(memory.clips) == video.duration_s // 10


def test_nothing_imports_ray_until_chosen_and_without_it_the_error_names_the_extra() -> None:
    # In a process of its own: this one holds the test cluster's Ray.
    code = (
        "import sys, videotapestry.cli, videotapestry.executors, "
        "videotapestry.commands.build_memory, "
        "videotapestry.api, videotapestry.config, videotapestry.eval.runner\n"
        "from videotapestry.cli import build_parser\n"
        "build_parser()\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
        "sys.modules['ray'] = None  # as if Ray were not installed\n"
        "from videotapestry.config import load_config\n"
        "from videotapestry.errors import OptionalDependencyError\n"
        "from videotapestry.executors import make_executor\n"
        "try:\n"
        "    make_executor(load_config(), 'ray')\n"
        "except OptionalDependencyError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'videotapestry[ray]'" in result.stdout


def test_an_address_where_no_cluster_listens_is_an_error_at_once(tmp_path: Path) -> None:
    """Ray alone would retry for minutes; the command says what is wrong in seconds."""
    pytest.importorskip("ray")
    make_test_video(tmp_path / "videos" / "a.mp4", 4, fps=4, size=(96, 54), scene_s=2)
    command = [
        sys.executable, "-m", "videotapestry.cli", "build-memory",
        "--videos", str(tmp_path / "videos"), "--out", str(tmp_path / "memories"),
        "--executor", "ray", "--ray-address", "127.0.0.1:1",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no Ray cluster answers at 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "memories").exists()
