"""Grid packing + JPEG encoding of 120 frames (one Overview call) and of 50 single frames.

Frames are sampled once from a generated, textured 640x360 H.264 video (``--minutes`` long,
cached in bench/.cache/), then the encoding paths are timed on their own with the default
image config (images.grid_max_side for grids, images.frame_max_side for single frames,
jpeg_quality). Prints the median time per call and the bytes a call carries.

    python bench/bench_video_grids.py [--repeats 7] [--minutes 10] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchkit import cache_dir, smoke

from videotapestry.config import load_config
from videotapestry.testing.media import make_h264_video
from videotapestry.video import frame_images, open_video, overview_images, sample_uniform

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "0.5", "--repeats", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^source: .* frames sampled in ",
    r"^overview: \d+ frames -> \d+ grids ",
    r"^skim/focus: \d+ frames -> \d+ labelled JPEGs ",
)


def timed(call, repeats: int):
    timings, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), result


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--minutes", type=float, default=10.0, help="the source video's length")
    args = parser.parse_args()
    path = cache_dir(f"grid_source_{args.minutes:g}min_640x360.mp4")
    if not path.exists():
        make_h264_video(path, args.minutes * 60, fps=25.0, size=(640, 360), gop_frames=250)
    config = load_config()
    with open_video(path, config.video) as reader:
        started = time.perf_counter()
        frames = sample_uniform(reader, 0.0, reader.info.duration_s, 120)
        sampling = time.perf_counter() - started
    overview = config.agents.overview
    print(
        f"source: {path.name}; 120 frames sampled in {sampling:.2f} s; images.grid_max_side="
        f"{config.images.grid_max_side}, jpeg_quality={config.images.jpeg_quality}"
    )

    seconds, grids = timed(lambda: overview_images(frames, config.images, overview), args.repeats)
    total = sum(len(part.jpeg) for part in grids)
    print(
        f"overview: 120 frames -> {len(grids)} grids (3x2) in {seconds * 1000:.0f} ms "
        f"({seconds / 120 * 1000:.2f} ms/frame); {total / 1024:.0f} KiB per call, "
        f"{total / len(grids) / 1024:.1f} KiB per grid"
    )
    seconds, singles = timed(
        lambda: frame_images(frames[:50], config.images, max_frames=50), args.repeats
    )
    total = sum(len(part.jpeg) for part in singles)
    print(
        f"skim/focus: 50 frames -> {len(singles)} labelled JPEGs in {seconds * 1000:.0f} ms "
        f"({seconds / 50 * 1000:.2f} ms/frame); {total / 1024:.0f} KiB per call, "
        f"{total / len(singles) / 1024:.1f} KiB per frame"
    )


if __name__ == "__main__":
    main()
