"""Issue 39, what a person sees and reads, the offline model's part: its claims are the words
that support the answer, its reasoning quotes plain text with times (never the memory's ids
or markup), and its rule of time answers with content said or shown after the moment, not
with a title."""

from __future__ import annotations

import re

import pytest

from videotapestry.offline.answer_span import gist
from videotapestry.offline.quoting import plain, quote, stated, supporting_part, text_parts
from videotapestry.offline.temporal import first_in_relation, is_title, temporal_ask

#: Any id of the shipped memory builders, and the memory's kind label of OCR text.
MARKUP = re.compile(r"\b(slot\d+_[a-z]\d+|super_\d+|macro_\d+|clip_\d+)\b|\(scene_text\)")

MOMENT = (
    '03:33-04:18: - slot3_o6 [03:32-04:18] "5 / 20" (scene_text): read by OCR / '
    '- slot3_o7 [03:32-04:18] "Door code 4417" (scene_text): read by OCR / '
    '- slot3_o8 [03:32-04:18] "Gate B: deliveries" (scene_text): read by OCR'
)
SUMMARY = (
    "macro_0004 [05:30-07:30] Riverside Festival- volunteer briefing: From 05:30 to 07:30 the "
    'screen shows "Red tent: lost property" (06:06-07:30). Someone says: "Here is one change '
    "to the printed plan. Lunch for volunteers will be served in the yellow tent. The food "
    'court is only for visitors."'
)
MEMORY = [
    '- slot3_o7 [03:32-04:18] "Door code 4417" (scene_text): read by OCR',
    '- slot3_o8 [03:32-04:18] "Gate B: deliveries" (scene_text): read by OCR',
    SUMMARY,
    "macro_0005 [07:30-08:30] Riverside",
]
AFTER_GATE_B = (
    "After the slide with the door code for Gate B, what did the speaker talk about first?"
)


def test_plain_text_has_no_ids_or_markup() -> None:
    assert plain(MOMENT) == "5 / 20 / Door code 4417 / Gate B: deliveries"
    assert text_parts(MOMENT) == ["5 / 20", "Door code 4417", "Gate B: deliveries"]
    node = '- slot7_e5 [@09:30] Programme: afternoon (text): text shown on screen from 09:30 | attributes: {"shown": "09:30-10:00"}'  # noqa: E501
    assert plain(node) == "Programme: afternoon"
    assert plain("slot0_v15 [00:49-00:52] speaks (speech): Please pick up your card.") == (
        "Please pick up your card"
    )
    assert not MARKUP.search(plain(SUMMARY)) and not MARKUP.search(plain(MOMENT))
    # A time the line shows is its text; the memory's own times go.
    assert stated("08:27-09:27: 10:00 Brass band") == "10:00 Brass band"


def test_the_supporting_part_is_the_line_or_sentence_that_holds_the_text() -> None:
    assert supporting_part(MOMENT, "4417") == "Door code 4417"
    assert supporting_part(MOMENT, "Gate B: deliveries") == "Gate B: deliveries"
    assert supporting_part(SUMMARY, "Where volunteers will have lunch") == (
        "Lunch for volunteers will be served in the yellow tent."
    )
    # Nothing of the text in the line: the line, plain.
    assert supporting_part(MOMENT, "fireworks") == plain(MOMENT)


def test_a_quote_says_the_words_the_source_and_the_time() -> None:
    assert (
        quote(MOMENT, 212, 258, "screen")
        == '"5 / 20 / Door code 4417 / Gate B: deliveries" on screen at 03:32-04:18'
    )
    assert (
        quote("Door code 4417", 212, 258, "screen") == '"Door code 4417" on screen at 03:32-04:18'
    )
    assert quote("Lunch is in the yellow tent.", 376, 379, "speech") == (
        '"Lunch is in the yellow tent" said at 06:16-06:19'
    )
    assert (
        quote("macro_0005 [07:30-08:30] Riverside", 450, 510) == '"Riverside" (memory, 07:30-08:30)'
    )
    assert quote("Door code 4417") == '"Door code 4417"'
    long = quote("word " * 40, limit=30)
    assert long.endswith('…"') and len(long) <= 32


def test_the_gist_of_a_passage_is_the_sentences_that_say_most() -> None:
    passage = [
        "Here is one change to the printed plan.",
        "Lunch for volunteers will be served in the yellow tent.",
        "The food court is only for visitors.",
    ]
    assert gist(passage) == "Lunch for volunteers will be served in the yellow tent"
    assert gist(passage, limit=200) == " / ".join(p.rstrip(".") for p in passage)
    assert gist(["Go left.", "Go right."]) == "Go left / Go right"
    assert gist([]) == ""


def test_a_title_is_an_id_a_time_and_a_bare_label() -> None:
    assert is_title("macro_0005 [07:30-08:30] Riverside")
    assert is_title("macro_0006 [08:30-09:30] 10 00")
    assert not is_title(SUMMARY)
    assert not is_title('- slot3_o7 [03:32-04:18] "Door code 4417" (scene_text): read by OCR')
    assert not is_title("Lunch for volunteers will be served in the yellow tent.")


def test_after_a_moment_the_speaker_said_first_is_speech_not_a_title() -> None:
    ask = temporal_ask(AFTER_GATE_B)
    found = first_in_relation(ask, MEMORY)
    assert found is not None and found.evidence.kind == "speech"
    # The passage of one summary, quoted without times of its own, is one answer.
    assert "Lunch for volunteers" in found.evidence.text
    assert "printed plan" in found.evidence.text
    assert found.anchor_text == "Door code 4417"
    assert found.anchor_quote() == '"Door code 4417" on screen at 03:32-04:18'
    # Asked for what came first, of any kind: the content after the slide, not the title.
    anything = temporal_ask("After the slide with the door code for Gate B, what came first?")
    found = first_in_relation(anything, MEMORY)
    assert found is not None and "Red tent" in found.evidence.text
    assert not is_title(found.evidence.text) and found.evidence.start == 330.0


# -- end to end, on the shipped sample -----------------------------------------------------

#: Free-form questions asked of the sample besides its four shipped questions.
FREE_FORM = [
    "What is the door code for Gate B?",
    "After the slide with the door code for Gate B, what did the speaker talk about first?",
]


@pytest.mark.slow
def test_claims_and_reasoning_on_the_sample_read_like_a_person(demo_cache) -> None:
    """The four shipped questions (with options: still right) and two free-form ones: no
    claim or reasoning holds a node id or a kind label; the door code's claim is the slide's
    line that holds it; what the speaker said first after the Gate B slide is the lunch."""
    import asyncio

    from videotapestry.api import VideoTapestry
    from videotapestry.demo import sample_questions, sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    memory = demo_memory_dir(video, demo_cache)
    shipped = sample_questions()["questions"]
    asked = [(q["question"], q["options"]) for q in shipped] + [(q, None) for q in FREE_FORM]
    vt = VideoTapestry(profile="offline")

    async def run() -> list:
        try:
            return [await vt.aanswer(video, memory, q, options) for q, options in asked]
        finally:
            await vt.aclose()

    results = asyncio.run(run())
    for question, result in zip(shipped, results, strict=False):
        assert result.answer == question["answer"], (question["id"], result.reasoning)
    for (question, _), result in zip(asked, results, strict=True):
        shown = [result.reasoning, *(c.claim for c in result.citations)]
        assert result.citations, question
        assert not [text for text in shown if MARKUP.search(text)], (question, shown)
    code, after = results[-2:]
    assert code.answer_text == "4417"
    assert [c.claim for c in code.citations] == ["Door code 4417"]
    assert all("5 / 20" not in c.claim for c in code.citations)
    assert '"Door code 4417" on screen at' in code.reasoning
    assert "lunch" in after.answer_text.lower() and "Riverside" not in after.answer_text
    assert "lunch" in after.citations[0].claim.lower()


def test_what_was_said_first_is_its_first_sentence_what_was_talked_about_its_gist() -> None:
    from videotapestry.offline.query_roles.answer import _spoken

    found = first_in_relation(temporal_ask(AFTER_GATE_B), MEMORY)
    assert found is not None
    about = _spoken("what did the speaker talk about first?", found.evidence)
    said = _spoken("what did the speaker say first?", found.evidence)
    assert (
        about is not None and about[0] == "Lunch for volunteers will be served in the yellow tent"
    )
    assert said is not None and said[0] == "Here is one change to the printed plan"


def test_a_sentence_a_summary_quotes_is_not_what_the_cited_moment_said() -> None:
    """ "Right after that" skips what the cited moment said, but a summary's sentence holds
    only its entry's time: it is not thereby said at the cited moment."""
    lines = [
        'macro_0000 [00:00-01:00] Welcome: Someone says: "Please pick up your name card at the '
        'green tent. Keep the card with you all day."',
        "- slot0_v15 [00:49-00:52] speaks (speech): Please pick up your name card.",
        "- slot0_v16 [00:54-00:59] speaks (speech): Keep the card with you all day.",
    ]
    ask = temporal_ask("What did the speaker say right after the moment at 00:48-00:52?")
    found = first_in_relation(ask, lines)
    assert found is not None and found.evidence.start == 54.0
    assert plain(found.evidence.text) == "Keep the card with you all day"
    assert found.anchor_quote() == "the moment at 00:48-00:52"
