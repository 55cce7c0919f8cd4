"""The offline model's answers: the option best supported by the evidence it is sent, or for
a free-form question the line of evidence that bears most on it, with what it rests on cited.

A question about *when* is answered by the rule of time (``temporal``) when the evidence
settles it; otherwise the option whose text the evidence spells out, weighted by how much
that evidence bears on the question, wins (``matching.score_options``), and the reasoning
quotes the words that support it as a person would (``quoting``: the slide's line or the
sentence said, with its time; never the memory's ids or markup). Each citation's claim is
those words, not the whole memory line. The final answer reads the memory it is sent; the
direct answer (the no-memory baseline) reads the frames and the transcript. Citations are
added only when the prompt asks for them (``answer.citations``), as a model following it
would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from videotapestry.offline.answer_span import (
    MAX_ANSWER_CHARS,
    answer_kind,
    find_span,
    gist,
    masked,
    parts_of,
    phrase,
)
from videotapestry.offline.citing import cite, cite_direct_frames, claim, fact_span, without_refs
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
    QUESTION_HEADERS,
    PromptView,
    QuestionView,
    read_question,
    read_transcript,
    seconds,
    section,
)
from videotapestry.offline.query_roles.question_reading import topic_of
from videotapestry.offline.query_roles.ranking import OBSERVED_MARK
from videotapestry.offline.quoting import plain, quote, stated, supporting_part, text_parts
from videotapestry.offline.screen_text import readings
from videotapestry.offline.temporal import (
    TemporalAsk,
    TimedUnit,
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
) -> tuple[dict, str, str]:
    """The reply for the evidence ``units`` (text, is it an observation) read from
    ``where`` ("memory", "frames"), the unit it rests on and the words of that unit that
    support it (the claim); ``lines``: the evidence as written (memory lines), for the rule
    of time."""
    texts = [u for u, _ in units]
    letters = list(question.letters)
    bodies = list(question.bodies)
    ask = temporal_ask(question.question)
    if ask is not None:
        choice = choose_by_time(ask, letters, bodies, lines if lines is not None else texts)
        if choice is not None:
            body = bodies[letters.index(choice.letter)]
            said = supporting_part(choice.evidence.text, body)
            reply = {
                "reasoning": f"Offline rule model (reads text, not a VLM), rule of time: "
                f"{choice.explain(ask, said)}.",
                "answer": choice.letter,
            }
            return reply, choice.evidence.text, said
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
    said = supporting_part(best.line, best.body) if best.line else ""
    reply = {"reasoning": _reasoning(best, scores, where, said), "answer": best.letter}
    return reply, best.line, said


def _answer_in_words(
    question: QuestionView,
    units: Sequence[tuple[str, bool]],
    perception: Perception,
    where: str,
    lines: Sequence[str] | None = None,
) -> tuple[dict, str, str]:
    """A free-form question's reply: the shortest span of the evidence that answers it (a
    time, a number, a name, a place, a short phrase; ``answer_span``), found in the units
    that bear most on the question (an observed one weighs more); the unit it is in and the
    part of that unit it stands in (the claim). ``lines``: the evidence as written (memory
    lines, whose sentences keep their line's time), for the rule of time."""
    texts = [u for u, _ in units]
    if not texts:
        return (
            {
                "reasoning": f"Offline rule model (reads text, not a VLM): the {where} holds no "
                "evidence to answer from.",
                "answer": "",
            },
            "",
            "",
        )
    ask = temporal_ask(question.question)
    if ask is not None:
        found = first_in_relation(ask, lines if lines is not None else texts)
        said = _spoken(_asked(question.question, ask), found.evidence) if found else None
        if found is not None and said is not None:
            answer, claim_text = said
            evidence = found.evidence
            reasoning = (
                f"Offline rule model (reads text, not a VLM), rule of time: the question "
                f"points at {ask.anchor!r}"
                f"{'' if ask.at is not None else ', found in ' + found.anchor_quote()}; "
                f"the evidence {_WHERE[ask.relation]} it is "
                f"{quote(claim_text, evidence.start, evidence.end, evidence.kind)}."
            )
            return {"reasoning": reasoning, "answer": answer}, evidence.text, claim_text
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
        top = texts[ranked[0]]
        timed = timed_unit(top)
        if timed is not None:
            when = span_text(timed.start, timed.end)
            reasoning = (
                f"Offline rule model (reads text, not a VLM): the {where} evidence that bears "
                f"most on the question is {_quoted(top, plain(top))}."
            )
            return {"reasoning": reasoning, "answer": f"At {when} in the video."}, top, plain(top)
        kind = "phrase"
    near = [i for i in ranked[:SPAN_UNITS] if scores[i] >= NEAR_SHARE * scores[ranked[0]]]
    spans = [(i, find_span(question.question, stated(texts[i]), kind)) for i in near]
    found_spans = [(i, s) for i, s in spans if s is not None and s.text]
    if not found_spans:
        top = texts[ranked[0]]
        reasoning = (
            f"Offline rule model (reads text, not a VLM): the question asks for {_ASKED[kind]}; "
            f"none is written in the {where} evidence that bears on it (the nearest is "
            f"{_quoted(top, plain(top))})."
        )
        return (
            {"reasoning": reasoning, "answer": f"The {where} does not show {_ASKED[kind]}."},
            "",
            "",
        )
    best, span = next(((i, s) for i, s in found_spans if s.closeness > 0), found_spans[0])
    answer = span.text
    part = supporting_part(texts[best], " ".join(span.part.split()))
    if kind == "phrase" and span.closeness == 0:
        answer = phrase(parts_of(masked(stated(texts[best]))))
        part = answer
    reasoning = (
        f"Offline rule model (reads text, not a VLM): the question asks for {_ASKED[kind]}; "
        f'"{answer}" stands in {_quoted(texts[best], part)} '
        f"(relevance {scores[best]:.2f})."
    )
    reply = {"reasoning": reasoning, "answer": _shortened(answer, MAX_ANSWER_CHARS)}
    return reply, texts[best], part


def _quoted(unit: str, text: str) -> str:
    """``text``, words of the evidence ``unit``, quoted with the unit's time and kind of
    source (a sentence after a summary's ``says:`` is speech)."""
    timed = timed_unit(unit)
    kind = timed.kind if timed is not None else None
    said_from = unit.find("says:")
    if said_from >= 0 and unit.find(text) > said_from:
        kind = "speech"
    if timed is None:
        return quote(text, kind=kind)
    return quote(text, timed.start, timed.end, kind)


def _asked(question: str, ask: TemporalAsk | None) -> str:
    """The question without the moment it points at: what it asks for ("After the slide
    with the door code, what did the speaker say?" asks for what was said, not a code)."""
    return question.replace(ask.anchor, " ") if ask is not None and ask.anchor else question


def _spoken(question: str, unit: TimedUnit) -> tuple[str, str] | None:
    """What the unit found by the rule of time says, as an answer, and the words of it that
    answer (the claim): the span the question asks for in it, else its text in short (of a
    passage said, the sentences that say most, ``gist``); None when nothing is left to say."""
    text = stated(unit.text)
    kind = answer_kind(question)
    span = find_span(question, text, kind) if kind not in ("phrase", "moment") else None
    if span is not None:
        return span.text, supporting_part(unit.text, " ".join(span.part.split()))
    if unit.kind == "speech":
        # A passage said: what it is about for "what did they talk about", else its first
        # sentence ("what did the speaker say right after that" asks for the next words).
        sentences = text_parts(unit.text)
        said = gist(sentences) if _TOPIC.search(question) else phrase(sentences[:1])
    else:
        said = phrase(parts_of(masked(text)))
    return (said, said) if said else None


#: A question asking what speech was about, not for its words.
_TOPIC = re.compile(r"\b(?:talk|talks|talked|speak|speaks|spoke|spoken)\s+about\b|\bdiscuss", re.I)


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
    said = content_words(re.sub(CLOCK, " ", stated(unit)))
    if not said:
        return False
    new = [w for w in said if w not in asked and w.rstrip("s") not in asked]
    return len(new) / len(said) >= MIN_NEW_WORDS


def _reasoning(best: OptionScore, scores: Sequence[OptionScore], where: str, said: str) -> str:
    """Why ``best`` won: the words of the evidence that spell it out (``said``, quoted with
    their time), or the nearest in meaning."""
    others = ", ".join(f"{s.letter} {s.score:.2f}" for s in scores if s is not best)
    if best.lexical > 0:
        how = f"its text is found in the {where}: {_quoted(best.line, said)}"
    elif best.line:
        how = (
            f"no option's text is found in the {where}; it is the nearest in meaning to "
            f"{_quoted(best.line, said)} (cosine {best.semantic:.2f})"
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
    inside = _inside_asked_window(question.question, shown)
    units, lines = [u for u in units if inside(u[0])], [line for line in lines if inside(line)]
    if question.options:
        reply, used, said = _choose_option(question, units, perception, "memory", lines)
    else:
        reply, used, said = _answer_in_words(question, units, perception, "memory", lines)
    if not asks_citations(view):
        return reply
    return {**reply, "citations": claim(cite(used, shown), said or plain(used)) if used else []}


#: A window the question names outright ("between 16:00 and 18:00", as "in the last 2
#: minutes" is resolved before the method runs, ``agents.relative_time``).
_ASKED_WINDOW = re.compile(rf"\bbetween (?P<start>{CLOCK}) and (?P<end>{CLOCK})\b", re.I)
#: How far past the named window a fact's time may reach (clock times are whole seconds).
WINDOW_SLACK_S = 1.0


def _inside_asked_window(question: str, memory: str) -> Callable[[str], bool]:
    """Whether a unit of ``memory`` speaks of a time inside the window ``question`` names
    (its own time, else its entry's range; ``citing.fact_span``): a question about that
    window is answered from what lies in it. Every unit, when it names no window."""
    match = _ASKED_WINDOW.search(question)
    if match is None:
        return lambda unit: True
    low = seconds(match["start"]) - WINDOW_SLACK_S
    high = seconds(match["end"]) + WINDOW_SLACK_S

    def inside(unit: str) -> bool:
        span = fact_span(unit, memory)
        return span is not None and low <= span[0] and span[1] <= high

    return inside


def direct_answer(view: PromptView, perception: Perception) -> dict:
    """The option the frames' text and the transcript support best (or, free-form, the
    reading that answers it), citing the frame nearest the time of what it read."""
    question = read_question(view.user)
    seen = perception.read(view.images)
    read = readings(seen)
    units = [(r.fact, True) for r in read]
    units += [(line.raw, True) for line in read_transcript(view.user)]
    if question.options:
        reply, used, said = _choose_option(question, units, perception, "frames")
    else:
        reply, used, said = _answer_in_words(question, units, perception, "frames")
    if not asks_citations(view):
        return reply
    times = [r.start for r in read if r.fact == used]
    notes = section(view.user, "Frames, in order:", *QUESTION_HEADERS).splitlines()
    ids = cite_direct_frames(notes, times) if times else []
    return {**reply, "citations": claim(ids, said or plain(used))}
