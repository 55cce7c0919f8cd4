"""OCR engines behind two small protocols: one reads a whole picture, the other also detects
text boxes and recognizes chosen boxes apart, which is what lets the region gate
(``videotapestry.ocr.gate``) pay only for text that changed."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import cv2
import numpy as np

from videotapestry.config import BuilderOcrSettings
from videotapestry.errors import OptionalDependencyError
from videotapestry.ocr.words import blank_runs, spaced_text, unconfused

#: What our reading adds to rapidocr's, in the engine's ``version`` (so in the OCR cache key):
#: bump it when ``read_line`` reads differently, so no text read the old way is reused.
READING = "words 1"
#: rapidocr's own ``text_score``: its pipeline drops texts read with less confidence.
TEXT_SCORE = 0.5


@dataclass(frozen=True)
class OcrHit:
    text: str
    confidence: float


@dataclass(frozen=True)
class OcrBox:
    """A text and where it is: (left, top, right, bottom) in image pixels."""

    text: str
    confidence: float
    box: tuple[float, float, float, float]

    @property
    def centre(self) -> tuple[float, float]:
        return ((self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2)


@dataclass(frozen=True)
class TextBox:
    """Where the detector found a line of text: its four corners (clockwise from the top
    left, image pixels), which the recognizer needs for a tilted line, and their bounds."""

    points: tuple[tuple[float, float], ...]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        xs = [p[0] for p in self.points]
        ys = [p[1] for p in self.points]
        return (min(xs), min(ys), max(xs), max(ys))

    def shifted(self, dx: float, dy: float) -> TextBox:
        return TextBox(tuple((x + dx, y + dy) for x, y in self.points))


class OcrEngine(Protocol):
    name: str

    def read(self, image: np.ndarray) -> list[OcrHit]:
        """Texts in an RGB image."""
        ...


@runtime_checkable
class RegionOcrEngine(Protocol):
    """An engine whose detector and recognizer can be called apart."""

    name: str

    def read(self, image: np.ndarray) -> list[OcrHit]: ...

    def detect(self, image: np.ndarray) -> list[TextBox]:
        """The text boxes of an RGB image, top to bottom."""
        ...

    def recognize(self, image: np.ndarray, boxes: Sequence[TextBox]) -> list[OcrHit]:
        """The text of each box of an RGB image, in the order of ``boxes``."""
        ...


class RapidOcrEngine:
    """rapidocr-onnxruntime (models shipped in the wheel).

    A rapidocr pipeline is used by one thread at a time: each call borrows one from a pool
    and gives it back, so there are as many as calls ever ran at once (the builder's
    ``cpu_workers``), kept for the life of this object. They used to be per thread, and a
    build makes fresh worker threads, so a followed memory (``memory_builders.follow``),
    one build per version, loaded its detector and recognizer again twice a version and
    freed them with the threads: measured with ``bench/bench_live.py`` (65 minutes, appends
    of 5), 26 pipelines instead of 2, each load a burst of native allocations; with two
    kept, the RSS after a version stays higher by what they hold (about 45 MB) but no
    longer swings with the loads (after 10 minutes 878-944 MB against 875-969 MB)."""

    name = "rapidocr"

    def __init__(self, settings: BuilderOcrSettings) -> None:
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError:
            raise OptionalDependencyError(
                "builder.ocr.engine=rapidocr needs rapidocr-onnxruntime; install videotapestry "
                'with the "offline" extra, or set builder.ocr.engine=none'
            ) from None
        self.settings = settings
        self._idle: list[Any] = []  # pipelines no call holds now
        self._idle_lock = threading.Lock()

    @property
    def version(self) -> str:
        from importlib.metadata import version

        return f"rapidocr-onnxruntime {version('rapidocr-onnxruntime')}, {READING}"

    @contextmanager
    def _engine(self) -> Iterator[Any]:
        """A pipeline for this call alone, given back to the pool after it."""
        with self._idle_lock:
            engine = self._idle.pop() if self._idle else None
        if engine is None:
            engine = self._new_engine()
        try:
            yield engine
        finally:
            with self._idle_lock:
                self._idle.append(engine)

    def _new_engine(self) -> Any:
        from rapidocr_onnxruntime import RapidOCR

        # "max": frames under 960 px are read at their own size (the default "min"
        # scales the short side up to 736 px, several times slower for small frames).
        options: dict[str, Any] = {"det_limit_type": "max"}
        if self.settings.threads:
            options["intra_op_num_threads"] = self.settings.threads
            options["inter_op_num_threads"] = 1
        return RapidOCR(**options)

    def read(self, image: np.ndarray) -> list[OcrHit]:
        return [OcrHit(hit.text, hit.confidence) for hit in self.read_boxes(image)]

    def read_boxes(self, image: np.ndarray) -> list[OcrBox]:
        """Texts in an RGB image with their boxes (the offline model assigns them to the
        cells of a frame grid)."""
        found = self.detect(image)
        return [
            OcrBox(hit.text, hit.confidence, box.bounds)
            for box, hit in zip(found, self.recognize(image, found), strict=True)
            if hit.confidence >= TEXT_SCORE
        ]

    def detect(self, image: np.ndarray) -> list[TextBox]:
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        with self._engine() as engine:
            result, _ = engine(bgr, use_cls=False, use_rec=False)
        return [
            TextBox(tuple((float(p[0]), float(p[1])) for p in points)) for points in result or []
        ]

    def recognize(self, image: np.ndarray, boxes: Sequence[TextBox]) -> list[OcrHit]:
        if not boxes:
            return []
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        # The crops rapidocr's own pipeline makes (a perspective warp per box), then its
        # recognizer over them as one batch.
        points = [np.array(b.points, dtype=np.float32) for b in boxes]
        with self._engine() as engine:
            crops = engine.get_crop_img_list(bgr, points)
            results, _ = engine.text_rec(crops, True)
        return [
            OcrHit(read_line(crop, str(text), columns), float(score))
            for crop, (text, score, columns) in zip(crops, results, strict=True)
        ]


def make_ocr_engine(settings: BuilderOcrSettings) -> OcrEngine | None:
    """The configured engine; ``auto`` is rapidocr when it is installed, else no OCR."""
    if settings.engine == "none":
        return None
    if settings.engine == "auto":
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError:
            return None
    return RapidOcrEngine(settings)


def missing_ocr(settings: BuilderOcrSettings, engine: OcrEngine | None) -> str | None:
    """Why the OCR the settings ask for is absent (``auto`` without rapidocr), for the build
    report: a build without it has no exact-time OCRText nodes, which must not pass quietly."""
    if engine is not None or settings.engine != "auto":
        return None
    return (
        "builder.ocr.engine=auto found no rapidocr-onnxruntime: on-screen text comes from the "
        'perception model only (install the "offline" extra for OCRText nodes with exact '
        "times, or set builder.ocr.engine=none)"
    )


def read_line(crop: np.ndarray, text: str, columns: Sequence[Any]) -> str:
    """The recognizer's ``text`` of a BGR line ``crop``, with the spaces between words it left
    out put back and letter/digit confusions inside words undone (``videotapestry.ocr.words``).

    ``columns`` is what rapidocr's recognizer returns with ``return_word_box``: the number of
    CTC columns spanning the crop, then the characters grouped in words with the column each
    was read at (one per character of ``text``, spaces too)."""
    count, _words, word_columns = columns[0], columns[1], columns[2]
    per_char = [column for word in word_columns for column in word]
    if text and count and len(per_char) == len(text):
        width = crop.shape[1] / float(count)
        centres = [(column + 0.5) * width for column in per_char]
        runs, height = blank_runs(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY))
        text = spaced_text(text, centres, runs, height)
    return unconfused(text)
