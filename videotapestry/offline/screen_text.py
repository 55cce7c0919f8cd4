"""On-screen text over time: the texts OCR read in a request's frames, as runs.

A sign that stays on screen for twenty frames is one fact, not twenty; the same text read
again after it left is a second fact. The visual observation, the direct answer and the
builder's clip perception all report texts this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.offline.matching import compact
from videotapestry.offline.perception import SeenText
from videotapestry.offline.timestamps import span_text

#: Frames (by position among the request's frame times) a text may skip and still be one run.
MAX_FRAME_GAP = 2


@dataclass(frozen=True)
class Reading:
    """One text over a run of consecutive frames."""

    start: float
    end: float
    text: str
    confidence: float

    @property
    def fact(self) -> str:
        """The reading as an observation states it: ``mm:ss-mm:ss: TEXT``."""
        return f"{span_text(self.start, self.end)}: {self.text}"


def readings(seen: Sequence[SeenText]) -> list[Reading]:
    """Texts grouped into runs of consecutive frames (a text that leaves and comes back is
    two runs), each spelled as its most confident reading, in time order."""
    times = sorted({s.time_s for s in seen if s.time_s is not None})
    position = {t: i for i, t in enumerate(times)}
    runs: dict[str, list[list[SeenText]]] = {}
    order: list[str] = []
    for item in sorted(seen, key=lambda s: (s.time_s or 0.0, s.image, s.cell)):
        key = compact(item.text)
        if key not in runs:
            runs[key] = []
            order.append(key)
        groups = runs[key]
        last = groups[-1][-1] if groups else None
        near = (
            last is not None
            and last.time_s is not None
            and item.time_s is not None
            and position[item.time_s] - position[last.time_s] <= MAX_FRAME_GAP
        )
        if near or (last is not None and item.time_s is None):
            groups[-1].append(item)
        else:
            groups.append([item])
    out = []
    for key in order:
        for group in runs[key]:
            best = max(group, key=lambda s: (s.confidence, -len(s.text)))
            stamps = [s.time_s for s in group if s.time_s is not None] or [0.0]
            out.append(
                Reading(min(stamps), max(stamps), best.text, max(s.confidence for s in group))
            )
    return sorted(out, key=lambda r: (r.start, r.text))
