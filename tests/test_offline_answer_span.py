"""Issue 39, item 1: the offline model's free-form answer is the span that answers, spaced or
glued as OCR reads it, never a whole memory line."""

from __future__ import annotations

import pytest

from videotapestry.offline.answer_span import answer_kind, find_span
from videotapestry.offline.quoting import stated as _stated

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


#: Free-form questions on the shipped sample and what a person's answer holds (and not).
SAMPLE_ASKED = [
    ("What time does the puppet show start?", "11:30", "Brass"),
    ("What is the door code for Gate B, the delivery gate?", "4417", "/"),
]


@pytest.mark.slow
def test_free_form_answers_on_the_sample_are_short_spans(demo_cache) -> None:
    """End to end on the sample and its memory: the two spans above, and every shipped
    question asked without options answered in at most 80 characters."""
    import asyncio

    from videotapestry.api import VideoTapestry
    from videotapestry.demo import sample_questions, sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    memory = demo_memory_dir(video, demo_cache)
    shipped = [q["question"] for q in sample_questions()["questions"]]
    asked = [q for q, _, _ in SAMPLE_ASKED] + shipped
    vt = VideoTapestry(profile="offline")

    async def run() -> list[str]:
        try:
            return [(await vt.aanswer(video, memory, q, None)).answer_text for q in asked]
        finally:
            await vt.aclose()

    answers = asyncio.run(run())
    for (question, holds, lacks), answer in zip(SAMPLE_ASKED, answers, strict=False):
        assert holds in answer and lacks not in answer, (question, answer)
    assert all(0 < len(answer) <= 80 for answer in answers), list(zip(asked, answers, strict=True))
