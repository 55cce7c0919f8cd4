"""Following a stream URL (SPEC §16: "an RTSP/RTMP URL that FFmpeg opens").

Test-only RTSP and RTMP servers on 127.0.0.1 (``live_stream_servers``) play a generated
video at several times real time. Over RTSP, a 2-minute video with a fact on screen every
20 s or so is followed by ``build-memory URL MEM --follow`` as a real process with the
offline model, and asked with the URL; over RTMP, a video with AAC audio is followed twice
into one folder (a restart), in process. SRT and the TLS forms take the same follower;
only their dispatch is tested.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from live_stream_servers import RtmpServer, RtspServer
from method_support import run_cli_output

from memory_builders.followers import HlsFollower, make_follower
from memory_builders.recording import Recording
from memory_builders.sources import shown_url
from memory_builders.stream_url import StreamUrlFollower
from videotapestry.config import load_config
from videotapestry.memory import load_memory
from videotapestry.testing.fact_videos import FactVideo, make_fact_video
from videotapestry.testing.live_media import h264_like
from videotapestry.video import probe

ROOT = Path(__file__).resolve().parents[1]
FOLLOW = [
    "-o", "builder.follow.append_every_s=40", "-o", "builder.follow.poll_s=0.2",
    "-o", "builder.follow.idle_end_s=10", "-o", "builder.follow.segment_s=10",
]  # fmt: skip

#: Questions look at a few frames: the answer is in the memory's text.
ASK = ["-o", "agents.overview.max_frames=12", "-o", "agents.skim.max_frames=12",
       "-o", "agents.focus.max_frames=12"]  # fmt: skip


def closed_port() -> int:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return int(unused.getsockname()[1])


def test_stream_urls_are_followed_by_the_stream_follower(tmp_path: Path) -> None:
    settings = load_config("default").builder.follow
    for url in ("rtsp://127.0.0.1:9/live", "RTMP://127.0.0.1:9/live/s", "rtmps://h/a",
                "rtsps://h/a", "srt://127.0.0.1:9"):  # fmt: skip
        follower = make_follower(url, tmp_path / "segments", settings)
        assert isinstance(follower, StreamUrlFollower) and follower.whole_segments
        assert follower._thread is None  # nothing is opened before the first poll
    assert isinstance(make_follower("http://h/x.m3u8", tmp_path / "s", settings), HlsFollower)
    # The recording of a stream URL is MPEG-TS, as its segments.
    assert Recording(tmp_path / "live", "rtsp://127.0.0.1:9/live").stream.name == "stream.ts"
    # A password in the URL is not repeated in messages.
    assert shown_url("rtsp://cam:secret@10.0.0.9/s") == "rtsp://cam:***@10.0.0.9/s"


def test_an_unreachable_stream_url_is_a_clear_error_after_idle_end_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"rtmp://127.0.0.1:{closed_port()}/live/s"
    started = time.monotonic()
    code, _, err = run_cli_output(
        capsys, "build-memory", url, str(tmp_path / "mem"), "--follow", "--profile", "offline",
        "-o", "builder.follow.idle_end_s=1.5", "-o", "builder.follow.poll_s=0.2",
    )  # fmt: skip
    took = time.monotonic() - started
    assert code != 0
    assert f"cannot open {url}: Connection refused (tried for 1.5 s" in err, err
    assert 1.5 <= took < 8, took


@pytest.fixture(scope="module")
def fact_video(tmp_path_factory: pytest.TempPathFactory) -> FactVideo:
    folder = tmp_path_factory.mktemp("stream-video")
    return make_fact_video(folder / "talk.mp4", duration_s=120.0, count=4, seed=3)


def encode_h264(video: Path, target: Path) -> Path:
    """``video`` as H.264 in MPEG-TS, a keyframe every 2 s: what a camera would send."""
    import av

    with av.open(str(video)) as source, av.open(str(target), "w", format="mpegts") as out:
        stream_in = source.streams.video[0]
        rate = stream_in.average_rate or Fraction(1)
        stream = h264_like(out, stream_in, rate, max(1, round(float(rate) * 2)), {"crf": "28"})
        for frame in source.decode(stream_in):
            image = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), "rgb24")
            out.mux(stream.encode(image))
        out.mux(stream.encode(None))
    return target


def make_av_video(path: Path, seconds: int, fps: int = 10) -> Path:
    """H.264 (a keyframe every 2 s, grey levels that change every frame) with AAC audio."""
    import av
    import numpy as np

    with av.open(str(path), "w", format="mp4") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = 160, 96, "yuv420p"
        video.options = {"preset": "superfast", "x264-params": f"keyint={2 * fps}:scenecut=0"}
        audio = out.add_stream("aac", rate=16000)
        audio.layout = "mono"
        samples = 0
        for number in range(seconds * fps):
            image = np.full((96, 160, 3), number * 7 % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(image, "rgb24")
            frame.pts, frame.time_base = number, Fraction(1, fps)
            out.mux(video.encode(frame))
            while samples < (number + 1) * 16000 // fps:
                sound = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), "fltp", "mono")
                sound.sample_rate, sound.pts, sound.time_base = 16000, samples, Fraction(1, 16000)
                out.mux(audio.encode(sound))
                samples += 1024
        out.mux(video.encode(None))
        out.mux(audio.encode(None))
    return path


def follow_to_end(follower: StreamUrlFollower) -> None:
    deadline = time.monotonic() + 60
    while not follower.poll():
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.slow
def test_an_rtmp_stream_with_audio_followed_twice_makes_one_recording(tmp_path: Path) -> None:
    """The server's clock starting over within a connection (a publisher reconnecting),
    and a second run on the same folder (a restart; a reconnect is the same): what comes
    after is put after what was recorded, in name and in time, so the joined stream remuxes
    to one video with its sound, every frame of both runs in it."""
    import av

    settings = load_config("default").builder.follow.model_copy(
        update={"idle_end_s": 5.0, "segment_s": 4.0}
    )
    with RtmpServer(make_av_video(tmp_path / "camera.mp4", 20), speed=20, plays=2) as server:
        recording = Recording(tmp_path / "live", server.url)
        for _ in range(2):
            follow_to_end(StreamUrlFollower(server.url, recording.segments, settings))
            assert recording.append_new() > 0
            recording.update_mp4()
    names = sorted(p.name for p in recording.segments.iterdir())
    assert names == [f"seg_{n:06d}.ts" for n in range(len(names))] and len(names) == 20
    # Each of the three joins may leave out a fraction of a second: never a frame.
    assert probe(recording.path).duration_s == pytest.approx(80.0, abs=1.5)
    with av.open(str(recording.path)) as mp4:
        assert [s.type for s in mp4.streams] == ["video", "audio"]
        assert sum(1 for _ in mp4.decode(video=0)) == 800
        sound = mp4.streams.audio[0]
        assert sound.duration and sound.time_base and sound.duration * sound.time_base > 79


@pytest.mark.slow
def test_an_rtsp_stream_is_recorded_into_a_memory_that_answers_from_it(
    fact_video: FactVideo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mem"
    with RtspServer(encode_h264(fact_video.path, tmp_path / "camera.ts"), speed=12) as server:
        done = subprocess.run(
            [sys.executable, "-m", "videotapestry.cli", "build-memory", server.url, str(out),
             "--follow", "--profile", "offline", "--json", *FOLLOW],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    versions = [json.loads(line) for line in done.stdout.splitlines()]
    # Versions were published while the stream went on; the last once the server ended it.
    assert len(versions) >= 2 and versions[0]["covered_s"] < 100
    assert versions[-1]["ended"] and versions[-1]["covered_s"] >= 115
    # Recorded in whole segments of about segment_s, named in order.
    segments = sorted((out / "live" / "segments").iterdir())
    assert [p.name for p in segments] == [f"seg_{n:06d}.ts" for n in range(len(segments))]
    assert 10 <= len(segments) <= 13
    # The clips cover the stream, and every fact is in the memory at its time.
    memory = load_memory(out)
    clips = memory.clips
    assert clips[0].time_range.start == 0 and clips[-1].time_range.end >= 115
    texts = {n.text: n.time_range for n in memory.nodes() if n.kind == "OCRText"}
    for fact in fact_video.facts:
        shown = [span for text, span in texts.items() if fact.code in text]
        assert shown and any(abs(s.start - fact.start_s) <= 3 for s in shown), (fact, shown)
    # Asked with the URL it followed (the server gone), the memory reads its recording.
    fact = fact_video.facts[2]
    code, text, err = run_cli_output(
        capsys, "ask", server.url, "--memory", str(out), "--profile", "offline", "--json",
        *ASK, "--question", f"What is the code shown for {fact.label}?",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(text)
    assert fact.code in result["answer_text"]
    assert result["memory_covers"]["ended"] and result["memory_covers"]["source"] == server.url
