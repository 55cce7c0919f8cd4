"""The offline model's rule of time: what a question asks about *when*, and the answer."""

from __future__ import annotations

from videotapestry.offline.temporal import (
    choose_by_time,
    moments,
    temporal_ask,
    timed_units,
)

MEMORY = [
    "03:33-04:12: B: deliveries",
    "03:33-04:12: Door code 4417",
    "02:31-03:28: A: staff entrance",
    "02:31-03:28: Door code 1875",
    "macro_0003 [06:00-07:30] Showing the tents: From 06:00 to 07:30 the screen shows "
    '"Red tent" (06:06-07:30). Someone says: "Here is one change. Lunch for volunteers '
    'will be served in the yellow tent."',
    "slot0_v15 [00:49-00:52] speaks (speech): Please pick up your name card at the green tent.",
    "[09:41-09:44] This year the fireworks will be launched from the old mill.",
    "Observed: 09:30-09:48: Programme: afternoon; 10:30-11:28: Programme: evening",
    "10:32-11:32: 22:30 Fireworks",
]
TOPICS = [
    "Where to pick up name cards",
    "Where the fireworks will be launched",
    "Where volunteers will have lunch",
    "Where to return flashlights",
]


def test_questions_about_when_are_recognised_and_others_are_not() -> None:
    at = temporal_ask(
        "Which slide was on screen when the speaker said where the fireworks will be launched?"
    )
    assert at is not None and at.relation == "at"
    assert at.anchor == "where the fireworks will be launched"
    assert (at.anchor_kind, at.target_kind) == ("speech", "screen")
    after = temporal_ask(
        "After the slide with the door code for Gate B, what did the speaker talk about first?"
    )
    assert after is not None and after.relation == "after"
    assert (after.anchor_kind, after.target_kind) == ("screen", "speech")
    trailing = temporal_ask("What was shown right before the fire drill?")
    assert trailing is not None and trailing.relation == "before"
    assert temporal_ask("What is the door code for Gate B, the delivery gate?") is None


def test_a_slide_read_in_pieces_is_one_moment() -> None:
    joined = moments(MEMORY)
    assert "03:33-04:12: B: deliveries / Door code 4417" in joined


def test_a_sentence_in_a_summary_takes_the_summary_time_and_is_speech() -> None:
    [lunch] = [u for u in timed_units(MEMORY) if "Lunch" in u.text]
    assert (lunch.start, lunch.end, lunch.kind) == (360.0, 450.0, "speech")
    # A list of timed items is split, so its second item keeps its own time.
    [evening] = [u for u in timed_units(MEMORY) if u.text.endswith("Programme: evening")]
    assert evening.start == 630.0


def test_at_picks_the_slide_on_screen_at_the_spoken_moment() -> None:
    ask = temporal_ask(
        "Which slide was on screen when the speaker said where the fireworks will be launched?"
    )
    bodies = ["Programme: morning", "Programme: evening", "Programme: afternoon", "Food court"]
    choice = choose_by_time(ask, list("ABCD"), bodies, MEMORY)
    assert choice is not None and choice.letter == "C"
    assert choice.anchor.start == 581.0
    # The evening slide lists the fireworks, but it is on screen later than the sentence.
    assert "evening" not in choice.evidence.text


def test_after_picks_the_first_topic_spoken_after_the_anchor_slide() -> None:
    ask = temporal_ask(
        "After the slide with the door code for Gate B, what did the speaker talk about first?"
    )
    choice = choose_by_time(ask, list("ABCD"), TOPICS, MEMORY)
    assert choice is not None and choice.letter == "C"  # lunch at 06:00, before the fireworks
    assert choice.anchor.start == 213.0  # the Gate B slide, not Gate A's
    # Moved before the name cards, the same question has another answer.
    moved = [line.replace("03:33-04:12", "00:10-00:40") for line in MEMORY]
    assert choose_by_time(ask, list("ABCD"), TOPICS, moved).letter == "A"


def test_before_and_an_unfound_anchor() -> None:
    ask = temporal_ask(
        "Before the speaker said where the fireworks will be launched, what did the speaker "
        "talk about last?"
    )
    choice = choose_by_time(ask, list("ABCD"), TOPICS, MEMORY)
    assert choice is not None and choice.letter == "C"
    lost = temporal_ask("After the slide about the parade, what did the speaker talk about first?")
    assert choose_by_time(lost, list("ABCD"), TOPICS, MEMORY) is None  # falls back to matching
