"""On-screen text with exact times, from an OCR engine over the kept frames (rapidocr).

A VLM reads text too, but it sees a few frames per clip and reports a time no better than
the frame it saw; the OCR engine reads every kept frame (one a second by default), so an
OCRText node starts within one sample interval of the text's real appearance.

Reading is the costly part (~0.1–0.3 s per frame on a CPU), and most consecutive frames show
the same text, so a frame whose 64-pixel grey thumbnail differs from the last frame read by
less than ``change_threshold`` grey levels (mean absolute difference) is not read again: its
texts are those of the last frame read. The limit of this shortcut is small text changing
inside an otherwise still picture (a ticking clock): it is re-read only when something larger
changes. ``change_threshold: 0`` reads every kept frame.

Texts are followed from frame to frame by a normalized key: letters and digits only, case
folded, and the characters OCR confuses most folded together (``0``/``o``, ``1``/``l``/``i``),
so ``STATI0N`` continues ``STATION`` while ``00:02`` and ``00:03`` stay two texts. They become
spans ``[first seen, last seen + one interval]``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import cv2
import numpy as np

from videotapestry.config import BuilderOcrSettings
from videotapestry.errors import OptionalDependencyError

THUMB_WIDTH = 64
_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})


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


@dataclass
class TextSpan:
    """One text on screen from ``start_s`` to ``end_s`` (absolute seconds)."""

    text: str
    start_s: float
    end_s: float
    confidence: float
    key: str = ""

    def to_json(self) -> list[Any]:
        return [self.text, round(self.start_s, 3), round(self.end_s, 3), round(self.confidence, 3)]

    @classmethod
    def from_json(cls, item: Sequence[Any]) -> TextSpan:
        text = str(item[0])
        return cls(text, float(item[1]), float(item[2]), float(item[3]), text_key(text))


class OcrEngine(Protocol):
    name: str

    def read(self, image: np.ndarray) -> list[OcrHit]:
        """Texts in an RGB image."""
        ...


def text_key(text: str) -> str:
    """Letters and digits, case folded: what two readings of one text have in common."""
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def same_text(a: str, b: str) -> bool:
    """Whether two ``text_key`` values are one text read twice (OCR's usual confusions)."""
    return a.translate(_CONFUSABLE) == b.translate(_CONFUSABLE)


class RapidOcrEngine:
    """rapidocr-onnxruntime (models shipped in the wheel); one instance per thread."""

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
        self._local = threading.local()

    @property
    def version(self) -> str:
        from importlib.metadata import version

        return f"rapidocr-onnxruntime {version('rapidocr-onnxruntime')}"

    def _engine(self) -> Any:
        engine = getattr(self._local, "engine", None)
        if engine is None:
            from rapidocr_onnxruntime import RapidOCR

            # "max": frames under 960 px are read at their own size (the default "min"
            # scales the short side up to 736 px, several times slower for small frames).
            options: dict[str, Any] = {"det_limit_type": "max"}
            if self.settings.threads:
                options["intra_op_num_threads"] = self.settings.threads
                options["inter_op_num_threads"] = 1
            engine = self._local.engine = RapidOCR(**options)
        return engine

    def read(self, image: np.ndarray) -> list[OcrHit]:
        return [OcrHit(hit.text, hit.confidence) for hit in self.read_boxes(image)]

    def read_boxes(self, image: np.ndarray) -> list[OcrBox]:
        """Texts in an RGB image with their boxes (the offline model assigns them to the
        cells of a frame grid)."""
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        result, _ = self._engine()(bgr, use_cls=False)
        boxes = []
        for points, text, score in result or []:
            xs = [float(p[0]) for p in points]
            ys = [float(p[1]) for p in points]
            boxes.append(OcrBox(str(text), float(score), (min(xs), min(ys), max(xs), max(ys))))
        return boxes


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


def thumbnail(image: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    height = max(1, round(grey.shape[0] * THUMB_WIDTH / grey.shape[1]))
    return cv2.resize(grey, (THUMB_WIDTH, height), interpolation=cv2.INTER_AREA).astype(np.float32)


@dataclass
class OcrStats:
    frames: int = 0
    read: int = 0


def frames_to_read(times: Sequence[float], interval_s: float) -> list[int]:
    """Indices of the first frame in each ``interval_s`` slot of video time (slots count from
    the start of the video, so clips next to each other read on one grid)."""
    chosen, last_slot = [], None
    for i, t in enumerate(times):
        slot = int(t / interval_s + 1e-6)
        if slot != last_slot:
            chosen.append(i)
            last_slot = slot
    return chosen


def read_texts(
    engine: OcrEngine,
    frames: Sequence[tuple[float, Callable[[], np.ndarray]]],
    settings: BuilderOcrSettings,
    *,
    end_s: float,
    stats: OcrStats | None = None,
) -> list[TextSpan]:
    """Text spans over time-ordered ``(timestamp, load_image)`` frames ending at ``end_s``."""
    spans: list[TextSpan] = []
    open_spans: list[TextSpan] = []
    last_thumb: np.ndarray | None = None
    last_hits: list[OcrHit] = []
    for number, (t, load) in enumerate(frames):
        image = load()
        thumb = thumbnail(image)
        unchanged = (
            last_thumb is not None
            and settings.change_threshold > 0
            and thumb.shape == last_thumb.shape
            and float(np.abs(thumb - last_thumb).mean()) < settings.change_threshold
        )
        if not unchanged:
            last_hits = _usable(engine.read(image), settings)
            last_thumb = thumb
            if stats is not None:
                stats.read += 1
        if stats is not None:
            stats.frames += 1
        next_t = frames[number + 1][0] if number + 1 < len(frames) else end_s
        still_open: list[TextSpan] = []
        for hit in last_hits:
            key = text_key(hit.text)
            match = next((s for s in open_spans if same_text(s.key, key)), None)
            if match is not None:
                open_spans.remove(match)
                match.end_s = next_t
                if hit.confidence > match.confidence:
                    match.text, match.confidence, match.key = hit.text, hit.confidence, key
                still_open.append(match)
            elif not any(same_text(s.key, key) for s in still_open):
                span = TextSpan(hit.text, t, next_t, hit.confidence, key)
                spans.append(span)
                still_open.append(span)
        open_spans = still_open
    return sorted(spans, key=lambda s: (s.start_s, s.key))


def _usable(hits: list[OcrHit], settings: BuilderOcrSettings) -> list[OcrHit]:
    return [
        OcrHit(h.text.strip(), h.confidence)
        for h in hits
        if h.confidence >= settings.min_confidence and len(text_key(h.text)) >= settings.min_chars
    ]
