"""Issue 39 item 2: citations a person can read. The one function every view shows a cited
source with (``views.citation_text``): each kind as its kind, its time (where a click seeks
to) and a short quote, without internal ids or the memory's prompt markup. The raw texts
below are what the sample's offline answers cite (memory lines quoted as claims)."""

from __future__ import annotations

import re

import pytest

from videotapestry.agents.state import Citation, EvidenceRef
from videotapestry.commands.common import citation_lines, level_lines
from videotapestry.views.citation_text import (
    claim_text,
    moment_text,
    plain_text,
    seek_s,
    source_text,
    sources_text,
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
