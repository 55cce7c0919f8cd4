"""Frame grids for the Overview agent: many moments of the video in few images.

The Overview looks at up to 120 frames while a call carries at most 50 images, so frames are
packed into grids (3 columns × 2 rows by default), filled row by row in time order. Each cell
gets its timestamp burned into its top-left corner: the model reads the time of what it sees
from the picture itself and can report it. Labels use ``mm:ss`` (``h:mm:ss`` past an hour),
with a fraction only when whole seconds would give two cells the same label. Unused cells of
the last grid stay black.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from videotapestry.timecode import format_timestamp, label_decimals
from videotapestry.video.reader import Frame

#: Pixels of black between neighbouring cells, so the model sees where one frame ends.
CELL_GAP = 4


@dataclass(frozen=True)
class FrameGrid:
    """One packed grid; ``timestamps[i]`` is the frame in cell ``i`` (row-major)."""

    image: Image.Image
    timestamps: tuple[float, ...]
    labels: tuple[str, ...]
    cell_size: tuple[int, int]
    columns: int
    rows: int

    def cell_box(self, position: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of cell ``position`` in ``image``."""
        return cell_box(position, self.columns, self.cell_size)


def cell_box(position: int, columns: int, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of cell ``position`` (row-major) in a grid image."""
    row, column = divmod(position, columns)
    width, height = size
    left = column * (width + CELL_GAP)
    top = row * (height + CELL_GAP)
    return left, top, left + width, top + height


def cell_size_for(frame_shape: tuple[int, ...], columns: int, grid_width: int) -> tuple[int, int]:
    """The cell (width, height) that makes a grid ``grid_width`` wide at the frames' aspect."""
    height, width = frame_shape[:2]
    cell_width = max(16, (grid_width - CELL_GAP * (columns - 1)) // columns)
    cell_height = max(9, round(cell_width * height / width))
    return cell_width, cell_height


def pack_grids(
    frames: Sequence[Frame],
    *,
    columns: int = 3,
    rows: int = 2,
    cell_size: tuple[int, int] | None = None,
    grid_width: int = 768,
    label: bool = True,
) -> list[FrameGrid]:
    """Pack ``frames`` (sorted by time first) into grids of ``columns × rows`` cells.

    ``cell_size`` (width, height) is explicit, or derived so that a grid is ``grid_width``
    pixels wide at the first frame's aspect ratio. Frames of another aspect are letterboxed.
    """
    if columns < 1 or rows < 1:
        raise ValueError("a grid needs at least one column and one row")
    ordered = sorted(frames, key=lambda f: f.timestamp_s)
    if not ordered:
        return []
    size = cell_size or cell_size_for(ordered[0].image.shape, columns, grid_width)
    decimals = label_decimals([f.timestamp_s for f in ordered])
    per_grid = columns * rows
    grids = []
    for first in range(0, len(ordered), per_grid):
        chunk = ordered[first : first + per_grid]
        grids.append(_pack_one(chunk, columns, rows, size, decimals, label))
    return grids


def draw_label(
    image: Image.Image,
    text: str,
    box: tuple[int, int, int, int],
    font: ImageFont.ImageFont | ImageFont.FreeTypeFont | None = None,
) -> None:
    """White text on a black tab in the top-left corner of ``box`` (in place)."""
    left, top, _right, bottom = box
    font = font or label_font(bottom - top)
    draw = ImageDraw.Draw(image)
    text_box = draw.textbbox((0, 0), text, font=font)
    pad = label_pad(text_box)
    width = text_box[2] - text_box[0] + 2 * pad
    height = text_box[3] - text_box[1] + 2 * pad
    draw.rectangle((left, top, left + width, top + height), fill=(0, 0, 0))
    draw.text(
        (left + pad - text_box[0], top + pad - text_box[1]), text, fill=(255, 255, 255), font=font
    )


def label_pad(text_box: tuple[float, float, float, float]) -> int:
    """Margin around a tab's text: a quarter of the text's height, at least 2 px."""
    return max(2, int(text_box[3] - text_box[1]) // 4)


def tab_height(text: str, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> int:
    """Rows of pixels the tab of ``text`` covers (``draw_label`` fills both end rows), so a
    strip this tall above a frame holds the whole tab."""
    text_box = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=font)
    return int(text_box[3] - text_box[1]) + 2 * label_pad(text_box) + 1


def label_font(cell_height: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's bundled scalable font at about 1/8 of the cell height (at least 10 px)."""
    size = max(10, cell_height // 8)
    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1 with FreeType
    except (TypeError, OSError, ImportError):  # pragma: no cover - old Pillow / no FreeType
        return ImageFont.load_default()


def _pack_one(
    chunk: Sequence[Frame],
    columns: int,
    rows: int,
    size: tuple[int, int],
    decimals: int,
    label: bool,
) -> FrameGrid:
    width, height = size
    canvas = np.zeros(
        (rows * height + (rows - 1) * CELL_GAP, columns * width + (columns - 1) * CELL_GAP, 3),
        dtype=np.uint8,
    )
    labels = tuple(format_timestamp(f.timestamp_s, decimals) for f in chunk)
    for position, frame in enumerate(chunk):
        left, top, right, bottom = cell_box(position, columns, size)
        canvas[top:bottom, left:right] = fit_into(frame.image, size)
    image = Image.fromarray(canvas)
    if label:
        font = label_font(height)
        for position, text in enumerate(labels):
            draw_label(image, text, cell_box(position, columns, size), font)
    return FrameGrid(image, tuple(f.timestamp_s for f in chunk), labels, size, columns, rows)


def fit_into(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` resized to exactly ``size`` (width, height), letterboxed if the aspect differs."""
    width, height = size
    src_h, src_w = image.shape[:2]
    scale = min(width / src_w, height / src_h)
    new_w, new_h = max(1, round(src_w * scale)), max(1, round(src_h * scale))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    resized = cv2.resize(image, (new_w, new_h), interpolation=interpolation)
    if (new_w, new_h) == (width, height):
        return resized
    out = np.zeros((height, width, 3), dtype=np.uint8)
    top, left = (height - new_h) // 2, (width - new_w) // 2
    out[top : top + new_h, left : left + new_w] = resized
    return out


def grid_count(frame_count: int, columns: int, rows: int) -> int:
    return math.ceil(frame_count / (columns * rows)) if frame_count > 0 else 0
