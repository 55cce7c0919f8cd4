"""``videotapestry build-memory`` as a user runs it: a subprocess against the fake server.

The resume test kills the build with SIGKILL in the middle of perception, then checks from
the server's side that the rerun asks nothing again for a clip that had finished, and that
a third run asks nothing at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.scripted_builder import (
    ScriptedBuilderModel,
    offline_build_overrides,
    perception_requests,
)

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-builder-cli-0123456789abcdef"


def cli(*args: str, base_url: str, extra: tuple[str, ...] = ()) -> list[str]:
    overrides = offline_build_overrides(
        base_url, "builder.ocr.engine=none", "builder.macro.min_s=30", *extra
    )
    command = [sys.executable, "-m", "videotapestry.cli", "build-memory", *args]
    for item in overrides:
        command += ["-o", item]
    return command


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    env["OPENAI_API_KEY"] = KEY
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    """120 s in 10 s scenes: twelve clips."""
    path = tmp_path_factory.mktemp("cli") / "rooms.mp4"
    return make_test_video(path, 120, fps=4, size=(192, 108), scene_s=10)


def test_a_killed_build_resumes_without_repeating_finished_clips(
    video: TestVideo, tmp_path: Path
) -> None:
    out = tmp_path / "memory"
    process: dict[str, subprocess.Popen] = {}
    seen = {"perception": 0}
    lock = threading.Lock()

    def kill_after_five(request) -> None:
        if request.prompt != "builder_clip":
            return
        with lock:
            seen["perception"] += 1
            if seen["perception"] == 5 and "run" in process:
                os.kill(process["run"].pid, signal.SIGKILL)

    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes, on_request=kill_after_five))
        # No response cache: only the checkpoints can spare a repeated call.
        command = cli(
            str(video.path), str(out), "--quiet", "--concurrency", "2",
            base_url=server.base_url, extra=("cache.enabled=false",),
        )  # fmt: skip
        process["run"] = subprocess.Popen(
            command, cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        process["run"].communicate(timeout=240)
        assert process["run"].returncode == -signal.SIGKILL
        assert not (out / "memory.json").exists()
        finished = {p.stem for p in (out / "build" / "perception").glob("*.json")}
        assert 1 <= len(finished) < 12
        del process["run"]

        server.reset()
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        rerun = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr
        asked = perception_requests(server.requests)
        assert not set(asked) & finished  # no finished clip is asked again
        assert set(asked) == {f"clip_{k:04d}" for k in range(1, 13)} - finished
        assert all(n == 1 for n in asked.values())
        memory = load_memory(out)
        assert len(memory.clips) == 12 and all(c.captions for c in memory.clips)

        server.reset()
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        third = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True)
        assert third.returncode == 0, third.stderr
        assert server.requests == []
        assert f"memory up to date, kept: {out}; --restart to build again" in third.stdout
        assert load_memory(out) == memory


def test_many_videos_build_under_one_root_with_an_export(video: TestVideo, tmp_path: Path) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    make_test_video(folder / "short.mp4", 40, fps=4, size=(192, 108), scene_s=10)
    (folder / "rooms.mp4").symlink_to(video.path)
    (folder / "notes.txt").write_text("not a video")
    with FakeOpenAIServer() as server:
        # Both videos follow the same scene schedule (10 s scenes from the same list).
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        command = cli(
            "--videos", str(folder), "--out", str(tmp_path / "memories"), "--quiet", "--json",
            "--export-memdreamer", str(tmp_path / "released"),
            base_url=server.base_url, extra=("cache.enabled=false",),
        )  # fmt: skip
        result = subprocess.run(
            command, cwd=ROOT, env=environment(), capture_output=True, text=True
        )
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert [Path(r["out"]).name for r in reports] == ["rooms", "short"]
    assert all(r["status"] == "complete" for r in reports)
    for stem, clips in (("rooms", 12), ("short", 4)):
        memory = load_memory(tmp_path / "memories" / stem)
        assert len(memory.clips) == clips
        assert (tmp_path / "released" / stem / "phase4" / "hierarchical_graph_final.json").is_file()
        assert (tmp_path / "released" / stem / "embeddings.json").is_file()
        keyframes = list((tmp_path / "released" / stem).glob("phase2_topdown/*/*/features/*/*.jpg"))
        assert keyframes  # each entity's best frame, from the kept frames
    inspect = subprocess.run(
        [
            sys.executable,
            "-m",
            "videotapestry.cli",
            "inspect",
            str(tmp_path / "memories" / "short"),
        ],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
    )
    assert inspect.returncode == 0 and "macro_0000" in inspect.stdout


def test_a_stopped_build_exits_2_with_the_reason(video: TestVideo, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        from videotapestry.testing import FakeReply

        server.on(
            None, lambda r: FakeReply(content="The model `fake-vlm` does not exist", status=404)
        )
        command = cli(
            str(video.path), str(tmp_path / "m"), "--quiet",
            base_url=server.base_url, extra=("cache.enabled=false",),
        )  # fmt: skip
        result = subprocess.run(
            command, cwd=ROOT, env=environment(), capture_output=True, text=True
        )
        assert len(server.requests) == 1
    assert result.returncode == 2
    assert "role builder_clip" in result.stderr and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_key_echoed_by_the_server_reaches_neither_stderr_nor_the_build_report(
    video: TestVideo, tmp_path: Path
) -> None:
    key = "local-credential-7f3a9c2e41b8"  # not shaped like a token: found by its value
    with FakeOpenAIServer() as server:
        from videotapestry.testing import FakeReply

        server.on(None, lambda r: FakeReply(content=f"Incorrect API key: {key}", status=400))
        command = cli(
            str(video.path), str(tmp_path / "m"),
            base_url=server.base_url, extra=("cache.enabled=false",),
        )  # fmt: skip
        env = {**environment(), "OPENAI_API_KEY": key}
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert result.returncode == 2
    assert "Incorrect API key: [REDACTED]" in result.stderr
    assert key not in result.stderr + result.stdout
    reports = list(tmp_path.rglob("build_report.json"))
    assert reports and "[REDACTED]" in reports[0].read_text()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_a_full_disk_stops_the_build_naming_the_directory_and_keeps_its_checkpoints(
    video: TestVideo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """ENOSPC is simulated on the one write path every checkpoint takes (``files``)."""
    import errno
    import io

    from videotapestry import files
    from videotapestry.cli import main

    out = tmp_path / "memory"
    perception = out / "build" / "perception"
    written = []

    class FullDisk(io.BufferedWriter):
        def write(self, data) -> int:  # type: ignore[no-untyped-def]
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_after_three(path, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if "w" in mode and Path(path).parent == perception:
            if len(written) >= 3:
                return FullDisk(io.FileIO(path, "w"))
            written.append(path)
        return open(path, mode, *args, **kwargs)

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        command = cli(
            str(video.path), str(out), "--quiet",
            base_url=server.base_url, extra=("cache.enabled=false",),
        )[3:]  # fmt: skip
        monkeypatch.setattr(files, "open", full_after_three, raising=False)
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"No space left on device while writing in {perception};" in err
        assert "run the same command again" in err and "Traceback" not in err
        kept = {p.stem: p.read_bytes() for p in perception.glob("*.json")}
        assert len(kept) == 3 and all(json.loads(b) for b in kept.values())
        assert not list(perception.glob(".*.tmp"))  # no half-written file left behind
        assert not (out / "memory.json").exists()

        monkeypatch.undo()
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        server.reset()
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        assert main(command) == 0
        asked = perception_requests(server.requests)
        assert not set(asked) & set(kept)  # the checkpoints written before were reused
    assert len(load_memory(out).clips) == 12


@pytest.mark.parametrize("mirror", [False, True])
def test_a_rotated_video_is_built_from_upright_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, mirror: bool
) -> None:
    """A phone's portrait video: the scan keeps its frames turned as a player shows them, so
    the captions see them upright; a mirroring display matrix, which is not applied, is a
    degradation of the build, never ignored in silence."""
    import cv2
    import numpy as np

    from videotapestry.cli import main
    from videotapestry.testing.media import set_display_rotation

    video = make_test_video(tmp_path / "phone.mp4", 20, fps=2, size=(192, 108), scene_s=10)
    set_display_rotation(video.path, 90, mirror=mirror)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        extra = ("builder.keep_frames=true",)
        command = cli(
            str(video.path), str(tmp_path / "m"), "--quiet", base_url=server.base_url, extra=extra
        )
        assert main(command[3:]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "m" / "build_report.json").read_text())
    frames = sorted((tmp_path / "m").glob("**/frames/*.jpg"))
    assert frames
    for path in frames[:3]:
        image = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_COLOR)
        assert image.shape[:2] == (192, 108)  # portrait, as shown
    mirrored = [d for d in report["degradations"] if "mirror" in d["why"]]
    if mirror:
        assert "degraded: frames (probe): the display matrix asks for a mirror image" in out
        assert len(mirrored) == 1
    else:
        assert "degraded" not in out and report["degradations"] == []
