"""Synthetic test videos whose every frame says which frame it is.

Checking that a reader returns the frame its timestamp claims needs ground truth inside the
pixels. Each frame carries, along its bottom edge, a strip of black/white blocks encoding the
frame index in binary (20 index bits + a 4-bit checksum); the blocks are large enough to
survive MPEG-4 / H.264 compression, resizing into grid cells and JPEG encoding, and
``read_frame_index`` reads them back (raising when the checksum disagrees, so a damaged code
is never mistaken for another frame). For people looking at a frame, it also shows the time
and index in large text, a coloured background that changes with each scene, and scene text
("SCENE 3 KITCHEN") that changes on the same schedule, so OCR and the offline model have
something real to read.

``make_test_video`` writes MPEG-4 Part 2 (``mp4v``) with OpenCV, the only encoder OpenCV has
here; ``make_h264_video`` writes H.264 with fixed, long GOPs through PyAV's bundled libx264,
which is what the sampling benchmark needs. ``mux_audio`` adds a mono AAC track to a video
without re-encoding the picture (the speech fixture and "silent audio" tests use it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

INDEX_BITS = 20
CHECK_BITS = 4
CODE_BITS = INDEX_BITS + CHECK_BITS
MAX_FRAME_INDEX = (1 << INDEX_BITS) - 1
#: Height of the code strip as a fraction of the frame height (at the bottom edge).
CODE_STRIP_FRACTION = 0.1

SCENE_WORDS = (
    "KITCHEN",
    "GARDEN",
    "STATION",
    "LIBRARY",
    "HARBOUR",
    "MARKET",
    "FOREST",
    "STUDIO",
    "BRIDGE",
    "MUSEUM",
)
# Saturated, well-separated background colours (RGB); the code strip is drawn on top.
SCENE_COLORS = (
    (200, 40, 40),
    (40, 150, 60),
    (40, 70, 200),
    (210, 160, 30),
    (140, 50, 170),
    (30, 160, 170),
    (220, 100, 150),
    (110, 110, 110),
)


@dataclass(frozen=True)
class Scene:
    """One stretch of the synthetic video with a fixed background colour and scene text."""

    start_s: float
    end_s: float
    text: str
    color: tuple[int, int, int]


@dataclass(frozen=True)
class TestVideo:
    """What was written, so tests can compare a reader's output against the truth."""

    __test__ = False  # not a pytest test class, despite the name

    path: Path
    fps: float
    frame_count: int
    width: int
    height: int
    scenes: tuple[Scene, ...]

    @property
    def duration_s(self) -> float:
        return self.frame_count / self.fps

    def scene_at(self, t: float) -> Scene:
        for scene in self.scenes:
            if scene.start_s <= t < scene.end_s:
                return scene
        return self.scenes[-1]


# --------------------------------------------------------------------------- frame code


def _checksum(index: int) -> int:
    # Sum of the index's nibbles mod 16: any single flipped index bit changes it.
    return sum((index >> shift) & 0xF for shift in range(0, INDEX_BITS, 4)) % 16


def encode_frame_code(index: int) -> list[int]:
    """The bits drawn for ``index``, most significant first, checksum last."""
    if not 0 <= index <= MAX_FRAME_INDEX:
        raise ValueError(f"frame index {index} does not fit in {INDEX_BITS} bits")
    value = (index << CHECK_BITS) | _checksum(index)
    return [(value >> (CODE_BITS - 1 - bit)) & 1 for bit in range(CODE_BITS)]


def _block_edges(width: int) -> np.ndarray:
    return np.linspace(0, width, CODE_BITS + 1).round().astype(int)


def draw_frame_code(image: np.ndarray, index: int) -> None:
    """Paint the code strip for ``index`` into the bottom of ``image`` (in place)."""
    height, width = image.shape[:2]
    strip = max(4, round(height * CODE_STRIP_FRACTION))
    edges = _block_edges(width)
    for bit, value in enumerate(encode_frame_code(index)):
        image[height - strip :, edges[bit] : edges[bit + 1]] = 255 if value else 0


def read_frame_index(image: np.ndarray) -> int:
    """Decode the index burned in by ``draw_frame_code`` from an RGB (or grey) frame.

    Works on resized and recompressed copies: each bit is the mean brightness of the middle
    of its block. Raises ``ValueError`` when the checksum does not match.
    """
    grey = image.astype(np.float32)
    if grey.ndim == 3:
        grey = grey.mean(axis=2)
    height, width = grey.shape
    strip = max(4, round(height * CODE_STRIP_FRACTION))
    top = height - strip + strip // 4
    bottom = height - strip // 4
    edges = _block_edges(width)
    bits = []
    for bit in range(CODE_BITS):
        left, right = edges[bit], edges[bit + 1]
        margin = max(0, (right - left) // 4)
        block = grey[top:bottom, left + margin : right - margin]
        bits.append(1 if float(block.mean()) > 127.5 else 0)
    value = 0
    for bit in bits:
        value = (value << 1) | bit
    index, check = value >> CHECK_BITS, value & ((1 << CHECK_BITS) - 1)
    if _checksum(index) != check:
        raise ValueError(f"frame code checksum mismatch (bits {''.join(map(str, bits))})")
    return index


# --------------------------------------------------------------------------- rendering


def make_scenes(duration_s: float, scene_s: float) -> tuple[Scene, ...]:
    """Scenes of ``scene_s`` seconds each (the last one may be shorter)."""
    if scene_s <= 0:
        raise ValueError("scene_s must be positive")
    count = max(1, math.ceil(duration_s / scene_s - 1e-9))
    return tuple(
        Scene(
            start_s=k * scene_s,
            end_s=min(duration_s, (k + 1) * scene_s),
            text=f"SCENE {k + 1} {SCENE_WORDS[k % len(SCENE_WORDS)]}",
            color=SCENE_COLORS[k % len(SCENE_COLORS)],
        )
        for k in range(count)
    )


def _clock(t: float) -> str:
    minutes, seconds = divmod(t, 60.0)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{seconds:06.3f}" if hours else f"{minutes:02d}:{seconds:06.3f}"


def _put_centered(image: np.ndarray, text: str, y: int, height_px: int, thickness: int) -> None:
    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), _ = cv2.getTextSize(text, font, 1.0, thickness)
    scale = height_px / max(h, 1)
    scale = min(scale, 0.92 * image.shape[1] / max(w, 1))
    (w, h), _ = cv2.getTextSize(text, font, scale, thickness)
    x = max(0, (image.shape[1] - w) // 2)
    cv2.putText(image, text, (x, y + h), font, scale, (255, 255, 255), thickness, cv2.LINE_AA)


class FrameRenderer:
    """Draws frame ``index`` of a synthetic video as an RGB array.

    ``texture`` adds a low-contrast moving noise pattern so that encoded frames cost about
    as much to decode as camera footage does (flat colour decodes unrealistically fast).
    """

    def __init__(
        self,
        size: tuple[int, int],
        fps: float,
        scenes: Sequence[Scene],
        *,
        texture: bool = False,
        seed: int = 0,
    ) -> None:
        self.width, self.height = size
        if self.width < 96 or self.height < 48:
            raise ValueError(f"size {size} is too small for a readable frame code (min 96x48)")
        self.fps = fps
        self.scenes = tuple(scenes)
        self._texture: np.ndarray | None = None
        if texture:
            rng = np.random.default_rng(seed)
            tile = rng.integers(0, 48, (self.height, self.width * 2), dtype=np.uint8)
            self._texture = cv2.GaussianBlur(tile, (5, 5), 0)

    def scene_at(self, t: float) -> Scene:
        for scene in self.scenes:
            if t < scene.end_s:
                return scene
        return self.scenes[-1]

    def render(self, index: int) -> np.ndarray:
        t = index / self.fps
        scene = self.scene_at(t)
        image = np.empty((self.height, self.width, 3), dtype=np.uint8)
        image[:] = scene.color
        if self._texture is not None:
            shift = (index * 3) % self.width
            noise = self._texture[:, shift : shift + self.width, None]
            np.add(image, noise, out=image, casting="unsafe")
        h = self.height
        _put_centered(image, scene.text, round(h * 0.06), round(h * 0.14), max(1, h // 90))
        _put_centered(image, _clock(t), round(h * 0.36), round(h * 0.16), max(1, h // 60))
        _put_centered(image, f"#{index}", round(h * 0.62), round(h * 0.1), max(1, h // 90))
        draw_frame_code(image, index)
        return image


def _frame_count(duration_s: float, fps: float) -> int:
    if duration_s <= 0 or fps <= 0:
        raise ValueError("duration_s and fps must be positive")
    count = round(duration_s * fps)
    if count > MAX_FRAME_INDEX + 1:
        raise ValueError(f"{count} frames do not fit the {INDEX_BITS}-bit frame code")
    return max(1, count)


def make_test_video(
    path: str | Path,
    duration_s: float,
    fps: float = 25.0,
    size: tuple[int, int] = (320, 180),
    *,
    scene_s: float = 5.0,
    audio: np.ndarray | None = None,
    sample_rate: int = 16000,
) -> TestVideo:
    """Write an ``mp4v`` test video; with ``audio`` (mono float32) it gets an AAC track too."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = _frame_count(duration_s, fps)
    scenes = make_scenes(count / fps, scene_s)
    renderer = FrameRenderer(size, fps, scenes)
    target = path if audio is None else _temporary_sibling(path)
    writer = cv2.VideoWriter(str(target), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
    if not writer.isOpened():
        raise OSError(f"OpenCV cannot write an mp4v video to {target}")
    try:
        for index in range(count):
            writer.write(cv2.cvtColor(renderer.render(index), cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    if audio is not None:
        try:
            mux_audio(target, path, audio, sample_rate)
        finally:
            target.unlink(missing_ok=True)
    return TestVideo(path, float(fps), count, size[0], size[1], scenes)


def make_h264_video(
    path: str | Path,
    duration_s: float,
    fps: float = 25.0,
    size: tuple[int, int] = (640, 360),
    *,
    gop_frames: int = 250,
    scene_s: float = 60.0,
    preset: str = "superfast",
    crf: int = 28,
    texture: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> TestVideo:
    """Write H.264 with a keyframe exactly every ``gop_frames`` frames (no scene-cut keyframes).

    Long fixed GOPs are the hard case for frame-accurate seeking: reaching a frame means
    decoding from the keyframe before it. B-frames stay on (x264's presets), as in real files.
    """
    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = _frame_count(duration_s, fps)
    scenes = make_scenes(count / fps, scene_s)
    renderer = FrameRenderer(size, fps, scenes, texture=texture)
    tmp = _temporary_sibling(path)
    with av.open(str(tmp), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=_rate(fps))
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {
            "preset": preset,
            "crf": str(crf),
            "x264-params": f"keyint={gop_frames}:min-keyint={gop_frames}:scenecut=0",
        }
        for index in range(count):
            frame = av.VideoFrame.from_ndarray(renderer.render(index), format="rgb24")
            container.mux(stream.encode(frame))
            if progress is not None and index % 1000 == 0:
                progress(index, count)
        container.mux(stream.encode(None))
    os.replace(tmp, path)
    return TestVideo(path, float(fps), count, size[0], size[1], scenes)


def mux_audio(
    video_path: str | Path, out_path: str | Path, samples: np.ndarray, sample_rate: int
) -> None:
    """Copy the video stream of ``video_path`` and add ``samples`` as a mono AAC track."""
    import av

    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    with av.open(str(video_path)) as source, av.open(str(out_path), "w", format="mp4") as out:
        video_in = source.streams.video[0]
        video_out = out.add_stream_from_template(video_in)
        audio_out = out.add_stream("aac", rate=sample_rate, layout="mono")
        audio_out.bit_rate = 48000
        for packet in source.demux(video_in):
            if packet.dts is None:
                continue
            packet.stream = video_out
            out.mux(packet)
        chunk = 1024
        for offset in range(0, len(samples), chunk):
            piece = samples[offset : offset + chunk]
            frame = av.AudioFrame.from_ndarray(piece[None, :], format="flt", layout="mono")
            frame.sample_rate = sample_rate
            frame.pts = offset
            out.mux(audio_out.encode(frame))
        out.mux(audio_out.encode(None))


def _rate(fps: float):
    from fractions import Fraction

    return Fraction(fps).limit_denominator(1001)


def _temporary_sibling(path: Path) -> Path:
    # Written next to the target and renamed into place, so a cached file is never partial.
    return path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")
