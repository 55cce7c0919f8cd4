"""The offline model's rule for questions about *when*: "which slide was on screen when the
speaker said X", "after X, what came first", "before X, what came last".

Matching text alone cannot answer these: every option is on screen or said somewhere in
the video, so the option that is spelled out best wins by accident. The rule instead finds
the moment the question points at (the anchor: the timed evidence unit that matches the
anchor phrase best), then the option whose own timed evidence stands in the asked relation
to it — overlapping it, the first one after it, or the last one before it. Evidence units
carry their time as a ``mm:ss-mm:ss`` range (or ``@mm:ss``); units spanning more than a few
minutes (a stage summary) say too little about when to be used. Asked free-form what came
after (or before) the moment, content said or shown wins over a memory entry's bare title
(``macro_0005 [07:30-08:30] Riverside``), and speech over the screen when the question asks
what was said. Pure functions.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from videotapestry.contracts.fields import parse_seconds
from videotapestry.offline.matching import (
    compact,
    contains_phrase,
    content_words,
    fold,
    word_overlap,
)
from videotapestry.offline.quoting import plain, quote
from videotapestry.offline.timestamps import span_text
from videotapestry.timecode import format_timestamp

Relation = Literal["at", "after", "before"]
Kind = Literal["speech", "screen"]

#: Units spanning longer than this are summaries, not moments.
MAX_SPAN_S = 180.0
#: Share of the anchor's content words a unit must hold to count as the anchor.
MIN_ANCHOR_MATCH = 0.5
#: Units longer than this tell of several moments (a MacroEvent's summary), not of one.
MOMENT_S = 90.0
#: Units this close at both ends are one moment (the lines of one slide, read apart).
SAME_MOMENT_S = 3.0

_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
_RANGE = re.compile(rf"({_CLOCK})\s*-\s*({_CLOCK})")
_AT = re.compile(rf"@({_CLOCK})")
_PARTS = re.compile(r"(?<=[.;!?])\s+(?=\S)|;\s+")
_SAYING = (
    r"(?:the )?(?:speaker|narrator|presenter|host|someone|somebody|he|she|they|voice)\s+"
    r"(?:said|says|say|mentioned|mentions|talked about|talks about|spoke about|explained|"
    r"announced|told \w+|asked)"
)
_WHEN = re.compile(rf"\b(?:when|while|as)\s+(?P<anchor>{_SAYING}\b.*?)\s*\??$", re.I)
_LEADING = re.compile(r"^\s*(?P<rel>after|before)\s+(?P<anchor>[^,]+?),\s*(?P<rest>.+)$", re.I)
_TRAILING = re.compile(
    r"^(?P<rest>.+?)\s+(?:right |just |directly |immediately )?(?P<rel>after|before)\s+"
    r"(?P<anchor>.+?)\s*\??$",
    re.I,
)
_SPEECH_WORDS = re.compile(
    r"\b(?:speaker|narrator|said|say|says|talk|talked|spoke|mention\w*|told|voice)\b", re.I
)
_SCREEN_WORDS = re.compile(r"\b(?:slide|screen|shown|sign|displayed|written|caption)\b", re.I)
_SPEECH_UNIT = re.compile(r"\(speech\)|\[Transcript\]|Someone says|\bsays:|^\[\d{1,2}:\d{2}")
_SCREEN_UNIT = re.compile(
    r"\(scene_text\)|read by OCR|screen shows|\[Visual\]|^\d{1,2}:\d{2}(?::\d{2})?-\S+: "
    r"|^Observed:|\(text\)"
)


#: Words that say where to look (a slide, the speaker), not what is there.
_META = frozenset(
    fold(w)
    for w in ["slide", "slides", "screen", "sign", "text", "caption", "speaker", "narrator", "part"]
)


@dataclass(frozen=True)
class TemporalAsk:
    relation: Relation
    anchor: str
    anchor_kind: Kind | None
    target_kind: Kind | None
    #: The anchor given as times ("right after the moment at 03:55-04:12", how a follow-up
    #: about the previous answer's cited moment reads): the moment itself, no text to match.
    at: tuple[float, float] | None = None


@dataclass(frozen=True)
class TimedUnit:
    text: str
    start: float
    end: float
    kind: Kind | None
    #: The time is its line's, not its own (a sentence quoted in a MacroEvent's summary): it
    #: happened somewhere in that stretch, not over all of it.
    inherited: bool = False


@dataclass(frozen=True)
class TemporalChoice:
    letter: str
    anchor: TimedUnit
    evidence: TimedUnit
    #: The words of the anchor's moment that match the anchor phrase best (the slide's line
    #: "Door code 4417" rather than its page number read at the same moment).
    anchor_text: str = ""

    def anchor_quote(self) -> str:
        """The anchor as a person quotes it: its words, where and when."""
        a = self.anchor
        if not self.anchor_text and a.kind is None:  # given as times: no words to quote
            return f"the moment at {span_text(a.start, a.end)}"
        return quote(self.anchor_text or a.text, a.start, a.end, a.kind)

    def explain(self, ask: TemporalAsk, said: str = "") -> str:
        """Why the choice stands in the asked relation: both moments quoted in plain words
        (``said``: the evidence's words to quote, by default all of it)."""
        where = {"at": "at the time of", "after": "first after", "before": "last before"}
        e = self.evidence
        found = "" if ask.at is not None else f", found in {self.anchor_quote()}"
        return (
            f"the question points at the moment of {ask.anchor!r}{found}; {self.letter}'s "
            f"evidence, "
            f"{quote(said or e.text, e.start, e.end, e.kind)}, is the one "
            f"{where[ask.relation]} it"
        )


def temporal_ask(question: str) -> TemporalAsk | None:
    """What the question asks about time, if anything it says is a relation to a moment."""
    text = " ".join(question.split())
    match = _LEADING.match(text)
    if match:
        return _ask_of(match["rel"], match["anchor"], match["rest"])
    match = _WHEN.search(text)
    if match:
        rest = text[: match.start()]
        return TemporalAsk("at", _strip_saying(match["anchor"]), "speech", _kind_of(rest))
    match = _TRAILING.match(text)
    if match and content_words(match["anchor"]):
        return _ask_of(match["rel"], match["anchor"], match["rest"])
    return None


def timed_unit(text: str) -> TimedUnit | None:
    """The unit's first time range (or ``@time``), if it is short enough to be a moment."""
    found = _RANGE.search(text)
    if found:
        start, end = parse_seconds(found[1]), parse_seconds(found[2])
    else:
        single = _AT.search(text)
        if not single:
            return None
        start = end = parse_seconds(single[1])
    if end < start or end - start > MAX_SPAN_S:
        return None
    kind: Kind | None = None
    if _SPEECH_UNIT.search(text):
        kind = "speech"
    elif _SCREEN_UNIT.search(text):
        kind = "screen"
    return TimedUnit(text, start, end, kind)


def timed_units(lines: Sequence[str]) -> list[TimedUnit]:
    """Timed units of memory lines: a line of several parts (sentences, ``;`` items) gives
    one unit per part, with the part's own time or, failing that, the line's (a sentence
    quoted in a MacroEvent's summary happened inside that MacroEvent); as a whole it would
    put everything it lists at its first time. A part after ``says:`` is speech."""
    out: list[TimedUnit] = []
    for line in lines:
        whole = timed_unit(line)
        parts = [p.strip() for p in _PARTS.split(line) if len(p.strip()) > 3]
        if len(parts) < 2:
            if whole is not None:
                out.append(whole)
            continue
        said_from = line.find("says:")
        offset = 0
        for part in parts:
            offset = line.find(part, offset)
            own = timed_unit(part)
            timing = own if own is not None else whole
            if timing is None:
                continue
            kind = own.kind if own is not None else None
            if kind is None and said_from >= 0 and offset + len(part) > said_from + len("says:"):
                kind = "speech"
            out.append(TimedUnit(part, timing.start, timing.end, kind, inherited=own is None))
    return out


def moments(lines: Sequence[str]) -> list[str]:
    """Texts read at one moment joined into one unit ("B: deliveries" with "Doorcode4417"):
    OCR reads a slide's lines apart, but what they say belongs together."""
    timed = [u for u in timed_units(lines) if u.kind == "screen"]
    groups: dict[tuple[int, int], list[str]] = {}
    for unit in timed:
        key = (round(unit.start / SAME_MOMENT_S), round(unit.end / SAME_MOMENT_S))
        text = re.sub(rf"^\[?{_CLOCK}\s*-\s*{_CLOCK}\]?:?\s*", "", unit.text)
        groups.setdefault(key, [])
        if text not in groups[key]:
            groups[key].append(text)
    return [
        f"{format_timestamp(a * SAME_MOMENT_S)}-{format_timestamp(b * SAME_MOMENT_S)}: "
        + " / ".join(texts)
        for (a, b), texts in sorted(groups.items())
        if len(texts) > 1
    ]


def anchor_match(anchor: str, text: str) -> float:
    """Share of the anchor's content words (and adjacent word pairs, run together as OCR
    writes them) found in ``text``."""
    wanted = [w for w in content_words(anchor) if w not in _META]
    if not wanted:
        return 0.0
    pairs = [a + b for a, b in itertools.pairwise(wanted)]
    squashed = compact(text)
    present = set(re.findall(r"[0-9a-z]+", text.casefold()))
    hits = sum(1 for w in wanted if w in present or (len(w) >= 3 and w in squashed))
    pair_hits = sum(1 for p in pairs if p in squashed)
    return (hits + pair_hits) / (len(wanted) + len(pairs))


def choose_by_time(
    ask: TemporalAsk, letters: Sequence[str], bodies: Sequence[str], units: Sequence[str]
) -> TemporalChoice | None:
    """The option standing in the asked relation to the anchor; None when the evidence does
    not settle it (no anchor, no timed evidence for any option, or a tie)."""
    timed = timed_units(units)
    anchor = _anchor_unit(ask, timed)
    if anchor is None:
        return None
    distinct = _unique_words(bodies)
    best: list[tuple[tuple[float, float], str, TimedUnit]] = []
    for letter, body, wanted in zip(letters, bodies, distinct, strict=True):
        candidates = [
            u
            for u in timed
            if u is not anchor
            and _kind_ok(u.kind, ask.target_kind)
            and _supports(body, wanted, u.text)
        ]
        keys = [
            k
            for k in (
                _distance_in_relation(ask.relation, anchor, u, timed_anchor=ask.at is not None)
                for u in candidates
            )
            if k is not None
        ]
        if keys:
            key, unit = min(keys, key=lambda item: item[0])
            best.append((key, letter, unit))
    if not best:
        return None
    best.sort(key=lambda item: item[0])
    if len(best) > 1 and best[0][0] == best[1][0]:
        return None
    return TemporalChoice(best[0][1], anchor, best[0][2], _anchor_words(ask, anchor, timed))


def first_in_relation(ask: TemporalAsk, units: Sequence[str]) -> TemporalChoice | None:
    """For a free-form question about *when*: the evidence unit standing in the asked
    relation to the anchor, nearest first, of the kind asked for (on screen, said); None
    when there is no anchor or nothing stands in the relation. Units read at the anchor's
    own moment (the anchor slide's other lines) are not an answer to "after" or "before"."""
    timed = timed_units(units)
    anchor = _anchor_unit(ask, timed)
    if anchor is None:
        return None
    timed_anchor = ask.at is not None
    # What the cited moment showed and said: "right after that" is the next thing that
    # differs from it (the next slide, the next sentence), not the rest of the same slide.
    seen = (
        [
            p
            for u in timed
            if _within(u, anchor) and u.end - u.start <= MOMENT_S and not u.inherited
            for p in _said(u.text)
        ]
        if timed_anchor and ask.relation != "at"
        else []
    )
    keyed = []
    for unit in timed:
        if unit is anchor or not _kind_ok(unit.kind, ask.target_kind):
            continue
        said = _said(unit.text)
        if not said or all(_seen_in(p, seen) for p in said):
            continue
        if ask.relation != "at" and _same_moment(unit, anchor):
            continue
        found = _distance_in_relation(ask.relation, anchor, unit, timed_anchor=timed_anchor)
        if found is not None:
            # Of the kind asked for, content rather than a title, and one moment rather than
            # a summary, before nearness.
            other_kind = ask.target_kind is not None and unit.kind != ask.target_kind
            title = is_title(unit.text)
            summary = unit.end - unit.start > MOMENT_S
            keyed.append(((other_kind, title, summary, *found[0]), found[1]))
    if not keyed:
        return None
    _key, unit = min(keyed, key=lambda item: item[0])
    if unit.kind == "screen":  # the slide's other lines, read apart by OCR, belong with it
        shown = [u for u in [*timed, *_quoted(units)] if u.kind == "screen"]
        lines = _slide_lines(
            [
                u
                for u in shown
                if _same_moment(u, unit)
                # After a moment given as times: every line the next slide opens with.
                or (
                    seen
                    and abs(u.start - unit.start) <= SAME_MOMENT_S
                    and u.end - u.start <= MOMENT_S
                )
            ]
        )
        when = f"{format_timestamp(unit.start)}-{format_timestamp(unit.end)}: "
        unit = TimedUnit(when + " / ".join(lines), unit.start, unit.end, unit.kind)
    elif unit.kind == "speech":  # the sentences of one passage quoted without their own times
        # (those still to be said: not the ones the cited moment already holds)
        passage = [
            u.text
            for _k, u in keyed
            if u.kind == "speech" and (u.start, u.end) == (unit.start, unit.end)
        ]
        if len(passage) > 1:
            unit = TimedUnit(" ".join(dict.fromkeys(passage)), unit.start, unit.end, "speech")
    return TemporalChoice("", anchor, unit, _anchor_words(ask, anchor, timed))


#: A memory entry's head with a bare label (``macro_0005 [07:30-08:30] Riverside``): a title,
#: which says what a stretch is called, not what is shown or said in it.
_TITLE = re.compile(
    rf"^(?:- )?[\w.:-]*[\d_][\w.:-]* \[@?{_CLOCK}(?:\s*-\s*{_CLOCK})?\]\s*[^:;\"]{{0,40}}$"
)


def is_title(text: str) -> bool:
    """Whether a unit is only a memory entry's title: its id, time and a short label."""
    return bool(_TITLE.match(text.strip()))


def _anchor_words(ask: TemporalAsk, anchor: TimedUnit, timed: Sequence[TimedUnit]) -> str:
    """The words of the anchor's moment that match the anchor phrase best, plain: of the
    units read at that moment, the one holding most of the phrase (the anchor first on a
    tie); the times themselves for an anchor given as times."""
    if ask.at is not None:
        return ""
    same = [anchor, *(u for u in timed if u is not anchor and _same_moment(u, anchor))]
    best = max(same, key=lambda u: (anchor_match(ask.anchor, u.text), -same.index(u)))
    return plain(best.text)


#: A text a summary quotes with its own time: ``"Door code 4417" (03:32-04:18)``.
_QUOTED = re.compile(rf'"(?P<text>[^"]+)"\s*\((?P<start>{_CLOCK})\s*-\s*(?P<end>{_CLOCK})\)')


def _quoted(units: Sequence[str]) -> list[TimedUnit]:
    """The texts summaries of the screen quote, each at its own time (a MacroEvent's "the
    screen shows "Door code 4417" (03:32-04:18), ..." holds a slide's line OCR may have read
    only in part at the slide's first frames)."""
    return [
        TimedUnit(m["text"], parse_seconds(m["start"]), parse_seconds(m["end"]), "screen")
        for line in units
        if _SCREEN_UNIT.search(line)
        for m in _QUOTED.finditer(line)
    ]


def _slide_lines(units: Sequence[TimedUnit]) -> list[str]:
    """One slide's lines from the units that show it, once each: a line OCR read in part
    ("B: deliveries") gives way to the whole ("Gate B: deliveries"), a page number ("5 / 20")
    to lines with words, and the shortest come first, so that a short answer holds most."""
    parts = dict.fromkeys(
        part.strip()
        for u in units
        for part in re.sub(rf"^\[?{_CLOCK}\s*-\s*{_CLOCK}\]?:?\s*", "", u.text).split(" / ")
        if part.strip()
    )
    worded = [p for p in parts if len(re.sub(r"[^a-z]", "", compact(p))) >= 3] or list(parts)
    whole = [
        p for p in worded if not any(compact(p) in compact(q) and len(q) > len(p) for q in worded)
    ]
    return sorted(whole, key=len)


def _said(text: str) -> list[str]:
    """What a unit says, as compact parts: without the video's times, ids and labels; parts
    with fewer than three letters (a page number, an id's digits) say nothing."""
    text = re.sub(
        rf"\[@?{_CLOCK}[^\]]*\]|\(@?{_CLOCK}[^)]*\)|{_CLOCK}\s*-\s*{_CLOCK}:?|"
        rf"(?:text shown on screen from|Observed:) {_CLOCK}(?:\s*-\s*{_CLOCK})?:?|^{_CLOCK}:",
        " ",
        text,
    )
    text = re.sub(r"\b\w+_[a-z]?\d+\b|\((?:scene_text|text|speech|change)\)|read by OCR", " ", text)
    text = re.sub(
        r"\b(?:object|attributes|shown|Observed|The screen shows|shows text|speaks|"
        r"text shown on screen from)\b",
        " ",
        text,
    )
    parts = (compact(p) for p in re.split(r"\s+/\s+|;|\||\"", text))
    return [p for p in parts if len(re.sub(r"[^a-z]", "", p)) >= 3]


def _within(unit: TimedUnit, anchor: TimedUnit) -> bool:
    """Whether ``unit`` was there at the moment ``anchor``, not just touching its ends (OCR's
    times run a second or two past a slide change)."""
    overlap = min(unit.end, anchor.end) - max(unit.start, anchor.start)
    return overlap >= min(SAME_MOMENT_S, (anchor.end - anchor.start) / 2)


def _seen_in(part: str, seen: Sequence[str]) -> bool:
    """Whether a compact part was already shown or said (OCR may read a line in part)."""
    return any(part in s or s in part for s in seen if len(s) >= 3)


def _same_moment(unit: TimedUnit, anchor: TimedUnit) -> bool:
    return (
        abs(unit.start - anchor.start) <= SAME_MOMENT_S
        and abs(unit.end - anchor.end) <= SAME_MOMENT_S
    )


# -- internals ------------------------------------------------------------------------------


def _unique_words(bodies: Sequence[str]) -> list[list[str]]:
    """Per option, the content words no other option has: what tells it apart in time."""
    sets = [content_words(b) for b in bodies]
    return [
        [w for w in mine if not any(w in other for j, other in enumerate(sets) if j != i)]
        for i, mine in enumerate(sets)
    ]


def _supports(body: str, unique: Sequence[str], text: str) -> bool:
    """The option's whole text, or most of the words only it has, are in ``text``."""
    if contains_phrase(body, text):
        return True
    return bool(unique) and word_overlap(unique, text) >= 0.5


def _ask_of(relation: str, anchor: str, rest: str) -> TemporalAsk:
    """The ask of an "after X, ..." / "... before X" question (``relation`` as written)."""
    anchor = _strip_saying(anchor)
    side: Relation = "after" if relation.lower() == "after" else "before"
    return TemporalAsk(side, anchor, _kind_of(anchor), _kind_of(rest), at=anchor_times(anchor))


def anchor_times(anchor: str) -> tuple[float, float] | None:
    """The times an anchor phrase gives instead of words ("the moment at 03:55-04:12",
    "04:12"); None for an anchor named by what happens."""
    words = re.sub(rf"{_CLOCK}|\b(?:the|a|moment|time|at|point|part|scene)\b|[-,.()]", " ", anchor)
    if words.strip():
        return None
    found = _RANGE.search(anchor)
    if found:
        return (parse_seconds(found[1]), parse_seconds(found[2]))
    single = re.search(_CLOCK, anchor)
    return (parse_seconds(single[0]),) * 2 if single else None


def _strip_saying(anchor: str) -> str:
    return re.sub(rf"^{_SAYING}\s*", "", anchor.strip(), flags=re.I).strip(" ?.")


def _kind_of(text: str) -> Kind | None:
    speech, screen = bool(_SPEECH_WORDS.search(text)), bool(_SCREEN_WORDS.search(text))
    if speech == screen:
        return None
    return "speech" if speech else "screen"


def _kind_ok(kind: Kind | None, wanted: Kind | None) -> bool:
    return wanted is None or kind is None or kind == wanted


def _anchor_unit(ask: TemporalAsk, timed: Sequence[TimedUnit]) -> TimedUnit | None:
    """The unit of the best-matching moment: units read at the same moment (one slide's
    lines, which OCR reads apart) are matched together. An anchor given as times is that
    moment itself."""
    if ask.at is not None:
        return TimedUnit(ask.anchor, ask.at[0], ask.at[1], None)
    usable = [u for u in timed if _kind_ok(u.kind, ask.anchor_kind)]
    scored = []
    for unit in usable:
        moment = " ".join(
            u.text
            for u in usable
            if abs(u.start - unit.start) <= SAME_MOMENT_S and abs(u.end - unit.end) <= SAME_MOMENT_S
        )
        scored.append((anchor_match(ask.anchor, moment), -(unit.end - unit.start), unit))
    scored = [s for s in scored if s[0] >= MIN_ANCHOR_MATCH]
    if not scored:
        return None
    return max(scored, key=lambda s: (s[0], s[1], -s[2].start))[2]


def _distance_in_relation(
    relation: Relation, anchor: TimedUnit, unit: TimedUnit, *, timed_anchor: bool = False
) -> tuple[tuple[float, float], TimedUnit] | None:
    """Smaller is better: the distance in the asked direction, then the unit's length (a
    single slide's text says more about a moment than a summary of several); None when the
    unit does not stand in the relation at all."""
    width = unit.end - unit.start
    if relation == "at":
        gap = max(0.0, max(anchor.start, unit.start) - min(anchor.end, unit.end))
        return ((gap, width), unit) if gap <= 30.0 else None
    if relation == "after":
        # A moment given as times is over at its end: what comes after it starts then.
        since = anchor.end - 1.0 if timed_anchor else anchor.start
        return ((unit.start - since, width), unit) if unit.start > since else None
    if unit.end <= anchor.start + 1.0:
        return ((anchor.start - unit.end, width), unit)
    return None
