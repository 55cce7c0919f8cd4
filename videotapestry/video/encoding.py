"""Turning sampled frames into the JPEG images a model call carries.

Two observation modes (SPEC §5): the Overview packs its frames into timestamp-labelled grids
(``overview_images``), Skim and Focus send individual frames (``frame_images``), each with its
timestamp burned into the corner by default, because a chat message carries its images after
its text and the model could not otherwise tell which image shows which moment. That tab
hides on-screen text in the corner (half of it, bench_frame_timestamps.py), so
``agents.frame_timestamps`` can put it on a strip added above the picture instead, or leave
the frame untouched (the paper's frames; the prompt's image notes still give each frame's
time). A grid is
``images.grid_max_side`` wide; a single frame is scaled down so its longer side is at most
``images.frame_max_side`` (never above ``grid_max_side``): a grid cell is a third of the grid's
width, so grids need the larger side for on-screen text to stay legible (bench_grid_legibility.py).
Every image is encoded at ``images.jpeg_quality``.

Budgets are enforced here, before any encoding work: more frames or images than the config
allows raise ``ImageLimitError`` (the caller should have sampled ``*_frame_budget`` frames).
Each ``ImagePart`` keeps the timestamps it shows, for traces and notebooks.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Literal

import cv2
import numpy as np
from PIL import Image, ImageFont

from videotapestry.config import ImagesConfig, LevelSettings, OverviewSettings
from videotapestry.errors import ImageLimitError
from videotapestry.images import ImagePart
from videotapestry.timecode import format_timestamp, label_decimals
from videotapestry.video.grids import (
    CELL_GAP,
    draw_label,
    grid_count,
    label_font,
    pack_grids,
    tab_height,
)
from videotapestry.video.reader import Frame

#: Where a single frame's timestamp goes: a black tab over the frame's top-left corner, the
#: same tab on a black strip added above the frame (no pixel of the picture covered), or
#: nowhere (the frame as decoded, only scaled).
FrameTimestamps = Literal["tab", "strip", "untouched"]

Font = ImageFont.ImageFont | ImageFont.FreeTypeFont


def overview_frame_budget(images: ImagesConfig, overview: OverviewSettings) -> int:
    """How many frames an Overview observation can show: frames cap, grid cap, per-call cap."""
    cells = overview.grid_columns * overview.grid_rows
    return min(overview.max_frames, min(overview.max_grids, images.max_per_call) * cells)


def individual_frame_budget(images: ImagesConfig, level: LevelSettings) -> int:
    """How many individual frames a Skim/Focus observation can show."""
    return min(level.max_frames, images.max_per_call)


def frame_side(images: ImagesConfig) -> int:
    """Longest side of a single frame: ``frame_max_side``, capped by ``grid_max_side``.

    ``grid_max_side`` stays the bound on every image sent, so lowering it alone still shrinks
    everything (the old single-setting behaviour for anyone who tuned it down).
    """
    return min(images.grid_max_side, images.frame_max_side)


def grid_width(frames: Sequence[Frame], max_side: int, columns: int) -> int:
    """Width of the Overview grids: ``max_side``, or less when cells would enlarge frames.

    Enlarging a frame adds no detail, only image tokens, so cells stop at the frames' own
    width (as single frames are never scaled up either).
    """
    if not frames:
        return max_side
    width = min(frames, key=lambda f: f.timestamp_s).image.shape[1]
    return min(max_side, columns * width + (columns - 1) * CELL_GAP)


def resize_to_fit(image: np.ndarray, max_side: int) -> np.ndarray:
    """Scale down (never up) so that the longer side is at most ``max_side``."""
    height, width = image.shape[:2]
    longest = max(height, width)
    if longest <= max_side:
        return image
    scale = max_side / longest
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


#: Pillow's JPEG chroma subsampling: 0 keeps colour at full resolution (4:4:4). Pillow's own
#: default (4:2:0) halves it and fringes the edges of the black timestamp tabs on coloured
#: frames: OCR misread 3-4 of 120 tabs in 1152-1536 px grids, none at 4:4:4. Scene-text recall
#: is the same either way (bench_grid_legibility.py --chroma 420). Costs 30-40 % more bytes,
#: no image tokens (those depend on pixel dimensions only).
JPEG_SUBSAMPLING = 0


def encode_jpeg(image: np.ndarray | Image.Image, *, max_side: int, quality: int) -> bytes:
    """JPEG bytes of an RGB image, scaled down to ``max_side`` first when larger."""
    array = np.asarray(image.convert("RGB")) if isinstance(image, Image.Image) else image
    array = resize_to_fit(array, max_side)
    buffer = io.BytesIO()
    Image.fromarray(array).save(
        buffer, format="JPEG", quality=quality, subsampling=JPEG_SUBSAMPLING
    )
    return buffer.getvalue()


def overview_images(
    frames: Sequence[Frame], images: ImagesConfig, overview: OverviewSettings
) -> list[ImagePart]:
    """The Overview's grids (cells in time order, labelled), as JPEG ``ImagePart`` objects."""
    budget = overview_frame_budget(images, overview)
    if len(frames) > budget:
        grids_needed = grid_count(len(frames), overview.grid_columns, overview.grid_rows)
        raise ImageLimitError(
            f"{len(frames)} frames make {grids_needed} grids; the Overview may show at most "
            f"{budget} frames (agents.overview.max_frames={overview.max_frames}, "
            f"max_grids={overview.max_grids}, images.max_per_call={images.max_per_call})"
        )
    grids = pack_grids(
        frames,
        columns=overview.grid_columns,
        rows=overview.grid_rows,
        grid_width=grid_width(frames, images.grid_max_side, overview.grid_columns),
    )
    parts = []
    for number, grid in enumerate(grids, start=1):
        jpeg = encode_jpeg(grid.image, max_side=images.grid_max_side, quality=images.jpeg_quality)
        span = f"{grid.labels[0]}-{grid.labels[-1]}" if len(grid.labels) > 1 else grid.labels[0]
        parts.append(ImagePart(jpeg, f"grid {number}/{len(grids)} {span}", grid.timestamps))
    return parts


def frame_images(
    frames: Sequence[Frame],
    images: ImagesConfig,
    *,
    max_frames: int,
    label: FrameTimestamps = "tab",
) -> list[ImagePart]:
    """Individual frames (Skim/Focus) in time order, each its own JPEG ``ImagePart``; each
    frame's time is shown as ``label`` says (``stamp_frame``)."""
    cap = min(max_frames, images.max_per_call)
    if len(frames) > cap:
        raise ImageLimitError(
            f"{len(frames)} individual frames exceed the cap of {cap} "
            f"(level max_frames={max_frames}, images.max_per_call={images.max_per_call})"
        )
    ordered = sorted(frames, key=lambda f: f.timestamp_s)
    decimals = label_decimals([f.timestamp_s for f in ordered])
    side = frame_side(images)
    parts = []
    fonts: dict[int, Font] = {}  # one load per height
    for frame in ordered:
        text = format_timestamp(frame.timestamp_s, decimals)
        array = resize_to_fit(frame.image, side)
        height = array.shape[0]
        if label != "untouched" and height not in fonts:
            fonts[height] = label_font(height)
        array = stamp_frame(array, text, label, fonts.get(height))
        jpeg = encode_jpeg(array, max_side=side, quality=images.jpeg_quality)
        parts.append(ImagePart(jpeg, f"frame {text}", (frame.timestamp_s,)))
    return parts


def stamp_frame(
    image: np.ndarray, text: str, placement: FrameTimestamps, font: Font | None = None
) -> np.ndarray:
    """``image`` (RGB) with the timestamp ``text`` where ``placement`` puts it.

    ``tab`` covers the picture's top-left corner with the black tab (text there is hidden);
    ``strip`` puts the same tab on a black strip as tall as the tab, added above the picture,
    whose pixels all stay as they were; ``untouched`` returns ``image`` itself. The tab's font
    is ``font``, else the one ``label_font`` gives for the picture's height (a strip's tab is
    as large as the tab over the picture would be).
    """
    if placement == "untouched":
        return image
    height, width = image.shape[:2]
    font = font or label_font(height)
    if placement == "tab":
        picture = Image.fromarray(image)
        draw_label(picture, text, (0, 0, width, height), font)
        return np.asarray(picture)
    strip = tab_height(text, font)
    canvas = np.zeros((strip + height, width, 3), dtype=np.uint8)
    canvas[strip:] = image
    picture = Image.fromarray(canvas)
    draw_label(picture, text, (0, 0, width, strip), font)
    return np.asarray(picture)
