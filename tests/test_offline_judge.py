"""The offline model's approximate judge on hand-made (question, reference, answer) triples.

The rule's parts are checked on their own (key terms, matching, the verdict for a given
cosine), then the whole rule on the rendered ``judge`` prompt with the packaged MiniLM, and
the reply contract's tolerance of loose judge replies.
"""

from __future__ import annotations

import pytest

from videotapestry.contracts.judge import EVAL_SCHEMAS, JudgeVerdict
from videotapestry.offline.judge import (
    AGREE_COSINE,
    digits_for_number_words,
    found_in,
    judge,
    key_terms,
    verdict,
)
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import PromptView
from videotapestry.prompts import PromptRegistry

CODE_Q = "What is the door code for Gate B, the delivery gate?"
TENT_Q = "Where did the speaker tell volunteers to pick up their name cards?"
TENT = "At the green tent next to the bridge"


def test_key_terms_are_numbers_names_and_words_the_question_lacks() -> None:
    assert key_terms("4417", CODE_Q).all == ("4417",)
    # "At", "the", "to" are function words; none of the rest is in the question.
    assert key_terms(TENT, TENT_Q).all == ("green", "tent", "next", "bridge")
    # Names are capitalized words; "Half Marathon" and the year are all required.
    terms = key_terms("City Half Marathon 2019", "What is written on the banner?")
    assert (terms.numbers, terms.names, terms.words) == (
        ("2019",),
        ("City", "Half", "Marathon"),
        (),
    )
    # The question's own words are not evidence: "name cards" is asked, not answered.
    assert key_terms("the name cards are at the bridge", TENT_Q).words == ("bridge",)
    # Number words count as their digits.
    assert key_terms("three", "How many eggs?").numbers == ("3",)
    assert digits_for_number_words("Three eggs and twelve cups") == "3 eggs and 12 cups"


def test_terms_are_found_as_words_codes_or_stems() -> None:
    assert found_in("green tent", "they are at the Green Tent today")
    assert found_in("4417", "the sign reads CODE4417")  # a code run into other text
    assert not found_in("4417", "the code is 14417")  # not inside a longer number
    assert found_in("delivery", "all deliveries go to gate B")  # crude stem
    assert not found_in("bridge", "by the river")


@pytest.mark.parametrize(
    ("reference", "question", "answer", "cosine", "correct", "score"),
    [
        # The code, in a sentence: 1 of 1 key terms.
        ("4417", CODE_Q, "The door code for Gate B is 4417.", 0.4, True, 1.0),
        # A code one digit off is wrong, whatever the embeddings say.
        ("4417", CODE_Q, "The door code is 4471.", 0.95, False, 0.0),
        # 3 of the 4 key terms (green, tent, bridge; "next" missing): at least half.
        (TENT, TENT_Q, "at the green tent by the bridge", 0.5, True, 0.75),
        # 1 of 4 (tent) and the embeddings differ: wrong.
        (TENT, TENT_Q, "At the yellow tent", 0.6, False, 0.25),
        # 1 of 4, but the embeddings agree at the threshold: a paraphrase, right.
        (TENT, TENT_Q, "beside the river crossing, in the tent", AGREE_COSINE, True, 0.8),
        # Every name is required: "Maria" missing makes "John Lopez" wrong.
        ("Maria Lopez", "Who presented the results?", "John Lopez", 0.9, False, 0.5),
        ("three", "How many eggs does the cook crack?", "She cracks 3 eggs.", 0.3, True, 1.0),
        # Nothing said: wrong, score 0.
        ("4417", CODE_Q, "   ", 0.0, False, 0.0),
    ],
)
def test_verdicts_by_hand(
    reference: str, question: str, answer: str, cosine: float, correct: bool, score: float
) -> None:
    got = verdict(key_terms(reference, question), answer, cosine)
    assert (got.correct, got.score) == (correct, score), got.why


@pytest.fixture(scope="module")
def text_only(embedder) -> Perception:
    return Perception(ocr_engine=object(), embedder=embedder)  # the judge reads no image


def _judge(perception: Perception, question: str, reference: str, answer: str) -> JudgeVerdict:
    prompt = PromptRegistry().render("judge", question=question, reference=reference, answer=answer)
    reply = judge(PromptView("judge", prompt.system, prompt.user), perception)
    return EVAL_SCHEMAS["judge"].model_validate(reply)


def test_the_rule_reads_the_rendered_prompt_and_says_it_is_approximate(text_only) -> None:
    right = _judge(text_only, CODE_Q, "4417", "The code on the Gate B sign is 4417.")
    assert (right.correct, right.score) == (True, 1.0)
    assert right.reasoning.startswith("Approximate offline judge")
    assert 'Key terms found: "4417"; missing: none' in right.reasoning
    wrong = _judge(text_only, CODE_Q, "4417", "The code is 4471.")
    assert not wrong.correct and 'lacks the reference\'s "4417"' in wrong.reasoning
    tent = _judge(text_only, TENT_Q, TENT, "At the green tent by the bridge.")
    assert tent.correct and "holds 3 of the 4 key terms" in tent.reasoning
    assert 'missing: "next"' in tent.reasoning


def test_a_paraphrase_is_taken_on_the_embeddings(text_only) -> None:
    # No key term in common ("bicycle" is not "bike"), so only the embeddings can agree:
    # all-MiniLM-L6-v2 puts the two at cosine 0.91, above AGREE_COSINE.
    reply = _judge(text_only, "What does she ride to work?", "a bicycle", "a bike")
    assert reply.correct and reply.score >= AGREE_COSINE  # no key term: the cosine
    assert "the embeddings agree" in reply.reasoning
    # Neither words nor meaning in common: wrong.
    other = _judge(text_only, "What does she ride to work?", "a bicycle", "the bus")
    assert not other.correct


@pytest.mark.parametrize(
    ("reply", "correct", "score"),
    [
        ({"reasoning": "same code", "correct": True, "score": 1}, True, 1.0),
        ({"correct": "yes"}, True, 1.0),  # no score: from the verdict
        ({"correct": False}, False, 0.0),
        ({"correct": True, "score": 80}, True, 0.8),  # a percentage
        ({"correct": "false", "score": None}, False, 0.0),
    ],
)
def test_judge_replies_are_read_tolerantly(reply: dict, correct: bool, score: float) -> None:
    got = JudgeVerdict.model_validate(reply)
    assert (got.correct, got.score) == (correct, score)


def test_a_reply_without_a_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="correct"):
        JudgeVerdict.model_validate({"reasoning": "looks fine", "score": 0.9})
    with pytest.raises(ValueError, match="score"):
        JudgeVerdict.model_validate({"correct": True, "score": 250})


def test_a_code_followed_by_its_time_is_still_the_code() -> None:
    # Run together with what follows it, "1686" (19:16) would be the number 168619...
    assert found_in("1686", '"1686" (19:16-19:24)')
    assert found_in("1686", "DOCK14CODE1686 (19:16)")
    assert found_in("5830", "19:12-19:20: CODE5830 / Open")
    # ... while a longer code is still another code.
    assert not found_in("4417", "the code 14417 (03:55)")
    assert not found_in("4417", "44170")
