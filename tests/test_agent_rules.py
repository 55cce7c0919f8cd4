"""The rules code enforces: global questions, decision validation, protected set, transcript
evidence, option steering and answer letters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from videotapestry.agents.options import (
    contains_option_steering,
    extract_answer_letter,
    strip_option_steering,
)
from videotapestry.agents.rules import (
    assign_lines_to_spans,
    is_global_question,
    link_by_overlap,
    match_evidence_lines,
    protected_set,
    rank_by_overlap,
    validate_decision,
)
from videotapestry.asr import TranscriptLine
from videotapestry.contracts.method import Decision

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
    lines = match_evidence_lines(evidence, TRANSCRIPT).lines
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


# --------------------------------------------------------------------------- issue 9 rules


@pytest.mark.parametrize(
    ("question", "options", "expected"),
    [
        ("What was the overall score of the match?", OPTIONS, False),
        ("What is the title of the book the host reads?", OPTIONS, False),
        ("What is the purpose of the video?", OPTIONS, True),
        ("What is the theme of this video?", OPTIONS, True),
        ("What is the video's main message?", OPTIONS, True),
        ("What is the main point the chef makes about salt?", OPTIONS, False),
        ("What is the main purpose of the demonstration at 12:30?", OPTIONS, False),
        ("Which of the following is true?", OPTIONS, False),
        (
            "Which of the following is true?",
            [
                "A. The video mainly discusses thyroid tests.",
                "B. The video shows how to bake bread.",
                "C. It focuses on exercise.",
                "D. Red",
            ],
            True,
        ),
    ],
)
def test_global_heuristic_reads_question_and_options(question, options, expected) -> None:
    assert is_global_question(question, options) is expected


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("Option A is wrong; the answer is B", "B"),
        ("A is incorrect. Final answer: C", "C"),
        ("Not A, not B: I choose D", "D"),
        ("The answer is B, not A.", "B"),
        ("Option A is tempting, but option C is correct.", "C"),
        ("B is the correct answer", "B"),
    ],
)
def test_the_final_stated_answer_wins(answer: str, letter: str) -> None:
    assert extract_answer_letter(answer, "", OPTIONS) == (
        extract_answer_letter(letter, "", OPTIONS)
    )
    assert extract_answer_letter(answer, "", OPTIONS).letter == letter


def test_letters_beyond_h() -> None:
    options = [f"{chr(65 + i)}. option {i}" for i in range(26)]
    assert extract_answer_letter("(I)", "", options).letter == "I"
    assert extract_answer_letter("The answer is Z.", "", options).letter == "Z"
    assert extract_answer_letter("option 12", "", options).letter == "M"  # option text


@pytest.mark.parametrize(
    "steering",
    [
        "The dial aligns with B.",
        "This is matching option B.",
        "Everything points to (C).",
        "The scene corresponds to D.",
        "So B is correct.",
        "Options A and B are ruled out.",
    ],
)
def test_more_steering_phrases_are_stripped(steering: str) -> None:
    text = f"The display reads 220°C. {steering} Maria leaves."
    assert contains_option_steering(steering)
    assert strip_option_steering(text) == "The display reads 220°C. Maria leaves."


@pytest.mark.parametrize(
    "plain",
    [
        "Vitamin C is the best source of energy, the host says.",
        "He points to a sign on the wall.",
        "The U.S. Army band plays.",
        "Plan B is put into action.",
    ],
)
def test_more_plain_facts_are_kept(plain: str) -> None:
    assert strip_option_steering(plain) == plain


@pytest.mark.parametrize(
    "steering",
    [
        "So C.",
        "Therefore the answer: C",
        "Thus, (B).",
        "This fits the third option.",
        "The third option.",
        "The display reads 220°C, so the correct answer is C.",
        "The frames show the oven, which supports option B.",
    ],
)
def test_model_written_verdicts_are_stripped(steering: str) -> None:
    assert contains_option_steering(steering)
    text = f"The display reads 220°C. {steering.rstrip('.')}. Maria leaves."
    assert strip_option_steering(text) == "The display reads 220°C. Maria leaves."


@pytest.mark.parametrize(
    "fact",
    [
        "The host says the correct answer is Paris.",
        "She picks answer C on the board.",
        "The board reads OPTION B: PARIS.",
        'The host says "the answer is B" twice.',
        "So I went home.",
    ],
)
def test_what_the_video_says_or_shows_is_kept(fact: str) -> None:
    assert not contains_option_steering(fact)
    assert strip_option_steering(f"Maria leaves. {fact}") == f"Maria leaves. {fact}"


def test_steering_filter_keeps_the_layout_of_multiline_text() -> None:
    text = "super_02 [07:00-15:00] Roasting.\n  [Visual] Reads 220°C. Supports option B.\n  ok"
    assert strip_option_steering(text) == (
        "super_02 [07:00-15:00] Roasting.\n  [Visual] Reads 220°C.\n  ok"
    )


REPEATED = [
    TranscriptLine(300.0, 302.0, "Yeah."),
    TranscriptLine(700.4, 702.0, "Yeah."),
    TranscriptLine(1000.0, 1002.0, "Yeah."),
    TranscriptLine(710.0, 712.0, "Set it to two-twenty!"),
]


@pytest.mark.parametrize(
    ("quote", "starts"),
    [
        ("[11:40-11:42] Yeah.", [700.4]),
        ("11:40 yeah", [700.4]),  # no brackets, no punctuation, other case
        ("(16:40) Yeah", [1000.0]),
        ("Yeah.", []),  # three candidates and no time: ambiguous
        ("[12:30] Yeah.", []),  # said, but not then
        ("set it to two twenty", [710.0]),  # once in the transcript: no time needed
    ],
)
def test_quoted_lines_match_on_time_and_text(quote: str, starts: list[float]) -> None:
    matched = match_evidence_lines(quote, REPEATED)
    assert [line.start_s for line in matched.lines] == starts
    assert bool(matched.unmatched) == (not starts)


SPLIT = [
    TranscriptLine(60.0, 66.0, "Okay so first we preheat the oven to two hundred and twenty"),
    TranscriptLine(66.5, 69.0, "degrees and wait ten minutes."),
    TranscriptLine(300.0, 303.0, "Then the tray goes in for twenty minutes."),
]


@pytest.mark.parametrize(
    ("quote", "starts"),
    [
        ("[01:02] preheat the oven to two hundred", [60.0]),  # part of one line
        ("Preheat the oven to two-hundred and twenty degrees", [60.0, 66.5]),  # two lines
        ("[01:00-01:09] two hundred and twenty degrees, and wait", [60.0, 66.5]),
        ("[05:00] the tray goes in", [300.0]),
        ("[05:30] the tray goes in", []),  # said, but not within the tolerance of then
        ("preheat the oven to two hundred and fifty", []),  # made up from said words
        ("wait ten minutes. Then the tray", [66.5, 300.0]),  # consecutive lines
        ("and twenty. Then the tray goes in", []),  # lines 1 and 3: not adjacent
        ("the oven", []),  # too short to name a line
        ("we preheat the tray", []),  # words of one line, not in its order
    ],
)
def test_a_quote_may_be_part_of_one_line_or_span_two_adjacent_ones(
    quote: str, starts: list[float]
) -> None:
    matched = match_evidence_lines(quote, SPLIT)
    assert [line.start_s for line in matched.lines] == starts
    assert bool(matched.unmatched) == (not starts)


def test_whole_lines_only_and_the_tolerance_are_the_callers_to_set() -> None:
    strict = match_evidence_lines("[01:02] preheat the oven to two hundred", SPLIT, fragments=False)
    assert strict.lines == () and len(strict.unmatched) == 1
    whole = match_evidence_lines("[05:01] Then the tray goes in for twenty minutes.", SPLIT,
                                 fragments=False)  # fmt: skip
    assert [line.start_s for line in whole.lines] == [300.0]
    assert match_evidence_lines("[05:10] the tray goes in", SPLIT).lines == ()
    wide = match_evidence_lines("[05:10] the tray goes in", SPLIT, tolerance_s=10.0)
    assert [line.start_s for line in wide.lines] == [300.0]


def test_quoted_lines_outside_the_transcribed_windows_never_count() -> None:
    matched = match_evidence_lines("[05:00] Yeah.", REPEATED, windows=[(600.0, 1200.0)])
    assert matched.lines == () and matched.unmatched == ("[05:00] Yeah.",)


def test_irrelevant_summaries_are_at_most_ten_characters() -> None:
    from videotapestry.agents.rules import tiny_summary

    assert tiny_summary("Resting the bird on a board.") == "Resting"
    assert tiny_summary("Intro.") == "Intro"
    assert tiny_summary("Extraordinarily long word") == "Extraordi…"
    assert all(len(tiny_summary(t)) <= 10 for t in ("a b c d e f g h", "x" * 40, ""))


def test_anchors_from_the_agent_are_cleaned() -> None:
    from videotapestry.agents.rules import clean_anchors

    anchors = ["oven", " Oven ", "", "220°C", "the oven display", "x" * 200]
    assert clean_anchors(anchors, ["A. 180°C", "B. 220°C"]) == ["oven", "the oven display"]
    assert len(clean_anchors([f"a{i}" for i in range(9)], max_anchors=4)) == 4
