"""Stages 1–2a: probe the video, then one decoding pass for shot cuts and the kept frames.

Reading every frame of a long video is the largest fixed cost of a build (about a second
per video-minute at 640×360 on two cores), so it happens once. While PyAV decodes the
video front to back, two things are taken from the stream:

- every ``1 / detect_fps`` seconds a small BGR frame goes to PySceneDetect's
  ``ContentDetector`` (through its public ``process_frame`` / ``post_process`` interface),
  which finds the shot cuts; detection on a few frames a second at 160 px wide finds hard
  cuts as reliably as on every frame at full size, for a fraction of the conversion cost;
- every ``1 / sample_fps`` seconds a frame is kept as a JPEG in the build directory. Later
  stages (OCR, perception) read these files instead of decoding the video again, so a
  resumed build, or a rebuild with other prompts, never decodes twice.

Frame times follow the reader's convention (``videotapestry.video.reader``): frame ``i`` is
on screen at ``i / fps``, derived from its presentation time. A packet that cannot be decoded
is skipped; after several in a row the pass stops, and the kept frames end there, so clips
after that point have no frames and are reported as failed by perception, not guessed at.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from videotapestry.config import BuilderScanSettings
from videotapestry.errors import NoDecodableFramesError, VideoUnreadableError
from videotapestry.video.reader import VideoInfo, decode_size

log = logging.getLogger("memory_builders.scan")

#: Undecodable packets in a row after which the pass gives up on the rest of the file.
MAX_CONSECUTIVE_ERRORS = 8
_EPS = 1e-6


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
    """Shot cuts (seconds, sorted) and the kept frames; ``errors`` names skipped packets."""

    cuts: list[float]
    frames: list[KeptFrame]
    decoded_until_s: float
    frames_decoded: int
    errors: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "cuts": [round(c, 6) for c in self.cuts],
            "frames": [f.to_json() for f in self.frames],
            "decoded_until_s": round(self.decoded_until_s, 6),
            "frames_decoded": self.frames_decoded,
            "errors": self.errors,
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
            timings=dict(data.get("timings", {})),
        )


def scan_video(
    info: VideoInfo,
    settings: BuilderScanSettings,
    frames_dir: Path,
    *,
    progress: Callable[[float], None] | None = None,
) -> ScanResult:
    """Decode ``info.path`` once: shot cuts from PySceneDetect and JPEGs of the kept frames."""
    import av
    from scenedetect import ContentDetector, FrameTimecode

    frames_dir.mkdir(parents=True, exist_ok=True)
    fps = info.fps
    rate = Fraction(fps).limit_denominator(1001)
    detector = ContentDetector(
        threshold=settings.threshold,
        min_scene_len=max(1, math.ceil(settings.min_shot_s * settings.detect_fps)),
    )
    detect_size = _even_size(info.width, info.height, settings.detect_width)
    keep_size = decode_size(info.width, info.height, settings.kept_frame_max_side)
    detect_step = 1.0 / settings.detect_fps
    keep_step = 1.0 / settings.sample_fps
    quality = [cv2.IMWRITE_JPEG_QUALITY, settings.frame_quality]
    timings = {"decode_s": 0.0, "detect_s": 0.0, "keep_s": 0.0}

    try:
        container = av.open(info.path)
    except (av.error.FFmpegError, ValueError) as exc:
        raise VideoUnreadableError(f"cannot open {info.path}: {exc}", path=info.path) from None
    cuts: list[float] = []
    kept: list[KeptFrame] = []
    errors: list[str] = []
    next_detect = 0.0
    next_keep = 0.0
    last_index = -1
    decoded = 0
    detect_frames = 0
    last_report = 0.0
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        time_base = float(stream.time_base)
        start_pts = stream.start_time or 0
        consecutive = 0
        frames_iter = container.decode(stream)
        clock = time.perf_counter()
        while True:
            try:
                frame = next(frames_iter)
            except StopIteration:
                break
            except av.error.EOFError:
                break
            except av.error.FFmpegError as exc:
                consecutive += 1
                position = (last_index + 1) / fps
                errors.append(f"undecodable data near {position:.2f} s: {_first_line(exc)}")
                if consecutive >= MAX_CONSECUTIVE_ERRORS:
                    errors.append(
                        f"decoding stopped at {position:.2f} s after {consecutive} bad packets"
                    )
                    break
                frames_iter = container.decode(stream)  # resumes demuxing after the bad packet
                continue
            consecutive = 0
            decoded += 1
            if frame.pts is None:
                index = last_index + 1
            else:
                index = round((frame.pts - start_pts) * time_base * fps)
            if index <= last_index:  # a repeated timestamp: keep frame order strictly rising
                index = last_index + 1
            last_index = index
            t = index / fps
            now = time.perf_counter()
            timings["decode_s"] += now - clock
            clock = now
            if t + _EPS >= next_detect:
                image = frame.to_ndarray(
                    format="bgr24",
                    width=detect_size[0],
                    height=detect_size[1],
                    interpolation="AREA",
                )
                cuts.extend(
                    c.frame_num / fps
                    for c in detector.process_frame(FrameTimecode(index, rate), image)
                )
                detect_frames += 1
                while next_detect <= t + _EPS:
                    next_detect += detect_step
                now = time.perf_counter()
                timings["detect_s"] += now - clock
                clock = now
            if t + _EPS >= next_keep:
                image = frame.to_ndarray(
                    format="bgr24", width=keep_size[0], height=keep_size[1], interpolation="AREA"
                )
                ok, jpeg = cv2.imencode(".jpg", image, quality)
                if not ok:  # pragma: no cover - OpenCV encodes any uint8 image
                    raise NoDecodableFramesError(f"cannot encode frame {index} of {info.path}")
                name = f"f{index:08d}.jpg"
                (frames_dir / name).write_bytes(jpeg.tobytes())
                kept.append(KeptFrame(index, t, name))
                while next_keep <= t + _EPS:
                    next_keep += keep_step
                now = time.perf_counter()
                timings["keep_s"] += now - clock
                clock = now
            if progress is not None and t - last_report >= 5.0:
                last_report = t
                progress(t)
    if last_index >= 0 and detect_frames:
        cuts.extend(
            c.frame_num / fps for c in detector.post_process(FrameTimecode(last_index, rate))
        )
    if not kept:
        raise NoDecodableFramesError(
            f"{info.path}: no frame could be decoded" + (f" ({errors[-1]})" if errors else ""),
            path=info.path,
        )
    duration = info.duration_s
    cut_times = sorted({round(c, 6) for c in cuts if _EPS < c < duration - _EPS})
    if progress is not None:
        progress(min(duration, (last_index + 1) / fps))
    return ScanResult(
        cuts=cut_times,
        frames=kept,
        decoded_until_s=(last_index + 1) / fps,
        frames_decoded=decoded,
        errors=errors,
        timings=timings,
    )


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


def _even_size(width: int, height: int, target_width: int) -> tuple[int, int]:
    if width <= target_width:
        return width, height
    scale = target_width / width
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
