"""How the offline model cites: by the time of the fact it used, read off the prompt.

The composite memory it is sent shows, under each refined entry, a ``refs:`` line naming
the frames and transcript lines the entry was rewritten from, with their times (``S3-S9
(05:20-06:10); T2 (05:40-05:44)``). The offline model has no other view of the evidence, so
it cites the refs whose times hold the time of the line it answered from (the line's own
timestamp, else its entry's range): of the closest look at that time (Focus frames before
Skim's before the Overview's), the frames of a run nearest it, by even spacing across the
run; and every transcript line that overlaps it. When no ref holds it, or the line has no
time of its own (a sentence quoted in an entry's summary), it cites the memory entry the line
sits in, and no frames. The frames of the Direct baseline are cited the same way
from their listed times (``D4: frame 05:31``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.offline.prompt_reading import CLOCK, read_entries, seconds

#: Frame prefixes from the closest look to the widest (Focus, Skim, Overview; Direct).
FRAME_ORDER = "FKSD"
#: At most this many frames of one run are cited for one fact.
MAX_FRAMES_PER_RUN = 3
_REFS_LINE = re.compile(r"^\s*refs: (?P<items>.*)$")
#: A library question's memory names each video's ids ``V2.F3`` (``library.answering``).
_REF_ITEM = re.compile(
    rf"(?P<tag>V\d+\.)?(?P<first>[A-Z]\d+)(?:-(?:V\d+\.)?(?P<last>[A-Z]\d+))? "
    rf"\((?P<start>{CLOCK})-(?P<end>{CLOCK})\)"
)
_TIME = re.compile(rf"(?P<start>{CLOCK})(?:\s*[-–]\s*(?P<end>{CLOCK}))?")
#: The header of each video's section in a library question's memory (``library.answering``).
_VIDEO_HEADER = re.compile(r"^Video (?P<tag>V\d+): ", re.MULTILINE)
#: The time a moment's text starts with (``temporal.moments``: "00:00-00:48: ...").
_LEADING_TIME = re.compile(rf"^{CLOCK}(?:\s*[-–]\s*{CLOCK})?: ")
_DIRECT_FRAME = re.compile(rf"^(?P<id>D\d+): .*?(?P<at>{CLOCK})\s*$")


@dataclass(frozen=True)
class RefItem:
    """One item of a ``refs:`` line: a run of frames ``first``…``last`` or one line."""

    first: str
    last: str
    start: float
    end: float
    #: The video tag of a library question's memory (``V2.``), else empty.
    tag: str = ""

    def ids_at(self, start: float, end: float) -> list[str]:
        """The ids of this item that stand for the stretch ``start``…``end``."""
        if self.first == self.last or self.first[0] == "T":
            return [self.tag + self.first]
        prefix, a, b = self.tag + self.first[0], int(self.first[1:]), int(self.last[1:])
        length = max(self.end - self.start, 1e-6)

        def index(t: float) -> int:
            share = min(max((t - self.start) / length, 0.0), 1.0)
            return a + round(share * (b - a))

        picked = dict.fromkeys((index(start), index((start + end) / 2), index(end)))
        return [f"{prefix}{n}" for n in list(picked)[:MAX_FRAMES_PER_RUN]]


def without_refs(memory: str) -> str:
    """The memory text without its ``refs:`` lines (they are no evidence to weigh)."""
    return "\n".join(line for line in memory.splitlines() if not _REFS_LINE.match(line))


def read_refs(memory: str) -> list[RefItem]:
    items: list[RefItem] = []
    for line in memory.splitlines():
        match = _REFS_LINE.match(line)
        if match is None:
            continue
        for item in _REF_ITEM.finditer(match.group("items")):
            first = item.group("first")
            items.append(
                RefItem(
                    first,
                    item.group("last") or first,
                    seconds(item.group("start")),
                    seconds(item.group("end")),
                    item.group("tag") or "",
                )
            )
    return items


def fact_span(unit: str, memory: str) -> tuple[float, float] | None:
    """The time ``unit`` (a line of ``memory``) speaks of: its own first timestamp, else the
    range of the memory entry it belongs to."""
    own = _TIME.search(unit)
    if own is not None:
        start = seconds(own.group("start"))
        return start, seconds(own.group("end")) if own.group("end") else start
    entry = entry_of(unit, memory)
    return (entry[1], entry[2]) if entry is not None else None


def entry_of(unit: str, memory: str) -> tuple[str, float, float] | None:
    """(id, start, end) of the innermost memory entry whose text holds ``unit``."""
    holding = [e for e in read_entries(memory, top_level=False) if unit in e.text]
    if not holding:
        holding = [e for e in read_entries(memory) if unit in e.text]
    if not holding:
        return None
    entry = holding[-1]
    return entry.id, entry.start, entry.end


def video_tag(unit: str, memory: str) -> str | None:
    """``V2.`` when ``unit`` sits in video V2's section of a library question's memory (found
    as written, else by one of the lines a moment joins, else by the one video its ids name);
    None in a single video's memory (no sections) or when it cannot be told."""
    headers = list(_VIDEO_HEADER.finditer(memory))
    if not headers:
        return None
    for piece in (unit, *unit.split(" / ")):
        piece = _LEADING_TIME.sub("", piece.strip())
        at = memory.find(piece) if piece else -1
        if at >= 0:
            before = [h for h in headers if h.start() <= at]
            return before[-1].group("tag") + "." if before else None
    named = set(re.findall(r"\b(V\d+)\.", unit))
    return named.pop() + "." if len(named) == 1 else None


def cite(unit: str, memory: str) -> list[str]:
    """The ids to cite for the fact ``unit`` of ``memory`` (see the module docstring)."""
    span = fact_span(unit, memory)
    timed = _TIME.search(unit) is not None
    tag = video_tag(unit, memory)
    ids: list[str] = []
    if span is not None:
        start, end = span
        holding = [
            item
            for item in read_refs(memory)
            if item.start <= end + 0.5
            and start <= item.end + 0.5
            and (tag is None or item.tag == tag)
        ]
        # Frames stand for a fact only at its own time: spread over a whole entry (a sentence
        # quoted in a summary, with no time of its own) they would point at moments that may
        # not show it, so such a fact cites its transcript lines and the entry instead.
        frames = [item for item in holding if item.first[0] != "T" and timed]
        # The closest look at that time: the deepest level's frames (Focus, Skim, Overview).
        deepest = min((FRAME_ORDER.index(i.first[0]) for i in frames), default=None)
        for item in holding:
            if item.first[0] == "T" or (
                item in frames and FRAME_ORDER.index(item.first[0]) == deepest
            ):
                ids += item.ids_at(max(start, item.start), min(end, item.end))
    if not ids or not timed:
        entry = entry_of(unit, memory)
        ids += [entry[0]] if entry is not None else []
    return list(dict.fromkeys(ids))


def cite_direct_frames(notes: Sequence[str], times: Sequence[float]) -> list[str]:
    """The Direct baseline's frames (``D4: frame 05:31``) nearest each of ``times``."""
    frames = []
    for note in notes:
        match = _DIRECT_FRAME.match(note.strip())
        if match is not None:
            frames.append((match.group("id"), seconds(match.group("at"))))
    if not frames:
        return []
    return list(dict.fromkeys(min(frames, key=lambda f: abs(f[1] - t))[0] for t in times))


def claim(ids: Sequence[str], fact: str) -> list[dict]:
    """The reply's ``citations`` for one fact (none when there is nothing to cite)."""
    text = re.sub(r"\s+", " ", fact).strip()
    return [{"claim": text[:200], "ids": list(ids)}] if ids else []
