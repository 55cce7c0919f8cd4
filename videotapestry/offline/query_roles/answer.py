"""The offline model's answers: the option best supported by the evidence it is sent.

A question about *when* is answered by the rule of time (``temporal``) when the evidence
settles it; otherwise the option whose text the evidence spells out, weighted by how much
that evidence bears on the question, wins (``matching.score_options``), and the reasoning
names the line that supports it. The final answer reads the memory it is sent; the direct
answer (the no-memory baseline) reads the frames and the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from videotapestry.offline.matching import OptionScore, best_option, score_options, split_units
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    PromptView,
    QuestionView,
    read_question,
    read_transcript,
    section,
)
from videotapestry.offline.query_roles.question_reading import topic_of
from videotapestry.offline.query_roles.ranking import OBSERVED_MARK
from videotapestry.offline.screen_text import readings
from videotapestry.offline.temporal import choose_by_time, moments, temporal_ask


def _choose_option(
    question: QuestionView,
    units: Sequence[tuple[str, bool]],
    perception: Perception,
    where: str,
    lines: Sequence[str] | None = None,
) -> dict:
    """The reply for the evidence ``units`` (text, is it an observation) read from
    ``where`` ("memory", "frames"); ``lines``: the evidence as written (memory lines), for
    the rule of time."""
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
    return {"reasoning": _reasoning(best, scores, where), "answer": best.letter}


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


def final_answer(view: PromptView, perception: Perception) -> dict:
    """The option the memory supports best (observed facts weigh more)."""
    question = read_question(view.user)
    memory = section(view.user, "Video memory:")
    units = [(u, bool(OBSERVED_MARK.search(u)) or o) for u, o in split_units(memory)]
    lines = [line.strip() for line in memory.splitlines() if line.strip()]
    units += [(text, True) for text in moments(lines) if text not in dict(units)]
    return _choose_option(question, units, perception, "memory", lines)


def direct_answer(view: PromptView, perception: Perception) -> dict:
    """The option the frames' text and the transcript support best."""
    question = read_question(view.user)
    seen = perception.read(view.images)
    units = [(r.fact, True) for r in readings(seen)]
    units += [(line.raw, True) for line in read_transcript(view.user)]
    return _choose_option(question, units, perception, "frames")
