"""Following a live stream (SPEC §16, not a test): how fast one machine keeps up, what it
holds in memory while it does, and what an append costs against building its minutes alone.

A generated recording (text on screen that changes every 8-25 s, as slides would) is
encoded as a live HLS event of 10-s H.264 segments and published, ``--append-s`` of video
at a time, as fast as the builder takes it; ``follow`` (offline model) runs in this process
and each step waits for the version covering it.

1. Keeping up: the wall of each append, as times real time (video seconds per wall second),
   with OCR on and off. A clip is answerable at most one append interval plus one append's
   wall after it arrives: that lag at 1x real time.
2. Resident memory over the whole stream, after the first 10 minutes: after each version
   (read in the follow thread right after the version is published and the heap trimmed,
   ``follow``'s ``on_version``), and its peak during each append (the kernel's high-water mark
   ``VmHWM``, reset after each reading). Both, as the first is what a follow holds between
   appends and the second what it needs while one is built. Until December 2026 one figure
   was read by the feeding thread as soon as ``live.json`` moved, which raced the trim that
   follows the publication: it was sometimes the peak (1.24 GB) and sometimes the trimmed
   heap (0.84 GB), and most of its 34-48% spread was that race.
3. One append against a build from nothing: the last ``--append-s`` appended to the memory
   of everything before, and the same seconds followed into an empty folder.

    python bench/bench_live.py [--minutes 120] [--off-minutes 30] [--append-s 300] [--smoke]

Absolute seconds depend on the machine's load; compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchkit import cache_dir, smoke

from memory_builders.builder import BuildResult, MemoryBuilder
from memory_builders.follow import follow
from videotapestry.config import load_config
from videotapestry.memory import LiveState
from videotapestry.testing.builder_media import make_text_schedule_video, text_schedule
from videotapestry.testing.live_media import HlsFeed, encode_hls, read_segments

SMOKE_ARGS = ("--minutes", "1.5", "--off-minutes", "1", "--append-s", "30", "--fps", "2",
              "--size", "320x180")  # fmt: skip
SMOKE_FIGURES: tuple[str, ...] = (
    r"^1\. keeping up",
    r"^ +OCR on: +\S+ x real time",
    r"^ +OCR off: +\S+ x real time",
    r"^ +lag at 1x real time",
    r"^2\. resident memory",
    r"^ +RSS after each version: ",
    r"^ +peak RSS during each append: ",
    r"^3\. one append against a build from nothing",
    r"^ +append .* ratio ",
)
SEGMENT_S = 10.0


def stream_segments(minutes: float, fps: float, size: tuple[int, int]) -> Path:
    """The encoded HLS segments of a ``minutes``-long recording (cached)."""
    name = f"live_{minutes:g}min_{fps:g}fps_{size[0]}x{size[1]}"
    folder = cache_dir("live", name)
    if (folder / "hls" / "index.m3u8").is_file():
        return folder / "hls"
    folder.mkdir(parents=True, exist_ok=True)
    duration = minutes * 60
    video, _ = make_text_schedule_video(
        folder / "talk.mp4", text_schedule(duration, seed=5), duration, fps=fps, size=size,
        frame_code=False,
    )  # fmt: skip
    encode_hls(video, folder / "hls.part", SEGMENT_S)
    (folder / "hls.part").rename(folder / "hls")
    video.unlink()
    return folder / "hls"


def status_mb(field: str) -> float:
    """A ``/proc/self/status`` figure in MB (``VmRSS``, ``VmHWM``); NaN where there is none."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return float("nan")
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    """Start the peak (``VmHWM``) again from the current RSS (Linux 4.0+; else left as is)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


@dataclass(frozen=True)
class Sample:
    """One version, read in the follow thread once it is published and the heap trimmed."""

    covered_s: float
    rss_mb: float  # after the version
    peak_mb: float  # the highest RSS since the version before (VmHWM)


class Run:
    """``follow`` in a thread of this process, fed by the main thread."""

    def __init__(self, encoded: Path, out: Path, ocr: bool, first: int = 0) -> None:
        segments = read_segments(encoded / "index.m3u8")[first:]
        served = out.parent / f"{out.name}-served"
        shutil.rmtree(served, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        self.feed = HlsFeed(encoded, served, segments)
        overrides = [
            "builder.follow.poll_s=0.05",
            "builder.follow.append_every_s=1",
            "builder.follow.idle_end_s=600",
        ]
        if not ocr:
            overrides.append("builder.ocr.engine=none")
        config = load_config(None, profile="offline", overrides=overrides)
        self.builder = MemoryBuilder(config)
        self.out = out
        self.error: BaseException | None = None
        self.samples: list[Sample] = []  # appended by the follow thread, one per version
        self.feed.publish(0)
        self.thread = threading.Thread(target=self._follow, daemon=True)

    def _follow(self) -> None:
        served = str(self.feed.served / "index.m3u8")
        try:
            asyncio.run(follow(self.builder, served, self.out, on_version=self._sample))
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def _sample(self, _result: BuildResult, state: LiveState) -> None:
        """``on_version``: called after the version is published and the heap trimmed."""
        self.samples.append(Sample(state.covered_s, status_mb("VmRSS"), status_mb("VmHWM")))
        reset_peak()

    def covered(self) -> float:
        """What the versions sampled so far cover (a version counts once it is sampled)."""
        return self.samples[-1].covered_s if self.samples else 0.0

    def step(self, count: int, *, ended: bool = False) -> float:
        """Publish up to segment ``count``; the wall until a version covers it."""
        started = time.perf_counter()
        self.feed.publish(count, ended=ended)
        if self.thread.ident is None:
            reset_peak()
            self.thread.start()
        target = self.feed.published_s - 0.5
        while self.covered() < target:
            if self.error is not None:
                raise self.error
            if not self.thread.is_alive() and self.covered() < target:
                raise RuntimeError("follow ended before covering the stream")
            time.sleep(0.02)
        return time.perf_counter() - started

    def finish(self) -> None:
        self.feed.publish(len(self.feed.segments), ended=True)
        self.thread.join()
        if self.error is not None:
            raise self.error


@dataclass(frozen=True)
class Step:
    """One append: its wall, the RSS after its (last) version and the peak while it ran."""

    wall_s: float
    rss_mb: float
    peak_mb: float


def follow_stream(encoded: Path, out: Path, per_step: int, ocr: bool) -> list[Step]:
    """Each append of ``per_step`` segments, as a ``Step``."""
    run = Run(encoded, out, ocr)
    steps = []
    total = len(run.feed.segments)
    for count in range(per_step, total + per_step, per_step):
        before = len(run.samples)
        wall = run.step(min(count, total))
        versions = run.samples[before:]  # one, or two when a poll fell inside the publish
        steps.append(Step(wall, versions[-1].rss_mb, max(v.peak_mb for v in versions)))
    run.finish()
    return steps


def spread_line(label: str, first: float, later: list[float]) -> None:
    """``first``: the first append's figure; ``later``: those of the appends after 10 min."""
    spread = (max(later) - min(later)) / min(later)
    print(
        f"   {label}: {first:.0f} MB at the first append, {later[-1]:.0f} MB at the last; "
        f"after 10 min: {min(later):.0f}-{max(later):.0f} MB (spread {spread:.1%})"
    )


def rate_line(label: str, steps: list[Step], append_s: float) -> float:
    walls = [step.wall_s for step in steps[1:]] or [steps[0].wall_s]  # the first: start-up
    median = statistics.median(walls)
    rate = append_s / median
    print(
        f"   {label}: {rate:6.1f} x real time (append of {append_s:g} s of video: median "
        f"{median:.1f} s wall, max {max(walls):.1f} s, over {len(steps)} appends)"
    )
    return median


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="stream with OCR on")
    parser.add_argument("--off-minutes", type=float, default=30.0, help="stream with OCR off")
    parser.add_argument("--append-s", type=float, default=300.0, help="video per append")
    parser.add_argument("--fps", type=float, default=5.0)
    parser.add_argument("--size", default="640x360")
    args = parser.parse_args()
    size = tuple(int(x) for x in args.size.split("x"))
    assert len(size) == 2
    per_step = max(1, round(args.append_s / SEGMENT_S))
    append_s = per_step * SEGMENT_S
    work = cache_dir("live", "runs")
    work.mkdir(parents=True, exist_ok=True)

    encoded = stream_segments(args.minutes, args.fps, size)  # type: ignore[arg-type]
    off = stream_segments(args.off_minutes, args.fps, size)  # type: ignore[arg-type]
    print(f"1. keeping up ({args.fps:g} fps {args.size}, appends of {append_s:g} s)")
    steps_on = follow_stream(encoded, work / "on", per_step, ocr=True)
    median_on = rate_line("OCR on", steps_on, append_s)
    steps_off = follow_stream(off, work / "off", per_step, ocr=False)
    rate_line("OCR off", steps_off, append_s)
    print(
        f"   lag at 1x real time: a clip is answerable at most {append_s:g} s (the append "
        f"interval) + {median_on:.1f} s (an append's wall) = {append_s + median_on:.0f} s "
        "after it arrives"
    )

    print(f"2. resident memory over {args.minutes:g} min (OCR on)")
    later = [step for k, step in enumerate(steps_on) if (k + 1) * append_s > 600] or steps_on
    first = steps_on[0]
    spread_line("RSS after each version", first.rss_mb, [step.rss_mb for step in later])
    spread_line("peak RSS during each append", first.peak_mb, [step.peak_mb for step in later])

    print("3. one append against a build from nothing")
    appended = steps_on[-1].wall_s
    segments = len(read_segments(encoded / "index.m3u8"))
    alone = Run(encoded, work / "alone", ocr=True, first=max(0, segments - per_step))
    alone_wall = alone.step(len(alone.feed.segments))
    alone.finish()
    before = (segments - per_step) * SEGMENT_S / 60
    ratio = appended / alone_wall
    print(
        f"   append of the last {append_s:g} s to a memory of {before:.0f} min: {appended:.1f} s; "
        f"those {append_s:g} s followed alone: {alone_wall:.1f} s; ratio {ratio:.2f}"
    )


if __name__ == "__main__":
    main()
