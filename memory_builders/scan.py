"""Stages 1–2a: probe the video, then one decoding pass for shot cuts and the kept frames.

Reading every frame of a long video is the largest fixed cost of a build (about a second
per video-minute at 640×360 on two cores), so it happens once. While the reader's
``SequentialPass`` decodes the video front to back, two things are taken from the stream:

- every ``1 / detect_fps`` seconds a small BGR frame goes to PySceneDetect's
  ``ContentDetector`` (through its public ``process_frame`` / ``post_process`` interface),
  which finds the shot cuts; detection on a few frames a second at 160 px wide finds hard
  cuts as reliably as on every frame at full size, for a fraction of the conversion cost;
- every ``1 / sample_fps`` seconds a frame is kept as a JPEG in the build directory. Later
  stages (OCR, perception) read these files instead of decoding the video again, so a
  resumed build, or a rebuild with other prompts, never decodes twice.

Frame times are the reader's (``videotapestry.video``): frame ``i`` is on screen at
``i / fps``, derived from its presentation time. A packet that cannot be decoded is skipped;
after several in a row the pass stops, and the kept frames end there, so clips after that
point have no frames and are reported as failed by perception, not guessed at.

The kept frames are a checkpoint of their own: a later stage that needs them after they
were deleted (``keep_frames: false`` after a complete build) scans again, once, and the
frames must come out the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from memory_builders.checkpoints import checkpointed, stage_key
from memory_builders.context import BuildContext
from memory_builders.report import BuildError
from videotapestry.config import BuilderScanSettings
from videotapestry.errors import NoDecodableFramesError
from videotapestry.video import (
    PassFrame,
    RateSampler,
    SequentialPass,
    VideoInfo,
    decode_size,
    probe,
    width_size,
)

_EPS = 1e-6
#: The checkpoint of a followed recording's latest scan, whatever its length (``follow``).
GROWN_SCAN = "scan_grown"


@dataclass(frozen=True)
class KeptFrame:
    """A frame stored by the scan: its index, time and JPEG file (relative to the frames dir)."""

    index: int
    timestamp_s: float
    file: str

    def to_json(self) -> list[Any]:
        return [self.index, round(self.timestamp_s, 6), self.file]

    @classmethod
    def from_json(cls, item: list[Any]) -> KeptFrame:
        return cls(int(item[0]), float(item[1]), str(item[2]))


@dataclass
class ScanResult:
    """Shot cuts (seconds, sorted) and the kept frames; ``errors`` names skipped packets,
    ``gaps`` the stretches they took with them (``SequentialPass.gaps``)."""

    cuts: list[float]
    frames: list[KeptFrame]
    decoded_until_s: float
    frames_decoded: int
    errors: list[str] = field(default_factory=list)
    gaps: list[tuple[float, float]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "cuts": [round(c, 6) for c in self.cuts],
            "frames": [f.to_json() for f in self.frames],
            "decoded_until_s": round(self.decoded_until_s, 6),
            "frames_decoded": self.frames_decoded,
            "errors": self.errors,
            "gaps": [[round(a, 6), round(b, 6)] for a, b in self.gaps],
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanResult:
        return cls(
            cuts=[float(c) for c in data["cuts"]],
            frames=[KeptFrame.from_json(f) for f in data["frames"]],
            decoded_until_s=float(data["decoded_until_s"]),
            frames_decoded=int(data["frames_decoded"]),
            errors=list(data.get("errors", [])),
            gaps=[(float(a), float(b)) for a, b in data.get("gaps", [])],
            timings=dict(data.get("timings", {})),
        )


# --------------------------------------------------------------------------- the stage


class KeptFrames:
    """The scan as the later stages use it: its result and checkpoint key, and the kept
    frames on disk."""

    def __init__(self, ctx: BuildContext, info: VideoInfo, result: ScanResult, key: str) -> None:
        self.ctx = ctx
        self.info = info
        self.result = result
        self.key = key
        self.directory = ctx.frames_dir
        self._on_disk = frames_present(self.directory, result.frames)
        self._lock = asyncio.Lock()

    def between(self, start_s: float, end_s: float) -> list[KeptFrame]:
        """The kept frames in ``[start_s, end_s)``, or up to the end of the video inclusive."""
        last = end_s >= self.info.duration_s - 1e-6
        return [
            f
            for f in self.result.frames
            if start_s <= f.timestamp_s < end_s or (last and f.timestamp_s == end_s)
        ]

    async def ensure(self) -> None:
        """Scan again if the kept frames were deleted since the checkpoint was written."""
        async with self._lock:
            if self._on_disk:
                return
            again = await rescan(self.ctx, self.info)
            self._on_disk = True
            if [f.to_json() for f in again.frames] != [f.to_json() for f in self.result.frames]:
                raise BuildError(
                    f"scanning {self.ctx.video} again gave other frames than its checkpoint; "
                    "rerun with --restart"
                )

    def load(self, frame: KeptFrame) -> np.ndarray:
        with self.ctx.timings.measure("frames_load"):
            return load_frame(self.directory, frame)

    def jpeg_nearest(self, timestamp_s: float) -> bytes | None:
        """The kept frame nearest ``timestamp_s`` as JPEG bytes, if the frames are on disk."""
        if not self.result.frames:
            return None
        frame = min(self.result.frames, key=lambda f: abs(f.timestamp_s - timestamp_s))
        path = self.directory / frame.file
        return path.read_bytes() if path.is_file() else None


async def probe_stage(ctx: BuildContext) -> VideoInfo:
    with ctx.stage("probe"), ctx.timings.measure("probe"):
        info = await asyncio.to_thread(probe, ctx.video)
    if ctx.live_identity is not None:
        info = dataclasses.replace(info, fingerprint=ctx.live_identity)
    ctx.report.duration_s = info.duration_s
    ctx.report.fingerprint = info.fingerprint
    if info.not_upright:
        # The scan turns frames upright by quarter turns; what it cannot do, the captions
        # then see as stored: say so.
        ctx.degraded("frames", "probe", info.not_upright)
    return info


async def scan_stage(ctx: BuildContext, info: VideoInfo) -> KeptFrames:
    # A turned video's frames differ from a scan that kept them as stored (the key of
    # unturned videos is left as it was, so their checkpoints stay valid).
    parts: list[Any] = [ctx.settings.scan.model_dump()]
    if info.rotation_deg:
        parts.append({"rotation_deg": info.rotation_deg})
    key = stage_key("scan", info.fingerprint, *parts)
    if ctx.live_identity is not None:
        return await _grown_scan(ctx, info, key)
    with ctx.stage("scan") as (stage, _):
        result = await checkpointed(
            ctx.store,
            "scan",
            key,
            lambda: rescan(ctx, info),
            load=ScanResult.from_json,
            dump=ScanResult.to_json,
            tally=stage,
        )
    return KeptFrames(ctx, info, result, key)


async def _grown_scan(ctx: BuildContext, info: VideoInfo, key: str) -> KeptFrames:
    """The scan of a followed recording (``follow``): it keeps its identity as it grows, so
    the frames it keeps, and the later stages' keys, stay those of ``key``; each new length
    is scanned from where the scan of the last one ended (``scan_video``'s ``resume``)."""
    grown_key = stage_key("scan", key, {"until_s": round(info.duration_s, 3)})

    async def extend() -> ScanResult:
        earlier = ctx.store.get(GROWN_SCAN, key)
        resume = ScanResult.from_json(earlier) if earlier is not None else None
        if resume is None or not frames_present(ctx.frames_dir, resume.frames):
            return await rescan(ctx, info)
        return await rescan(ctx, info, resume=resume)

    with ctx.stage("scan") as (stage, _):
        result = await checkpointed(
            ctx.store,
            "scan",
            grown_key,
            extend,
            load=ScanResult.from_json,
            dump=ScanResult.to_json,
            tally=stage,
        )
    ctx.store.put(GROWN_SCAN, key, result.to_json())
    return KeptFrames(ctx, info, result, key)


async def rescan(
    ctx: BuildContext, info: VideoInfo, resume: ScanResult | None = None
) -> ScanResult:
    """The decoding pass into an emptied frames directory, with its progress bar; with
    ``resume``, the pass over what a grown recording added, beside the frames kept."""
    if ctx.frames_dir.exists() and resume is None:
        shutil.rmtree(ctx.frames_dir)
    bar = ctx.tools.progress.stage("scan", round(info.duration_s), unit="s")
    try:
        scan = await asyncio.to_thread(
            functools.partial(scan_video, resume=resume),
            info,
            ctx.settings.scan,
            ctx.frames_dir,
            progress=lambda t: bar.set_done(round(t)),
        )
    finally:
        bar.close()
    for name, seconds in scan.timings.items():
        ctx.timings.add(f"scan_{name.removesuffix('_s')}", seconds)
    return scan


# --------------------------------------------------------------------------- the pass


def scan_video(
    info: VideoInfo,
    settings: BuilderScanSettings,
    frames_dir: Path,
    *,
    progress: Callable[[float], None] | None = None,
    resume: ScanResult | None = None,
) -> ScanResult:
    """Decode ``info.path`` once: shot cuts from PySceneDetect and JPEGs of the kept frames.

    ``resume``: the scan of a shorter recording this one grew from (``follow``). Its cuts
    and kept frames are taken up to a little before its end (``resume_points``), and the
    pass decodes only from there on, its detector warmed up on the seconds before: a cut
    needs the frames around it, and the end of a shorter recording cut a shot short."""
    from scenedetect import ContentDetector, FrameTimecode

    frames_dir.mkdir(parents=True, exist_ok=True)
    fps = info.fps
    rate = Fraction(fps).limit_denominator(1001)
    detector = ContentDetector(
        threshold=settings.threshold,
        min_scene_len=max(1, math.ceil(settings.min_shot_s * settings.detect_fps)),
    )
    shown = info.display_size  # the pass turns frames upright, as the readers do
    detect_size = width_size(*shown, settings.detect_width)
    keep_size = decode_size(*shown, settings.kept_frame_max_side)
    detect_due = RateSampler(settings.detect_fps)
    keep_due = RateSampler(settings.sample_fps)
    timings = {"decode_s": 0.0, "detect_s": 0.0, "keep_s": 0.0}
    cuts: list[float] = []
    kept: list[KeptFrame] = []
    keep_from = detect_from = 0.0
    if resume is not None:
        keep_from, detect_from = resume_points(resume.decoded_until_s, settings)
        cuts = [c for c in resume.cuts if c < keep_from]
        kept = [f for f in resume.frames if f.timestamp_s < keep_from]
        if kept:  # the sampler goes on from the last frame kept, as in one whole pass
            keep_due.takes(kept[-1].timestamp_s)
        detect_due.next_s = math.ceil(detect_from * settings.detect_fps) / settings.detect_fps
    decoding = SequentialPass(info, start_s=detect_from)
    detect_frames = 0
    last_report = 0.0
    clock = time.perf_counter()
    for frame in decoding:
        t = frame.timestamp_s
        clock = _add_time(timings, "decode_s", clock)
        if detect_due.takes(t):
            image = frame.to_array(detect_size, pixel_format="bgr24")
            timecode = FrameTimecode(frame.index, rate)
            found = (c.frame_num / fps for c in detector.process_frame(timecode, image))
            cuts.extend(c for c in found if c >= keep_from)
            detect_frames += 1
            clock = _add_time(timings, "detect_s", clock)
        if t >= keep_from - _EPS and keep_due.takes(t):
            kept.append(_keep(frame, keep_size, settings.frame_quality, frames_dir, info))
            clock = _add_time(timings, "keep_s", clock)
        if progress is not None and t - last_report >= 5.0:
            last_report = t
            progress(t)
    if decoding.last_index >= 0 and detect_frames:
        last = FrameTimecode(decoding.last_index, rate)
        cuts.extend(c.frame_num / fps for c in detector.post_process(last) if c >= keep_from)
    if not kept:
        errors = decoding.errors
        raise NoDecodableFramesError(
            f"{info.path}: no frame could be decoded" + (f" ({errors[-1]})" if errors else ""),
            path=info.path,
        )
    duration = info.duration_s
    cut_times = sorted({round(c, 6) for c in cuts if _EPS < c < duration - _EPS})
    if progress is not None:
        progress(min(duration, decoding.decoded_until_s))
    earlier = resume or ScanResult([], [], 0.0, 0)
    return ScanResult(
        cuts=cut_times,
        frames=kept,
        decoded_until_s=decoding.decoded_until_s,
        frames_decoded=decoding.frames_decoded + round(detect_from * fps),
        errors=[*earlier.errors, *decoding.errors],
        gaps=[*(g for g in earlier.gaps if g[1] <= keep_from), *decoding.gaps],
        timings=timings,
    )


def resume_points(decoded_until_s: float, settings: BuilderScanSettings) -> tuple[float, float]:
    """(from where a resumed scan keeps frames and cuts, from where it decodes): a few
    shots before the end of the shorter scan, whose last cut and frames may have been the
    end of the file speaking; the detector then sees some seconds before that again."""
    margin = max(2.0, 2 * settings.min_shot_s, 4.0 / settings.detect_fps)
    keep_from = max(0.0, decoded_until_s - margin)
    return keep_from, max(0.0, keep_from - max(5.0, 2 * settings.min_shot_s))


def lost_spans(scan: ScanResult, duration_s: float, fps: float) -> list[tuple[float, float, str]]:
    """The stretches of ``[0, duration_s]`` the scan could not decode: (start, end, why).

    ``duration_s`` is the probe's, the span the memory's clips tile and its root claims, so
    any part of it without decoded frames is a loss the memory must own up to, whatever the
    container. A tail counts when the frames end more than ``max(2 s, 2 frames)`` before it:
    a container's duration may run a little past the last video frame (an audio track that
    ends later, rounding of the frame count), and a shorter tail holds nothing a question
    could miss. The file's byte size is no better measure: index and metadata may follow
    the last frame of an undamaged file, and bytes do not convert to seconds. A container
    that records no duration (a fragmented MP4) lets the probe see only what the
    file holds, so a clean cut between its frames cannot be seen; a cut inside a frame
    still shows as a tail.
    """
    spans = [(a, b, "undecodable data") for a, b in scan.gaps if b > a]
    end = scan.decoded_until_s
    if duration_s - end > max(2.0, 2.0 / fps):
        why = scan.errors[-1] if scan.errors else "the file ends early (truncated?)"
        spans.append((end, duration_s, why))
    return spans


def _keep(
    frame: PassFrame, size: tuple[int, int], quality: int, frames_dir: Path, info: VideoInfo
) -> KeptFrame:
    image = frame.to_array(size, pixel_format="bgr24")
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 image
        raise NoDecodableFramesError(f"cannot encode frame {frame.index} of {info.path}")
    name = f"f{frame.index:08d}.jpg"
    (frames_dir / name).write_bytes(jpeg.tobytes())
    return KeptFrame(frame.index, frame.timestamp_s, name)


def _add_time(timings: dict[str, float], name: str, since: float) -> float:
    """Add the time since ``since`` to ``timings[name]``; the new clock."""
    now = time.perf_counter()
    timings[name] += now - since
    return now


def load_frame(frames_dir: Path, frame: KeptFrame) -> np.ndarray:
    """A kept frame as an RGB array; a missing or damaged file raises ``NoDecodableFramesError``."""
    path = frames_dir / frame.file
    data = np.fromfile(path, dtype=np.uint8) if path.is_file() else np.zeros(0, np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise NoDecodableFramesError(
            f"kept frame {path} (at {frame.timestamp_s:.2f} s) is missing or damaged; "
            "rerun the build to scan the video again",
            path=str(path),
        )
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def frames_present(frames_dir: Path, frames: list[KeptFrame]) -> bool:
    return all((frames_dir / f.file).is_file() for f in frames)
