"""Issue 39 item 2: citations a person can read. The one function every view shows a cited
source with (``views.citation_text``): each kind as its kind, its time (where a click seeks
to) and a short quote, without internal ids or the memory's prompt markup. The raw texts
below are what the sample's offline answers cite (memory lines quoted as claims)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from videotapestry.agents.state import Citation, EvidenceRef, LevelOutcome
from videotapestry.commands.common import citation_lines, level_lines
from videotapestry.views.citation_text import (
    claim_text,
    moment_text,
    node_names,
    node_spans,
    plain_text,
    seek_s,
    shown_text,
    source_text,
    sources_text,
    stored_texts,
)

#: The ids the shipped builders give stored nodes (as in the sample's memory.json).
NODE_ID = re.compile(r"\b(slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+|root_\d+)\b")
#: The prompt markup of a memory line.
MARKUP = re.compile(r"\[@?\d+:\d\d|\(scene_text\)|read by OCR|\| (?:in|subject|object):")
#: What the sample's offline answers cite as claims.
RAW_CLAIMS = [
    '03:33-04:18: - slot3_o6 [03:32-04:18] "5 / 20" (scene_text): read by OCR / - slot3_o7 '
    '[03:32-04:18] "Door code 4417" (scene_text): read by OCR / - slot3_o8 [03:32-04:18] '
    '"Gate B: deliveries" (scene_te',
    "slot0_v15 [00:49-00:52] speaks (speech): Please pick up your name card at the green tent "
    "next to the bridge.",
    "- slot7_e5 [@09:30] Programme: afternoon (text): text shown on screen from 09:30 | "
    'attributes: {"shown": "09:30-10:00"}',
    'slot7_v5 [09:30-10:00] shows text (change): The screen shows "Programme: afternoon". | '
    "object: slot7_e5",
    "macro_0003 [03:00-05:30] Gate B and its code | in: super_01",
]


def frame(at: float, start: float, end: float, text: str = "macro_0003 frame") -> EvidenceRef:
    return EvidenceRef(
        id="F4", kind="frame", level="subgraph", start_s=start, end_s=end, text=text, at_s=at
    )


LINE = EvidenceRef(
    id="T2", kind="transcript_line", level="super", start_s=192.4, end_s=196.9,
    text="So the name cards are at the green tent next to the bridge, and we start there at "
    "noon sharp, all of us together.",
)  # fmt: skip
OCR = EvidenceRef(
    id="slot3_o7", kind="stored_node", level="subgraph", start_s=212.0, end_s=258.0,
    text="Door code 4417", node_kind="OCRText",
)  # fmt: skip
MACRO = EvidenceRef(
    id="macro_0001", kind="stored_node", level="macro", start_s=37.0, end_s=107.5,
    text="Arrival at the festival grounds, a long walk past the gates and the stalls by the "
    "river", node_kind="MacroEvent",
)  # fmt: skip


def test_a_frame_is_its_kind_and_its_own_moment() -> None:
    # A frame stands for 04:10-04:19 but was taken at 04:18: a click seeks to 04:18.
    source = frame(258.6, 250.0, 259.0)
    assert seek_s(source) == 258.6 and moment_text(source) == "04:18"
    assert source_text(source) == "frame at 04:18"


def test_a_transcript_line_is_said_at_its_span_with_its_words_trimmed() -> None:
    shown = source_text(LINE)
    assert seek_s(LINE) == 192.4
    assert shown.startswith("said at 03:12–03:16: “So the name cards are at the green tent")
    assert shown.endswith("…”") and len(shown) < 110


def test_an_ocr_node_is_on_screen_and_another_node_is_memory_with_its_first_words() -> None:
    assert source_text(OCR) == "on screen at 03:32–04:18: “Door code 4417”"
    shown = source_text(MACRO)
    assert shown.startswith("memory, 00:37–01:47: Arrival at the festival grounds")
    assert shown.endswith("…") and "river" not in shown
    # A node whose kind was not recorded (an older trace) still reads as memory.
    older = MACRO.model_copy(update={"node_kind": None})
    assert source_text(older).startswith("memory, 00:37–01:47: ")


@pytest.mark.parametrize("raw", RAW_CLAIMS)
def test_a_claim_quoting_memory_lines_reads_without_ids_or_markup(raw: str) -> None:
    shown = claim_text(raw)
    assert shown and not NODE_ID.search(shown) and not MARKUP.search(shown), shown
    assert not re.match(r"^\d", shown), shown  # no leading time either


def test_the_door_code_claim_keeps_its_words() -> None:
    assert claim_text(RAW_CLAIMS[0]) == '"5 / 20" / "Door code 4417" / "Gate B: deliveries"…'
    assert plain_text('- slot2_o11 [03:32-04:18] "5/20" (scene_text): read by OCR') == "5/20"
    # Prose is left as it is (a parenthesis, markup to escape later).
    prose = '<b>The oven</b> (left) is at "220" degrees.'
    assert claim_text(prose) == prose


def test_a_citation_prints_as_its_claim_then_each_source_no_ids() -> None:
    citation = Citation(
        claim=RAW_CLAIMS[0],
        sources=[frame(253.4, 250, 256), frame(257.9, 256, 258), LINE, OCR, MACRO],
    )
    assert sources_text(citation.sources)[0] == "frames at 04:13, 04:17"
    lines = citation_lines([citation])
    assert lines[0] == 'claim 1: "5 / 20" / "Door code 4417" / "Gate B: deliveries"…'
    assert [line.split(" at ")[0].split(",")[0] for line in lines[1:]] == [
        "  cites frames", "  cites said", "  cites on screen", "  cites memory"
    ]  # fmt: skip
    for line in lines:
        assert not NODE_ID.search(line) and not re.search(r"\b[SKFTD]\d+\b", line), line


def test_one_candidate_is_singular() -> None:
    from videotapestry.agents.state import LevelOutcome, Observation

    looked = Observation(level="super", kind="visual", source_id="V1", instruction="look",
                         windows=[(0.0, 2.0)], frame_times=[1.0], result="an oven")  # fmt: skip
    one = LevelOutcome(level="super", agent="Overview Agent", candidate_ids=["super_01"],
                       observations=[looked], selected_ids=["super_01"])  # fmt: skip
    [line] = level_lines([one])
    assert "1 candidate," in line and "1 candidates" not in line and "visual 1 frame;" in line


# -- a model's text and the chosen nodes, shown without ids (issue 39) -------------------------

#: Where the nodes of the hand-made texts below lie, as ``node_spans`` finds them.
SPANS = {
    "super_01": (0.0, 1080.0),
    "macro_0003": (180.0, 330.0),
    "slot3_o6": (212.0, 258.0),
    "clip_0002": (60.0, 90.0),
}


def test_a_reasoning_shows_each_known_id_as_its_time_span() -> None:
    text = (
        "super_01 covers the briefing; I chose macro_0003 because slot3_o6 shows the code, "
        "which clip_0002 does not."
    )
    assert shown_text(text, SPANS) == (
        "00:00–18:00 covers the briefing; I chose 03:00–05:30 because 03:32–04:18 shows the "
        "code, which 01:00–01:30 does not."
    )


def test_an_unknown_id_stays_as_written_and_the_sentence_reads() -> None:
    shown = shown_text("Neither macro_0099 nor slot9_x1 holds it; macro_0003 does.", SPANS)
    assert shown == "Neither macro_0099 nor slot9_x1 holds it; 03:00–05:30 does."


def test_a_quoted_memory_line_loses_its_markup_and_keeps_its_own_time() -> None:
    text = (
        'found in the memory line "03:33-04:18: - slot3_o6 [03:32-04:18] "5 / 20" '
        '(scene_text): read by OCR / - slot3_o7 [03:32-04:18] "Door code 4417" '
        "| object: slot3_e2\n- macro_0003 (03:00-05:30) Gate B [F3] | in: super_01"
    )
    shown = shown_text(text, {})  # the times written beside the ids are enough
    assert not NODE_ID.search(shown) and not MARKUP.search(shown), shown
    assert "[F3]" not in shown and "\n" not in shown
    assert shown == (
        'found in the memory line "03:32–04:18 "5 / 20" / 03:32–04:18 "Door code 4417" '
        "03:00–05:30 Gate B"
    )


def _levels_result(reasoning: str = "") -> SimpleNamespace:
    """What ``node_names``/``node_spans`` read of a result: a sample-like composite memory
    whose every part bears the video's title, and the levels that chose super_01 and
    macro_0003."""
    title = "Riverside Festival- volunteer briefing"
    super_text = f"{title}: From 00:00 to 18:00 the volunteers' briefing."
    macro_text = (
        f'{title}: From 03:00 to 05:30 the screen shows "{title}" (03:00-05:30), "Gate B: '
        'deliveries" (03:32-04:18), "Door code 4417" (03:32-04:18). Someone says: "Lunch '
        'is in the yellow tent."'
    )
    levels = [
        LevelOutcome(level="super", agent="Overview Agent", candidate_ids=["super_01"],
                     static={"super_01": super_text}, selected_ids=["super_01"]),
        LevelOutcome(level="macro", agent="Skim Agent",
                     candidate_ids=["macro_0002", "macro_0003"],
                     static={"macro_0002": f"{title}: the map.", "macro_0003": macro_text},
                     selected_ids=["macro_0003"]),
        LevelOutcome(level="subgraph", agent="Focus Agent", candidate_ids=["macro_0003"],
                     stop=True),
    ]  # fmt: skip
    return SimpleNamespace(
        memory_text=f"Video: root [00:00-18:00] {title}: The video runs 18:00.\n"
        "  macro_0002 [02:00-03:00] the map\n  - slot3_o6 [03:32-04:18] 5 / 20",
        levels=levels,
        citations=[],
        node_times={"super_01": (0.0, 1080.0), "macro_0003": (180.0, 330.0)},
        reasoning=reasoning,
    )


def test_node_spans_come_from_the_recorded_times_and_the_texts_read() -> None:
    spans = node_spans(_levels_result())
    assert spans["macro_0003"] == (180.0, 330.0) and spans["macro_0002"] == (120.0, 180.0)
    assert spans["slot3_o6"] == (212.0, 258.0)


def test_the_level_lines_name_the_chosen_nodes_by_time_and_words_not_ids() -> None:
    result = _levels_result()
    names = node_names(result)
    assert names["super_01"] == "00:00–18:00 “the volunteers' briefing.”"
    assert names["macro_0003"].startswith('03:00–05:30 “the screen shows "Gate B: deliveries"')
    assert names["macro_0003"].endswith("…”") and len(names["macro_0003"]) < 60
    lines = level_lines(result.levels, names)
    assert lines[0].endswith("-> 00:00–18:00 “the volunteers' briefing.”")
    assert "-> 03:00–05:30 “" in lines[1] and lines[2].endswith("STOP")
    for line in lines:
        assert not NODE_ID.search(line), line
    # Without names (a caller that has none) the ids are still what is printed.
    assert level_lines(result.levels)[1].endswith("-> macro_0003")


def test_a_cited_memory_span_reads_as_its_own_words_nearest_the_claim_not_its_title() -> None:
    result = _levels_result()
    span = EvidenceRef(
        id="macro_0003", kind="stored_node", level="macro", start_s=180.0, end_s=330.0,
        text="Riverside Festival- volunteer briefing", node_kind="MacroEvent",
    )  # fmt: skip
    texts = stored_texts(result.levels)
    claim = "Volunteers have lunch in the yellow tent."
    assert source_text(span) == "memory, 03:00–05:30: Riverside Festival- volunteer briefing"
    shown = source_text(span, texts=texts, claim=claim)
    assert shown == 'memory, 03:00–05:30: Someone says: "Lunch is in the yellow tent."', shown
    lines = citation_lines([Citation(claim=claim, sources=[span])], texts=texts)
    assert lines[1] == f"  cites {shown}"
    # A claim that matches no sentence: the span's first words, its title left out.
    first = source_text(span, texts=texts, claim="something else")
    assert first.startswith('memory, 03:00–05:30: the screen shows "Gate B: deliveries"'), first
    # An OCR text is its own words already; a span no text is known for keeps its label.
    assert source_text(OCR, texts=texts) == "on screen at 03:32–04:18: “Door code 4417”"
    assert source_text(MACRO, texts=texts).startswith("memory, 00:37–01:47: Arrival")
