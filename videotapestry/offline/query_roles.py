"""The offline model's rules for the question-time prompts, one function per prompt.

Each rule reads the rendered prompt (``reading``), looks at what it was sent (OCR of the
images, the transcript lines, ``seeing``) and returns the JSON the prompt asks for, computed
by a rule a reader can check:

- Plans take their window from the locator's first complete candidate window, else from
  the memory entry most similar to the question and options; ranges stay inside the video
  and within the counts the prompt states. Instructions name the question's topic words,
  never an option's.
- The visual observation lists the text read in the frames, ``mm:ss: TEXT`` (a run of
  frames showing one text as ``mm:ss-mm:ss: TEXT``), the texts nearest the instruction
  first when there are many; the ASR observation quotes the transcript lines nearest its
  request verbatim, with their timestamps.
- Updates write the observed facts whose times fall inside each requested memory into that
  memory (only the requested ids); a memory with no fact and little bearing on the question
  becomes a summary of at most 10 characters.
- Decisions select the entries whose text bears most on the question, options and observed
  facts; the Answer rule picks the option best supported by the memory it is sent
  (``matching.score_options``) and says which memory line supports it.

Nothing here sees pictures beyond the text OCR reads in them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.agents.rules import is_global_question
from videotapestry.offline.matching import (
    OptionScore,
    best_option,
    compact,
    content_words,
    distinctive_words,
    lexical_support,
    relevance,
    score_options,
    split_units,
    word_overlap,
)
from videotapestry.offline.perception import Perception, SeenText
from videotapestry.offline.prompt_reading import (
    Entry,
    Fact,
    PromptView,
    QuestionView,
    field_value,
    grid_shape_hint,
    number_after,
    overlaps,
    read_entries,
    read_facts,
    read_locator,
    read_question,
    read_sources,
    read_transcript,
    seconds,
    section,
)
from videotapestry.offline.temporal import (
    MIN_ANCHOR_MATCH,
    TemporalAsk,
    anchor_match,
    choose_by_time,
    moments,
    temporal_ask,
)
from videotapestry.timecode import format_timestamp

#: Most texts one visual observation reports (the ones nearest the instruction).
MAX_OBSERVED_TEXTS = 16
#: Below this OCR confidence a reading goes to ``uncertainty`` instead of the result.
SURE_CONFIDENCE = 0.8
MAX_QUOTED_LINES = 6
MAX_FACTS_PER_MEMORY = 8
#: What a memory holding a time the level above read its best facts at gains in ranking.
HINT_GAIN = 0.3
_OBSERVED_MARK = re.compile(r"^\[(?:Visual|Transcript)\]|^\[\d|Observed:|read by OCR")
_STOPWORDS_DISPLAY = re.compile(r"[A-Za-z0-9°%.'’-]+")
#: Words of observation requests that say how to look or listen, not what for.
_BOILERPLATE = frozenset(
    content_words(
        "read every piece on-screen give time which each appears matters most quote what "
        "said line lines report listen spoken speech describe visible look frames timestamps"
    )
)


def clock(seconds_: float) -> str:
    return format_timestamp(max(0.0, seconds_))


def span_text(start: float, end: float) -> str:
    return clock(start) if clock(start) == clock(end) else f"{clock(start)}-{clock(end)}"


# --------------------------------------------------------------------------- the question


@dataclass(frozen=True)
class Topic:
    """What a question is about, without its options: for instructions and relevance."""

    question: QuestionView
    words: tuple[str, ...]  # content words of the question, option words removed
    display: str  # the same, as the question spells them

    @property
    def query(self) -> str:
        """Question and option texts: what plans and decisions rank memories against."""
        return " ".join([self.question.question, *self.question.bodies]).strip()


def topic_of(question: QuestionView) -> Topic:
    banned = (
        {w for ws in distinctive_words(question.bodies) for w in ws} if question.bodies else set()
    )
    kept = [w for w in content_words(question.question) if w not in banned]
    shown = []
    for token in _STOPWORDS_DISPLAY.findall(question.question):
        folded = content_words(token)
        if folded and folded[0] in kept and token.casefold() not in {s.casefold() for s in shown}:
            shown.append(token.strip(".'’"))
    return Topic(question, tuple(kept), " ".join(shown) or "the subject of the question")


def look_instruction(topic: Topic) -> str:
    return (
        "Read every piece of on-screen text in these frames and give the time at which each "
        f"appears; text about {topic.display} matters most."
    )


# --------------------------------------------------------------------------- shared helpers


def _entry_relevance(entries: Sequence[Entry], topic: Topic, vectors: dict) -> list[float]:
    bodies = topic.question.bodies
    option_words = distinctive_words(bodies) if bodies else []
    scores = []
    for entry in entries:
        units = [u for u, _ in split_units(entry.text)] or [entry.text]
        scores.append(
            max(
                relevance(
                    u,
                    topic.query,
                    vectors,
                    query_words=topic.words,
                    option_bodies=bodies,
                    option_words=option_words,
                )
                for u in units
            )
        )
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


def _entry_texts(entries: Sequence[Entry]) -> list[str]:
    texts = []
    for entry in entries:
        texts += [u for u, _ in split_units(entry.text)] or [entry.text]
    return texts


def _ranked(entries: Sequence[Entry], scores: Sequence[float]) -> list[tuple[Entry, float]]:
    order = sorted(range(len(entries)), key=lambda i: (-scores[i], i))
    return [(entries[i], scores[i]) for i in order]


def _centred(centre: float, length: float, bounds: tuple[float, float]) -> tuple[float, float]:
    low, high = bounds
    if high - low <= length:
        return (round(low, 1), round(high, 1))
    start = min(max(low, centre - length / 2), high - length)
    return (round(start, 1), round(start + length, 1))


@dataclass(frozen=True)
class Window:
    span: tuple[float, float]
    why: str
    hints: tuple[str, ...] = ()


def choose_window(
    supers: Sequence[Entry],
    locator: str,
    topic: Topic,
    vectors: dict,
    *,
    bounds: tuple[float, float],
    length: float,
) -> Window:
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
        span = _centred(centre, max(length, first.end - first.start), bounds)
        return Window(span, f"centred on locator candidate window {first.rank}", hints)
    if supers:
        entry, score = _ranked(supers, _entry_relevance(supers, topic, vectors))[0]
        centre = (entry.start + entry.end) / 2
        span = _centred(centre, length, bounds)
        return Window(span, f"centred on {entry.id}, the stage nearest the question ({score:.2f})")
    return Window(_centred(sum(bounds) / 2, length, bounds), "the middle of the video")


# --------------------------------------------------------------------------- planning


def locator_anchors(view: PromptView, perception: Perception) -> dict:
    """Quoted phrases, capitalized names and numbers of the question, then its topic: one
    anchor when it is one or two words, else its three longest words, each on its own."""
    from videotapestry.agents.rules import clean_anchors, question_anchors

    question = read_question(view.user)
    topic = topic_of(question)
    limit = int(number_after(view.system, r"at most (\d+) anchors", 4))
    found = question_anchors(question.question, max_anchors=64)[:-1]  # without its "core"
    words = topic.display.split()
    if len(words) <= 2:
        found += [topic.display] if topic.words else []
    else:
        longest = sorted(range(len(words)), key=lambda i: (-len(words[i]), i))[:3]
        found += [words[i] for i in sorted(longest)]
    anchors = clean_anchors(found, question.options, max_anchors=limit)
    anchors = [a for a in anchors if not _names_option(a, question)]
    return {
        "thought": "Anchors are the question's names, numbers and topic words, searched one "
        "by one.",
        "anchors": anchors[:limit],
    }


def _names_option(text: str, question: QuestionView) -> bool:
    return any(compact(body) and compact(body) in compact(text) for body in question.bodies)


def overview_planning(view: PromptView, perception: Perception) -> dict:
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    bounds = _bounds(user, "observation_time_bounds")
    length = number_after(view.system, r"at least (\d+(?:\.\d+)?) seconds", 600.0)
    supers = read_entries(section(user, "Super-level memories:", "Locator results:"))
    locator = section(user, "Locator results:", "Trajectory of this level")
    vectors = perception.embed([topic.query, *_entry_texts(supers)])
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


def _bounds(text: str, name: str) -> tuple[float, float]:
    match = re.search(rf"^{name}: \[([\d.]+), ([\d.]+)\]", text, re.M)
    if match:
        return (float(match.group(1)), float(match.group(2)))
    duration = number_after(text, r"Video duration: ([\d.]+) s", 0.0)
    return (0.0, duration)


def _listen_instruction(topic: Topic) -> str:
    return f"Quote what is said about {topic.display}, with the time each line is said."


def asr_planning(view: PromptView, perception: Perception) -> dict:
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    limit = int(number_after(view.system, r"at most (\d+) ranges", 3))
    duration = number_after(user, r"Video duration: ([\d.]+) s", 0.0)
    visual = _bounds(user, "Visual observation window")
    supers = read_entries(section(user, "SuperEvent timeline:"))
    vectors = perception.embed([topic.query, *_entry_texts(supers)])
    ranges = [visual] if visual[1] > visual[0] else []
    for entry, _score in _ranked(supers, _entry_relevance(supers, topic, vectors)):
        if len(ranges) >= limit:
            break
        span = (max(0.0, entry.start), min(duration or entry.end, entry.end))
        if span[1] > span[0] and not any(overlaps(span, r) for r in ranges):
            ranges.append(span)
    ranges = ranges[: max(1, limit)] or [(0.0, duration)]
    candidates = [e.id for e in supers if any(overlaps(e.span, r) for r in ranges)]
    return {
        "thought": "Listen where the frames were seen, and at the stage nearest the question.",
        "observation_instruction": _listen_instruction(topic),
        "time_ranges": [[round(a, 1), round(b, 1)] for a, b in ranges],
        "candidate_memory_ids": candidates,
    }


def level_planning(view: PromptView, perception: Perception) -> dict:
    """Observe the best entries' ranges (at Focus, around the evidence lines nearest the
    question); rewrite every supplied memory (the update keeps the relevant ones)."""
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    level = view.level or field_value(view.system, "memory_level")
    memories = read_entries(section(user, f"{level}-level memories:", "Trajectory of this level"))
    if not memories:
        memories = read_entries(section(user, "-level memories:", "Trajectory of this level"))
    nested = [e for m in memories for e in _nested(m)]
    vectors = perception.embed([topic.query, *_entry_texts(memories), *_entry_texts(nested)])
    scores = _toward_the_hints(
        memories,
        _entry_relevance(memories, topic, vectors),
        field_value(user, "Instruction from the level above"),
    )
    ranked = _ranked(memories, scores)
    chosen = [e for e, s in ranked if s >= ranked[0][1] - 0.05][:2] if ranked else []
    inside = [n for c in chosen for n in _nested(c)]
    if inside:
        best = [e for e, _s in _ranked(inside, _entry_relevance(inside, topic, vectors))[:3]]
        ranges = around(best, [c.span for c in chosen])
    else:
        ranges = [c.span for c in chosen]
    return {
        "thought": f"Look closer at {', '.join(c.id for c in chosen) or 'the memories'}.",
        "observation_needed": "visual observation" not in section(user, "Trajectory of this level"),
        "observation_instruction": look_instruction(topic),
        "candidate_memory_ids": [c.id for c in chosen],
        "time_ranges": [[round(a, 1), round(b, 1)] for a, b in ranges],
        "update_memory_ids": [m.id for m in memories],
    }


def _nested(entry: Entry) -> list[Entry]:
    """The memory lines inside an entry's body (a Focus evidence block's nodes)."""
    return read_entries("\n".join(entry.body), top_level=False)


def around(
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


# --------------------------------------------------------------------------- observation


@dataclass(frozen=True)
class Reading:
    """One text over a run of consecutive frames."""

    start: float
    end: float
    text: str
    confidence: float

    @property
    def fact(self) -> str:
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
            and position[item.time_s] - position[last.time_s] <= 2
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


def visual_observation(view: PromptView, perception: Perception) -> dict:
    instruction = field_value(view.user, "observation_instruction")
    seen = perception.read(view.images, grid_shape_hint(view.user))
    found = readings(seen)
    frames = sum(max(1, len(p.timestamps)) for p in view.images)
    if not found:
        return {
            "observation_result": f"No readable text in the {frames} frames seen.",
            "uncertainty": "Anything that is not text cannot be reported: the offline model "
            "reads only text.",
            "relevance_to_question": "No text bears on the instruction.",
        }
    sure = [r for r in found if r.confidence >= SURE_CONFIDENCE]
    unsure = [r for r in found if r.confidence < SURE_CONFIDENCE]
    if len(sure) > MAX_OBSERVED_TEXTS:
        vectors = perception.embed([instruction, *(r.text for r in sure)])
        words = [w for w in content_words(instruction) if w not in _BOILERPLATE]
        scored = [
            (relevance(r.text, instruction, vectors, query_words=words), i)
            for i, r in enumerate(sure)
        ]
        keep = {i for _s, i in sorted(scored, key=lambda x: (-x[0], x[1]))[:MAX_OBSERVED_TEXTS]}
        left_out = len(sure) - len(keep)
        sure = [r for i, r in enumerate(sure) if i in keep]
    else:
        left_out = 0
    result = "\n".join(r.fact for r in sure) or f"No text read with confidence in {frames} frames."
    uncertainty = "; ".join(f"{r.fact} (OCR confidence {r.confidence:.2f})" for r in unsure[:8])
    if left_out:
        uncertainty = (uncertainty + "; " if uncertainty else "") + (
            f"{left_out} further texts less related to the instruction are not listed"
        )
    words = [w for w in content_words(instruction) if w not in _BOILERPLATE]
    related = [r.text for r in sure if word_overlap(words, r.text) > 0]
    return {
        "observation_result": result,
        "uncertainty": uncertainty,
        "relevance_to_question": (
            f"Text read by OCR in {frames} frames; "
            + (
                f"{len(related)} of the texts share words with the instruction."
                if related
                else "none of it shares words with the instruction."
            )
        ),
    }


def asr_observation(view: PromptView, perception: Perception) -> dict:
    instruction = field_value(view.user, "observation_instruction")
    lines = read_transcript(section(view.user, "asr:"))
    if not lines:
        return {"observation_result": "No speech in the selected windows.", "asr_evidence": ""}
    texts = [line.text for line in lines]
    vectors = perception.embed([instruction, *texts])
    words = [w for w in content_words(instruction) if w not in _BOILERPLATE]
    scores = [relevance(t, instruction, vectors, query_words=words) for t in texts]
    best = max(scores)
    if best < 0.2:
        return {
            "observation_result": "Nothing in the transcript bears on the request.",
            "asr_evidence": "",
        }
    order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))
    picked = sorted(
        [i for i in order if scores[i] >= max(0.2, 0.6 * best)][:MAX_QUOTED_LINES],
        key=lambda i: (lines[i].start, i),
    )
    return {
        "observation_result": "\n".join(
            f"{span_text(lines[i].start, lines[i].end)}: said: {lines[i].text}" for i in picked
        ),
        "asr_evidence": "\n".join(lines[i].raw for i in picked),
    }


# --------------------------------------------------------------------------- updates


def _facts_in(facts: Sequence[Fact], span: tuple[float, float]) -> list[Fact]:
    """The facts seen inside ``span`` (a fact at a boundary belongs to the span it starts),
    each text once (two observations of one moment report it twice)."""
    inside, seen = [], set()
    for fact in sorted(facts, key=lambda f: (f.start, f.end)):
        key = (compact(fact.text), fact.start)
        if fact.start < span[1] and fact.end >= span[0] and key not in seen:
            seen.add(key)
            inside.append(fact)
    return inside


def _top_facts(facts: Sequence[Fact], topic: Topic, vectors: dict) -> list[Fact]:
    if len(facts) <= MAX_FACTS_PER_MEMORY:
        return list(facts)
    bodies = topic.question.bodies
    option_words = distinctive_words(bodies) if bodies else []
    scores = [
        relevance(
            f.text,
            topic.query,
            vectors,
            query_words=topic.words,
            option_bodies=bodies,
            option_words=option_words,
        )
        for f in facts
    ]
    keep = sorted(range(len(facts)), key=lambda i: (-scores[i], i))[:MAX_FACTS_PER_MEMORY]
    return [facts[i] for i in sorted(keep)]


def _fact_text(fact: Fact) -> str:
    return f"{span_text(fact.start, fact.end)}: {fact.text}"


def super_update(view: PromptView, perception: Perception) -> dict:
    user = view.user
    topic = topic_of(read_question(user))
    try:
        requests = json.loads(section(user, "update_requests:"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"update_requests is not JSON: {exc}") from None
    sources = {
        s.id: s for s in read_sources(section(user, "observation_sources:", "update_requests:"))
    }
    all_facts = [f for s in sources.values() for f in s.facts]
    vectors = perception.embed([topic.query, *(f.text for f in all_facts)])
    updates = {}
    for item in requests:
        memory_id = str(item.get("memory_id", ""))
        span = _range(str(item.get("time_range", "")))
        refs = [str(r) for r in item.get("source_refs", [])]
        visual = [
            f
            for r in refs
            if r in sources and sources[r].kind == "visual"
            for f in sources[r].facts
        ]
        speech = [
            f
            for r in refs
            if r in sources and sources[r].kind == "transcript"
            for f in sources[r].facts
        ]
        visual = _top_facts(_facts_in(visual, span), topic, vectors) if span else []
        speech = _facts_in(speech, span) if span else []
        if visual or speech:
            updates[memory_id] = {
                "is_relevant": True,
                "visual_observation": "; ".join(_fact_text(f) for f in visual),
                "asr_observation": (
                    f"Speech at {', '.join(span_text(f.start, f.end) for f in speech)} bears on "
                    f"{topic.display}."
                    if speech
                    else ""
                ),
                "irrelevant_summary": "",
            }
        else:
            updates[memory_id] = {
                "is_relevant": False,
                "visual_observation": "",
                "asr_observation": "",
                "irrelevant_summary": _first_sentence(str(item.get("old_memory_text", ""))),
            }
    return {"updated_memories": updates}


def _range(text: str) -> tuple[float, float] | None:
    match = re.fullmatch(r"\s*(\S+?)-(\S+)\s*", text)
    if not match:
        return None
    try:
        return (seconds(match.group(1)), seconds(match.group(2)))
    except ValueError:
        return None


def _first_sentence(text: str, limit: int = 200) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + "…"


def level_update(view: PromptView, perception: Perception) -> dict:
    user = view.user
    topic = topic_of(read_question(user))
    memories = read_entries(section(user, "Memories to rewrite:", "Observations at this level:"))
    sources = read_sources(section(user, "Observations at this level:"))
    facts = [f for s in sources for f in s.facts]
    vectors = perception.embed([topic.query, *_entry_texts(memories), *(f.text for f in facts)])
    scores = _entry_relevance(memories, topic, vectors)
    top = {e.id for e, _s in _ranked(memories, scores)[:2]}
    bodies = topic.question.bodies
    option_words = distinctive_words(bodies) if bodies else []
    updates = {}
    for entry in memories:
        inside = _top_facts(_facts_in(facts, entry.span), topic, vectors)
        spelled = (
            any(
                lexical_support(b, w, entry.text) for b, w in zip(bodies, option_words, strict=True)
            )
            or word_overlap(topic.words, entry.text) >= 0.5
        )
        if inside or spelled or entry.id in top:
            text = entry.text
            if inside:
                text += "\nObserved: " + "; ".join(_fact_text(f) for f in inside)
            updates[entry.id] = {"updated_text": text, "is_relevant": True}
        else:
            updates[entry.id] = {"updated_text": _tiny(entry.head), "is_relevant": False}
    return {"updated_memories": updates}


def _tiny(text: str, limit: int = 10) -> str:
    kept = ""
    for word in re.sub(r"[^\w\s-]", " ", text).split():
        candidate = f"{kept} {word}".strip()
        if len(candidate) > limit:
            break
        kept = candidate
    return kept or text[: limit - 1] + "…" if text else "-"


# --------------------------------------------------------------------------- decisions


_TEMPLATES = (
    ("temporal_order", r"\b(?:before|after|first|last|order|sequence|then|earlier|later|when)\b"),
    ("causal_result", r"\b(?:why|cause[sd]?|because|result|lead(?:s)? to|effect|reason)\b"),
    ("spatial_relation", r"\b(?:where|left|right|above|below|next to|behind|beside|near)\b"),
    ("identity", r"\b(?:who|whose|name[ds]?|which person|identity|called)\b"),
    ("action_verification", r"\b(?:did|does|do|doing|happen(?:s|ed)?|perform(?:s|ed)?)\b"),
)


def instruction_type(question: str, *, is_global: bool) -> str:
    if is_global:
        return "main_idea"
    for name, pattern in _TEMPLATES:
        if re.search(pattern, question, re.I):
            return name
    return "identity"


def decision(view: PromptView, perception: Perception) -> dict:
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    level = view.level or ("super" if "Super level to the Macro" in view.system else "macro")
    if level == "subgraph" or "Subgraph level is the last one" in view.system:
        return {
            "selected_child_memory_ids": [],
            "stop_descending": True,
            "next_instruct": None,
            "reason": "The Subgraph level is the last one.",
            "template_type": None,
        }
    entries = read_entries(section(user, "updated_dynamic_memories:", "Trajectory of this level"))
    vectors = perception.embed([topic.query, *_entry_texts(entries)])
    scores = _entry_relevance(entries, topic, vectors)
    upstream = field_value(user, "Instruction from the level above")
    scores = _toward_the_hints(entries, scores, upstream)
    scores = [s + (0.3 if _observed(e) else 0.0) for e, s in zip(entries, scores, strict=True)]
    ranked = _ranked(entries, scores)
    chosen = [e for e, s in ranked if s >= ranked[0][1] - 0.05][:2] if ranked else []
    why = ", ".join(f"{e.id} ({s:.2f})" for e, s in ranked[:3])
    is_global = is_global_question(question.question, question.options)
    if level == "super" and is_global:
        return {
            "selected_child_memory_ids": [],
            "stop_descending": True,
            "next_instruct": None,
            "reason": "A question about the whole video: the stage summaries are the evidence.",
            "template_type": "main_idea",
        }
    if level == "super":
        instruct = (
            f"In the selected stages, find the MacroEvents whose on-screen text, speech or "
            f"events concern {topic.display}.{_seen_above(_found_facts(chosen, topic))}"
        )
        template = instruction_type(question.question, is_global=False)
    else:
        found = _found(chosen, topic)
        instruct = f"Found: [{found}]; still need to verify: [{topic.display}]"
        template = None
    return {
        "selected_child_memory_ids": [e.id for e in chosen],
        "stop_descending": False,
        "next_instruct": instruct,
        "reason": f"Highest relevance to the question, options and observations: {why}.",
        "template_type": template,
    }


def _observed(entry: Entry) -> bool:
    return any(_OBSERVED_MARK.search(line.strip()) for line in entry.body) or (
        "Observed:" in entry.text
    )


def _found(entries: Sequence[Entry], topic: Topic) -> str:
    """The observed facts of ``entries`` that bear most on the question (three at most)."""
    facts = _found_facts(entries, topic)
    if not facts:
        return "; ".join(e.head.split(":")[0] for e in entries) or "nothing specific"
    return "; ".join(f.text for f in facts)


def _found_facts(entries: Sequence[Entry], topic: Topic) -> list[Fact]:
    """The three observed facts of ``entries`` weighing most on the question, in order."""
    facts: dict[str, Fact] = {}
    for entry in entries:
        for line in entry.body:
            for mark in ("Observed:", "[Visual]"):
                if line.startswith(mark):
                    for fact in read_facts(line[len(mark) :].strip()):
                        facts.setdefault(fact.text, fact)
    found = list(facts.values())
    bodies = topic.question.bodies
    option_words = distinctive_words(bodies) if bodies else []

    def weight(text: str) -> float:
        spelled = max(
            (lexical_support(b, w, text) for b, w in zip(bodies, option_words, strict=True)),
            default=0.0,
        )
        return spelled + word_overlap(topic.words, text)

    order = sorted(range(len(found)), key=lambda i: (-weight(found[i].text), i))[:3]
    return [found[i] for i in sorted(order)]


def _seen_above(facts: Sequence[Fact]) -> str:
    """When the level above read its best facts, for the level below to look there first
    (the times only: an instruction directs the search, it does not hand down answers)."""
    if not facts:
        return ""
    spans = dict.fromkeys(span_text(f.start, f.end) for f in facts)
    return f" Look first at {', '.join(spans)}, where this level read the most relevant text."


def _toward_the_hints(
    entries: Sequence[Entry], scores: Sequence[float], instruction: str
) -> list[float]:
    """Entries holding a time the level above read its facts at gain ``HINT_GAIN``: the
    handed-down instruction is how the method says where to look (SPEC §5)."""
    read = re.search(r"Look first at (.*), where this level read", instruction)
    clock_ = r"\d{1,2}:\d{2}(?::\d{2})?"
    spans = re.findall(rf"({clock_})(?:-({clock_}))?", read.group(1) if read else "")
    hints = [(seconds(a), seconds(b or a)) for a, b in spans]
    if not hints:
        return list(scores)
    return [
        s + (HINT_GAIN if any(overlaps(e.span, h) for h in hints) else 0.0)
        for e, s in zip(entries, scores, strict=True)
    ]


# --------------------------------------------------------------------------- single agent


@dataclass
class _Done:
    visual: int = 0
    asr_tried: bool = False
    visual_off: bool = False
    updated: tuple[str, ...] = ()
    expanded: tuple[str, ...] = ()


def _done(trajectory: str) -> _Done:
    done = _Done()
    for line in trajectory.split("\n"):
        line = line.strip()
        if re.match(r"^V\d+ visual observation", line):
            done.visual += 1
        elif re.match(r"^A\d+ asr observation|^observe_asr:", line):
            done.asr_tried = True
        elif line.startswith("observe_visual:") and "not available" in line:
            done.visual_off = True
        elif match := re.match(r"^update \((\w+)\)", line):
            done.updated = (*done.updated, match.group(1))
        elif match := re.match(r"^expand \[(.*)\]", line):
            done.expanded = (*done.expanded, *re.findall(r"'([^']+)'", match.group(1)))
        elif line.startswith("expand:"):
            done.expanded = (*done.expanded, "")
    return done


def controller(view: PromptView, perception: Perception) -> dict:
    """One step of a fixed, budget-aware script: look (grids) → listen → rewrite the stages
    → open the best MacroEvents → look closer (frames) → rewrite their evidence → finish."""
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    left = dict(
        zip(
            ("steps", "observations", "updates", "calls"),
            (
                int(x)
                for x in re.findall(
                    r"(\d+) (?:steps|observations|updates|tool calls)", field_value(user, "Left")
                )
            ),
            strict=False,
        )
    )
    done = _done(section(user, "What you have done so far:", "Left:"))
    hierarchy = read_entries(
        section(user, "Hierarchy (current texts):", "What you have done"), top_level=False
    )
    supers = [e for e in hierarchy if e.indent == 0 and not e.bullet]
    macros = [e for e in hierarchy if e.indent == 2 and not e.bullet]
    evidence = [e for e in hierarchy if e.bullet]
    duration = number_after(user, r"Video duration: ([\d.]+) s", 0.0)
    length = number_after(view.system, r"at least (\d+(?:\.\d+)?) seconds", 600.0)
    vectors = perception.embed(
        [topic.query, *_entry_texts(supers), *_entry_texts(macros), *_entry_texts(evidence)]
    )
    window = choose_window(
        supers,
        section(user, "Locator results:", "Hierarchy (current texts):"),
        topic,
        vectors,
        bounds=(0.0, duration),
        length=length,
    )
    can_look = left.get("observations", 0) > 0 and left.get("calls", 0) > 0
    can_write = left.get("updates", 0) > 0 and left.get("calls", 0) > 0
    step = {
        "thought": "",
        "action": "finish",
        "mode": None,
        "level": None,
        "memory_ids": [],
        "time_ranges": [],
        "instruction": "",
    }
    opened = [m for m in done.expanded if m]
    if left.get("steps", 1) <= 1:
        step["thought"] = "The last step: finish."
    elif done.visual == 0 and not done.visual_off and can_look:
        step |= {
            "thought": f"Look at one window, {window.why}.",
            "action": "observe_visual",
            "mode": "grids",
            "time_ranges": [list(window.span)],
            "instruction": look_instruction(topic),
        }
    elif not done.asr_tried and can_look:
        step |= {
            "thought": "Read the transcript around the same window.",
            "action": "observe_asr",
            "time_ranges": [list(window.span)],
            "instruction": _listen_instruction(topic),
        }
    elif "super" not in done.updated and (done.visual or done.asr_tried) and can_write:
        ids = [e.id for e in supers if overlaps(e.span, window.span)] or [e.id for e in supers[:1]]
        step |= {
            "thought": "Write what was observed into the stages it happened in.",
            "action": "update",
            "level": "super",
            "memory_ids": ids,
            "instruction": "Add the observed on-screen text and speech, with their times.",
        }
    elif not done.expanded and macros:
        ranked = _ranked(macros, _entry_relevance(macros, topic, vectors))
        ids = [e.id for e, s in ranked if s >= ranked[0][1] - 0.05][:2]
        step |= {
            "thought": f"Open the MacroEvents nearest the question: {', '.join(ids)}.",
            "action": "expand",
            "memory_ids": ids,
            "instruction": f"Evidence about {topic.display}.",
        }
    elif opened and done.visual < 2 and not done.visual_off and can_look:
        spans = [m.span for m in macros if m.id in opened]
        inside = [e for e in evidence if any(a - 1 <= e.start <= b + 1 for a, b in spans)]
        best = [e for e, _s in _ranked(inside, _entry_relevance(inside, topic, vectors))[:3]]
        ranges = [[round(a, 1), round(b, 1)] for a, b in around(best, spans)]
        step |= {
            "thought": "Look closer at the opened MacroEvents.",
            "action": "observe_visual",
            "mode": "frames",
            "level": "subgraph",
            "memory_ids": opened,
            "time_ranges": ranges or [[round(a, 1), round(b, 1)] for a, b in spans],
            "instruction": look_instruction(topic),
        }
    elif opened and "subgraph" not in done.updated and can_write:
        step |= {
            "thought": "Write the close look into the opened evidence.",
            "action": "update",
            "level": "subgraph",
            "memory_ids": opened,
            "instruction": "Add the observed on-screen text with its times.",
        }
    else:
        step["thought"] = "Everything in the plan is done: finish."
    return step


# --------------------------------------------------------------------------- answers


def _answer(
    question: QuestionView,
    units: Sequence[tuple[str, bool]],
    perception: Perception,
    where: str,
    lines: Sequence[str] | None = None,
) -> dict:
    """``lines``: the evidence as written (memory lines), for the rule of time."""
    texts = [u for u, _ in units]
    letters = list(question.letters)
    bodies = list(question.bodies)
    if not letters:
        raise ValueError("the prompt lists no options")
    ask = temporal_ask(question.question)
    if ask is not None:
        choice = choose_by_time(ask, letters, bodies, lines if lines is not None else texts)
        if choice is not None:
            return {
                "reasoning": f"Offline rule model (reads text, not a VLM), rule of time: "
                f"{choice.explain(ask)}.",
                "answer": choice.letter,
            }
    vectors = perception.embed([question.question, *bodies, *texts])
    scores = score_options(
        letters,
        bodies,
        texts,
        vectors,
        question.question,
        observed=[o for _, o in units],
        question_words=topic_of(question).words,
    )
    best = best_option(scores)
    return {"reasoning": _why(best, scores, where), "answer": best.letter}


def _why(best: OptionScore, scores: Sequence[OptionScore], where: str) -> str:
    others = ", ".join(f"{s.letter} {s.score:.2f}" for s in scores if s is not best)
    if best.lexical > 0:
        how = f'its text is found in the {where} line "{_short(best.line)}"'
    elif best.line:
        how = (
            f"no option's text is found in the {where}; it is the nearest in meaning to "
            f'"{_short(best.line)}" (cosine {best.semantic:.2f})'
        )
    else:
        how = f"the {where} holds no evidence for any option; the first best score is taken"
    return (
        f'Offline rule model (reads text, not a VLM): {best.letter} ("{_short(best.body, 60)}") '
        f"scores {best.score:.2f}: {how}. Other options: {others}."
    )


def _short(text: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def final_answer(view: PromptView, perception: Perception) -> dict:
    question = read_question(view.user)
    memory = section(view.user, "Video memory:")
    units = [(u, bool(_OBSERVED_MARK.search(u)) or o) for u, o in split_units(memory)]
    lines = [line.strip() for line in memory.splitlines() if line.strip()]
    units += [(text, True) for text in moments(lines) if text not in dict(units)]
    return _answer(question, units, perception, "memory", lines)


def direct_answer(view: PromptView, perception: Perception) -> dict:
    question = read_question(view.user)
    seen = perception.read(view.images)
    units = [(r.fact, True) for r in readings(seen)]
    units += [(line.raw, True) for line in read_transcript(view.user)]
    return _answer(question, units, perception, "frames")


RULES = {
    "locator_anchors": locator_anchors,
    "overview_planning": overview_planning,
    "level_planning": level_planning,
    "asr_planning": asr_planning,
    "visual_observation": visual_observation,
    "asr_observation": asr_observation,
    "super_update": super_update,
    "level_update": level_update,
    "decision": decision,
    "controller": controller,
    "final_answer": final_answer,
    "direct_answer": direct_answer,
}
