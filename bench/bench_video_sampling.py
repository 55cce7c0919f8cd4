"""Uniform sampling of 120 frames from a 60-minute 640x360 H.264 video with long GOPs.

Compares, in the same run, each method in a fresh process (so peak memory is its own):

- ours          open_video + sample_uniform with the default config (PyAV, keyframe snapping)
- ours_exact    the same with keyframe_snap=0: the exact centre frame of every slot
- decord        our decord reader, keyframe snapping (``video.backend=decord``)
- decord_exact  our decord reader, exact centre frames
- opencv        our OpenCV reader (it cannot see keyframes: exact centre frames)
- cv_seek       naive OpenCV: set CAP_PROP_POS_FRAMES, read, for each frame
- cv_sequential one sequential OpenCV pass, grabbing every frame, retrieving the wanted ones

Every method's frames are checked against the frame index burned into the pixels. The video
(keyframe every 250 frames = 10 s, B-frames, no scene-cut keyframes) is generated on the
first run into bench/.cache/ (a few minutes) and reused afterwards.

    python bench/bench_video_sampling.py [--minutes 60] [--count 120] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchkit import cache_dir, smoke

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "0.5", "--count", "12")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: long_.* sampling \d+ frames uniformly",
    r"^method +frames +wrong +seconds",
    r"^ours +\d+ +\d+ ",
    r"^cv_sequential +\d+ +\d+ ",
)
METHODS = (
    "ours",
    "ours_exact",
    "decord",
    "decord_exact",
    "opencv",
    "cv_seek",
    "cv_sequential",
)
READER_CONFIGS = {
    "ours": {},
    "ours_exact": {"keyframe_snap": 0.0},
    "decord": {"backend": "decord"},
    "decord_exact": {"backend": "decord", "keyframe_snap": 0.0},
    "opencv": {"backend": "opencv"},
}


def long_video(minutes: float, *, gop: int = 250) -> Path:
    from videotapestry.testing.media import make_h264_video
    from videotapestry.video import probe

    path = cache_dir(f"long_{minutes:g}min_640x360_gop{gop}.mp4")
    if path.exists():
        try:
            probe(path)
            return path
        except Exception:
            path.unlink()
    print(f"generating {path.name} (one-off, cached) ...", file=sys.stderr, flush=True)
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 9000 == 0:
            print(f"  {done}/{total} frames", file=sys.stderr, flush=True)

    make_h264_video(
        path, minutes * 60, fps=25.0, size=(640, 360), gop_frames=gop, progress=progress
    )
    print(f"  done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return path


def target_indices(frame_count: int, fps: float, count: int) -> list[int]:
    from videotapestry.video.sampling import plan_uniform_indices

    return plan_uniform_indices(0.0, frame_count / fps, count, fps=fps, frame_count=frame_count)


def run_method(method: str, path: str, count: int) -> dict:
    """One method, in this (fresh) process: time, frames, correctness, peak memory."""
    import cv2

    from videotapestry.config import VideoConfig
    from videotapestry.testing.media import read_frame_index
    from videotapestry.video import open_video, probe, sample_uniform

    info = probe(path)
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    pairs: list[tuple[int, object]] = []  # (claimed index, RGB or BGR image)
    if method in READER_CONFIGS:
        with open_video(path, VideoConfig(**READER_CONFIGS[method])) as reader:
            frames = sample_uniform(reader, 0.0, reader.info.duration_s, count)
        pairs = [(f.index, f.image) for f in frames]
    else:
        wanted = target_indices(info.frame_count, info.fps, count)
        capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
        if method == "cv_seek":
            for index in wanted:
                capture.set(cv2.CAP_PROP_POS_FRAMES, index)
                ok, image = capture.read()
                if ok:
                    pairs.append((index, image))
        else:
            remaining = set(wanted)
            index = 0
            while remaining and capture.grab():
                if index in remaining:
                    ok, image = capture.retrieve()
                    if ok:
                        pairs.append((index, image))
                    remaining.discard(index)
                index += 1
        capture.release()
    elapsed = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wrong = sum(1 for index, image in pairs if _index_or_none(read_frame_index, image) != index)
    return {
        "method": method,
        "frames": len(pairs),
        "seconds": elapsed,
        "wrong_frames": wrong,
        "peak_rss_mb": peak_kb / 1024,
        "peak_rss_growth_mb": (peak_kb - baseline_kb) / 1024,
    }


def _index_or_none(reader, image) -> int | None:
    try:
        return reader(image)
    except ValueError:
        return None


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--video", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:  # child process
        print(json.dumps(run_method(args.method, args.video, args.count)))
        return

    from videotapestry.video import probe

    path = long_video(args.minutes)
    info = probe(path)
    print(
        f"video: {path.name}, {info.duration_s / 60:.0f} min, {info.width}x{info.height}, "
        f"{info.fps:g} fps, {info.frame_count} frames, {path.stat().st_size / 1e6:.0f} MB; "
        f"sampling {args.count} frames uniformly"
    )
    results = {}
    for method in METHODS:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--method",
                method,
                "--video",
                str(path),
                "--count",
                str(args.count),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        results[method] = json.loads(out.stdout.strip().splitlines()[-1])
    seek = results["cv_seek"]["seconds"]
    sequential = results["cv_sequential"]["seconds"]
    print(
        f"{'method':<14} {'frames':>6} {'wrong':>5} {'seconds':>8} {'frames/s':>9} "
        f"{'vs seek':>8} {'vs seq':>7} {'peak RSS':>9} {'growth':>7}"
    )
    for method in METHODS:
        r = results[method]
        print(
            f"{method:<14} {r['frames']:>6} {r['wrong_frames']:>5} {r['seconds']:>8.2f} "
            f"{r['frames'] / r['seconds']:>9.1f} {seek / r['seconds']:>7.1f}x "
            f"{sequential / r['seconds']:>6.1f}x {r['peak_rss_mb']:>7.0f}MB "
            f"{r['peak_rss_growth_mb']:>5.0f}MB"
        )


if __name__ == "__main__":
    main()
