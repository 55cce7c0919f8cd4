"""The offline model's answers: the option best supported by the evidence it is sent, or for
a free-form question the line of evidence that bears most on it, with what it rests on cited.

A question about *when* is answered by the rule of time (``temporal``) when the evidence
settles it; otherwise the option whose text the evidence spells out, weighted by how much
that evidence bears on the question, wins (``matching.score_options``), and the reasoning
names the line that supports it. The final answer reads the memory it is sent; the direct
answer (the no-memory baseline) reads the frames and the transcript. Citations are added only
when the prompt asks for them (``answer.citations``), as a model following it would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from videotapestry.offline.answer_span import (
    MAX_ANSWER_CHARS,
    answer_kind,
    find_span,
    masked,
    parts_of,
    phrase,
)
from videotapestry.offline.citing import cite, cite_direct_frames, claim, without_refs
from videotapestry.offline.matching import (
    OptionScore,
    best_option,
    content_words,
    relevance,
    score_options,
    split_units,
)
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    CLOCK,
    PromptView,
    QuestionView,
    read_question,
    read_transcript,
    section,
)
from videotapestry.offline.query_roles.question_reading import topic_of
from videotapestry.offline.query_roles.ranking import OBSERVED_MARK
from videotapestry.offline.screen_text import readings
from videotapestry.offline.temporal import (
    TemporalAsk,
    choose_by_time,
    first_in_relation,
    moments,
    temporal_ask,
    timed_unit,
)
from videotapestry.offline.timestamps import span_text


def _choose_option(
    question: QuestionView,
    units: Sequence[tuple[str, bool]],
    perception: Perception,
    where: str,
    lines: Sequence[str] | None = None,
) -> tuple[dict, str]:
    """The reply for the evidence ``units`` (text, is it an observation) read from
    ``where`` ("memory", "frames"), and the unit it rests on; ``lines``: the evidence as
    written (memory lines), for the rule of time."""
    texts = [u for u, _ in units]
    letters = list(question.letters)
    bodies = list(question.bodies)
    ask = temporal_ask(question.question)
    if ask is not None:
        choice = choose_by_time(ask, letters, bodies, lines if lines is not None else texts)
        if choice is not None:
            reply = {
                "reasoning": f"Offline rule model (reads text, not a VLM), rule of time: "
                f"{choice.explain(ask)}.",
                "answer": choice.letter,
            }
            return reply, choice.evidence.text
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
    return {"reasoning": _reasoning(best, scores, where), "answer": best.letter}, best.line


def _answer_in_words(
    question: QuestionView, units: Sequence[tuple[str, bool]], perception: Perception, where: str
) -> tuple[dict, str]:
    """A free-form question's reply: the shortest span of the evidence that answers it (a
    time, a number, a name, a place, a short phrase; ``answer_span``), found in the units
    that bear most on the question (an observed one weighs more); and the unit it is in."""
    texts = [u for u, _ in units]
    if not texts:
        return {
            "reasoning": f"Offline rule model (reads text, not a VLM): the {where} holds no "
            "evidence to answer from.",
            "answer": "",
        }, ""
    ask = temporal_ask(question.question)
    if ask is not None:
        found = first_in_relation(ask, texts)
        said = _spoken(_asked(question.question, ask), found.evidence.text) if found else None
        if found is not None and said is not None:
            reasoning = (
                f"Offline rule model (reads text, not a VLM), rule of time: the question "
                f"points at {ask.anchor!r} ({span_text(found.anchor.start, found.anchor.end)}); "
                f'the evidence {_WHERE[ask.relation]} it is "{_shortened(found.evidence.text)}" '
                f"({span_text(found.evidence.start, found.evidence.end)})."
            )
            return {"reasoning": reasoning, "answer": said}, found.evidence.text
    topic = topic_of(question)
    vectors = perception.embed([question.question, *texts])
    scores = [
        relevance(text, question.question, vectors, query_words=topic.words)
        * (1.2 if observed else 1.0)
        * (1.0 if _adds_to(question.question, text) else ECHO_WEIGHT)
        for text, observed in units
    ]
    ranked = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    kind = answer_kind(_asked(question.question, ask))
    if kind == "moment":
        timed = timed_unit(texts[ranked[0]])
        if timed is not None:
            when = span_text(timed.start, timed.end)
            reasoning = (
                f"Offline rule model (reads text, not a VLM): the {where} line that bears most "
                f'on the question is "{_shortened(texts[ranked[0]])}", at {when} in the video.'
            )
            return {"reasoning": reasoning, "answer": f"At {when} in the video."}, texts[ranked[0]]
        kind = "phrase"
    near = [i for i in ranked[:SPAN_UNITS] if scores[i] >= NEAR_SHARE * scores[ranked[0]]]
    spans = [(i, find_span(question.question, _stated(texts[i]), kind)) for i in near]
    found_spans = [(i, s) for i, s in spans if s is not None and s.text]
    if not found_spans:
        reasoning = (
            f"Offline rule model (reads text, not a VLM): the question asks for {_ASKED[kind]}; "
            f'none is written in the {where} lines that bear on it (the nearest is "'
            f'{_shortened(texts[ranked[0]], 100)}").'
        )
        return {"reasoning": reasoning, "answer": f"The {where} does not show {_ASKED[kind]}."}, ""
    best, span = next(((i, s) for i, s in found_spans if s.closeness > 0), found_spans[0])
    answer = span.text
    if kind == "phrase" and span.closeness == 0:
        answer = phrase(parts_of(masked(_stated(texts[best]))))
    reasoning = (
        f"Offline rule model (reads text, not a VLM): the question asks for {_ASKED[kind]}; "
        f'"{answer}" stands in "{_shortened(span.part, 100)}", in the {where} line '
        f'"{_shortened(texts[best], 120)}" (relevance {scores[best]:.2f}).'
    )
    return {"reasoning": reasoning, "answer": _shortened(answer, MAX_ANSWER_CHARS)}, texts[best]


def _asked(question: str, ask: TemporalAsk | None) -> str:
    """The question without the moment it points at: what it asks for ("After the slide
    with the door code, what did the speaker say?" asks for what was said, not a code)."""
    return question.replace(ask.anchor, " ") if ask is not None and ask.anchor else question


def _spoken(question: str, unit: str) -> str | None:
    """What the unit found by the rule of time says, as an answer: the span the question
    asks for in it, else its text in short; None when nothing of it is left to say."""
    stated = _stated(unit)
    kind = answer_kind(question)
    span = find_span(question, stated, kind) if kind not in ("phrase", "moment") else None
    if span is not None:
        return span.text
    said = phrase(parts_of(masked(stated)))
    return said or None


#: The units searched for a span: the best few, and only those near the best's relevance.
SPAN_UNITS = 6
NEAR_SHARE = 0.5
_ASKED = {
    "time": "a clock time",
    "moment": "a moment of the video",
    "number": "a number or code",
    "name": "a name",
    "place": "a place",
    "phrase": "a short phrase",
}


_WHERE = {"at": "at the time of", "after": "first after", "before": "last before"}
#: How much a line that mostly repeats the question's own words still counts as an answer.
ECHO_WEIGHT = 0.3
#: The share of a line's content words the question must not hold for it to be an answer.
MIN_NEW_WORDS = 0.4


def _adds_to(question: str, unit: str) -> bool:
    """Whether ``unit`` says something the question does not: an answer must (a line that
    restates the question's words, "speech here bears on the name cards", is no answer)."""
    asked = set(content_words(question))
    said = content_words(re.sub(CLOCK, " ", _stated(unit)))
    if not said:
        return False
    new = [w for w in said if w not in asked and w.rstrip("s") not in asked]
    return len(new) / len(said) >= MIN_NEW_WORDS


def _stated(unit: str) -> str:
    """An evidence line as said: without the video times, ids and kind labels that lead it
    (or lead each of the parts a moment joins with " / ") and the notes that follow them;
    a time the line shows ("10:00 Brass band") is its text and stays."""
    parts = []
    video_time = rf"\[@?{CLOCK}(?:-{CLOCK})?\]:?\s*|{CLOCK}-{CLOCK}:?\s*|{CLOCK}:\s+"
    unit = re.sub(
        r"\b\w+_\w+ \[[^\]]*\] [\w ]{0,30}\((?:change|speech)\): (?:The screen shows )?", "", unit
    )
    unit = re.sub(r"\s*\|\s*object: \w+", "", unit)
    for part in unit.split(" / "):
        text = re.sub(rf"^(?:{video_time})+", "", part.strip())
        text = re.sub(r"^(?:Observed|\[(?:Visual|Transcript|Evidence)\])[:\s]*", "", text)
        text = re.sub(rf"^(?:- )?[\w.:-]+ \[@?{CLOCK}(?:-{CLOCK})?\]\s*", "", text)
        text = re.sub(rf"^(?:{video_time})+", "", text)
        text = re.sub(r"^[\w ]{0,30}\(change\): ", "", text)
        text = re.sub(r"^(?:The screen shows|Someone says:?)\s*", "", text)
        text = re.sub(r"\s*\|\s*(?:object|attributes|themes|key entities):.*$", "", text)
        text = re.sub(r"\s*\((?:scene_text|text|speech)\)(?::.*)?$", "", text)
        text = text.strip().strip('".').strip()
        if text and text not in parts:
            parts.append(text)
    return " / ".join(parts)


def _reasoning(best: OptionScore, scores: Sequence[OptionScore], where: str) -> str:
    """Why ``best`` won: the line that spells it out, or the nearest in meaning."""
    others = ", ".join(f"{s.letter} {s.score:.2f}" for s in scores if s is not best)
    if best.lexical > 0:
        how = f'its text is found in the {where} line "{_shortened(best.line)}"'
    elif best.line:
        how = (
            f"no option's text is found in the {where}; it is the nearest in meaning to "
            f'"{_shortened(best.line)}" (cosine {best.semantic:.2f})'
        )
    else:
        how = f"the {where} holds no evidence for any option; the first best score is taken"
    named = f'{best.letter} ("{_shortened(best.body, 60)}")'
    return (
        f"Offline rule model (reads text, not a VLM): {named} scores {best.score:.2f}: {how}. "
        f"Other options: {others}."
    )


def _shortened(text: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def asks_citations(view: PromptView) -> bool:
    """Whether the prompt's reply keys include ``citations``: the shipped answer prompts
    name it only under ``answer.citations``, and a user's own template may never."""
    return '"citations"' in view.system


def final_answer(view: PromptView, perception: Perception) -> dict:
    """The option the memory supports best (observed facts weigh more), or for a free-form
    question the memory line that answers it; with the refs of that line's time cited."""
    question = read_question(view.user)
    shown = section(view.user, "Video memory:")
    memory = without_refs(shown)
    units = [(u, bool(OBSERVED_MARK.search(u)) or o) for u, o in split_units(memory)]
    lines = [line.strip() for line in memory.splitlines() if line.strip()]
    units += [(text, True) for text in moments(lines) if text not in dict(units)]
    if question.options:
        reply, used = _choose_option(question, units, perception, "memory", lines)
    else:
        reply, used = _answer_in_words(question, units, perception, "memory")
    if not asks_citations(view):
        return reply
    return {**reply, "citations": claim(cite(used, shown), used) if used else []}


def direct_answer(view: PromptView, perception: Perception) -> dict:
    """The option the frames' text and the transcript support best (or, free-form, the
    reading that answers it), citing the frame nearest the time of what it read."""
    question = read_question(view.user)
    seen = perception.read(view.images)
    read = readings(seen)
    units = [(r.fact, True) for r in read]
    units += [(line.raw, True) for line in read_transcript(view.user)]
    if question.options:
        reply, used = _choose_option(question, units, perception, "frames")
    else:
        reply, used = _answer_in_words(question, units, perception, "frames")
    if not asks_citations(view):
        return reply
    times = [r.start for r in read if r.fact == used]
    notes = section(view.user, "Frames, in order:").splitlines()
    ids = cite_direct_frames(notes, times) if times else []
    return {**reply, "citations": claim(ids, used)}
