"""Ranking memory entries against the question, shared by the plans, updates and decisions.

An entry's relevance is its best evidence unit's: similarity to the question and options,
the question's topic words it holds, an option it spells out (``matching.relevance``). Two
things move it further. A question about *when* ("after the slide about X") is answered
next to the moment it names, so the entry holding that moment, and its neighbour on the
asked side, gain. And a level's decision tells the level below where it read its best
facts ("Look first at 02:30-02:59, ..."); the entries holding those times gain there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from videotapestry.offline.matching import relevance, split_units
from videotapestry.offline.prompt_reading import Entry, overlaps, seconds
from videotapestry.offline.query_roles.question_reading import Topic
from videotapestry.offline.temporal import (
    MIN_ANCHOR_MATCH,
    TemporalAsk,
    anchor_match,
    temporal_ask,
)
from videotapestry.offline.timestamps import span_text

Vectors = Mapping[str, np.ndarray]

#: What an entry holding a time the level above read its best facts at gains in ranking.
HINT_GAIN = 0.3
#: The marks of an observed fact in a memory text: a ``[Visual]`` / ``[Transcript]`` part,
#: a quoted transcript line, an ``Observed:`` addition, an OCR node.
OBSERVED_MARK = re.compile(r"^\[(?:Visual|Transcript)\]|^\[\d|Observed:|read by OCR")


def entry_texts(entries: Sequence[Entry]) -> list[str]:
    """Every evidence unit of ``entries`` (what gets embedded before ranking them)."""
    texts = []
    for entry in entries:
        texts += [u for u, _ in split_units(entry.text)] or [entry.text]
    return texts


def topic_relevance(text: str, topic: Topic, vectors: Vectors) -> float:
    """How much ``text`` bears on the question, its topic words and its options."""
    bodies = topic.question.bodies
    return relevance(
        text,
        topic.query,
        vectors,
        query_words=topic.words,
        option_bodies=bodies,
        option_words=topic.option_words,
    )


def entry_relevance(entries: Sequence[Entry], topic: Topic, vectors: Vectors) -> list[float]:
    """Each entry's relevance: that of its most relevant unit, moved toward the moment a
    question about *when* names."""
    scores = []
    for entry in entries:
        units = [u for u, _ in split_units(entry.text)] or [entry.text]
        scores.append(max(topic_relevance(u, topic, vectors) for u in units))
    ask = temporal_ask(topic.question.question)
    if ask is not None:
        scores = _toward_the_moment(entries, scores, ask)
    return scores


def _toward_the_moment(
    entries: Sequence[Entry], scores: Sequence[float], ask: TemporalAsk
) -> list[float]:
    """For a question about *when*, the moment it names outweighs the options (which occur
    all over the video): the entry holding the anchor gains most, and for "after"/"before"
    so does the entry next to it on that side, where the answer lies."""
    if ask.at is not None:
        return _toward_the_time(entries, scores, ask.relation, ask.at)
    anchor = [anchor_match(ask.anchor, e.text) for e in entries]
    boosted = [s + 2.0 * a for s, a in zip(scores, anchor, strict=True)]
    best = max(range(len(entries)), key=lambda i: anchor[i], default=None)
    if best is None or anchor[best] < MIN_ANCHOR_MATCH or ask.relation == "at":
        return boosted
    start = entries[best].span[0]
    side = [
        i
        for i, e in enumerate(entries)
        if (e.span[0] > start if ask.relation == "after" else e.span[0] < start)
    ]
    if side:
        nearest = min(side, key=lambda i: abs(entries[i].span[0] - start))
        boosted[nearest] += 1.8 * anchor[best]
    return boosted


def _toward_the_time(
    entries: Sequence[Entry],
    scores: Sequence[float],
    relation: str,
    at: tuple[float, float],
) -> list[float]:
    """For a question about a moment given as times ("right after the moment at 04:29-
    05:21"), the entries holding that moment gain, and for "after"/"before" the nearest
    entry on that side gains more: the answer is there, not in the moment itself."""
    holding = [overlaps(e.span, at) for e in entries]
    boosted = [s + (1.0 if h else 0.0) for s, h in zip(scores, holding, strict=True)]
    if relation == "at":
        return [s + (1.0 if h else 0.0) for s, h in zip(boosted, holding, strict=True)]
    if relation == "after":
        side = [i for i, e in enumerate(entries) if e.span[1] > at[1] + 1.0]
        distance = [max(0.0, entries[i].span[0] - at[1]) for i in side]
    else:
        side = [i for i, e in enumerate(entries) if e.span[0] < at[0] - 1.0]
        distance = [max(0.0, at[0] - entries[i].span[1]) for i in side]
    if side:
        nearest = min(distance)
        for i, d in zip(side, distance, strict=True):
            if d <= nearest + 1.0:
                boosted[i] += 2.0
    return boosted


def ranked(entries: Sequence[Entry], scores: Sequence[float]) -> list[tuple[Entry, float]]:
    """Entries with their scores, best first (ties in the prompt's order)."""
    order = sorted(range(len(entries)), key=lambda i: (-scores[i], i))
    return [(entries[i], scores[i]) for i in order]


def best_entries(entries: Sequence[Entry], scores: Sequence[float]) -> list[Entry]:
    """The best entry and the runner-up when it scores within 0.05 of it."""
    order = ranked(entries, scores)
    return [e for e, s in order if s >= order[0][1] - 0.05][:2] if order else []


# --------------------------------------------------------------------------- handed-down hint


def look_first_hint(spans: Sequence[tuple[float, float]]) -> str:
    """The sentence a decision adds to its instruction to say when this level read its
    best facts, for the level below to look there first (the times only: an instruction
    directs the search, it does not hand down answers)."""
    if not spans:
        return ""
    written = dict.fromkeys(span_text(start, end) for start, end in spans)
    return f" Look first at {', '.join(written)}, where this level read the most relevant text."


def toward_look_first_hint(
    entries: Sequence[Entry], scores: Sequence[float], instruction: str
) -> list[float]:
    """Entries holding a time the ``look_first_hint`` of ``instruction`` names gain
    ``HINT_GAIN``: the handed-down instruction is how the method says where to look
    (SPEC §5)."""
    hint = re.search(r"Look first at (.*), where this level read", instruction)
    clock = r"\d{1,2}:\d{2}(?::\d{2})?"
    spans = re.findall(rf"({clock})(?:-({clock}))?", hint.group(1) if hint else "")
    hinted = [(seconds(a), seconds(b or a)) for a, b in spans]
    if not hinted:
        return list(scores)
    return [
        s + (HINT_GAIN if any(overlaps(e.span, h) for h in hinted) else 0.0)
        for e, s in zip(entries, scores, strict=True)
    ]
