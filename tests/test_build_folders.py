"""One writer per memory folder (issue 38 item 3), with real builds against the fake server.

Two ``build-memory`` processes into one folder: the second is refused at once, naming the
first (its process id and video), and the first finishes untouched, even though the second
asked for ``--restart``. A build of another video into a folder holding a memory is refused
unless ``--force``. In the served app, ``a/talk.mp4`` and ``b/talk.mp4`` get folders of their
own by default, two concurrent build jobs into one folder leave one memory and one clear
failure, and a build job takes ``force`` as the CLI takes ``--force``.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from serve_support import start_server
from test_builder_cli import ROOT, environment
from test_builder_cli import cli as builder_cli

from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.scripted_builder import ScriptedBuilderModel

pytestmark = pytest.mark.slow


def cli(*args: str, base_url: str) -> list[str]:
    """``build-memory`` as test_builder_cli runs it, quiet and without the reply cache."""
    return builder_cli(*args, "--quiet", base_url=base_url, extra=("cache.enabled=false",))


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestVideo, TestVideo]:
    """Two different videos: 60 s and 40 s, in 10 s scenes."""
    folder = tmp_path_factory.mktemp("folders")
    first = make_test_video(folder / "rooms.mp4", 60, fps=4, size=(192, 108), scene_s=10)
    second = make_test_video(folder / "halls.mp4", 40, fps=4, size=(192, 108), scene_s=10)
    return first, second


def build(video: TestVideo, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """One ``build-memory`` run to its end, against a fake server of its own."""
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(video.fps, video.scenes))
        command = cli(str(video.path), str(out), *extra, base_url=server.base_url)
        return subprocess.run(
            command, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=600
        )


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return data


def test_a_second_build_into_a_folder_being_built_is_refused_naming_the_first(
    videos: tuple[TestVideo, TestVideo], tmp_path: Path
) -> None:
    video, _ = videos
    out = tmp_path / "memory"
    entered, release = threading.Event(), threading.Event()
    seen = {"clip": 0}
    lock = threading.Lock()

    def hold_the_first_clip(request: Any) -> None:
        if request.prompt != "builder_clip":
            return
        with lock:
            seen["clip"] += 1
            first = seen["clip"] == 1
        if first:  # the first build waits here, holding the folder, until the test lets go
            entered.set()
            release.wait(timeout=300)

    with FakeOpenAIServer() as server:
        server.on(
            None, ScriptedBuilderModel(video.fps, video.scenes, on_request=hold_the_first_clip)
        )
        first = subprocess.Popen(
            cli(str(video.path), str(out), "--concurrency", "2", base_url=server.base_url),
            cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert entered.wait(timeout=300), "the first build never reached perception"
            second = subprocess.run(
                cli(str(video.path), str(out), "--restart", base_url=server.base_url),
                cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=300,
            )  # fmt: skip
        finally:
            release.set()
        _, stderr = first.communicate(timeout=600)
    assert "Traceback" not in second.stderr, second.stderr
    assert second.returncode == 2, second.stderr
    assert f"another build is writing into {out}" in second.stderr
    assert f"process {first.pid}" in second.stderr and str(video.path) in second.stderr
    # The first build was not disturbed: not its checkpoints (--restart was refused), not its
    # staging folder; it finished whole.
    assert first.returncode == 0, stderr
    memory = load_memory(out)
    assert manifest(out)["build"]["status"] == "complete"
    assert len(memory.clips) == 6
    assert not (out / "build" / "lock.json").exists()  # the holder's note goes with it


def test_another_videos_build_into_a_memory_folder_is_refused_unless_forced(
    videos: tuple[TestVideo, TestVideo], tmp_path: Path
) -> None:
    rooms, halls = videos
    out = tmp_path / "memory"
    assert build(rooms, out).returncode == 0
    kept = manifest(out)

    refused = build(halls, out)
    assert "Traceback" not in refused.stderr, refused.stderr
    assert refused.returncode == 2, refused.stderr
    assert "holds the memory of another video" in refused.stderr
    assert str(rooms.path.resolve()) in refused.stderr and "--force" in refused.stderr
    assert manifest(out) == kept  # untouched

    forced = build(halls, out, "--force")
    assert forced.returncode == 0, forced.stderr
    replaced = manifest(out)
    assert replaced["source_path"] == str(halls.path.resolve())
    assert replaced["video_fingerprint"] != kept["video_fingerprint"]
    assert len(load_memory(out).clips) == 4
    # The same video again is no other video: it resumes, no --force needed.
    assert build(halls, out).returncode == 0


def test_served_builds_get_folders_of_their_own_and_one_writer_each(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_test_video(root / "a" / "talk.mp4", 20, fps=2, size=(96, 54), scene_s=10)
    make_test_video(root / "b" / "talk.mp4", 30, fps=2, size=(96, 54), scene_s=10)
    server = start_server(root, tmp_path / "data", "-o", "serve.max_builds=2")
    try:
        # Two builds of one video at once (both default to one folder): one builds, the
        # other is refused by the folder's lock, with a message, and no memory is lost.
        twins = [server.post("/api/jobs", {"kind": "build", "video": "a/talk.mp4"}) for _ in "12"]
        ended = [server.wait_job(job["id"]) for job in twins]
        states = sorted(job["state"] for job in ended)
        assert states == ["done", "failed"], ended
        [failed] = [job for job in ended if job["state"] == "failed"]
        assert "another build is writing into" in failed["error"]
        [done] = [job for job in ended if job["state"] == "done"]
        assert done["result"]["memory"] == "memories/a/talk"

        other = server.wait_job(
            server.post("/api/jobs", {"kind": "build", "video": "b/talk.mp4"})["id"]
        )
        assert other["state"] == "done", other
        assert other["result"]["memory"] == "memories/b/talk"
        listed = {video["path"]: video["memory"] for video in server.get("/api/videos")}
        assert listed == {"a/talk.mp4": "memories/a/talk", "b/talk.mp4": "memories/b/talk"}

        # Another video into a folder holding a memory: refused, unless the job says force.
        into_a = {"kind": "build", "video": "b/talk.mp4", "out": "memories/a/talk"}
        refused = server.wait_job(server.post("/api/jobs", into_a)["id"])
        assert refused["state"] == "failed", refused
        assert "holds the memory of another video" in refused["error"]
        assert "force" in refused["error"]
        forced = server.wait_job(server.post("/api/jobs", {**into_a, "force": True})["id"])
        assert forced["state"] == "done", forced
        assert manifest(root / "memories" / "a" / "talk")["source_path"] == str(
            (root / "b" / "talk.mp4").resolve()
        )
    finally:
        server.stop()
