"""Reading a follow-up question against the conversation before it.

"What was on screen right after that?" means nothing to a level agent that sees only this
question: "that" is the moment the previous answer cited. Resolving it in code, before the
method runs, gives every agent (and every model, the offline one included) the same explicit
question, "right after the moment at 03:55-04:12", while the earlier turns are still shown
for what they said. The user's own words are kept beside the resolved text, so a result
shows both; a reference with no cited moment to point at is left as asked and reported.
Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.agents.state import EarlierTurn
from videotapestry.timecode import format_timestamp

_POINTER = r"(?:that|this|it|then|that moment|this moment|that point|that part|that scene)"
#: "after that", "right before this", "just after it": a relation to the previous moment.
_RELATIVE = re.compile(
    rf"\b(?P<how>(?:right|just|directly|immediately|shortly|soon) )?(?P<rel>after|before)"
    rf" {_POINTER}\b",
    re.I,
)
#: "at that moment", "during that time", "at the same time": the previous moment itself.
_SAME = re.compile(
    r"\b(?P<rel>at|during|in) (?:that|this|the same) (?:moment|time|point|part|scene)\b", re.I
)
#: "what came next?", "what happened next": the moment after the previous one.
_NEXT = re.compile(r"\bnext\b(?!\s+(?:to|week|year|day)\b)", re.I)


@dataclass(frozen=True)
class FollowUp:
    """A question as the agents are given it; ``asked`` holds the user's words when a
    reference was resolved, ``unresolved`` why one could not be."""

    question: str
    asked: str = ""
    moment: tuple[float, float] | None = None
    unresolved: str = ""


def cited_moment(turn: EarlierTurn) -> tuple[float, float] | None:
    """The stretch an answer's citations cover, from the first cited start to the last end
    (the moment "that" points at); None when it cited nothing."""
    if not turn.spans:
        return None
    return (min(s for s, _ in turn.spans), max(e for _, e in turn.spans))


def said_spans(
    claim: str, spans: Sequence[tuple[float, float]], lines: Sequence[tuple[float, float, str]]
) -> list[tuple[float, float]]:
    """Where a cited claim was said: the transcript lines (start, end, text) inside the cited
    spans whose words are the claim's (a sentence an answer quoted from a MacroEvent's
    summary cites the whole MacroEvent, but "right after that" means after the sentence);
    the cited spans when no line says it."""
    wanted = _letters(claim)
    if len(wanted) < MIN_SAID_CHARS:
        return list(spans)
    found = [
        (start, end)
        for start, end, text in lines
        if len(_letters(text)) >= MIN_SAID_CHARS
        and (_letters(text) in wanted or wanted in _letters(text))
        and any(a <= start and end <= b + 1.0 for a, b in spans)
    ]
    return found or list(spans)


#: Shorter claims and lines ("yes", "the gate") say too little to be matched as one sentence.
MIN_SAID_CHARS = 20


def _letters(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def refers_back(question: str) -> bool:
    """Whether the question points at an earlier answer's moment rather than naming one."""
    return bool(_RELATIVE.search(question) or _SAME.search(question) or _NEXT.search(question))


def resolve_follow_up(question: str, history: Sequence[EarlierTurn]) -> FollowUp:
    """``question`` with its reference to the previous answer replaced by that answer's
    cited moment; unchanged when it makes none, or when there is nothing to point at."""
    if not history or not refers_back(question):
        return FollowUp(question)
    previous = history[-1]
    moment = cited_moment(previous)
    if moment is None:
        return FollowUp(
            question,
            unresolved=f"the question refers to the previous answer ({previous.question!r}), "
            "which cited no moment of the video; it was asked as it stands",
        )
    start, end = moment
    where = f"the moment at {format_timestamp(start)}-{format_timestamp(end)}"

    def relative(match: re.Match[str]) -> str:
        return f"{match['how'] or ''}{match['rel']} {where}"

    resolved = _RELATIVE.sub(relative, question)
    resolved = _SAME.sub(lambda m: f"{m['rel']} {where}", resolved)
    if resolved == question:
        resolved = _NEXT.sub(f"next, after {where}", question, count=1)
    return FollowUp(resolved, asked=question, moment=moment)
