"""A question's options: their letters, their texts, and the checks made before a question
costs anything. A question without options is free-form: it is answered in words.

Benchmarks write options differently ("A. …", "(A) …", plain texts) and have 4 (Video-MME),
5 (LongVideoBench, EgoSchema) or more of them; every module that needs an option's letter or
text (the agents, the Focus query, the eval loaders) reads it here, the same way.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from videotapestry.errors import QuestionError

LETTERS = string.ascii_uppercase
MAX_OPTIONS = len(LETTERS)

#: The default of ``question.max_chars``: a question with its options, in characters. Real
#: benchmark questions stay under 2,000; the limit is there so that a pasted file or a
#: hostile client is refused at once instead of filling the job store, the traces and every
#: prompt (a 64 MiB question took a served app from 193 MB to 7.8 GB).
DEFAULT_MAX_QUESTION_CHARS = 20_000

#: "(B) …", "B. …", "B) …", "B: …"; the mark must be followed by a space, so "U.S. Army" is
#: text, not option U.
_LABEL = re.compile(r"^\s*(?:\(([A-Za-z])\)|([A-Za-z])[.):：](?=\s|$))\s*")


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def option_label(option: str) -> str | None:
    """The letter an option carries itself ("B. …", "(b) …", "B) …", "B: …"), if any."""
    match = _LABEL.match(option)
    if not match:
        return None
    return (match.group(1) or match.group(2)).upper()


def option_body(option: str) -> str:
    """The option's text without its letter label."""
    return _normalize(_LABEL.sub("", option, count=1))


def option_letters(options: Sequence[str]) -> list[str]:
    """Each option's letter: its own label, else the letter of its position (A, B, …)."""
    return [
        option_label(option) or (LETTERS[index] if index < MAX_OPTIONS else "?")
        for index, option in enumerate(options)
    ]


def check_question_length(
    question: str, options: Sequence[str] = (), *, max_chars: int = DEFAULT_MAX_QUESTION_CHARS
) -> None:
    """Refuse a question whose text and options together pass ``max_chars`` characters.

    Checked first and on its own, so an oversized question is refused before any other
    check quotes it back, and so that readers of many questions (eval rows, chat scripts)
    can refuse the whole input before the first is asked.
    """
    size = (len(question) if isinstance(question, str) else 0) + sum(
        len(option) for option in options if isinstance(option, str)
    )
    if size > max_chars:
        raise QuestionError(
            f"invalid question: the question and its options are {size:,} characters long, "
            f"over the limit of {max_chars:,} (config question.max_chars)"
        )


def validate_question(
    question: str,
    options: Sequence[str] = (),
    *,
    max_chars: int | None = DEFAULT_MAX_QUESTION_CHARS,
) -> list[str]:
    """Check a question before any model call; return its option letters (none for a
    free-form question).

    A question that cannot be answered well-formedly (longer than ``max_chars`` with its
    options, no text, a single option, more than 26, two options with one letter or the
    same text, an option with no text or on several lines) is refused here with a message
    naming the problem, instead of failing after every call has been paid for. ``max_chars``
    None: the caller checks the length against its config itself (benchmark loaders, whose
    runs check every selected question before the first is asked).
    """
    options = list(options)
    if max_chars is not None:
        check_question_length(question, options, max_chars=max_chars)
    problems = []
    if not isinstance(question, str) or not question.strip():
        problems.append("the question is empty")
    options = list(options)
    if len(options) == 1:
        problems.append(
            "a multiple-choice question needs at least 2 options, got 1 (give none for a "
            "free-form question)"
        )
    if len(options) > MAX_OPTIONS:
        problems.append(f"at most {MAX_OPTIONS} options (A-Z) are supported, got {len(options)}")
    bodies: dict[str, int] = {}
    for index, option in enumerate(options):
        if not isinstance(option, str) or not option_body(option):
            problems.append(f"option {index + 1} ({option!r}) has no text")
            continue
        if "\n" in option.strip() or "\r" in option.strip():
            problems.append(
                f"option {index + 1} ({option!r}) spans several lines; every prompt shows one "
                "option a line, so write it on one"
            )
        body = " ".join(option_body(option).casefold().split())
        if body in bodies:
            problems.append(
                f"options {bodies[body] + 1} and {index + 1} have the same text "
                f"({option_body(option)!r}); no answer could tell them apart"
            )
        bodies.setdefault(body, index)
    letters = option_letters(options[:MAX_OPTIONS])
    seen: dict[str, int] = {}
    for index, letter in enumerate(letters):
        if letter in seen:
            problems.append(
                f"options {seen[letter] + 1} and {index + 1} both have the letter {letter} "
                "(label every option, or none, so each letter is used once)"
            )
        seen.setdefault(letter, index)
    if problems:
        raise QuestionError("invalid question: " + "; ".join(problems))
    return letters


def labelled_options(options: Sequence[str]) -> list[str]:
    """Options as every prompt shows them: each with its letter ("A. …"), as given otherwise.

    A model asked for "the letter of one option" must see letters; plain option texts (some
    datasets store them so) get the letter of their position.
    """
    return [
        option if option_label(option) else f"{letter}. {option_body(option)}"
        for letter, option in zip(option_letters(options), options, strict=True)
    ]
