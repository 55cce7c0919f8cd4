"""Frames decoded and encoded in worker processes (``video.decode_workers``): the same images
as in a thread, errors raised as in a thread, Ctrl-C ignored, and no process left behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from method_support import ask, make_vt

from videotapestry.config import ImagesConfig, OverviewSettings, VideoConfig
from videotapestry.errors import VideoError, VideoUnreadableError, VideoWindowError
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import FrameJob, FrameWorkers, open_video, render_frames


def job(video: Path, layout: str = "frames", **changes) -> FrameJob:
    with open_video(video) as reader:
        fingerprint = reader.info.fingerprint
    fields = {
        "path": str(video),
        "fingerprint": fingerprint,
        "video": VideoConfig(),
        "windows": ((30.0, 90.0), (600.0, 640.0)),
        "count": 12,
        "layout": layout,
        "images": ImagesConfig(),
        "overview": OverviewSettings() if layout == "grids" else None,
        "max_frames": 50,
    }
    return FrameJob(**{**fields, **changes})


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def workers():
    pool = FrameWorkers(2, 64 * 2**20)
    yield pool
    pool.close()


def test_workers_send_the_images_a_thread_would(video: Path, workers: FrameWorkers) -> None:
    for layout in ("frames", "grids"):
        wanted = job(video, layout)
        with open_video(video) as reader:
            here = render_frames([reader], wanted)
        there = workers.render(wanted)
        assert there.frame_times == here.frame_times and len(here.frame_times) == 12
        assert [i.jpeg for i in there.images] == [i.jpeg for i in here.images]
        assert [i.label for i in there.images] == [i.label for i in here.images]
    assert 1 <= len(workers.pids()) <= 2


def test_a_video_error_in_a_worker_is_raised_as_itself(
    video: Path, workers: FrameWorkers, tmp_path: Path
) -> None:
    with pytest.raises(VideoWindowError, match="outside"):
        workers.render(job(video, windows=((5000.0, 5100.0),)))
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(4096))
    with pytest.raises(VideoUnreadableError, match=r"garbage\.mp4"):
        workers.render(job(video, path=str(garbage)))
    with pytest.raises(VideoError, match="changed since"):
        workers.render(job(video, fingerprint="not-this-file"))
    assert len(workers.render(job(video)).images) == 12  # the workers carry on


def test_workers_ignore_ctrl_c_are_replaced_when_killed_and_stop_on_close(
    video: Path, workers: FrameWorkers
) -> None:
    workers.render(job(video))
    (pid,) = workers.pids()
    os.kill(pid, signal.SIGINT)  # the terminal sends Ctrl-C to the whole process group
    assert len(workers.render(job(video)).images) == 12 and workers.pids() == [pid]
    os.kill(pid, signal.SIGKILL)  # a decoder crash
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(workers.render(job(video)).images) == 12
    (replacement,) = workers.pids()
    assert replacement != pid
    workers.close()
    assert workers.pids() == [] and not alive(replacement)


def test_a_question_with_decode_workers_sees_what_one_without_sees(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    in_thread = ask(make_vt(server, embedder), video)
    vt = make_vt(server, embedder, "video.decode_workers=2")
    in_workers = ask(vt, video)  # ask closes the facade: the workers stop
    assert vt.frame_workers is not None and vt.frame_workers.pids() == []

    def seen(result):
        return [(image.label, image.timestamps, image.jpeg) for image in result.images]

    assert seen(in_workers) == seen(in_thread) and seen(in_thread)
    assert in_workers.answer == in_thread.answer
