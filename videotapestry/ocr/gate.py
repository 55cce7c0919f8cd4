"""What of a kept frame the OCR engine is asked to read again (``builder.ocr.gate``).

Each reader holds the texts of the picture it last read and answers, for the next frame, the
texts on screen, calling the engine only for what changed. The pure rules (which rows
changed, which regions they make, whether a box's pixels changed) are functions of their own
so they can be tested without an engine.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import cv2
import numpy as np

from videotapestry.config import BuilderOcrSettings
from videotapestry.errors import ConfigError
from videotapestry.ocr.engine import OcrEngine, OcrHit, RegionOcrEngine, TextBox

THUMB_WIDTH = 64
#: Pixels (as a share of the frame height, at least ``MIN_MARGIN_PX``) added around a group
#: of changed cells, so the detector sees the text with some background around it.
BAND_MARGIN = 0.04
MIN_MARGIN_PX = 8
#: Regions covering this share of the frame are read as one whole frame (one detector call).
WHOLE_FRAME_SHARE = 0.6
#: A box found again overlaps its earlier self at least this much (intersection over union).
SAME_BOX_IOU = 0.5

#: Below these the detector pads its input (rapidocr's ``width_height_ratio`` and
#: ``min_height``), so regions are made at least this tall instead.
DETECTOR_MAX_RATIO = 8
DETECTOR_MIN_HEIGHT = 32

Bounds = tuple[float, float, float, float]
Rect = tuple[int, int, int, int]


@dataclass
class OcrStats:
    """What the OCR of a build cost: kept frames looked at, frames the engine was asked about,
    detector calls, boxes recognized and boxes whose earlier text was kept."""

    frames: int = 0
    read: int = 0
    detected: int = 0
    recognized: int = 0
    kept: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, other: OcrStats) -> None:
        """Add another reader's counts (clips are read on several threads at once)."""
        with self._lock:
            self.frames += other.frames
            self.read += other.read
            self.detected += other.detected
            self.recognized += other.recognized
            self.kept += other.kept


def grey_of(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)


def thumbnail(image: np.ndarray) -> np.ndarray:
    """A grey thumbnail ``THUMB_WIDTH`` wide (an RGB image, or a grey one as it is)."""
    grey = grey_of(image) if image.ndim == 3 else image
    height = max(1, round(grey.shape[0] * THUMB_WIDTH / grey.shape[1]))
    return cv2.resize(grey, (THUMB_WIDTH, height), interpolation=cv2.INTER_AREA).astype(np.float32)


def changed_cells(before: np.ndarray, after: np.ndarray, threshold: float) -> np.ndarray:
    """Per thumbnail cell, whether it changed by more than ``threshold`` grey levels."""
    return np.asarray(np.abs(after - before) > threshold)


def cell_groups(cells: np.ndarray, width: int, height: int) -> list[Rect]:
    """Pixel rectangles of a ``width`` x ``height`` frame, one per group of touching changed
    cells."""
    rows, cols = cells.shape
    count, _, stats, _ = cv2.connectedComponentsWithStats(cells.astype(np.uint8), connectivity=8)
    return [
        (
            int(left * width / cols),
            int(top * height / rows),
            min(width, int(np.ceil((left + w) * width / cols))),
            min(height, int(np.ceil((top + h) * height / rows))),
        )
        for left, top, w, h, _ in stats[1:count]
    ]


def with_margin(rect: Rect, width: int, height: int) -> Rect:
    """A group of changed cells widened by the margin (clamped to the frame)."""
    margin = max(MIN_MARGIN_PX, round(BAND_MARGIN * height))
    return (
        max(0, rect[0] - margin),
        max(0, rect[1] - margin),
        min(width, rect[2] + margin),
        min(height, rect[3] + margin),
    )


def regions_from_cells(cells: np.ndarray, width: int, height: int) -> list[Rect]:
    """Pixel rectangles covering the changed cells: one per group of touching cells, widened
    by the margin."""
    return [with_margin(rect, width, height) for rect in cell_groups(cells, width, height)]


def inside_box(group: Rect, box: Bounds, slack_y: float) -> bool:
    """Whether a group of changed cells lies within a text box: left to right exactly (a
    text that grew changes cells beyond its old box), top to bottom give or take
    ``slack_y`` (a cell row straddling the box's edge)."""
    return (
        box[0] <= group[0]
        and group[2] <= box[2]
        and box[1] - slack_y <= group[1]
        and group[3] <= box[3] + slack_y
    )


def grow_regions(
    rects: Sequence[Rect], boxes: Sequence[Bounds], width: int, height: int
) -> list[Rect]:
    """The rectangles grown to cover every text box they touch (a line of text is read
    whole), tall enough for the detector (``_tall_enough``) and merged where they overlap,
    until nothing changes."""
    grown = list(rects)
    while True:
        before = list(grown)
        for i, rect in enumerate(grown):
            for box in boxes:
                if overlaps(rect, box):
                    rect = _cover(rect, _with_context(box, width, height))
            grown[i] = _tall_enough(rect, height)
        grown = _merged(grown)
        if grown == before:
            return grown


def _with_context(box: Bounds, width: int, height: int) -> Bounds:
    """A text box with background around it: the detector misses the first and last
    characters of a line that touches the edge of its picture."""
    pad = box[3] - box[1]
    return (
        max(0.0, box[0] - pad),
        max(0.0, box[1] - pad / 2),
        min(float(width), box[2] + pad),
        min(float(height), box[3] + pad / 2),
    )


def _cover(rect: Rect, box: Bounds) -> Rect:
    return (
        min(rect[0], int(box[0])),
        min(rect[1], int(box[1])),
        max(rect[2], int(np.ceil(box[2]))),
        max(rect[3], int(np.ceil(box[3]))),
    )


def _tall_enough(rect: Rect, height: int) -> Rect:
    """Taller, within the frame, when the detector would otherwise pad it (rapidocr pads a
    picture wider than ``DETECTOR_MAX_RATIO`` times its height, or lower than
    ``DETECTOR_MIN_HEIGHT``, to twice the size, which costs more than real rows)."""
    need = max(DETECTOR_MIN_HEIGHT, int(np.ceil((rect[2] - rect[0]) / DETECTOR_MAX_RATIO)) + 1)
    missing = need - (rect[3] - rect[1])
    if missing <= 0:
        return rect
    top = max(0, rect[1] - (missing + 1) // 2)
    bottom = min(height, top + need)
    return (rect[0], max(0, bottom - need), rect[2], bottom)


def _merged(rects: Sequence[Rect]) -> list[Rect]:
    merged: list[Rect] = []
    for rect in sorted(rects, key=lambda r: (r[1], r[0])):
        for i, other in enumerate(merged):
            if overlaps(rect, other):
                merged[i] = _cover(other, rect)
                break
        else:
            merged.append(rect)
    return merged if len(merged) == len(rects) else _merged(merged)


def overlaps(a: Bounds, b: Bounds) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def box_iou(a: Bounds, b: Bounds) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def box_changed(before: np.ndarray, after: np.ndarray, bounds: Bounds, threshold: float) -> bool:
    """Whether the grey pixels inside ``bounds`` changed: compared in cells an eighth of the
    box's height, so one changed character of a long line still shows, while noise spread
    over a cell does not."""
    height, width = after.shape[:2]
    left, top = max(0, int(bounds[0])), max(0, int(bounds[1]))
    right, bottom = min(width, int(np.ceil(bounds[2]))), min(height, int(np.ceil(bounds[3])))
    if right <= left or bottom <= top:
        return True
    cell = max(2, (bottom - top) // 8)
    size = (max(1, (right - left) // cell), max(1, (bottom - top) // cell))
    a = cv2.resize(before[top:bottom, left:right], size, interpolation=cv2.INTER_AREA)
    b = cv2.resize(after[top:bottom, left:right], size, interpolation=cv2.INTER_AREA)
    return bool((np.abs(a.astype(np.float32) - b.astype(np.float32)) > threshold).any())


class FrameReader(Protocol):
    def hits(self, image: np.ndarray) -> list[OcrHit]:
        """The texts on screen in this frame (every one, also those read before)."""
        ...


def frame_reader(engine: OcrEngine, settings: BuilderOcrSettings, stats: OcrStats) -> FrameReader:
    """The reader ``settings.gate`` asks for, over ``engine``."""
    if settings.gate == "regions":
        if not isinstance(engine, RegionOcrEngine):
            raise ConfigError(
                f"builder.ocr.gate=regions needs an OCR engine that detects and recognizes "
                f"text boxes apart (detect/recognize); {getattr(engine, 'name', engine)!r} "
                "only reads whole frames: set builder.ocr.gate=frame"
            )
        return RegionReader(engine, settings.region_threshold, stats)
    threshold = settings.change_threshold if settings.gate == "frame" else 0.0
    return WholeFrameReader(engine, threshold, stats)


class WholeFrameReader:
    """Reads a frame whole unless its thumbnail is within ``threshold`` of the last read."""

    def __init__(self, engine: OcrEngine, threshold: float, stats: OcrStats) -> None:
        self.engine = engine
        self.threshold = threshold
        self.stats = stats
        self._thumb: np.ndarray | None = None
        self._hits: list[OcrHit] = []

    def hits(self, image: np.ndarray) -> list[OcrHit]:
        thumb = thumbnail(image)
        unchanged = (
            self._thumb is not None
            and self.threshold > 0
            and thumb.shape == self._thumb.shape
            and float(np.abs(thumb - self._thumb).mean()) < self.threshold
        )
        if not unchanged:
            self._hits = self.engine.read(image)
            self._thumb = thumb
            self.stats.read += 1
        return self._hits


@dataclass(frozen=True)
class _Read:
    box: TextBox
    hit: OcrHit


class RegionReader:
    """Reads only the changed regions of a frame, and in them only the boxes that changed; a
    change wholly inside a box already read is recognized again in that box, undetected."""

    def __init__(self, engine: RegionOcrEngine, threshold: float, stats: OcrStats) -> None:
        self.engine = engine
        self.threshold = threshold
        self.stats = stats
        #: The picture the current texts were read from, region by region.
        self._grey: np.ndarray | None = None
        self._thumb: np.ndarray | None = None
        self._reads: list[_Read] = []

    def hits(self, image: np.ndarray) -> list[OcrHit]:
        grey = grey_of(image)
        height, width = grey.shape
        before = self._grey if self._grey is not None and self._grey.shape == grey.shape else None
        whole: list[Rect] = [(0, 0, width, height)]
        in_place: list[_Read] = []
        in_place_cells: list[Rect] = []
        if before is None or self._thumb is None:
            regions = whole
        else:
            cells = changed_cells(self._thumb, thumbnail(grey), self.threshold)
            in_place, in_place_cells, groups = self._in_place(
                cell_groups(cells, width, height) if cells.any() else [], height / len(cells)
            )
            # A box whose pixels changed below the thumbnail's resolution (a slide counter
            # going from 1 to 2 in small print) is read again as a region of its own: the new
            # text may be wider than the old box.
            groups += [
                _rect(r.box.bounds)
                for r in self._reads
                if r not in in_place and box_changed(before, grey, r.box.bounds, self.threshold)
            ]
            if not groups and not in_place:
                return [r.hit for r in self._reads]
            regions = grow_regions(
                [with_margin(g, width, height) for g in groups],
                [r.box.bounds for r in self._reads],
                width,
                height,
            )
            area = sum((r[2] - r[0]) * (r[3] - r[1]) for r in regions)
            if area >= WHOLE_FRAME_SHARE * width * height:
                regions = whole
            in_place = [r for r in in_place if not _touches(r.box.bounds, regions)]
        self.stats.read += 1
        earlier = [r for r in self._reads if _touches(r.box.bounds, regions)]
        kept = [r for r in self._reads if r not in earlier and r not in in_place]
        found: list[TextBox] = []
        for left, top, right, bottom in regions:
            self.stats.detected += 1
            crop = np.ascontiguousarray(image[top:bottom, left:right])
            found += [box.shifted(left, top) for box in self.engine.detect(crop)]
        again, unread = self._match(found, earlier, before, grey)
        unread += [r.box for r in in_place]
        # One box per call: a batch is padded to its widest crop, which costs more than it saves.
        hits = [hit for box in unread for hit in self.engine.recognize(image, [box])]
        self.stats.recognized += len(unread)
        self._reads = sorted(
            kept + again + [_Read(box, hit) for box, hit in zip(unread, hits, strict=True)],
            key=lambda r: (round(r.box.bounds[1]), r.box.bounds[0]),
        )
        if before is None:
            before = self._grey = grey
        else:
            # The cells of a change read in place too: they may reach past the box's edge.
            refreshed = regions + [_rect(r.box.bounds) for r in in_place] + in_place_cells
            for left, top, right, bottom in refreshed:
                before[top:bottom, left:right] = grey[top:bottom, left:right]
        self._thumb = thumbnail(before)
        return [r.hit for r in self._reads]

    def _in_place(
        self, groups: list[Rect], cell_height: float
    ) -> tuple[list[_Read], list[Rect], list[Rect]]:
        """The boxes whose change lies wholly inside them, to be recognized again where they
        are without the detector (a ticking clock), the groups of changed cells they take,
        and the groups left."""
        boxes: list[_Read] = []
        taken: list[Rect] = []
        left: list[Rect] = []
        for group in groups:
            owner = next(
                (r for r in self._reads if inside_box(group, r.box.bounds, cell_height)), None
            )
            if owner is None:
                left.append(group)
                continue
            taken.append(group)
            if owner not in boxes:
                boxes.append(owner)
        return boxes, taken, left

    def _match(
        self,
        found: list[TextBox],
        earlier: list[_Read],
        before: np.ndarray | None,
        grey: np.ndarray,
    ) -> tuple[list[_Read], list[TextBox]]:
        """Found boxes whose earlier self shows the same pixels keep its text; the rest are
        to be recognized."""
        again: list[_Read] = []
        unread: list[TextBox] = []
        left = list(earlier)
        for box in found:
            bounds = box.bounds
            match = max(left, key=lambda r: box_iou(r.box.bounds, bounds), default=None)
            if (
                before is not None
                and match is not None
                and box_iou(match.box.bounds, bounds) >= SAME_BOX_IOU
                and not box_changed(before, grey, _union(match.box.bounds, bounds), self.threshold)
            ):
                left.remove(match)
                again.append(_Read(box, match.hit))
                self.stats.kept += 1
            else:
                unread.append(box)
        return again, unread


def _rect(bounds: Bounds) -> Rect:
    return (int(bounds[0]), int(bounds[1]), int(np.ceil(bounds[2])), int(np.ceil(bounds[3])))


def _touches(bounds: Bounds, regions: Sequence[Rect]) -> bool:
    return any(overlaps(bounds, region) for region in regions)


def _union(a: Bounds, b: Bounds) -> Bounds:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
