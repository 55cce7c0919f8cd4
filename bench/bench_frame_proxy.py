"""The frame proxy (``builder.frame_proxy``) on the long benchmark video (not a test).

1. Writing it: wall and CPU seconds per video-minute, size per video-hour.
2. Reading it against the original in the same process: the Overview's 120 uniformly
   sampled frames over the whole video (the default keyframe snapping) and 100 random
   frames, decoded by each; wall and CPU time, and their ratio.
3. What the agents would see: the frames' timestamps (must be identical), the source
   frame each shows (its burned-in frame code, must be identical) and how far the pixels
   are from the original's (mean absolute difference, PSNR).

    python bench/bench_frame_proxy.py [--minutes 20] [--gop 250] [--smoke]

Absolute seconds depend on the machine's load; compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import time
from pathlib import Path

import numpy as np
from bench_video_sampling import long_video
from benchkit import cache_dir, smoke

from videotapestry.config import BuilderFrameProxySettings, ImagesConfig, VideoConfig
from videotapestry.testing.media import read_frame_index
from videotapestry.video import (
    ProxyManifest,
    ProxyReader,
    find_proxy,
    open_video,
    probe,
    proxy_max_side,
    sample_uniform,
    write_proxy,
)

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print
#: (a smoke run's cache is fresh, so section 1 always runs).
SMOKE_ARGS = ("--minutes", "0.5")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^1\. proxy of long_",
    r"^ +\S+ MB = \S+ MB per video-hour \(source ",
    r"^ +written in .* CPU per video-minute",
    r"^2\. decoding, original vs proxy",
    r"^ +overview 120 uniform +original .* \| proxy .* \| ratio wall ",
    r"^ +100 random frames +original .* \| proxy .* \| ratio wall ",
    r"^3\. what the agents see",
    r"^ +overview 120 uniform +timestamps identical .* PSNR ",
    r"^ +100 random frames +timestamps identical .* PSNR ",
)


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def ensure_proxy(
    video: Path, keyframe_interval_s: float = 1.0, *, rebuild: bool = False
) -> tuple[Path, tuple[ProxyManifest, float, float] | None]:
    """The directory holding ``video``'s proxy (written once, cached), and (description,
    wall s, CPU s) when it was written now."""
    info = probe(video)
    settings = BuilderFrameProxySettings(enabled=True, keyframe_interval_s=keyframe_interval_s)
    out = cache_dir(f"proxy_{video.stem}_k{keyframe_interval_s:g}")
    if not rebuild and find_proxy(out, info).usable:
        return out, None
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    side = proxy_max_side(VideoConfig(), ImagesConfig(), settings.max_side)
    print(f"writing the frame proxy of {video.name} (one-off, cached) ...", flush=True)
    made, wall, cpu = timed(lambda: write_proxy(info, out, settings, side))
    return out, (made, wall, cpu)


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--gop", type=int, default=250)
    parser.add_argument("--keyframe-interval", type=float, default=1.0)
    parser.add_argument("--rebuild", action="store_true", help="write the proxy again")
    args = parser.parse_args()
    video = long_video(args.minutes, gop=args.gop)
    info = probe(video)
    config = VideoConfig()
    out, written = ensure_proxy(video, args.keyframe_interval, rebuild=args.rebuild)
    if written is not None:
        made, wall, cpu = written
        minutes = info.duration_s / 60
        print(f"1. proxy of {video.name} ({minutes:g} min, {video.stat().st_size / 1e6:.0f} MB)")
        print(f"   {made.codec} {made.width}x{made.height}, keyframe every "
              f"{made.keyframe_interval} frames, {made.frames} frames")  # fmt: skip
        print(f"   {made.bytes / 1e6:.1f} MB = {made.bytes / 1e6 / minutes * 60:.0f} MB per "
              f"video-hour (source {video.stat().st_size / 1e6 / minutes * 60:.0f})")  # fmt: skip
        print(f"   written in {wall:.1f} s wall, {cpu:.1f} s CPU: {wall / minutes:.2f} s wall "
              f"and {cpu / minutes:.2f} s CPU per video-minute")  # fmt: skip
    lookup = find_proxy(out, info)
    assert lookup.usable, lookup.refused
    original = open_video(video, config)
    proxy = ProxyReader(lookup, info, config)
    rng = random.Random(0)
    random_indices = sorted(rng.sample(range(info.frame_count), 100))
    print("2. decoding, original vs proxy (same process, fresh readers, no frame cache)")
    seen = {}
    for name, decode in (
        ("overview 120 uniform", lambda r: sample_uniform(r, 0.0, info.duration_s, 120)),
        ("100 random frames", lambda r: r.frames_at_indices(random_indices)),
    ):
        results = {}
        for label, reader in (("original", original), ("proxy", proxy)):
            frames, wall, cpu = timed(lambda reader=reader, decode=decode: decode(reader))
            results[label] = (frames, wall, cpu)
        (_, ow, oc), (_, pw, pc) = results["original"], results["proxy"]
        print(f"   {name:<22} original {ow:6.2f} s wall {oc:6.2f} s CPU | proxy {pw:6.2f} s "
              f"wall {pc:6.2f} s CPU | ratio wall {ow / pw:4.1f}x CPU {oc / pc:4.1f}x")  # fmt: skip
        seen[name] = results["original"][0], results["proxy"][0]
    print("3. what the agents see")
    for name, (before, after) in seen.items():
        same_time = sum(a.timestamp_s == b.timestamp_s for a, b in zip(before, after, strict=True))
        same_frame = sum(
            read_frame_index(a.image) == read_frame_index(b.image)
            for a, b in zip(before, after, strict=True)
        )
        diffs = [
            np.abs(a.image.astype(np.int16) - b.image.astype(np.int16)).mean()
            for a, b in zip(before, after, strict=True)
        ]
        mse = np.mean(
            [
                ((a.image.astype(np.float64) - b.image.astype(np.float64)) ** 2).mean()
                for a, b in zip(before, after, strict=True)
            ]
        )
        psnr = 10 * np.log10(255**2 / mse) if mse > 0 else float("inf")
        print(f"   {name:<22} timestamps identical {same_time}/{len(before)}, same source "
              f"frame {same_frame}/{len(before)}, size {after[0].image.shape[1]}x"
              f"{after[0].image.shape[0]} (original {before[0].image.shape[1]}x"
              f"{before[0].image.shape[0]}), mean |diff| {np.mean(diffs):.2f}/255, "
              f"PSNR {psnr:.1f} dB")  # fmt: skip
    original.close()
    proxy.close()


if __name__ == "__main__":
    main()
