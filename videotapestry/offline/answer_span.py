"""The offline model's free-form answer: the shortest span of its evidence that answers.

A person asked "What time does the puppet show start?" who reads the line "10:00 Brass band
/ 11:30 Puppet show / 12:15 Dance school" says "11:30", not the line. The rule does the
same with text alone: the question's wh-word says what kind of span answers it ("what
time"/"when" a clock time, "what is the code/number/price" a number, "who" a name, "where"
a place phrase), and among the spans of that kind in the evidence line the one that stands
next to the question's own words wins ("11:30" beside "Puppet show"). The line's own times
(the memory's ``08:30-09:30``, ``@08:30``) are the video's, never an answer's, and are
masked first. OCR may run words together (``11:30Puppetshow``, ``DOCK14CODE5831``), so
spans are found by their own shape, wherever letters touch them, and words are found
inside runs. Pure functions.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Literal

from videotapestry.offline.matching import content_words, fold
from videotapestry.offline.prompt_reading import CLOCK

AnswerKind = Literal["time", "moment", "number", "name", "place", "phrase"]

#: The longest free-form answer the rule gives (a phrase is cut at a part boundary).
MAX_ANSWER_CHARS = 80

_KINDS: tuple[tuple[AnswerKind, re.Pattern[str]], ...] = (
    # "When did the speaker mention X?": a moment of the video, not a time it shows.
    ("moment", re.compile(r"^\W*(?:and |so )?(?:when|at what point)\s+(?:did|was|were)\b", re.I)),
    (
        "time",
        re.compile(
            r"\b(?:what|which) time\b|\bat what hour\b|^\W*(?:and |so )?(?:until |from )?when\b",
            re.I,
        ),
    ),
    (
        "number",
        re.compile(
            r"\b(?:code|number|password|pin|price|cost|costs|fee|how many|how much|platform|"
            r"channel|temperature|amount|total|score|digits?|extension|room)\b",
            re.I,
        ),
    ),
    ("name", re.compile(r"^\W*(?:and |so )?(?:who|whom|whose)\b|\bwho\b", re.I)),
    ("place", re.compile(r"^\W*(?:and |so )?where\b|\bwhere\b", re.I)),
)
#: Words of a question that name what is asked for, not where it is: no help in finding it.
_META = frozenset(
    fold(w)
    for w in re.findall(
        r"\w+",
        "time start starts begin begins happen play plays take place name person speaker "
        "narrator tell told say said talk talked mention mentioned",
    )
)
#: The video's own times in a memory line: ranges, ``@mm:ss``, bracketed, builder phrases.
_VIDEO_TIMES = re.compile(
    rf"\[[^\]]*{CLOCK}[^\]]*\]|\([^)]*{CLOCK}[^)]*\)|@{CLOCK}|{CLOCK}\s*[-–]\s*{CLOCK}"
    rf"|\b[Ff]rom {CLOCK} to {CLOCK}(?= the screen| someone|,)"
    rf"|\b(?:shown on screen from|starts at|before|after) {CLOCK}\b"
)
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?\b)?(?![\d:])", re.I)
#: A time, or hours "06:30 to 12:00".
_TIME_SPAN = re.compile(rf"{_TIME.pattern}(?:\s*(?:to|until|till)\s*{_TIME.pattern})?", re.I)
_UNIT = r"(?:\s?(?:°\s?[CF]|%|eur[a-z0-9]*|euros?|usd|dollars?|pounds?|kg|km|cm|mm|min(?:utes)?))?"
_NUMBER = re.compile(rf"(?:[€$£]\s?)?(?<![\d:.,])\d+(?:[.,]\d+)?(?![\d:]){_UNIT}", re.I)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_PLACE = re.compile(
    r"\b(?:next to|in front of|close to|at|in|on|near|behind|beside|inside|outside|under|by|"
    r"from|to|into)\s+(?:the\s+|a\s+|an\s+)?[\w'-]",
    re.I,
)
#: Where a line's parts end: separators of the memory's lists, quotes, sentence ends.
_PART_END = re.compile(r"\s+/\s+|;\s*|\s*\|\s*|\"|“|”|\(|\)|(?<=[a-z0-9])[.!?](?:\s+|$)")
_LABEL = re.compile(r"^(?P<label>[^:]{2,40}):\s+(?P<value>\S.*)$")
_NAME_STOP = frozenset(
    re.findall(
        r"\w+",
        "The A An This That Please Now Here Open Door Gate Code Channel Someone Observed "
        "Visual Transcript Evidence From To At In On Car Programme",
    )
)


@dataclass(frozen=True)
class Span:
    """A span of an evidence line that answers the question, and the part it stands in."""

    text: str
    kind: AnswerKind
    part: str
    #: How close it stands to the question's words (0.0 when the part holds none).
    closeness: float


def answer_kind(question: str) -> AnswerKind:
    """The kind of span the question asks for, by its wh-word and what it names."""
    for kind, pattern in _KINDS:
        if pattern.search(question):
            return kind
    return "phrase"


def masked(line: str) -> str:
    """``line`` with the video's own times blanked (same length, so positions still hold)."""
    return _VIDEO_TIMES.sub(lambda m: " " * len(m.group(0)), line)


def parts_of(text: str) -> list[str]:
    """The parts of a line: its list items, quoted texts and sentences, stripped; a run OCR
    read as one ("10:00Brassband11:30Puppetshow") is cut at its times, before each when it
    opens with one (a timetable), after each when it closes with one ("Lastentry21:30...")."""
    parts = []
    for part in _PART_END.split(text):
        part = part.strip(" :,-")
        times = list(_TIME_SPAN.finditer(part))
        if len(times) > 1 and times[0].start() == 0:
            cuts = [m.start() for m in times[1:]]
        elif len(times) > 1 and times[-1].end() == len(part):
            cuts = [m.end() for m in times[:-1]]
        else:
            cuts = []
        for a, b in itertools.pairwise([0, *cuts, len(part)]):
            parts.append(part[a:b].strip(" :,-"))
    return [p for p in parts if re.search(r"[A-Za-z0-9]", p)]


def question_words(question: str) -> list[str]:
    """The question's content words that can be looked for in the evidence."""
    return [w for w in content_words(question) if w not in _META]


def find_span(question: str, line: str, kind: AnswerKind | None = None) -> Span | None:
    """The span of ``kind`` (the question's, by default) in ``line`` nearest the question's
    words, or None when the line holds none of that kind (``phrase``: never None for a line
    with words)."""
    kind = kind or answer_kind(question)
    if kind == "moment":
        return None
    wanted = question_words(question)
    asked = set(re.findall(r"\d+", question))
    best: Span | None = None
    # A 0 between letters is an O that OCR misread (PLATF0RM), not a number.
    line = re.sub(r"(?<=[A-Za-z])0+(?=[A-Za-z])", lambda m: "O" * len(m.group(0)), line)
    for part in parts_of(masked(line)):
        for text, start, end in _candidates(kind, part, wanted, asked):
            span = Span(_tidy(text), kind, part, _closeness(part, start, end, wanted))
            if best is None or span.closeness > best.closeness:
                best = span
    return best


def _candidates(
    kind: AnswerKind, part: str, wanted: list[str], asked: set[str]
) -> list[tuple[str, int, int]]:
    if kind == "time":
        return [(m.group(0), m.start(), m.end()) for m in _TIME_SPAN.finditer(part)]
    if kind == "number":
        clocks = [(m.start(), m.end()) for m in _TIME.finditer(part)]
        return [
            (m.group(0), m.start(), m.end())
            for m in _NUMBER.finditer(part)
            if re.sub(r"\D", "", m.group(0)) not in asked
            and not any(a <= m.start() < b for a, b in clocks)
        ]
    if kind == "name":
        return [
            (m.group(0), m.start(), m.end())
            for m in _NAME.finditer(part)
            if m.group(0).split()[0] not in _NAME_STOP
            and not set(content_words(m.group(0))) & set(wanted)
        ]
    if kind == "place":
        places = []
        for m in _PLACE.finditer(part):
            phrase = part[m.start() :].strip()
            new = [w for w in content_words(phrase) if w not in wanted]
            if new and len(new) >= len(content_words(phrase)) / 2:
                places.append((phrase, m.start(), len(part)))
        return places[:1] if places else _labelled(part, wanted)
    return _labelled(part, wanted) or [(part, 0, len(part))]


def _labelled(part: str, wanted: list[str]) -> list[tuple[str, int, int]]:
    """``Label: value`` whose label holds the question's words: the value."""
    match = _LABEL.match(part)
    if match is None or not _hits(match["label"], wanted):
        return []
    return [(match["value"], match.start("value"), len(part))]


def _hits(text: str, wanted: list[str]) -> list[tuple[int, int]]:
    """Where the question's words stand in ``text`` (inside runs too: OCR glues words)."""
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    found = []
    for word in wanted:
        stem = word[: max(4, len(word) - 2)] if len(word) >= 5 and word.isalpha() else word
        if len(stem) < 3:
            pattern = rf"(?<![0-9a-z]){re.escape(stem)}(?![0-9a-z])"
        else:
            pattern = re.escape(stem)
        found += [(m.start(), m.end()) for m in re.finditer(pattern, folded)]
    return found


def _closeness(part: str, start: int, end: int, wanted: list[str]) -> float:
    """How near the span stands to the question's words in its part: one per word found,
    less with distance; a label reads after a time or number that opens its part
    ("11:30 Puppet show") and before one that closes it ("Door code 4417")."""
    value = 0.0
    leads, closes = start == 0, end >= len(part.rstrip())
    for a, b in _hits(part, wanted):
        gap = a - end if a >= end else start - b if b <= start else 0
        wrong_side = (leads and b <= start) or (closes and a >= end)
        value += 1.0 / (1.0 + max(gap, 0) / 8.0 + (2.0 if wrong_side else 0.0))
    return value


def _tidy(text: str) -> str:
    """A span as said: OCR's runs split between digits and letters (``18EUR0S`` → ``18
    EUROS``), a ``0`` in a word of letters read as ``O``."""
    text = re.sub(r"(?<=[A-Za-z])0+(?=[A-Za-z])", lambda m: "O" * len(m.group(0)), text.strip())
    text = re.sub(r"(?<=\d)(?=[A-Za-z]{2})|(?<=[A-Za-z]{2})(?=\d)", " ", text)
    return re.sub(r"\s+", " ", text).strip(" .,;:\"'")


def phrase(parts: list[str], limit: int = MAX_ANSWER_CHARS) -> str:
    """Parts joined as a short answer: those with letters (a page number "5 / 20" is no
    answer when words are there), as many as fit in ``limit``."""
    worded = [p for p in parts if re.search(r"[A-Za-z]{2}", p)] or parts
    kept: list[str] = []
    for part in dict.fromkeys(_tidy(p) for p in worded):
        if part and len(" / ".join([*kept, part])) <= limit:
            kept.append(part)
    if not kept and worded:
        return _tidy(worded[0])[: limit - 1].rstrip() + "…"
    return " / ".join(kept)


def gist(parts: list[str], limit: int = MAX_ANSWER_CHARS) -> str:
    """What a passage of several sentences is about, in at most ``limit`` characters: the
    sentences that say most (the most content words; the earlier on a tie) kept first, as many
    as fit, told in the passage's order ("Here is one change to the printed plan. Lunch for
    volunteers will be served in the yellow tent." is about the lunch)."""
    said = [p for p in dict.fromkeys(_tidy(p) for p in parts) if p]
    order = sorted(range(len(said)), key=lambda i: (-len(content_words(said[i])), i))
    kept: list[int] = []
    for i in order:
        if len(" / ".join(said[j] for j in sorted([*kept, i]))) <= limit:
            kept.append(i)
    if not kept and said:
        return said[order[0]][: limit - 1].rstrip() + "…"
    return " / ".join(said[i] for i in sorted(kept))
