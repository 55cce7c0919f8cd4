"""The offline model's own reading of a question: whole-video questions and search anchors.

The offline model does not use the method's rules (``videotapestry.agents.rules``) for
these; its reading is checked here on its own, with the questions the method's rule is
checked on, since the two are meant to agree on the questions the model is asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from videotapestry.offline import client
from videotapestry.offline.client import rules_revision
from videotapestry.offline.prompt_reading import QuestionView
from videotapestry.offline.query_roles.question_reading import (
    asks_about_whole_video,
    pointed_phrases,
    search_anchors,
)

COLOURS = ("A. Red", "B. Blue", "C. Green", "D. White")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the main idea of the video?", True),
        ("Which title fits this video best?", True),
        ("Which option best summarizes the cooking show?", True),
        ("What is this video mainly about?", True),
        ("What is the overall theme?", True),
        ("What is the purpose of the video?", True),
        ("What is the theme of this video?", True),
        ("What is the video’s main message?", True),
        ("What can you deduce about the primary objective of the video?", True),
        ("What temperature was the oven set to?", False),
        ("After Jerry slips out of Tom's hands, where does he land?", False),
        ("How many contestants play the piano?", False),
        ("What was the overall score of the match?", False),
        ("What is the title of the book the host reads?", False),
        ("What is the main point the chef makes about salt?", False),
        ("What is the main purpose of the demonstration at 12:30?", False),
        ("Which of the following is true?", False),
    ],
)
def test_a_question_about_the_whole_video(question: str, expected: bool) -> None:
    assert asks_about_whole_video(QuestionView(question, COLOURS)) is expected


def test_a_plain_question_is_global_when_most_options_describe_the_video() -> None:
    options = (
        "A. The video mainly discusses thyroid tests.",
        "B. The video shows how to bake bread.",
        "C. It focuses on exercise.",
        "D. Red",
    )
    assert asks_about_whole_video(QuestionView("Which of the following is true?", options))
    assert not asks_about_whole_video(QuestionView("Which of the following is true?", COLOURS))


def test_the_phrases_a_question_points_at() -> None:
    assert pointed_phrases('When did the speaker say "Pier 88" at 12:30?') == [
        "Pier 88",
        "Pier",
        "88",
        "12:30",
    ]
    # The word that opens a sentence is capitalized whatever it is; "B" alone is no name.
    assert pointed_phrases("What is the door code for Gate B, the delivery gate?") == ["Gate"]
    # A unit is a unit only when it is a whole word ("3 s" is not in "pump 3 show").
    assert pointed_phrases("What pressure does pump 3 show?") == ["3"]
    assert pointed_phrases("Is the oven at 180 °C or 220°C?") == ["180 °C", "220°C"]


def test_search_anchors_name_the_question_never_an_option() -> None:
    question = QuestionView(
        "What is the door code for Gate B, the delivery gate?",
        ("A. 7457", "B. 4471", "C. 4417", "D. 1875"),
    )
    assert search_anchors(question, 4) == ["Gate", "door", "code", "delivery"]
    assert search_anchors(question, 2) == ["Gate", "door"]
    # The numbers are two options' texts: searching for them would confirm either.
    assert search_anchors(QuestionView("Was the code 4417 or 7457?", question.options), 4) == [
        "code"
    ]


def test_the_rules_revision_covers_the_subpackages(monkeypatch, tmp_path) -> None:
    """A change to a rule in ``query_roles/`` is a new model version."""

    original = rules_revision()
    package = Path(client.__file__).resolve().parent
    copy = tmp_path / "offline"
    for path in package.rglob("*.py"):
        target = copy / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    monkeypatch.setattr(client, "__file__", str(copy / "client.py"))
    assert client.rules_revision() == original
    (copy / "query_roles" / "answer.py").write_text("# another rule\n")
    assert client.rules_revision() != original
