"""Issue 39, item 1: the offline model's free-form answer is the span that answers, spaced or
glued as OCR reads it, never a whole memory line."""

from __future__ import annotations

import pytest

from videotapestry.offline.answer_span import answer_kind, find_span
from videotapestry.offline.query_roles.answer import _stated

CASES = [
    ("What time does the puppet show start?",
     "08:27-09:27: 10:00 Brass band / 11:30 Puppet show / 12:15 Dance school", "11:30"),
    ("What time does the puppet show start?",
     'macro_0006 [08:30-09:30] 10:00Brassband: From 08:30 to 09:30 the screen shows '
     '"10:00Brassband" (08:30-09:30), "10/20" (08:30-09:30), "11:30Puppetshow" (08:30-09:30)',
     "11:30"),
    ("When does the brass band play?", "10:00Brassband11:30Puppetshow12:15Danceschool", "10:00"),
    ("What is the door code for Gate B, the delivery gate?",
     "03:33-04:18: 5 / 20 / Door code 4417 / Gate B: deliveries / Open 06:30 to 12:00", "4417"),
    ("What is the door code for Gate B, the delivery gate?", "5/20 / Doorcode4417", "4417"),
    ("Which code was shown on screen for Dock 14?", "01:12-01:20 DOCK14CODE5831", "5831"),
    ("What is the ticket price?", "[12:00-12:30] TICKETPRICE18EUR0S", "18 EUROS"),
    ("Which platform does train 42 leave from?", "TRAIN42PLATF0RM9", "9"),
    ("Who leads the steward team on the north field?",
     "East bank: Tomas / North field: Priya / South field: Marek", "Priya"),
    ("Where did the speaker tell volunteers to pick up their name cards?",
     "Please pick up your name card at the green tent next to the bridge.",
     "at the green tent next to the bridge"),
    ("When is Gate B open?", "GateB:deliveries / Open06:30to12:00", "06:30 to 12:00"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "line", "answer"), CASES)
def test_the_free_form_answer_is_the_span_next_to_the_question_words(
    question: str, line: str, answer: str
) -> None:
    span = find_span(question, _stated(line))
    assert span is not None and span.text == answer, span


def test_the_question_says_what_kind_of_span_answers_it() -> None:
    assert answer_kind("What time does the puppet show start?") == "time"
    assert answer_kind("When did the speaker mention the fireworks?") == "moment"
    assert answer_kind("What is the Wi-Fi password?") == "number"
    assert answer_kind("Who leads the north field team?") == "name"
    assert answer_kind("Where is lunch served?") == "place"
    assert answer_kind("What was on screen?") == "phrase"
    # A time the slide shows is the line's text, kept; the memory's own time is not.
    assert _stated("08:27-09:27: 10:00 Brass band") == "10:00 Brass band"
