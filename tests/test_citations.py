"""Provenance as structure (agents/citations.py): frames and transcript lines become numbered
refs with their times, nodes rest on the refs in their time, and cited ids resolve to moments
or are dropped and reported. Every expected value is worked out by hand beside it."""

from __future__ import annotations

import pytest

from videotapestry.agents.citations import (
    citable,
    frame_spans,
    node_level,
    node_sources,
    observation_refs,
    observed_refs,
    refs_text,
    resolve_citations,
    resolve_id,
    stored_ref,
)
from videotapestry.agents.state import Citation, EvidenceRef, LevelOutcome, Observation
from videotapestry.memory import VideoMemory
from videotapestry.testing.memories import synthetic_memory


@pytest.fixture(scope="module")
def memory() -> VideoMemory:
    """400 s in two SuperEvents of two MacroEvents: super_01 0-200, super_02 200-400;
    macro_0000 0-100, macro_0001 100-200, macro_0002 200-300, macro_0003 300-400."""
    return synthetic_memory(duration_s=400, supers=2, macros_per_super=2)


def frame(ref_id: str, at: float, start: float, end: float, level: str = "super") -> EvidenceRef:
    return EvidenceRef(id=ref_id, kind="frame", level=level, start_s=start, end_s=end, at_s=at)


def line(ref_id: str, start: float, end: float, text: str = "") -> EvidenceRef:
    return EvidenceRef(
        id=ref_id, kind="transcript_line", level="super", start_s=start, end_s=end, text=text
    )


def visual(level: str, windows: list[tuple[float, float]], times: list[float], **kw) -> Observation:
    fields = {"result": "The screen shows a door code.", **kw}
    return Observation(
        kind="visual", level=level, source_id="V1", instruction="Read the screen.",
        windows=windows, frame_times=times, **fields,
    )  # fmt: skip


def speech(lines: list[tuple[float, float, str]]) -> Observation:
    return Observation(
        kind="asr", level="super", source_id="A1", instruction="What is said?",
        windows=[(0.0, 60.0)], result="Someone names a tent.", evidence_lines=lines,
    )  # fmt: skip


# --------------------------------------------------------------------------- frame spans


def test_a_frame_stands_for_the_stretch_between_the_midpoints_to_its_neighbours() -> None:
    # Frames 15, 25, 35 across (10, 40): midpoints 20 and 30; the ends reach the window's.
    assert frame_spans([15, 25, 35], [(10, 40)]) == [(10, 20), (20, 30), (30, 40)]
    # One frame alone stands for its whole window.
    assert frame_spans([7], [(5, 9)]) == [(5, 9)]


def test_frames_of_two_windows_do_not_reach_across_the_gap() -> None:
    # 7.5 -> 105: 105 lies past the first window's end, so 7.5 stops at 10 and 105 starts
    # at 100 (not at the midpoint 56.25, which is in neither window).
    spans = frame_spans([2.5, 7.5, 105, 115], [(0, 10), (100, 120)])
    assert spans == [(0, 5), (5, 10), (100, 110), (110, 120)]


def test_a_frame_outside_every_window_stands_for_its_own_moment() -> None:
    # 9.6 was snapped to a keyframe just before (10, 20): no window holds it, so it is the
    # moment 9.6 alone; 12 then starts at the window's start (its neighbour lies outside).
    assert frame_spans([9.6, 12, 18], [(10, 20)]) == [(9.6, 9.6), (10, 15), (15, 20)]


# --------------------------------------------------------------------------- observation refs


def test_observations_become_refs_numbered_per_level_and_lines_across_all() -> None:
    observations = [
        visual("super", [(0, 30)], [5, 15, 25]),
        speech([(12.0, 14.5, "the green tent"), (40.0, 41.0, "bye")]),
        visual("macro", [(100, 110)], [101, 103], error="cannot decode the frames"),
        visual("macro", [(100, 110)], [101, 103], result="  "),  # said nothing: no evidence
        visual("macro", [(100, 110)], [102, 108]),
        visual("macro", [(150, 160)], [155]),
    ]
    refs = observation_refs(observations)
    # Failed and empty observations count for nothing, so the macro frames start at K1.
    assert [r.id for r in refs] == ["S1", "S2", "S3", "T1", "T2", "K1", "K2", "K3"]
    by_id = {r.id: r for r in refs}
    # S2: frame 15 of (0, 30) between the midpoints 10 and 20.
    assert by_id["S2"] == EvidenceRef(
        id="S2", kind="frame", level="super", start_s=10, end_s=20,
        text="V1 frame at 00:15", at_s=15,
    )  # fmt: skip
    assert by_id["T1"] == EvidenceRef(
        id="T1", kind="transcript_line", level="super", start_s=12.0, end_s=14.5,
        text="the green tent",
    )  # fmt: skip
    # K2: frame 108 of (100, 110): from the midpoint 105 to the window's end.
    assert (by_id["K2"].start_s, by_id["K2"].end_s, by_id["K2"].at_s) == (105, 110, 108)
    assert by_id["K2"].level == "macro"
    # A second observation at a level continues its numbering: 155 alone in (150, 160).
    assert (by_id["K3"].start_s, by_id["K3"].end_s) == (150, 160)
    assert observation_refs([]) == []


def test_every_observed_ref_of_every_level_is_citable_by_its_id() -> None:
    levels = [
        LevelOutcome(
            level="super", agent="Overview Agent", candidate_ids=["super_01"],
            observations=[visual("super", [(0, 20)], [5, 15]), speech([(12.0, 14.0, "tent")])],
        ),
        LevelOutcome(
            level="macro", agent="Skim Agent", candidate_ids=["macro_0000"],
            observations=[visual("macro", [(40, 44)], [41, 43])],
        ),
        LevelOutcome(level="subgraph", agent="Focus Agent", candidate_ids=["macro_0000"]),
    ]  # fmt: skip
    known = citable(levels)
    assert sorted(known) == ["K1", "K2", "S1", "S2", "T1"]
    # K1: frame 41 of (40, 44) up to the midpoint 42 with 43.
    assert (known["K1"].start_s, known["K1"].end_s, known["K1"].at_s) == (40, 42, 41)
    assert known["T1"].text == "tent"
    assert citable([]) == {}


# --------------------------------------------------------------------------- stored nodes


def test_a_stored_node_is_a_ref_over_its_time_range(memory: VideoMemory) -> None:
    label = memory.node("macro_0001").label
    assert stored_ref(memory, "macro_0001", "macro") == EvidenceRef(
        id="macro_0001", kind="stored_node", level="macro", start_s=100, end_s=200, text=label,
        node_kind="MacroEvent",
    )  # fmt: skip
    assert stored_ref(memory, "super_02", "super").text == "Stage 2 at the police station"
    assert (node_level(memory, "root_001"), node_level(memory, "super_02")) == ("super", "super")
    assert node_level(memory, "macro_0003") == "macro"
    assert node_level(memory, "slot0_e1") == "subgraph"  # an entity under macro_0000


def test_a_rewritten_node_rests_on_its_stored_node_and_the_refs_in_its_time(
    memory: VideoMemory,
) -> None:
    own = stored_ref(memory, "macro_0001", "macro")  # 100-200
    refs = [
        frame("K1", 95, 90, 101),  # its stretch reaches 101, but the frame is at 95: out
        frame("K2", 100, 100, 110),  # at the start: in
        frame("K3", 150, 145, 155),
        frame("K4", 201, 196, 205),  # its stretch starts at 196, the frame is at 201: out
        line("T1", 190, 210),  # overlaps the end: in
        line("T2", 200, 205),  # only touches 200: out
        line("T3", 50, 60),
    ]
    sources = node_sources(memory, "macro_0001", "macro", refs, rewritten=True)
    assert [s.id for s in sources] == ["macro_0001", "K2", "K3", "T1"]
    assert sources[0] == own
    assert observed_refs(sources) == sources[1:]


def test_a_rewritten_node_shown_over_some_intervals_rests_on_the_refs_in_them(
    memory: VideoMemory,
) -> None:
    refs = [frame("F1", 125, 120, 130), frame("F2", 150, 140, 160), frame("F3", 175, 170, 180)]
    refs += [line("T1", 129, 131), line("T2", 140, 145)]
    spans = [(120.0, 130.0), (170.0, 180.0)]
    sources = node_sources(memory, "macro_0001", "subgraph", refs, rewritten=True, spans=spans)
    assert [s.id for s in sources] == ["macro_0001", "F1", "F3", "T1"]


def test_a_compressed_node_keeps_only_its_stored_node_ref(memory: VideoMemory) -> None:
    refs = [frame("K2", 150, 145, 155), line("T1", 120, 125)]  # both inside 100-200
    sources = node_sources(memory, "macro_0001", "macro", refs, rewritten=False)
    assert sources == [stored_ref(memory, "macro_0001", "macro")]
    assert observed_refs(sources) == []


# --------------------------------------------------------------------------- refs lines


def test_refs_text_shows_runs_of_consecutive_frames_and_each_line() -> None:
    refs = [
        EvidenceRef(id="macro_0001", kind="stored_node", level="macro", start_s=0, end_s=400),
        frame("S1", 5, 0, 10),
        frame("S2", 15, 10, 20),
        frame("S3", 25, 20, 30),
        line("T1", 12.0, 14.5),
        frame("S5", 45, 40, 50),  # after a line, and S4 is missing: a new run
        frame("K1", 102, 100, 105, "macro"),  # another prefix: another run
        frame("K2", 108, 105, 110, "macro"),
        frame("K4", 130, 125, 135, "macro"),  # K3 is missing: a new run
        line("T2", 3599.5, 3600.2),
    ]
    # The stored node is not shown; times are mm:ss, cut to the second (14.5 -> 00:14).
    assert refs_text(refs) == (
        "S1-S3 (00:00-00:30); T1 (00:12-00:14); S5 (00:40-00:50); K1-K2 (01:40-01:50); "
        "K4 (02:05-02:15); T2 (59:59-1:00:00)"
    )
    assert refs_text(refs[:1]) == ""  # a node resting on its stored text alone: no line
    assert refs_text([]) == ""


# --------------------------------------------------------------------------- resolving ids


@pytest.fixture
def known() -> dict[str, EvidenceRef]:
    refs = [frame("S1", 5, 0, 10), frame("S2", 15, 10, 20), frame("S3", 25, 20, 30)]
    refs += [line("T1", 12.0, 14.5, "the green tent"), frame("K1", 102, 100, 105, "macro")]
    return {ref.id: ref for ref in refs}


def test_an_id_resolves_to_itself_a_run_or_a_stored_node(
    known: dict[str, EvidenceRef], memory: VideoMemory
) -> None:
    assert resolve_id("S2", known, memory) == ["S2"]
    assert resolve_id(" [S2] ", known, memory) == ["S2"]  # brackets as the memory shows them
    assert resolve_id("(T1)", known, memory) == ["T1"]
    assert resolve_id("macro_0001", known, memory) == ["macro_0001"]
    # A run as a refs line prints one, with a hyphen or an en dash, the prefix repeated or not.
    assert resolve_id("S1-S3", known, memory) == ["S1", "S2", "S3"]
    assert resolve_id("S1–S3", known, memory) == ["S1", "S2", "S3"]
    assert resolve_id("S2 - 3", known, memory) == ["S2", "S3"]


@pytest.mark.parametrize(
    "cited",
    [
        "Z99",  # made up
        "S4",  # the right shape, never observed
        "S1-S4",  # a run reaching past what was observed
        "S3-S1",  # a run backwards
        "S1-K1",  # a run across two levels
        "s1",  # ids are case-sensitive
        "",
    ],
)
def test_an_id_that_names_nothing_resolves_to_nothing(
    cited: str, known: dict[str, EvidenceRef], memory: VideoMemory
) -> None:
    assert resolve_id(cited, known, memory) == []


def test_citations_keep_the_claims_valid_ids_name_and_report_made_up_ones(
    known: dict[str, EvidenceRef], memory: VideoMemory
) -> None:
    claims = [
        ("The code is 4417. ", ["S2", "Z99"]),
        ("Said at the green tent", ["T1", "S1-S3", "S2"]),  # S2 twice: cited once
        ("Made up", ["Q7"]),  # nothing valid: the claim is dropped
        ("The second stage", ["super_02"]),
        ("An entity", ["slot0_e1"]),
    ]
    citations, invalid = resolve_citations(claims, known, memory)
    entity = memory.time_range("slot0_e1")
    assert citations == [
        Citation(claim="The code is 4417.", sources=[known["S2"]]),
        Citation(
            claim="Said at the green tent",
            sources=[known["T1"], known["S1"], known["S2"], known["S3"]],
        ),
        Citation(claim="The second stage", sources=[stored_ref(memory, "super_02", "super")]),
        Citation(claim="An entity", sources=[stored_ref(memory, "slot0_e1", "subgraph")]),
    ]
    assert invalid == ["Z99", "Q7"]
    # Each citation resolves to the moments its sources stand for.
    assert citations[1].spans == [(12.0, 14.5), (0, 10), (10, 20), (20, 30)]
    assert citations[2].spans == [(200, 400)]
    assert citations[3].spans == [(entity.start, entity.end)]
    assert citations[3].levels == ["subgraph"]


def test_a_citation_of_made_up_ids_alone_is_no_citation(
    known: dict[str, EvidenceRef], memory: VideoMemory
) -> None:
    citations, invalid = resolve_citations([("The code is 4417", ["Z99"])], known, memory)
    assert citations == [] and invalid == ["Z99"]
    assert resolve_citations([], known, memory) == ([], [])
