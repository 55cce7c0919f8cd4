"""``ask --library --executor ray`` (issue 41, SPEC §15): the local Ray instance on 127.0.0.1
with 2 CPUs, the offline profile, a library of the sample's memory and a synthetic one. Each
candidate video's run is a Ray task in a worker process; the answer composed on the driver
from the runs that come back is the one the local path gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from method_support import run_cli_output

from videotapestry.api import VideoTapestry
from videotapestry.executors.ray_executor import RayVideoAnswerer
from videotapestry.memory import save_memory
from videotapestry.testing.memories import synthetic_memory

pytestmark = [pytest.mark.usefixtures("ray_deadline"), pytest.mark.slow, pytest.mark.ray]
pytest.importorskip("lancedb")

QUESTION = "What is the door code for Gate B, the delivery gate?"


def comparable(result: dict) -> dict:
    """A library answer without what depends on timing."""
    shown = {k: v for k, v in result.items() if k not in ("elapsed_s", "usage")}
    shown["videos"] = [
        {key: value for key, value in video.items() if key != "usage"} for video in shown["videos"]
    ]
    shown["calls"] = result["usage"]["calls"]
    return shown


def test_ask_library_on_ray_runs_each_video_on_a_worker_and_answers_as_locally(
    ray_cluster, demo_cache: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    root = tmp_path / "root"
    root.mkdir()
    (root / "sample").symlink_to(demo_memory_dir(sample_video_path(), demo_cache))
    save_memory(
        synthetic_memory(duration_s=600.0, supers=2, macros_per_super=3, seed=0, title="Gates"),
        root / "other",
    )
    lib = str(tmp_path / "lib")
    offline = ("--profile", "offline")
    code, out, err = run_cli_output(
        capsys, "library", "index", str(root), "--library", lib, "--quiet", *offline
    )
    assert code == 0 and "2 added" in out, err
    ask = ("ask", "--library", lib, "--question", QUESTION, "--json", *offline)

    code, out, err = run_cli_output(capsys, *ask)
    assert code == 0, err
    local = json.loads(out)
    assert "4417" in local["answer_text"] and local["citations"]

    # On Ray: the driver's own method is out of reach, so every run must come from a worker.
    async def not_here(*args, **kwargs):
        raise AssertionError("a library run was answered in the driver")

    monkeypatch.setattr(VideoTapestry, "aanswer", not_here)
    workers: list[int] = []
    close = RayVideoAnswerer.close

    def record_then_close(self: RayVideoAnswerer) -> None:
        workers.extend(self.worker_pids)
        close(self)

    monkeypatch.setattr(RayVideoAnswerer, "close", record_then_close)
    code, out, err = run_cli_output(capsys, *ask, "--executor", "ray")
    assert code == 0, err
    on_ray = json.loads(out)

    assert comparable(on_ray) == comparable(local)  # answer, citations, videos asked, calls
    assert len(workers) == len(on_ray["videos"]) >= 1
    assert os.getpid() not in workers
