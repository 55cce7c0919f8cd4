"""The offline model's plans: the locator's anchors, and where and what to observe.

Plans take their window from the locator's first complete candidate window, else from the
memory entry most similar to the question and options; ranges stay inside the video and
within the counts the prompt states. Instructions name the question's topic words, never
an option's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    QUESTION_HEADERS,
    Entry,
    PromptView,
    field_value,
    number_after,
    overlaps,
    read_entries,
    read_locator,
    read_question,
    section,
)
from videotapestry.offline.query_roles.question_reading import Topic, search_anchors, topic_of
from videotapestry.offline.query_roles.ranking import (
    Vectors,
    best_entries,
    entry_relevance,
    entry_texts,
    ranked,
    toward_look_first_hint,
)
from videotapestry.offline.timestamps import span_text


def look_instruction(topic: Topic) -> str:
    """What a visual observation is asked to do: read the text, the topic's first."""
    return (
        "Read every piece of on-screen text in these frames and give the time at which each "
        f"appears; text about {topic.display} matters most."
    )


def listen_instruction(topic: Topic) -> str:
    """What an ASR observation is asked to do: quote what is said about the topic."""
    return f"Quote what is said about {topic.display}, with the time each line is said."


# --------------------------------------------------------------------------- windows


def _centred_range(
    centre: float, length: float, bounds: tuple[float, float]
) -> tuple[float, float]:
    """A range of ``length`` around ``centre``, shifted to stay inside ``bounds``."""
    low, high = bounds
    if high - low <= length:
        return (round(low, 1), round(high, 1))
    start = min(max(low, centre - length / 2), high - length)
    return (round(start, 1), round(start + length, 1))


@dataclass(frozen=True)
class ObservationWindow:
    """The one range a plan observes, why it was chosen, and the locator hints it used."""

    span: tuple[float, float]
    why: str
    hints: tuple[str, ...] = ()


def choose_window(
    supers: Sequence[Entry],
    locator: str,
    topic: Topic,
    vectors: Vectors,
    *,
    bounds: tuple[float, float],
    length: float,
) -> ObservationWindow:
    """The locator's first complete window (all anchors resolved), else the SuperEvent
    nearest the question and options, as one range of ``length`` inside ``bounds``."""
    windows, unresolved = read_locator(locator)
    if windows and not unresolved:
        first = windows[0]
        hints = tuple(
            f"candidate window {w.rank} ({w.start:.0f}-{w.end:.0f} s) holds a match for every "
            "anchor"
            for w in windows[:2]
        )
        centre = (first.start + first.end) / 2
        span = _centred_range(centre, max(length, first.end - first.start), bounds)
        return ObservationWindow(span, f"centred on locator candidate window {first.rank}", hints)
    if supers:
        entry, score = ranked(supers, entry_relevance(supers, topic, vectors))[0]
        centre = (entry.start + entry.end) / 2
        span = _centred_range(centre, length, bounds)
        return ObservationWindow(
            span, f"centred on {entry.id}, the stage nearest the question ({score:.2f})"
        )
    return ObservationWindow(
        _centred_range(sum(bounds) / 2, length, bounds), "the middle of the video"
    )


def padded_ranges(
    entries: Sequence[Entry], spans: Sequence[tuple[float, float]], pad_s: float = 5.0
) -> list[tuple[float, float]]:
    """Each entry's time padded by ``pad_s``, kept inside the span that holds it, merged."""
    ranges = []
    for entry in entries:
        home = next((s for s in spans if s[0] - 1 <= entry.start <= s[1] + 1), None)
        low, high = home if home else (0.0, entry.end + pad_s)
        start, end = max(low, entry.start - pad_s), min(high, entry.end + pad_s)
        if end > start:
            ranges.append((start, end))
    return merge_ranges(ranges)


def merge_ranges(ranges: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping or touching ranges as one, in time order."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def rounded(ranges: Sequence[tuple[float, float]]) -> list[list[float]]:
    """Ranges as a reply writes them: lists of two times to a tenth of a second."""
    return [[round(a, 1), round(b, 1)] for a, b in ranges]


def _time_bounds(text: str, name: str) -> tuple[float, float]:
    """The ``name: [start, end]`` bounds the prompt states, else the whole video."""
    match = re.search(rf"^{name}: \[([\d.]+), ([\d.]+)\]", text, re.M)
    if match:
        return (float(match.group(1)), float(match.group(2)))
    duration = number_after(text, r"Video duration: ([\d.]+) s", 0.0)
    return (0.0, duration)


def nested_entries(entry: Entry) -> list[Entry]:
    """The memory lines inside an entry's body (a Focus evidence block's nodes)."""
    return read_entries("\n".join(entry.body), top_level=False)


# --------------------------------------------------------------------------- the rules


def locator_anchors(view: PromptView, perception: Perception) -> dict:
    """Quoted phrases, capitalized names and numbers of the question, then its topic: one
    anchor when it is one or two words, else its three longest words, each on its own."""
    limit = int(number_after(view.system, r"at most (\d+) anchors", 4))
    return {
        "thought": "Anchors are the question's names, numbers and topic words, searched one "
        "by one.",
        "anchors": search_anchors(read_question(view.user), limit),
    }


def overview_planning(view: PromptView, perception: Perception) -> dict:
    """One window around the locator's best candidate, else the nearest SuperEvent."""
    user = view.user
    topic = topic_of(read_question(user))
    bounds = _time_bounds(user, "observation_time_bounds")
    length = number_after(view.system, r"at least (\d+(?:\.\d+)?) seconds", 600.0)
    supers = read_entries(section(user, "Super-level memories:", "Locator results:"))
    locator = section(user, "Locator results:", "Trajectory of this level")
    vectors = perception.embed([topic.query, *entry_texts(supers)])
    window = choose_window(supers, locator, topic, vectors, bounds=bounds, length=length)
    candidates = [e.id for e in supers if overlaps(e.span, window.span)]
    return {
        "thought": f"One window {span_text(*window.span)}, {window.why}.",
        "observation_needed": True,
        "observation_instruction": look_instruction(topic),
        "candidate_memory_ids": candidates,
        "time_ranges": [list(window.span)],
        "locator_time_hints_used": list(window.hints),
    }


def asr_planning(view: PromptView, perception: Perception) -> dict:
    """Listen where the frames were seen, then at the SuperEvents nearest the question."""
    user = view.user
    topic = topic_of(read_question(user))
    limit = int(number_after(view.system, r"at most (\d+) ranges", 3))
    duration = number_after(user, r"Video duration: ([\d.]+) s", 0.0)
    visual = _time_bounds(user, "Visual observation window")
    supers = read_entries(
        section(user, "SuperEvent timeline:", "Visual observation window", *QUESTION_HEADERS)
    )
    vectors = perception.embed([topic.query, *entry_texts(supers)])
    ranges = [visual] if visual[1] > visual[0] else []
    for entry, _score in ranked(supers, entry_relevance(supers, topic, vectors)):
        if len(ranges) >= limit:
            break
        span = (max(0.0, entry.start), min(duration or entry.end, entry.end))
        if span[1] > span[0] and not any(overlaps(span, r) for r in ranges):
            ranges.append(span)
    ranges = ranges[: max(1, limit)] or [(0.0, duration)]
    candidates = [e.id for e in supers if any(overlaps(e.span, r) for r in ranges)]
    return {
        "thought": "Listen where the frames were seen, and at the stage nearest the question.",
        "observation_instruction": listen_instruction(topic),
        "time_ranges": rounded(ranges),
        "candidate_memory_ids": candidates,
    }


def level_planning(view: PromptView, perception: Perception) -> dict:
    """Observe the best entries' ranges (at Focus, around the evidence lines nearest the
    question); rewrite every supplied memory (the update keeps the relevant ones)."""
    user = view.user
    topic = topic_of(read_question(user))
    level = view.level or field_value(view.system, "memory_level")
    ends = ("Instruction from the level above", "Trajectory of this level")
    memories = read_entries(section(user, f"{level}-level memories:", *ends))
    if not memories:
        memories = read_entries(section(user, "-level memories:", *ends))
    nested = [e for m in memories for e in nested_entries(m)]
    vectors = perception.embed([topic.query, *entry_texts(memories), *entry_texts(nested)])
    scores = toward_look_first_hint(
        memories,
        entry_relevance(memories, topic, vectors),
        field_value(user, "Instruction from the level above"),
    )
    chosen = best_entries(memories, scores)
    inside = [n for c in chosen for n in nested_entries(c)]
    if inside:
        best = [e for e, _s in ranked(inside, entry_relevance(inside, topic, vectors))[:3]]
        ranges = padded_ranges(best, [c.span for c in chosen])
    else:
        ranges = [c.span for c in chosen]
    return {
        "thought": f"Look closer at {', '.join(c.id for c in chosen) or 'the memories'}.",
        "observation_needed": "visual observation"
        not in section(user, "Trajectory of this level", *QUESTION_HEADERS),
        "observation_instruction": look_instruction(topic),
        "candidate_memory_ids": [c.id for c in chosen],
        "time_ranges": rounded(ranges),
        "update_memory_ids": [m.id for m in memories],
    }
