"""Texts followed from frame to frame into spans ``[first seen, last seen + one interval]``
(the package docstring says how texts are keyed and which frames are read)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from videotapestry.config import BuilderOcrSettings
from videotapestry.ocr.engine import OcrEngine, OcrHit
from videotapestry.ocr.gate import OcrStats, frame_reader

_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})


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


def text_key(text: str) -> str:
    """Letters and digits, case folded: what two readings of one text have in common."""
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def same_text(a: str, b: str) -> bool:
    """Whether two ``text_key`` values are one text read twice (OCR's usual confusions)."""
    return a.translate(_CONFUSABLE) == b.translate(_CONFUSABLE)


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
    """Text spans over time-ordered ``(timestamp, load_image)`` frames ending at ``end_s``;
    what was read is added to ``stats``."""
    counts = OcrStats()
    reader = frame_reader(engine, settings, counts)
    spans: list[TextSpan] = []
    open_spans: list[TextSpan] = []
    for number, (t, load) in enumerate(frames):
        hits = _usable(reader.hits(load()), settings)
        counts.frames += 1
        next_t = frames[number + 1][0] if number + 1 < len(frames) else end_s
        still_open: list[TextSpan] = []
        for hit in hits:
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
    if stats is not None:
        stats.add(counts)
    return sorted(spans, key=lambda s: (s.start_s, s.key))


def _usable(hits: list[OcrHit], settings: BuilderOcrSettings) -> list[OcrHit]:
    return [
        OcrHit(h.text.strip(), h.confidence)
        for h in hits
        if h.confidence >= settings.min_confidence and len(text_key(h.text)) >= settings.min_chars
    ]
