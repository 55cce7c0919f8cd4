"""What a video file is, read from its container without decoding a frame.

``probe`` gives a file's duration, frame rate, frame count, size, whether it has audio and
how a player turns its frames (the display matrix, ``orientation``), from the container
headers and the first frame's side data (PyAV), and ``fingerprint`` a cheap identity of its content;
memories and transcript caches store it to notice they belong to another video. Both check
the file first, so a missing, empty or unreadable file fails with an error that names it.

The rest is what every decoding path must agree on: the frame on screen at a time
(``index_at``: frame ``i`` is on screen during ``[i / fps, (i + 1) / fps)``), the size frames
are decoded at (``decode_size``, ``width_size``), and how a PyAV stream's presentation times
map to frame indices (``StreamClock``), so a frame has one index and one timestamp whichever
path decoded it.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import NoDecodableFramesError, VideoNotFoundError, VideoUnreadableError

#: Bytes hashed from each of several places in the file by ``fingerprint``.
FINGERPRINT_CHUNK = 64 * 1024
#: Slack in comparisons of times (seconds), for floating-point error.
TIME_EPSILON = 1e-6


@dataclass(frozen=True)
class VideoInfo:
    """What is known about a video file without decoding it."""

    path: str
    duration_s: float
    fps: float
    frame_count: int
    width: int
    height: int
    has_audio: bool
    fingerprint: str
    #: Degrees clockwise a player turns the frames to show them upright (0, 90, 180, 270),
    #: from the container's display matrix. Every reader turns its frames by it
    #: (``frame.upright``), so what the agents see is what a player shows; ``width`` and
    #: ``height`` stay those of the frames as stored, ``display_size`` is the upright one.
    rotation_deg: int = 0
    #: Why frames read from this file are not what a player shows, though turned by
    #: ``rotation_deg`` (a mirrored display matrix, an angle that is no quarter turn, a
    #: decoder that turns frames its own way); None when they are. ``probe`` sets it, a
    #: reader adds what its backend cannot do, and every question's result (when it looks
    #: at frames) and every build records it as a degradation.
    not_upright: str | None = None

    @property
    def display_size(self) -> tuple[int, int]:
        """(width, height) of the frames as the readers return them: upright."""
        return (self.height, self.width) if self.rotation_deg % 180 else (self.width, self.height)


def fingerprint(path: str | Path) -> str:
    """A cheap content identity: the size plus a hash of five 64 KiB slices of the file.

    Reading a few slices instead of the whole file keeps this instant for multi-GB videos,
    while a re-encode, a trim or a different file of the same name still changes it. Memories
    and transcript caches store this string to detect that they belong to another video.
    """
    file = check_video_file(path)
    size = file.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with file.open("rb") as handle:
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
            offset = max(0, min(int(size * fraction), size - FINGERPRINT_CHUNK))
            handle.seek(offset)
            digest.update(handle.read(FINGERPRINT_CHUNK))
    return f"v1-{size}-{digest.hexdigest()[:24]}"


def probe(path: str | Path) -> VideoInfo:
    """Duration, fps, frame count, size and audio presence, from the container headers.

    The frame count is the container's when it records one, else estimated from the stream
    duration; the readers replace it with their decoder's exact count.
    """
    file = check_video_file(path)
    import av

    try:
        container = av.open(str(file))
    except (av.error.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise VideoUnreadableError(
            f"{file} cannot be opened as a video (truncated, corrupt, or not a video file): "
            f"{error_reason(exc)}",
            path=str(file),
        ) from None
    with container:
        if not container.streams.video:
            raise VideoUnreadableError(
                f"{file} has no video stream (is it an audio or subtitle file?)", path=str(file)
            )
        stream = container.streams.video[0]
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else 0.0
        duration = _stream_duration(container, stream)
        count = int(stream.frames or 0)
        if count <= 0 and fps > 0 and duration > 0:
            count = round(duration * fps)
        width, height = stream.codec_context.width, stream.codec_context.height
        has_audio = bool(container.streams.audio)
        rotation, not_upright = _display_rotation(container, stream)
    if fps <= 0 or count <= 0 or width <= 0 or height <= 0:
        raise NoDecodableFramesError(
            f"{file} has a video stream but no decodable frames "
            f"(frames={count}, fps={fps:g}, size={width}x{height})",
            path=str(file),
        )
    return VideoInfo(
        path=str(file),
        duration_s=count / fps,
        fps=fps,
        frame_count=count,
        width=width,
        height=height,
        has_audio=has_audio,
        fingerprint=fingerprint(file),
        rotation_deg=rotation,
        not_upright=not_upright,
    )


def _display_rotation(container: Any, stream: Any) -> tuple[int, str | None]:
    """(the clockwise quarter turns the display matrix asks for, in degrees; what of it a
    quarter turn cannot do), from the first frame's side data (the only place PyAV exposes
    it) or an older muxer's ``rotate`` tag; (0, None) when neither says anything."""
    import av

    tag = stream.metadata.get("rotate")
    if tag is not None and tag.lstrip("-").isdigit():
        return orientation(-float(tag), mirrored=False)
    try:
        frame = next(container.decode(stream), None)
    except (av.error.FFmpegError, ValueError):
        return 0, None
    if frame is None:
        return 0, None
    matrices = [bytes(d) for d in frame.side_data if getattr(d.type, "name", "") == "DISPLAYMATRIX"]
    matrix = matrices[0] if matrices else b""
    mirrored = False
    if len(matrix) == 36:
        a, b, _, c, d, *_ = struct.unpack("=9i", matrix)
        mirrored = a * d - b * c < 0
    return orientation(float(getattr(frame, "rotation", 0) or 0), mirrored=mirrored)


def orientation(ccw_deg: float, *, mirrored: bool) -> tuple[int, str | None]:
    """(clockwise degrees to turn a stored frame, rounded to a quarter turn; why the frame
    is still not what a player shows, or None) for FFmpeg's counter-clockwise display angle
    ``ccw_deg`` (PyAV's ``VideoFrame.rotation``: -90 is shown turned 90° clockwise).

    Only quarter turns are applied: they keep every pixel. A mirror or a skewed angle is
    left as stored and said, as the three decoders would each handle it differently.
    """
    turn = -round(ccw_deg / 90) * 90 % 360
    left = []
    if mirrored:
        left.append("a mirror image")
    if abs(ccw_deg / 90 - round(ccw_deg / 90)) * 90 > 0.5:
        left.append(f"a turn of {-ccw_deg % 360:g}° (only quarter turns are applied)")
    if not left:
        return turn, None
    return turn, (
        f"the display matrix asks for {' and '.join(left)}; frames are read turned "
        f"{turn}° clockwise, not exactly as a player shows them"
    )


def index_at(t: float, fps: float, frame_count: int) -> int:
    """The index of the frame on screen at ``t`` seconds, clamped to the video."""
    return min(max(math.floor(t * fps + TIME_EPSILON), 0), frame_count - 1)


def decode_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """The (width, height) frames are decoded at: native, or scaled so the longer side fits."""
    if not max_side or max(width, height) <= max_side:
        return width, height
    return _scaled(width, height, max_side / max(width, height))


def width_size(width: int, height: int, max_width: int) -> tuple[int, int]:
    """Native, or scaled so the width fits ``max_width``: the size for analysing whole frames
    (shot detection), where the width, not the longer side, sets the detail kept."""
    if width <= max_width:
        return width, height
    return _scaled(width, height, max_width / width)


def _scaled(width: int, height: int, scale: float) -> tuple[int, int]:
    # Sides kept even, as the 4:2:0 frames of most videos have them.
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def open_stream(info: VideoInfo) -> tuple[Any, Any]:
    """A PyAV container of ``info.path`` and its first video stream."""
    import av

    try:
        container = av.open(info.path)
        return container, container.streams.video[0]
    except (av.error.FFmpegError, IndexError, ValueError) as exc:
        raise VideoUnreadableError(
            f"PyAV cannot open {info.path}: {error_reason(exc)}", path=info.path
        ) from None


class StreamClock:
    """Frame indices from presentation times and back, as every PyAV path counts them:
    frame ``round(seconds since the stream's start * fps)``."""

    def __init__(self, stream: Any, info: VideoInfo) -> None:
        if stream.time_base is None:
            raise VideoUnreadableError(
                f"the video stream of {info.path} has no time base", path=info.path
            )
        self.time_base = float(stream.time_base)
        self.start = stream.start_time or 0
        self.fps = info.fps

    def index_of(self, pts: int) -> int:
        return round((pts - self.start) * self.time_base * self.fps)

    def pts_of(self, index: int) -> int:
        return self.start + round(index / self.fps / self.time_base)


def check_video_file(path: str | Path) -> Path:
    file = Path(path).expanduser()
    if not file.exists():
        raise VideoNotFoundError(f"video file {file} does not exist", path=str(file))
    if not file.is_file():
        raise VideoNotFoundError(f"video path {file} is not a file", path=str(file))
    if file.stat().st_size == 0:
        raise VideoUnreadableError(f"video file {file} is empty (0 bytes)", path=str(file))
    if not os.access(file, os.R_OK):
        raise VideoUnreadableError(f"video file {file} is not readable", path=str(file))
    return file


def _stream_duration(container, stream) -> float:
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000  # AV_TIME_BASE
    return 0.0


def error_reason(exc: BaseException | str, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:limit] if text else type(exc).__name__
