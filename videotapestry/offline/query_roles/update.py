"""The offline model's memory updates: observed facts written into the memories they concern.

Updates write the observed facts whose times fall inside each requested memory into that
memory (only the requested ids); a memory with no fact and little bearing on the question
becomes a summary of at most 10 characters (a SuperEvent's becomes its first sentence).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from videotapestry.offline.matching import compact, lexical_support, word_overlap
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    QUESTION_HEADERS,
    Fact,
    PromptView,
    Source,
    read_entries,
    read_question,
    read_sources,
    seconds,
    section,
)
from videotapestry.offline.query_roles.question_reading import Topic, topic_of
from videotapestry.offline.query_roles.ranking import (
    Vectors,
    entry_relevance,
    entry_texts,
    ranked,
    topic_relevance,
)
from videotapestry.offline.timestamps import span_text

#: Most facts one update writes into one memory (the ones nearest the question).
MAX_FACTS_PER_MEMORY = 8
#: The length an irrelevant Macro or Subgraph memory is cut to (Appendix B.3).
IRRELEVANT_TEXT_CHARS = 10


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


def _top_facts(facts: Sequence[Fact], topic: Topic, vectors: Vectors) -> list[Fact]:
    """At most ``MAX_FACTS_PER_MEMORY`` facts, the most relevant, in their order."""
    if len(facts) <= MAX_FACTS_PER_MEMORY:
        return list(facts)
    scores = [topic_relevance(f.text, topic, vectors) for f in facts]
    keep = sorted(range(len(facts)), key=lambda i: (-scores[i], i))[:MAX_FACTS_PER_MEMORY]
    return [facts[i] for i in sorted(keep)]


def _facts_from(sources: Mapping[str, Source], refs: Sequence[str], kind: str) -> list[Fact]:
    """The facts of the ``kind`` sources (visual, transcript) among ``refs``."""
    return [f for r in refs if r in sources and sources[r].kind == kind for f in sources[r].facts]


def _fact_text(fact: Fact) -> str:
    return f"{span_text(fact.start, fact.end)}: {fact.text}"


def _parse_time_range(text: str) -> tuple[float, float] | None:
    """``mm:ss-mm:ss`` as seconds; None for anything else."""
    match = re.fullmatch(r"\s*(\S+?)-(\S+)\s*", text)
    if not match:
        return None
    try:
        return (seconds(match.group(1)), seconds(match.group(2)))
    except ValueError:
        return None


def _first_sentence(text: str, limit: int = 200) -> str:
    """A memory's first sentence, cut at a word before ``limit`` characters."""
    text = re.sub(r"\s+", " ", text).strip()
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + "…"


def _irrelevant_memory_text(text: str, limit: int = IRRELEVANT_TEXT_CHARS) -> str:
    """What an irrelevant memory is rewritten to: its first whole words within ``limit``
    characters (a first word longer than that is cut, with an ellipsis)."""
    kept = ""
    for word in re.sub(r"[^\w\s-]", " ", text).split():
        candidate = f"{kept} {word}".strip()
        if len(candidate) > limit:
            break
        kept = candidate
    return kept or text[: limit - 1] + "…" if text else "-"


def super_update(view: PromptView, perception: Perception) -> dict:
    """Per requested SuperEvent, the observed facts inside its time from its sources."""
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
        span = _parse_time_range(str(item.get("time_range", "")))
        refs = [str(r) for r in item.get("source_refs", [])]
        visual = _facts_from(sources, refs, "visual")
        speech = _facts_from(sources, refs, "transcript")
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


def level_update(view: PromptView, perception: Perception) -> dict:
    """Each memory keeps its text plus the facts observed inside it when it has some, spells
    out an option or the topic, or is among the two most relevant; the others shrink."""
    user = view.user
    topic = topic_of(read_question(user))
    memories = read_entries(
        section(
            user,
            "Memories to rewrite:",
            "Instruction from the level above",
            "update_instruction:",
            "Observations at this level:",
        )
    )
    sources = read_sources(section(user, "Observations at this level:", *QUESTION_HEADERS))
    facts = [f for s in sources for f in s.facts]
    vectors = perception.embed([topic.query, *entry_texts(memories), *(f.text for f in facts)])
    scores = entry_relevance(memories, topic, vectors)
    top = {e.id for e, _s in ranked(memories, scores)[:2]}
    bodies = topic.question.bodies
    updates = {}
    for entry in memories:
        inside = _top_facts(_facts_in(facts, entry.span), topic, vectors)
        spelled = (
            any(
                lexical_support(b, w, entry.text)
                for b, w in zip(bodies, topic.option_words, strict=True)
            )
            or word_overlap(topic.words, entry.text) >= 0.5
        )
        if inside or spelled or entry.id in top:
            text = entry.text
            if inside:
                text += "\nObserved: " + "; ".join(_fact_text(f) for f in inside)
            updates[entry.id] = {"updated_text": text, "is_relevant": True}
        else:
            updates[entry.id] = {
                "updated_text": _irrelevant_memory_text(entry.head),
                "is_relevant": False,
            }
    return {"updated_memories": updates}
