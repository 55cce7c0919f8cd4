"""Issue 39, item 4: "right after that" is the next distinct content after the cited moment
(the next slide, the next utterance), not the tail of the same slide. On the sample, the
follow-up to the Gate A door code answers with the next slide, its door code (4417)
included, in words and without an internal id."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from videotapestry.agents.follow_up import said_spans
from videotapestry.agents.state import EarlierTurn
from videotapestry.demo import sample_questions
from videotapestry.offline.temporal import first_in_relation, temporal_ask

GATE_A_QUESTION = "What is the door code for Gate A, the staff entrance?"
AFTER_ON_SCREEN = "What was on screen right after that?"
NAME_CARDS = {q["id"]: q for q in sample_questions()["questions"]}["name_cards"]
AFTER_SAID = "What did the speaker say right after that?"
NEXT_SENTENCE = "Keep the card with you all day"
INTERNAL_ID = re.compile(r"\b(slot\d+_[a-z]+\d+|macro_\d+|super_\d+)\b")

#: The sample's memory around the Gate A slide, as the answer agent is shown it: OCR read the
#: next slide's first frames without its door code, which only the MacroEvent's summary
#: quotes with its own time.
GATE_LINES = [
    "macro_0002 [02:00-03:00] Riverside Festival- volunteer briefing: From 02:00 to 03:00 the "
    'screen shows "4 / 20" (02:32-03:00), "Door code 1875" (02:32-03:00), "Gate A: staff '
    'entrance" (02:32-03:00).',
    "macro_0003 [03:00-05:30] Riverside Festival- volunteer briefing: From 03:00 to 05:30 the "
    'screen shows "4 / 20" (03:00-03:32), "5 / 20" (03:32-04:18), "Door code 4417" '
    '(03:32-04:18), "Gate B: deliveries" (03:32-04:18), "Open 06:30 to 12:00" (03:32-04:18).',
    "Observed: 03:00-03:31: A: staff entrance",
    "03:00-03:31: Door code 1875",
    "03:32-03:36: 5 / 20",
    "03:32-03:36: B: deliveries",
    "03:32-03:36: Open 06:30 to 12:00",
]


def test_the_next_slide_is_answered_with_all_its_lines() -> None:
    ask = temporal_ask("What was on screen right after the moment at 02:58-03:00?")
    assert ask is not None
    found = first_in_relation(ask, GATE_LINES)
    assert found is not None
    text = found.evidence.text
    assert "Door code 4417" in text and "Gate B: deliveries" in text
    assert "1875" not in text and "A: staff entrance" not in text
    # A line OCR read in part gives way to the whole, a page number to lines with words.
    assert " B: deliveries" not in text.replace("Gate B: deliveries", "")
    assert "5 / 20" not in text


def test_a_cited_sentence_is_where_the_transcript_says_it() -> None:
    said = [
        (42.64, 47.26, "Good morning everyone, and thank you for helping out today."),
        (49.14, 52.76, "Please pick up your name card at the green tent next to the bridge."),
        (54.64, 59.88, "Keep the card with you all day, so that visitors can find you."),
    ]
    claim = "Please pick up your name card at the green tent next to the bridge."
    assert said_spans(claim, [(0.0, 60.0)], said) == [(49.14, 52.76)]
    # Not said inside the cited moment, or not said at all: the cited spans stand.
    assert said_spans(claim, [(120.0, 180.0)], said) == [(120.0, 180.0)]
    assert said_spans("Door code 4417", [(212.0, 257.0)], said) == [(212.0, 257.0)]


@pytest.fixture(scope="module")
def sample(demo_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    root = tmp_path_factory.mktemp("follow-up-next")
    return {
        "video": video,
        "memory": demo_memory_dir(video, demo_cache),
        "overrides": [f"cache.path={root / 'responses.sqlite'}"],
    }


def two_turns(sample: dict[str, object], first: str, second: str) -> tuple[object, object]:
    from videotapestry.api import VideoTapestry

    vt = VideoTapestry(None, profile="offline", overrides=sample["overrides"])  # type: ignore[arg-type]

    async def run() -> tuple[object, object]:
        with vt.conversation(sample["video"], sample["memory"]) as chat:  # type: ignore[arg-type]
            return await chat.aask(first), await chat.aask(second)

    return vt.run_sync(run())


@pytest.mark.slow
def test_right_after_the_gate_a_code_is_the_next_slide_with_its_code(
    sample: dict[str, object],
) -> None:
    first, second = two_turns(sample, GATE_A_QUESTION, AFTER_ON_SCREEN)
    assert "1875" in first.answer_text  # type: ignore[attr-defined]
    answer = second.answer_text  # type: ignore[attr-defined]
    assert "4417" in answer and "Gate B" in answer
    assert "1875" not in answer
    assert not INTERNAL_ID.search(answer)
    assert len(answer) <= 80


@pytest.mark.slow
def test_right_after_a_cited_sentence_is_the_next_sentence(sample: dict[str, object]) -> None:
    from videotapestry.api import VideoTapestry

    # The previous answer as it reads when it cites the sentence at its own time.
    said = [(e["start_s"], e["end_s"]) for e in NAME_CARDS["evidence_spans"]]
    earlier = EarlierTurn(
        question=NAME_CARDS["question"], answer="at the green tent next to the bridge", spans=said
    )
    vt = VideoTapestry(None, profile="offline", overrides=sample["overrides"])  # type: ignore[arg-type]
    result = vt.answer(sample["video"], sample["memory"], AFTER_SAID, history=[earlier])
    assert result.question.startswith("What did the speaker say right after the moment at 00:4")
    assert NEXT_SENTENCE in result.answer_text
    assert "green tent" not in result.answer_text
    assert not INTERNAL_ID.search(result.answer_text)


@pytest.mark.slow
def test_right_after_the_name_cards_answer_is_the_next_sentence(
    sample: dict[str, object],
) -> None:
    # The answer quotes the sentence from a MacroEvent's summary (00:00-01:00), where it has
    # no time of its own; "that" is the sentence, at its time in the memory's transcript.
    first, second = two_turns(sample, NAME_CARDS["question"], AFTER_SAID)
    assert "green tent" in first.answer_text  # type: ignore[attr-defined]
    assert second.question.startswith(  # type: ignore[attr-defined]
        "What did the speaker say right after the moment at 00:4"
    )
    answer = second.answer_text  # type: ignore[attr-defined]
    assert NEXT_SENTENCE in answer and "green tent" not in answer
    assert not INTERNAL_ID.search(answer)
