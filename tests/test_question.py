"""Options: letters, texts and the checks made before a question costs anything."""

from __future__ import annotations

import pytest

from videotapestry.errors import QuestionError
from videotapestry.question import (
    labelled_options,
    option_body,
    option_label,
    option_letters,
    validate_question,
)


@pytest.mark.parametrize(
    ("option", "label", "body"),
    [
        ("B. Blue", "B", "Blue"),
        ("(c) green", "C", "green"),
        ("D) White", "D", "White"),
        ("E: five", "E", "five"),
        ("U.S. Army band", None, "U.S. Army band"),
        ("A man rides", None, "A man rides"),
        ("I. 220°C", "I", "220°C"),
    ],
)
def test_labels_and_bodies(option: str, label: str | None, body: str) -> None:
    assert option_label(option) == label
    assert option_body(option) == body


def test_letters_follow_labels_or_positions() -> None:
    assert option_letters(["A. x", "B. y", "C. z"]) == ["A", "B", "C"]
    assert option_letters(["x", "y"]) == ["A", "B"]
    assert labelled_options(["x", "y"]) == ["A. x", "B. y"]
    assert labelled_options(["(A) x", "(B) y"]) == ["(A) x", "(B) y"]


def test_a_question_without_options_is_free_form() -> None:
    assert validate_question("What is the door code?", []) == []
    assert validate_question("What is the door code?") == []


def test_up_to_26_options() -> None:
    assert validate_question("q?", [f"o{i}" for i in range(26)])[-1] == "Z"
    with pytest.raises(QuestionError, match="at most 26 options"):
        validate_question("q?", [f"o{i}" for i in range(27)])


@pytest.mark.parametrize(
    ("question", "options", "problem"),
    [
        ("  ", ["A. a", "B. b"], "the question is empty"),
        ("q?", ["A. a"], "at least 2 options, got 1"),
        ("q?", ["A. a", "A. b"], "options 1 and 2 both have the letter A"),
        ("q?", ["B. a", "x"], "options 1 and 2 both have the letter B"),
        ("q?", ["A. a", "B. "], "option 2 ('B. ') has no text"),
        ("q?", ["A. Paris", "B.  paris "], "options 1 and 2 have the same text ('paris')"),
        ("q?", ["red", "blue", "Red"], "options 1 and 3 have the same text"),
        ("q?", ["A. one\nB. two", "C. three"], "option 1 ('A. one\\nB. two') spans several"),
        ("q?", ["A. one\r", "B. two\rthree"], "option 2 ('B. two\\rthree') spans several"),
    ],
)
def test_malformed_questions_are_named(question, options, problem) -> None:
    with pytest.raises(QuestionError) as caught:
        validate_question(question, options)
    assert problem in str(caught.value)
