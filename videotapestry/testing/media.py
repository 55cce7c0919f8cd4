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
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import cv2
import numpy as np

if TYPE_CHECKING:  # Pillow loads only when a scene-text video is drawn
    from PIL import ImageFont

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
    writer = cv2.VideoWriter(str(target), cv2.VideoWriter.fourcc(*"mp4v"), fps, size)
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


def _rate(fps: float) -> Fraction:
    return Fraction(fps).limit_denominator(1001)


def _temporary_sibling(path: Path) -> Path:
    # Written next to the target and renamed into place, so a cached file is never partial.
    return path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")


# --------------------------------------------------------------------------- scene text
#
# Legibility benchmarks need on-screen text of realistic sizes whose exact strings and
# positions are known: subtitles, slide text, signs and titles over a cluttered background.

#: Heights of the burned-in strings as fractions of the frame height (the font's em size):
#: small sign / slide body text (2.5 %), slide text (3.5 %), subtitles (5 %), titles (7.5 %).
SCENE_TEXT_HEIGHTS = (0.025, 0.035, 0.05, 0.075)

_TEXT_WORDS = (
    "after",
    "again",
    "apple",
    "April",
    "arrive",
    "basket",
    "before",
    "bottle",
    "bridge",
    "broken",
    "butter",
    "camera",
    "candle",
    "carpet",
    "castle",
    "centre",
    "chapter",
    "cheese",
    "circle",
    "closed",
    "coffee",
    "corner",
    "cotton",
    "dinner",
    "doctor",
    "dollar",
    "driver",
    "engine",
    "entry",
    "exit",
    "family",
    "farmer",
    "figure",
    "finish",
    "flower",
    "forest",
    "friday",
    "garden",
    "ginger",
    "golden",
    "ground",
    "guitar",
    "hammer",
    "harbour",
    "height",
    "island",
    "jacket",
    "kettle",
    "ladder",
    "lemon",
    "letter",
    "little",
    "market",
    "meeting",
    "mirror",
    "monday",
    "mother",
    "museum",
    "needle",
    "number",
    "orange",
    "office",
    "open",
    "paper",
    "parcel",
    "pencil",
    "people",
    "pepper",
    "planet",
    "pocket",
    "police",
    "potato",
    "rabbit",
    "record",
    "river",
    "rocket",
    "salmon",
    "school",
    "second",
    "silver",
    "simple",
    "sister",
    "street",
    "summer",
    "sunday",
    "supper",
    "table",
    "ticket",
    "timber",
    "tomato",
    "travel",
    "turtle",
    "valley",
    "velvet",
    "window",
    "winter",
    "yellow",
    "zipper",
)
_TEXT_FONTS = ("sans", "serif", "sans-bold", "opencv")
_TEXT_STYLES = ("outline", "panel", "sign", "shadow")
_TRUETYPE_FILES = {
    "sans": "DejaVuSans.ttf",
    "serif": "DejaVuSerif.ttf",
    "sans-bold": "DejaVuSans-Bold.ttf",
}
#: Cap height of the TrueType faces as a fraction of their em size (OpenCV text is scaled to it).
_CAP_HEIGHT = 0.73


@dataclass(frozen=True)
class TextItem:
    """One burned-in string and the box of its glyphs (left, top, right, bottom), frame pixels."""

    text: str
    height_fraction: float
    font: str
    style: str
    box: tuple[int, int, int, int]


@dataclass(frozen=True)
class SceneTextVideo:
    """A written scene-text video and its ground truth: ``scenes[k]`` is on screen in scene k."""

    path: Path
    fps: float
    frame_count: int
    width: int
    height: int
    frames_per_scene: int
    scenes: tuple[tuple[TextItem, ...], ...]

    def items_at(self, index: int) -> tuple[TextItem, ...]:
        """The strings visible in frame ``index``."""
        return self.scenes[min(index // self.frames_per_scene, len(self.scenes) - 1)]


class SceneTextRenderer:
    """Scene ``k``: a cluttered background with one string at each of ``heights``.

    Layout and text depend only on (size, heights, seed, k), so the ground truth of a cached
    video can be recomputed without decoding it. Fonts cycle through three DejaVu faces (the
    bundled Pillow font when they are missing) and the face of ``cv2.putText`` (Hershey in
    OpenCV 4, a sans face in 5); styles through subtitle outline, light slide panel, coloured
    sign and drop shadow. Strings stay below the top 24 % of the frame, where grid cells and
    single frames carry their timestamp tab; ``area="top_left"`` puts them in that corner
    instead, starting at the left edge within the top 26 %, as a dashcam's clock, a channel
    name or a slide's heading sits, to measure what the tab hides.
    """

    def __init__(
        self,
        size: tuple[int, int],
        *,
        heights: Sequence[float] = SCENE_TEXT_HEIGHTS,
        seed: int = 0,
        area: Literal["body", "top_left"] = "body",
    ) -> None:
        self.width, self.height = size
        self.heights = tuple(heights)
        self.seed = seed
        self.area = area
        self._fonts: dict[tuple[str, int], ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}

    def _font(self, name: str, em: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        from PIL import ImageFont

        key = (name, em)
        if key not in self._fonts:
            try:
                self._fonts[key] = ImageFont.truetype(_TRUETYPE_FILES[name], em)
            except OSError:  # pragma: no cover - system without DejaVu fonts
                self._fonts[key] = ImageFont.load_default(size=em)
        return self._fonts[key]

    def _measure(self, text: str, font: str, em: int) -> tuple[int, int, int, int]:
        """Glyph box of ``text`` drawn at the origin (PIL: top-left anchor; OpenCV: baseline)."""
        if font == "opencv":
            face, thickness, scale = self._opencv_face(em)
            (w, h), base = cv2.getTextSize(text, face, scale, thickness)
            return 0, -h, w, base
        from PIL import Image, ImageDraw

        draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
        box = draw.textbbox((0, 0), text, font=self._font(font, em), stroke_width=0)
        left, top, right, bottom = (int(edge) for edge in box)  # whole pixels for a font
        return left, top, right, bottom

    @staticmethod
    def _opencv_face(em: int) -> tuple[int, int, float]:
        face = cv2.FONT_HERSHEY_SIMPLEX
        thickness = max(1, round(em / 14))
        (_w, cap), _ = cv2.getTextSize("H", face, 1.0, thickness)
        return face, thickness, _CAP_HEIGHT * em / max(cap, 1)

    def _text(self, rng: np.random.Generator, style: str, font: str, em: int) -> str:
        # Two words and a number (a count, clock time, price or code), about 15 characters:
        # short enough to keep OCR cheap, and numbers are what a question most often asks.
        words = [str(_TEXT_WORDS[i]) for i in rng.choice(len(_TEXT_WORDS), 2, replace=False)]
        number = rng.choice(
            [
                f"{rng.integers(2, 99)}",
                f"{rng.integers(1, 24)}:{rng.integers(0, 60):02d}",
                f"{rng.integers(1, 99)}.{rng.integers(0, 100):02d}",
                f"{rng.integers(1, 40)}B",
            ]
        )
        parts = [*words, number]
        rng.shuffle(parts)
        if style == "outline":
            parts = [p.lower() for p in parts]
            parts[0] = parts[0].capitalize()
        elif style == "panel":
            parts = [p.capitalize() for p in parts]
        else:
            parts = [p.upper() for p in parts]
        while len(parts) > 2:  # keep the line inside 88 % of the frame width
            left, _, right, _ = self._measure(" ".join(parts), font, em)
            if right - left <= 0.88 * self.width:
                break
            parts.pop()
        return " ".join(parts)

    def layout(self, scene: int) -> tuple[TextItem, ...]:
        """The strings of scene ``scene`` with their boxes, without drawing anything."""
        rng = np.random.default_rng((self.seed, scene))
        corner = self.area == "top_left"
        top, bottom = (0.02, 0.26) if corner else (0.24, 0.95)
        top, bottom = top * self.height, bottom * self.height
        slot = (bottom - top) / len(self.heights)
        order = rng.permutation(len(self.heights))  # which height goes in which band
        items = []
        for position, which in enumerate(order):
            fraction = self.heights[which]
            em = max(6, round(fraction * self.height))
            font = _TEXT_FONTS[(scene + which) % len(_TEXT_FONTS)]
            style = _TEXT_STYLES[(scene // len(_TEXT_FONTS) + which) % len(_TEXT_STYLES)]
            text = self._text(rng, style, font, em)
            left, upper, right, lower = self._measure(text, font, em)
            width, height = right - left, lower - upper
            pad = math.ceil(0.35 * em)
            if corner:
                x = pad + int(rng.uniform(0.0, 0.04) * self.width)
            else:
                x = int(rng.integers(pad, max(pad + 1, self.width - width - pad)))
            free = max(0.0, slot - height - 2 * pad)
            y = int(top + position * slot + pad + rng.uniform(0.2, 0.8) * free)
            box = (x, y, x + width, y + height)
            items.append(TextItem(text, fraction, font, style, box))
        return tuple(items)

    def render(self, scene: int) -> tuple[np.ndarray, tuple[TextItem, ...]]:
        """Scene ``scene`` as an RGB array, and its strings."""
        from PIL import Image, ImageDraw

        items = self.layout(scene)
        picture = Image.fromarray(self._background(scene))
        draw = ImageDraw.Draw(picture)
        opencv = []
        for item in items:
            em = max(6, round(item.height_fraction * self.height))
            left, top, right, bottom = item.box
            pad = math.ceil(0.35 * em)
            if item.style in ("panel", "sign"):
                fill = (
                    (236, 234, 224)
                    if item.style == "panel"
                    else SCENE_COLORS[len(item.text) % len(SCENE_COLORS)]
                )
                draw.rectangle((left - pad, top - pad, right + pad, bottom + pad), fill=fill)
            colour = (28, 28, 36) if item.style == "panel" else (255, 255, 255)
            if item.font == "opencv":
                opencv.append((item, em, colour))
                continue
            font = self._font(item.font, em)
            ox, oy, _, _ = self._measure(item.text, item.font, em)
            origin = (left - ox, top - oy)
            if item.style == "shadow":
                shift = max(1, em // 12)
                draw.text((origin[0] + shift, origin[1] + shift), item.text, (0, 0, 0), font)
            stroke = max(1, em // 12) if item.style == "outline" else 0
            draw.text(origin, item.text, colour, font, stroke_width=stroke, stroke_fill=(0, 0, 0))
        image = np.asarray(picture).copy()
        for item, em, colour in opencv:
            face, thickness, scale = self._opencv_face(em)
            left, top, right, bottom = item.box
            _, base = cv2.getTextSize(item.text, face, scale, thickness)
            origin = (left, bottom - base)
            if item.style in ("outline", "shadow"):
                shift = 0 if item.style == "outline" else max(1, em // 12)
                extra = 2 * max(1, em // 12) if item.style == "outline" else 0
                cv2.putText(
                    image,
                    item.text,
                    (origin[0] + shift, origin[1] + shift),
                    face,
                    scale,
                    (0, 0, 0),
                    thickness + extra,
                    cv2.LINE_AA,
                )
            cv2.putText(image, item.text, origin, face, scale, colour, thickness, cv2.LINE_AA)
        return image, items

    def _background(self, scene: int) -> np.ndarray:
        # A smooth colour field, some shapes and sensor-like noise: content that costs JPEG
        # and H.264 bits the way camera footage does, so text is not on a flat, free canvas.
        rng = np.random.default_rng((self.seed, scene, 1))
        coarse = rng.integers(30, 200, (5, 8, 3)).astype(np.uint8)
        image = cv2.resize(coarse, (self.width, self.height), interpolation=cv2.INTER_CUBIC)
        for _ in range(6):
            colour = tuple(int(c) for c in rng.integers(20, 230, 3))
            centre = (int(rng.integers(0, self.width)), int(rng.integers(0, self.height)))
            axes = (int(rng.integers(8, self.width // 4)), int(rng.integers(8, self.height // 4)))
            cv2.ellipse(image, centre, axes, float(rng.uniform(0, 180)), 0, 360, colour, -1)
        noise = rng.normal(0.0, 7.0, image.shape)
        return np.clip(image.astype(np.float32) + noise, 0, 255).astype(np.uint8)


def make_scene_text_video(
    path: str | Path,
    size: tuple[int, int] = (640, 360),
    *,
    scenes: int = 120,
    scene_s: float = 2.0,
    fps: float = 5.0,
    crf: int = 23,
    heights: Sequence[float] = SCENE_TEXT_HEIGHTS,
    seed: int = 0,
    reuse: bool = False,
    area: Literal["body", "top_left"] = "body",
) -> SceneTextVideo:
    """Write H.264 (libx264, ``crf``) of ``scenes`` static scenes of burned-in text, placed
    in ``area`` (``SceneTextRenderer``).

    With ``reuse`` an existing file at ``path`` is taken as written by an earlier call with
    the same arguments (the ground truth is recomputed, not read from it).
    """
    path = Path(path)
    renderer = SceneTextRenderer(size, heights=heights, seed=seed, area=area)
    per_scene = max(1, round(scene_s * fps))
    truth = tuple(renderer.layout(k) for k in range(scenes))
    result = SceneTextVideo(
        path, float(fps), scenes * per_scene, size[0], size[1], per_scene, truth
    )
    if reuse and path.exists():
        return result
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary_sibling(path)
    with av.open(str(tmp), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=_rate(fps))
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "veryfast", "crf": str(crf)}
        for k in range(scenes):
            image, _items = renderer.render(k)
            for _ in range(per_scene):
                frame = av.VideoFrame.from_ndarray(image, format="rgb24")
                container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    os.replace(tmp, path)
    return result


def set_display_rotation(path: str | Path, degrees: int, *, mirror: bool = False) -> None:
    """Give an mp4's video track a display matrix turning it ``degrees`` clockwise (0, 90,
    180 or 270), as phones record portrait video: the samples stay as they are, a player
    turns them; with ``mirror`` the matrix also flips them left to right (as some front
    cameras do). Written into the ``tkhd`` box in place (no ffmpeg binary needed)."""
    import struct

    one, unit = 0x10000, 0x40000000  # 16.16 and 2.30 fixed point
    cos, sin = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[degrees]
    flip = -1 if mirror else 1  # x -> -x before the turn: the determinant turns negative
    matrix = (flip * cos * one, flip * sin * one, 0, -sin * one, cos * one, 0, 0, 0, unit)
    data = bytearray(Path(path).read_bytes())
    box = data.find(b"tkhd")
    if box < 0 or data[box + 4] != 0:
        raise ValueError(f"{path}: no version-0 tkhd box to set the rotation in")
    # version/flags, 5 times/ids of 4 bytes, 8 reserved, layer, group, volume, 2 reserved
    offset = box + 4 + 4 + 5 * 4 + 8 + 4 * 2
    data[offset : offset + 36] = struct.pack(">9i", *matrix)
    Path(path).write_bytes(bytes(data))
