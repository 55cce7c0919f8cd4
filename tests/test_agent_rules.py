"""The rules code enforces: global questions, decision validation, protected set, transcript
evidence, option steering and answer letters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from videotapestry.agents.rules import (
    assign_lines_to_spans,
    contains_option_steering,
    extract_answer_letter,
    is_global_question,
    link_by_overlap,
    match_evidence_lines,
    protected_set,
    rank_by_overlap,
    strip_option_steering,
    validate_decision,
)
from videotapestry.asr import TranscriptLine
from videotapestry.schemas import Decision

OPTIONS = ["A. Red", "B. Blue", "C. Green", "D. White"]
SUPERS = ["super_01", "super_02", "super_03", "super_04", "super_05"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the main idea of the video?", True),
        ("Which title fits this video best?", True),
        ("Which option best summarizes the cooking show?", True),
        ("What is this video mainly about?", True),
        ("What is the overall theme?", True),
        ("What temperature was the oven set to?", False),
        ("After Jerry slips out of Tom's hands, where does he land?", False),
        ("How many contestants play the piano?", False),
    ],
)
def test_global_question_heuristic(question: str, expected: bool) -> None:
    assert is_global_question(question, OPTIONS) is expected


def decide(decision: Decision | None, level: str = "super", is_global: bool = False, **kw):
    args = {
        "level": level,
        "is_global": is_global,
        "current_ids": SUPERS,
        "ids_with_children": SUPERS,
        "fallback_ids": ["super_03"],
        "default_instruction": "Inspect the linked events.",
    }
    args.update(kw)
    return validate_decision(decision, **args)


def test_stop_is_forced_true_at_subgraph() -> None:
    result = decide(
        Decision(selected_child_memory_ids=["super_01"], stop_descending=False, next_instruct="x"),
        level="subgraph",
    )
    assert result.stop and result.selected_ids == () and result.instruction is None


def test_stop_is_forced_false_for_non_global_at_super_and_macro() -> None:
    for level in ("super", "macro"):
        result = decide(Decision(stop_descending=True), level=level, is_global=False)
        assert not result.stop
        assert result.selected_ids == ("super_03",) and result.used_fallback
        assert result.instruction == "Inspect the linked events."


def test_global_question_may_stop_and_stop_clears_selection() -> None:
    result = decide(
        Decision(selected_child_memory_ids=["super_02"], stop_descending=True, next_instruct="x"),
        is_global=True,
    )
    assert result.stop and result.selected_ids == () and result.instruction is None


def test_invalid_ids_are_dropped_and_valid_ones_kept_in_order() -> None:
    result = decide(
        Decision(
            selected_child_memory_ids=["macro_9", "super_04", "super_02", "super_04"],
            next_instruct="Find the oven.",
            template_type="identity",
        )
    )
    assert result.selected_ids == ("super_04", "super_02")
    assert result.instruction == "Find the oven." and not result.used_fallback
    assert result.template_type == "identity"
    assert any("macro_9" in note for note in result.notes)


def test_all_invalid_or_failed_call_falls_back() -> None:
    for decision in (Decision(selected_child_memory_ids=["nope"], next_instruct="x"), None):
        result = decide(decision)
        assert result.selected_ids == ("super_03",) and result.used_fallback
        assert result.instruction == "Inspect the linked events."


def test_stop_when_no_valid_descendants_remain() -> None:
    result = decide(
        Decision(selected_child_memory_ids=["super_01"], next_instruct="x"),
        ids_with_children=["super_05"],
        fallback_ids=[],
    )
    assert result.stop and result.selected_ids == ()


def test_unknown_instruction_type_is_dropped() -> None:
    result = decide(Decision(selected_child_memory_ids=["super_01"], template_type="vibes"))
    assert result.template_type is None


def test_protected_set_is_evidence_plus_neighbours_within_bounds() -> None:
    assert protected_set(SUPERS, ["super_03"]) == ["super_02", "super_03", "super_04"]
    assert protected_set(SUPERS, ["super_01", "super_05"]) == [
        "super_01",
        "super_02",
        "super_04",
        "super_05",
    ]
    assert protected_set(SUPERS, []) == []
    assert protected_set(SUPERS, ["unknown"]) == []


@given(st.sets(st.integers(0, 9)))
def test_protected_set_properties(evidence: set[int]) -> None:
    ids = [f"s{i}" for i in range(10)]
    result = protected_set(ids, [ids[i] for i in evidence])
    indices = [ids.index(i) for i in result]
    assert indices == sorted(set(indices))
    assert all(ids[i] in result for i in evidence)
    assert all(any(abs(i - e) <= 1 for e in evidence) for i in indices)


def test_overlap_linking_and_ranking() -> None:
    spans = {"s1": (0.0, 100.0), "s2": (100.0, 200.0), "s3": (200.0, 300.0)}
    assert link_by_overlap(spans, [(90.0, 150.0)]) == ["s1", "s2"]
    assert link_by_overlap(spans, [(100.0, 100.0)]) == []
    assert rank_by_overlap(spans, [(90.0, 150.0), (250.0, 260.0)]) == ["s2", "s1", "s3"]


TRANSCRIPT = [
    TranscriptLine(10.0, 14.0, "Welcome to the kitchen."),
    TranscriptLine(615.0, 620.0, "Set the oven to two hundred and twenty."),
    TranscriptLine(1080.0, 1085.0, "I give it a nine!"),
]


def test_only_verbatim_lines_survive_with_their_true_times() -> None:
    evidence = (
        "[10:15-10:20] Set the oven to two hundred and twenty.\n"
        "[00:00] The oven is hot.\n"  # invented
        "I  give it a nine!"  # whitespace differs, words identical
    )
    lines = match_evidence_lines(evidence, TRANSCRIPT)
    assert [line.start_s for line in lines] == [615.0, 1080.0]


def test_lines_are_assigned_by_start_time() -> None:
    spans = {"super_01": (0.0, 420.0), "super_02": (420.0, 900.0), "super_03": (900.0, 1200.0)}
    assigned = assign_lines_to_spans([*TRANSCRIPT, TranscriptLine(1250.0, 1251.0, "late")], spans)
    assert [line.text for line in assigned["super_01"]] == ["Welcome to the kitchen."]
    assert [line.start_s for line in assigned["super_02"]] == [615.0]
    assert [line.start_s for line in assigned["super_03"]] == [1080.0, 1250.0]


@pytest.mark.parametrize(
    "steering",
    [
        "This supports option B.",
        "The dial is consistent with B.",
        "Tom is more likely A here.",
        "The correct answer is C.",
        "Option C is clearly wrong.",
        "It points to (D).",
        "This rules out option A.",
        "So the answer is B.",
    ],
)
def test_option_steering_is_stripped(steering: str) -> None:
    text = f"The oven display reads 220°C at 10:15. {steering} Maria closes the door."
    cleaned = strip_option_steering(text)
    assert not contains_option_steering(cleaned)
    assert "220°C at 10:15" in cleaned and "Maria closes the door." in cleaned


@pytest.mark.parametrize(
    "plain",
    [
        "The evidence supports a new theory.",
        "The chef points to the oven.",
        "She holds a card reading 9 out of 10.",
        "A man rides a bicycle, more likely on a path than a road.",
    ],
)
def test_plain_facts_are_kept(plain: str) -> None:
    assert strip_option_steering(plain) == plain


@pytest.mark.parametrize(
    ("answer", "reasoning", "letter", "source"),
    [
        ("B", "", "B", "answer"),
        ("(c)", "", "C", "answer"),
        ("B. Blue", "", "B", "answer"),
        ("The answer is D", "", "D", "answer"),
        ("blue", "", "B", "option_text"),
        ("", "A is wrong; so the answer is C.", "C", "reasoning"),
        ("A man rides", "", "A", "fallback"),
        ("E", "", "A", "fallback"),
        (None, None, "A", "fallback"),
    ],
)
def test_answer_letter_extraction(answer, reasoning, letter, source) -> None:
    choice = extract_answer_letter(answer, reasoning, OPTIONS)
    assert (choice.letter, choice.source) == (letter, source)
