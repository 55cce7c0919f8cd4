"""What the offline model perceives: OCR of the images it is sent, and text embeddings.

This is the only "looking" the offline model does, and it reads text, nothing else. Images
arrive as the agents send them: single frames (one timestamp each) or timestamp-labelled
grids (one timestamp per cell, row-major, ``videotapestry.video.grids``). A grid is split
into its cells, found from the black gaps between them, and every text read is given the
time of the cell it lies in. The timestamp tab the program burns into a cell's top-left
corner is the program's own label, not scene text, so a reading there that spells the
cell's time is dropped.

Cost is what limits a demo, so every image is read once. A fresh reading of an image is a
pure function of its bytes and is cached by its SHA-256 for the life of the client. Inside
one request, a frame or cell whose thumbnail (label corner masked) matches an earlier one
block by block is not read again: it gets that earlier reading, with its own time. Inside
one grid, when its cells show at most two different pictures only those are read (as
crops); otherwise the whole grid is read in one pass and the boxes are assigned to cells by
their centres. Both shortcuts depend only on the request, so the same request always gets
the same reading.

Embeddings use the packaged all-MiniLM-L6-v2 (no download), loaded lazily once per
``Perception``; a request's texts are embedded in one batch of its distinct texts in sorted
order, so the vectors, too, depend only on the request.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np
from PIL import Image

from videotapestry.config import BuilderOcrSettings, EmbeddingConfig
from videotapestry.embeddings import OFFLINE_MODEL, Embedder, SentenceTransformerEmbedder
from videotapestry.images import ImagePart
from videotapestry.ocr import OcrBox, RapidOcrEngine
from videotapestry.timecode import format_timestamp
from videotapestry.video.grids import CELL_GAP

#: Readings below this confidence are noise more often than text.
MIN_CONFIDENCE = 0.5
THUMB_WIDTH = 96
THUMB_BLOCK = 8
#: Largest mean grey-level difference of any 8x8 block for two pictures to count as one.
SAME_PICTURE = 8.0
#: Characters of a text that its embedding is made from.
EMBED_CHARS = 200
_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})


class BoxReader(Protocol):
    """An OCR engine that says where each text is (``videotapestry.ocr.RapidOcrEngine``)."""

    def read_boxes(self, image: np.ndarray) -> list[OcrBox]: ...


@dataclass(frozen=True)
class CellText:
    """One text read inside one cell, box relative to the cell."""

    text: str
    confidence: float
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class SeenText:
    """A text the offline model read, where and when: image ``image``, cell ``cell``."""

    image: int
    cell: int
    time_s: float | None
    text: str
    confidence: float


@dataclass(frozen=True)
class Cell:
    box: tuple[int, int, int, int]  # left, top, right, bottom in the image

    @property
    def size(self) -> tuple[int, int]:
        return (self.box[2] - self.box[0], self.box[3] - self.box[1])


# --------------------------------------------------------------------------- geometry


def decode_rgb(jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(jpeg)) as image:
        return np.asarray(image.convert("RGB"))


def _grid_cells(width: int, height: int, columns: int, rows: int) -> list[Cell]:
    """The cells of a ``columns x rows`` grid of ``width x height``, row by row."""
    cell_w = (width - CELL_GAP * (columns - 1)) / columns
    cell_h = (height - CELL_GAP * (rows - 1)) / rows
    cells = []
    for row in range(rows):
        for column in range(columns):
            left = round(column * (cell_w + CELL_GAP))
            top = round(row * (cell_h + CELL_GAP))
            cells.append(
                Cell(
                    (left, top, min(width, round(left + cell_w)), min(height, round(top + cell_h)))
                )
            )
    return cells


def _gap_stripes_dark(image: np.ndarray, columns: int, rows: int) -> bool:
    """Whether the gap stripes of a ``columns x rows`` grid are (nearly) black."""
    height, width = image.shape[:2]
    cell_w = (width - CELL_GAP * (columns - 1)) / columns
    cell_h = (height - CELL_GAP * (rows - 1)) / rows
    if cell_w < 16 or cell_h < 9:
        return False
    grey = image.mean(axis=2)
    for k in range(1, columns):
        x = round(k * (cell_w + CELL_GAP) - CELL_GAP)
        stripe = grey[:, max(0, x + 1) : x + CELL_GAP - 1]
        if stripe.size == 0 or stripe.mean() > 24:
            return False
    for k in range(1, rows):
        y = round(k * (cell_h + CELL_GAP) - CELL_GAP)
        stripe = grey[max(0, y + 1) : y + CELL_GAP - 1, :]
        if stripe.size == 0 or stripe.mean() > 24:
            return False
    return True


def grid_layout(
    image: np.ndarray, frames: int, hint: tuple[int, int] | None = None
) -> tuple[int, int]:
    """(columns, rows) of a grid image holding ``frames`` frames.

    The prompt's own description wins when it has one; otherwise the shipped 3x2 layout,
    then any other layout with enough cells whose gap stripes are black. A single frame is
    1x1, and so is an image no layout fits (the whole image is then read as one cell).
    """
    if frames <= 1:
        return (1, 1)
    candidates = [hint] if hint else []
    candidates.append((3, 2))
    others = [(c, r) for c in range(1, 7) for r in range(1, 7) if c * r >= frames]
    candidates += sorted(others, key=lambda cr: (cr[0] * cr[1], -cr[0]))
    for columns, rows in candidates:
        if columns * rows >= frames and _gap_stripes_dark(image, columns, rows):
            return (columns, rows)
    return (1, 1)


def label_region(size: tuple[int, int]) -> tuple[int, int]:
    """(width, height) of the corner a timestamp tab can cover in a cell of ``size``
    (``videotapestry.video.grids.draw_label``: a font of 1/8 of the height, at least 10 px)."""
    width, height = size
    font = max(10, height // 8)
    return min(round(width * 0.6), round(font * 5.5)), min(round(height * 0.45), round(font * 2))


def thumbnail(cell: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(cell, cv2.COLOR_RGB2GRAY)
    height = max(THUMB_BLOCK, round(grey.shape[0] * THUMB_WIDTH / max(1, grey.shape[1])))
    thumb = cv2.resize(grey, (THUMB_WIDTH, height), interpolation=cv2.INTER_AREA)
    thumb = thumb.astype(np.float32)
    label_w, label_h = label_region((cell.shape[1], cell.shape[0]))
    thumb[
        : round(label_h * height / cell.shape[0]), : round(label_w * THUMB_WIDTH / cell.shape[1])
    ] = 0
    return thumb


def same_picture(a: np.ndarray, b: np.ndarray, threshold: float = SAME_PICTURE) -> bool:
    """Whether two thumbnails show one picture: every 8x8 block's mean difference is small
    (a changed word moves a block by tens of grey levels; JPEG noise by one or two)."""
    if a.shape != b.shape:
        return False
    rows = a.shape[0] // THUMB_BLOCK * THUMB_BLOCK
    diff = np.abs(a[:rows] - b[:rows]).reshape(rows // THUMB_BLOCK, THUMB_BLOCK, -1, THUMB_BLOCK)
    return float(diff.mean(axis=(1, 3)).max()) < threshold


# --------------------------------------------------------------------------- labels


def _fold(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold()).translate(_CONFUSABLE)


def label_keys(time_s: float | None) -> set[str]:
    """The ways the tab of a cell shown at ``time_s`` can read (0-2 decimals)."""
    if time_s is None or time_s < 0:
        return set()
    return {_fold(format_timestamp(time_s, decimals)) for decimals in range(3)}


def without_label(
    texts: Sequence[CellText], size: tuple[int, int], time_s: float | None
) -> list[CellText]:
    """Drop the cell's timestamp tab from its readings (or strip it off a reading that ran
    into the scene text beside it); everything else is kept."""
    keys = label_keys(time_s)
    if not keys:
        return list(texts)
    region_w, region_h = label_region(size)
    kept = []
    for item in texts:
        left, top, _right, bottom = item.box
        in_corner = left < region_w and (top + bottom) / 2 < region_h
        if in_corner:
            if _fold(item.text) in keys:
                continue
            first, _, rest = item.text.strip().partition(" ")
            if _fold(first) in keys and rest.strip():
                item = CellText(rest.strip(), item.confidence, item.box)
        kept.append(item)
    return kept


# --------------------------------------------------------------------------- perception


class Perception:
    """OCR and embeddings shared by the offline clients of one model service.

    Both models load lazily, once, and are used under locks (two cores: one OCR or one
    embedding batch at a time runs faster than several fighting for them).
    """

    def __init__(
        self,
        *,
        ocr_engine: BoxReader | None = None,
        embedder: Embedder | None = None,
        cache_size: int = 4096,
    ) -> None:
        self._ocr = ocr_engine
        self._embedder = embedder
        self._cache: OrderedDict[tuple[str, int, int], _ImageReading] = OrderedDict()
        self._cache_size = cache_size
        self._ocr_lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        # For benchmarks: fresh OCR passes (whole images or crops) and seconds spent.
        self.images_read = 0
        self.ocr_s = 0.0
        self.embed_s = 0.0

    # -- models ---------------------------------------------------------------------------

    def _engine(self) -> BoxReader:
        if self._ocr is None:
            # One onnxruntime thread, as the builder's default: on two cores a second thread
            # barely shortens a question (22.2 -> 21.1 s) and costs 16% more CPU, and with two
            # processes asking at once its spinning made each one 35% slower (28 -> 38 s).
            self._ocr = RapidOcrEngine(BuilderOcrSettings(engine="rapidocr", threads=1))
        return self._ocr

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = SentenceTransformerEmbedder(
                EmbeddingConfig(model=OFFLINE_MODEL, query_prompt_name=None)
            )
        return self._embedder

    def embed(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the distinct ``texts``, embedded in one batch in sorted order.

        Each text is embedded by its first ``EMBED_CHARS`` characters: the evidence units
        are short, and a long line costs several times the time of a short one for little
        more meaning.
        """
        distinct = sorted({t for t in texts if t.strip()})
        if not distinct:
            return {}
        heads = sorted({t[:EMBED_CHARS] for t in distinct})
        with self._embed_lock:
            started = time.perf_counter()
            vectors = self.embedder.embed(heads)
            self.embed_s += time.perf_counter() - started
        by_head = {head: vectors[i] for i, head in enumerate(heads)}
        return {text: by_head[text[:EMBED_CHARS]] for text in distinct}

    def _ocr_boxes(self, image: np.ndarray) -> list[OcrBox]:
        with self._ocr_lock:
            started = time.perf_counter()
            boxes = self._engine().read_boxes(image)
            self.images_read += 1
            self.ocr_s += time.perf_counter() - started
            return boxes

    # -- reading images -------------------------------------------------------------------

    def read(
        self, images: Sequence[ImagePart], grid_hint: tuple[int, int] | None = None
    ) -> list[SeenText]:
        """Every text in ``images``, with the time of the frame or cell it was read in.

        Returned in image order, then cell order, then reading order (top to bottom).
        """
        seen: list[SeenText] = []
        # Cells already read in this request: (size, thumbnail, texts).
        read_before: list[tuple[tuple[int, int], np.ndarray, list[CellText]]] = []
        for number, part in enumerate(images):
            image = decode_rgb(part.jpeg)
            count = max(1, len(part.timestamps))
            columns, rows = grid_layout(image, count, grid_hint)
            cells = _grid_cells(image.shape[1], image.shape[0], columns, rows)[:count]
            if len(cells) < count:  # a layout fit only as one cell: it shows the first time
                count = len(cells)
            thumbs = [thumbnail(_crop(image, cell)) for cell in cells]
            times = [part.timestamps[k] if k < len(part.timestamps) else None for k in range(count)]
            copied: dict[int, list[CellText]] = {}
            for k, cell in enumerate(cells):
                match = next(
                    (
                        texts
                        for size, thumb, texts in read_before
                        if size == cell.size and same_picture(thumb, thumbs[k])
                    ),
                    None,
                )
                if match is not None:
                    copied[k] = match
            own = (
                self._own_reading(part.sha256, image, cells, thumbs)
                if len(copied) < len(cells)
                else None
            )
            for k, cell in enumerate(cells):
                if k in copied:
                    texts = copied[k]
                else:
                    assert own is not None
                    # A cell read through a look-alike cell carries that cell's label tab.
                    texts = without_label(own.texts[k], cell.size, times[own.read_from[k]])
                    read_before.append((cell.size, thumbs[k], texts))
                for item in texts:
                    seen.append(SeenText(number, k, times[k], item.text, item.confidence))
        return seen

    def _own_reading(
        self, sha: str, image: np.ndarray, cells: list[Cell], thumbs: list[np.ndarray]
    ) -> _ImageReading:
        """The image's own reading, per cell (label tabs still in); cached by SHA-256."""
        key = (sha, len(cells), cells[0].size[0])
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        reading = self._read_cells(image, cells, thumbs)
        with self._cache_lock:
            self._cache[key] = reading
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return reading

    def _read_cells(
        self, image: np.ndarray, cells: list[Cell], thumbs: list[np.ndarray]
    ) -> _ImageReading:
        groups: list[list[int]] = []
        for k in range(len(cells)):
            home = next(
                (
                    g
                    for g in groups
                    if cells[g[0]].size == cells[k].size and same_picture(thumbs[g[0]], thumbs[k])
                ),
                None,
            )
            if home is None:
                groups.append([k])
            else:
                home.append(k)
        reading: list[tuple[CellText, ...]] = [()] * len(cells)
        read_from = list(range(len(cells)))
        if len(cells) == 1 or len(groups) <= 2:
            for group in groups:
                texts = _usable(
                    CellText(b.text.strip(), b.confidence, b.box)
                    for b in self._ocr_boxes(_crop(image, cells[group[0]]))
                )
                for k in group:
                    reading[k] = texts
                    read_from[k] = group[0]
            return _ImageReading(tuple(reading), tuple(read_from))
        per_cell: list[list[CellText]] = [[] for _ in cells]
        for b in self._ocr_boxes(image):
            x, y = b.centre
            for k, cell in enumerate(cells):
                left, top, right, bottom = cell.box
                if left <= x < right and top <= y < bottom:
                    shifted = (b.box[0] - left, b.box[1] - top, b.box[2] - left, b.box[3] - top)
                    per_cell[k].append(CellText(b.text.strip(), b.confidence, shifted))
                    break
        return _ImageReading(tuple(_usable(texts) for texts in per_cell), tuple(read_from))


@dataclass(frozen=True)
class _ImageReading:
    """An image's own reading: per cell its texts, and the cell whose pixels were read for
    it (a cell that shows the same picture as an earlier one is read through that one)."""

    texts: tuple[tuple[CellText, ...], ...]
    read_from: tuple[int, ...]


def _crop(image: np.ndarray, cell: Cell) -> np.ndarray:
    left, top, right, bottom = cell.box
    return np.ascontiguousarray(image[top:bottom, left:right])


def _usable(texts: Iterable[CellText]) -> tuple[CellText, ...]:
    """Readings confident enough and with two letters or digits at least."""
    return tuple(t for t in texts if t.confidence >= MIN_CONFIDENCE and len(_fold(t.text)) >= 2)
