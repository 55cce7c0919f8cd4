"""What the agents must do about answer options: keep them out of memory text, and read
exactly one of them back out of the Answer agent's reply.

Up to 26 options (A-Z) are supported; their letters and texts come from
``videotapestry.question``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from videotapestry.question import option_body, option_letters


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --------------------------------------------------------------------------- option steering

# Only text the agents wrote passes this filter (instructions, rewrites, observation
# summaries); stored nodes and verbatim transcript lines never do: they are what the video
# shows or says, and a quiz show's "OPTION B: PARIS" is a fact about it.
#
# Words match in any case, option letters only in upper case: "supports a theory" is plain
# English, "supports A" is steering. A letter must stand alone ("(C)", "C.", "C,"), so
# "Vitamin C-rich" or "B12" never counts.
_LETTER = r"\(?[A-Z]\)?(?![A-Za-z0-9'’-])"
_ORDINAL = (
    r"(?i:the\s+(?:first|second|third|fourth|fifth|sixth|seventh|eighth|last|final|other)\s+"
    r"(?:option|choice|answer|alternative))\b"
)
_NAMED = rf"(?i:options?|choices?|answers?|alternative)\s*[:=]?\s*{_LETTER}"
_CLAUSE_WORDS = ("so", "thus", "hence", "therefore", "then", "and", "but", "while")
_CLAUSE_START = (
    r"(?:^|(?<=[.;:!?,(])|(?<=[.;:!?,(]\s)|"
    + "|".join(rf"(?<=\b{word}\s)|(?<=\b{word.capitalize()}\s)" for word in _CLAUSE_WORDS)
    + ")"
)
_MAYBE_NAMED = rf"(?:(?:(?i:option|choice|answer|alternative)\s*)?{_LETTER}|{_ORDINAL})"
_LEANING_VERBS = (
    r"supports?|supporting|supported|favou?rs?|favou?ring|confirms?|confirming|indicates?|"
    r"suggests?|implies|backs?(?:\s+up)?|corroborates?|validates?|proves?|"
    r"points?\s+(?:to|towards?)|pointing\s+(?:to|towards?)|leans?\s+(?:to|towards?)|"
    r"matche?s?|matching|matched|fits?|fitting|corresponds?\s+to|corresponding\s+to|"
    r"agrees?\s+with|aligns?\s+with|aligning\s+with|aligned\s+with|"
    r"(?:is\s+|are\s+)?(?:consistent|inconsistent|in\s+line|in\s+agreement|compatible)\s+with|"
    r"goes\s+with|argues?\s+for|speaks?\s+for|rules?\s+out|eliminates?|excludes?"
)
#: The writer's own verdict, whoever else the sentence mentions.
_VERDICTS = (
    # A leaning verb followed by an option: "aligns with B", "points to the third option".
    rf"\b(?i:{_LEANING_VERBS})\s+(?:(?i:the\s+)?){_MAYBE_NAMED}",
    rf"\b(?i:(?:more|most|less|least)\s+likely\s+(?:to\s+be\s+)?){_MAYBE_NAMED}",
    # A conclusion that is just a letter: "So C.", "Therefore the answer: C", "Thus, (B)".
    r"\b(?i:so|thus|hence|therefore|ergo)\s*,?\s*(?:(?i:the\s+)?(?i:final\s+)?"
    r"(?i:answer|option|choice)\s*(?:(?i:is|would\s+be|must\s+be|should\s+be)|[:=])?\s*)?"
    r"\(?[A-Z]\)?(?=\s*(?:[.!?;]|$))",
)
#: Talk of options or of the answer: steering from an agent, a fact when the sentence
#: reports what someone or something in the video says or shows ("the host says the correct
#: answer is Paris", "she picks answer C on the board").
_OPTION_TALK = (
    rf"\b{_NAMED}",
    rf"\b{_ORDINAL}",
    r"\b(?i:(?:correct|right|best|final|likely)\s+(?:answer|option|choice|pick))\b",
    r"\b(?i:the\s+answer\s+(?:is|would\s+be|must\s+be|should\s+be|seems|appears))\b",
    # A verdict on a letter at the start of a clause: "B is correct", "so A is wrong" (but
    # not "Vitamin C is the best source").
    rf"{_CLAUSE_START}{_LETTER}\s+(?i:(?:is|seems|appears|looks)\s+(?:\w+\s+)?"
    r"(?:correct|right|wrong|incorrect|unlikely|supported|the\s+answer|the\s+best))",
)
_VERDICT = re.compile("|".join(_VERDICTS))
_TALK = re.compile("|".join(_OPTION_TALK))
#: What marks a sentence as a report of the video: someone says, shows or picks something.
_REPORTED = re.compile(
    r"\b(?i:says?|said|saying|states?|stated|announces?|announced|tells?|told|asks?|asked|"
    r"repl(?:y|ies|ied)|shouts?|shouted|declares?|declared|reveals?|revealed|reads?|reading|"
    r"shows?|showing|shown|displays?|displayed|displaying|writes?|wrote|written|"
    r"picks?|picked|chooses|chose|chosen|selects?|selected|presses|pressed|circles?|circled|"
    r"holds?\s+up|held\s+up|on(?:\s+the)?\s+(?:board|screen|sign|card|slide)|on-screen)\b"
)
_SENTENCE = re.compile(r"[^.!?;\n]+(?:[.!?;]+|\n|$)")


#: Where the writer's own clause may begin: "The board reads 220°C, so the answer is B".
_CLAUSE_BREAK = re.compile(
    r"[,;(—–]|\b(?i:so|thus|hence|therefore|which|meaning|and|but|because|since)\b"
)
_QUOTES = re.compile(r"[\"“”]")


def _reported(text: str, start: int) -> bool:
    """Whether the option talk at ``start`` is quoted, or reported by a verb of its clause."""
    if len(_QUOTES.findall(text, 0, start)) % 2:
        return True
    breaks = [m.end() for m in _CLAUSE_BREAK.finditer(text, 0, start)]
    return bool(_REPORTED.search(text, breaks[-1] if breaks else 0, start))


def _steers(text: str) -> bool:
    if _VERDICT.search(text):
        return True
    return any(not _reported(text, m.start()) for m in _TALK.finditer(text))


def contains_option_steering(text: str) -> bool:
    """Whether any sentence of an agent-written ``text`` leans toward an answer option."""
    return any(_steers(sentence) for sentence in _SENTENCE.findall(text or ""))


def strip_option_steering(text: str) -> str:
    """Drop every sentence that leans toward an answer option; keep the rest verbatim.

    For agent-written text only. Works line by line so a multi-line memory keeps its layout
    (indentation included).
    """
    if not text or not contains_option_steering(text):
        return text
    out_lines = []
    for line in text.split("\n"):
        if not contains_option_steering(line):
            out_lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        kept = [s for s in _SENTENCE.findall(line) if not _steers(s)]
        body = re.sub(r"[ \t]{2,}", " ", "".join(kept)).strip()
        if body:
            out_lines.append(indent + body)
    return "\n".join(out_lines).strip("\n")


# --------------------------------------------------------------------------- answers

AnswerSource = Literal["answer", "option_text", "reasoning", "fallback"]


@dataclass(frozen=True)
class AnswerChoice:
    letter: str
    source: AnswerSource
    notes: tuple[str, ...] = field(default=())


_BARE = r"\(?([A-Z])\)?(?![A-Za-z0-9'’-])"
_ONLY_LETTER = re.compile(
    r"^\s*(?:(?i:option|choice|answer)\s*[:：]?\s*)?\(?([A-Za-z])\)?\s*[.):]?\s*$"
)
_LEADING_LETTER = re.compile(r"^\s*\(?([A-Z])(?:\)|\s*[.):,：])")
#: Statements that give the answer, in the order they are written; the last one wins.
_STATED = re.compile(
    r"(?i:(?:final\s+)?(?:answer|choice|option|pick)\s*(?:is|:|=|would\s+be|should\s+be|must\s+be)"
    rf"\s*(?:(?:option|choice)\s*)?){_BARE}"
    rf"|(?i:(?:option|choice)\s*){_BARE}\s*(?i:is\s+(?:the\s+)?(?:correct|right|best|answer))"
    rf"|(?<![\w'’-]){_BARE}\s*(?i:is\s+(?:the\s+)?(?:correct|best|right\s+(?:answer|option|choice)))"
    rf"|(?i:(?:i\s+)?(?:choose|select|pick|go\s+with)\s*(?:(?:option|choice)\s*)?){_BARE}"
)
#: Letters named in a rejecting statement ("A is wrong", "not B", "rule out C").
_REJECTED = re.compile(
    rf"(?<![\w'’-])(?i:(?:option|choice)\s*)?{_BARE}\s*(?i:is|seems|appears|looks)\s+"
    r"(?i:(?:\w+\s+)?(?:wrong|incorrect|false|unlikely|not))"
    rf"|(?i:not|rule\s+out|rules\s+out|ruled\s+out|eliminate|eliminates|exclude|excludes)\s+"
    rf"(?i:(?:option|choice)\s*)?{_BARE}"
)
_MENTIONED = re.compile(rf"(?i:option|choice)\s*{_BARE}")


def _stated_letter(text: str, valid: set[str]) -> str | None:
    """The last letter a text states as its answer, ignoring letters it rejects."""
    stated = [next(g for g in m.groups() if g) for m in _STATED.finditer(text)]
    stated = [letter for letter in stated if letter in valid]
    if stated:
        return stated[-1]
    rejected = {next(g for g in m.groups() if g) for m in _REJECTED.finditer(text)}
    named = [m.group(1) for m in _MENTIONED.finditer(text)]
    named = [letter for letter in named if letter in valid and letter not in rejected]
    return named[-1] if named else None


def extract_answer_letter(
    answer: str | None, reasoning: str | None, options: Sequence[str]
) -> AnswerChoice:
    """One valid option letter, always; ``source`` says how sure we are.

    Tried in order: the answer is a letter or starts with one ("B", "(B)", "B. Blue"); the
    answer states a letter ("the answer is B" — the last statement wins, and a letter the
    text rejects, as in "Option A is wrong; the answer is B", never counts); the answer
    equals an option's text; the reasoning's last stated letter; otherwise the first option
    (``source="fallback"``), so every question gets exactly one answer and the fallback is
    countable in reports.
    """
    letters = option_letters(options) or ["A"]
    valid = set(letters)
    answer = answer or ""
    for pattern in (_ONLY_LETTER, _LEADING_LETTER):
        match = pattern.search(answer)
        if match and match.group(1).upper() in valid:
            return AnswerChoice(match.group(1).upper(), "answer")
    stated = _stated_letter(answer, valid)
    if stated:
        return AnswerChoice(stated, "answer")
    body = _normalize(answer).lower().rstrip(".")
    if body:
        for letter, option in zip(letters, options, strict=False):
            if body == option_body(option).lower().rstrip("."):
                return AnswerChoice(letter, "option_text")
    from_reasoning = _stated_letter(reasoning or "", valid)
    if from_reasoning:
        return AnswerChoice(from_reasoning, "reasoning")
    return AnswerChoice(letters[0], "fallback", (f"no option letter in {answer!r}",))
