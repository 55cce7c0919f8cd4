"""Issue 11 item 6: the HTML picture of what the agents did.

Pure parts first (timeline geometry, refined/compressed marking over a real assembled memory,
escaping), then one real question (scripted model over the fake server, the generated
video) whose saved trace goes through ``inspect TRACE --html`` and into headless Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from browser_support import browse, longest_run, root_element
from method_support import SAMPLE, ask, make_vt
from PIL import Image

from videotapestry.agents.state import (
    Degradation,
    HandoffEntry,
    ImageRef,
    LevelOutcome,
    Observation,
)
from videotapestry.assemble import assemble
from videotapestry.cli import main
from videotapestry.llm.usage import UsageSummary
from videotapestry.memory import open_memory
from videotapestry.result import QuestionFailure, Result
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.trace import Trace
from videotapestry.views.composite import memory_parts, node_statuses, times_from_memory_text
from videotapestry.views.thumbnails import from_video
from videotapestry.views.timeline import (
    LEVEL_COLOURS,
    LEVEL_SHADES,
    Span,
    TimelineLayout,
    axis_ticks,
    layout_boxes,
    level_spans,
    timeline_duration,
)
from videotapestry.views.trace_data import load_question_trace
from videotapestry.views.trace_html import (
    question_fragment,
    question_page,
    thumbnails_for,
    write_question_pages,
)

#: Markup in memory and model text: must be shown, never interpreted.
PAYLOAD = (
    '<script>document.documentElement.dataset.pwned="script"</script>'
    '"><img src=x onerror="document.documentElement.dataset.pwned=\'img\'">'
)


# --------------------------------------------------------------------------- timeline


def _super_outcome() -> LevelOutcome:
    return LevelOutcome(
        level="super",
        agent="Overview Agent",
        candidate_ids=["s1", "s2", "s3"],
        protected_ids=["s1", "s2"],
        selected_ids=["s2"],
        observations=[
            Observation(kind="visual", level="super", source_id="V1", instruction="look",
                        windows=[(300.0, 900.0)], frame_times=[310.0, 600.0]),
            Observation(kind="asr", level="super", source_id="A1", instruction="listen",
                        windows=[(0.0, 1200.0)]),
        ],
    )  # fmt: skip


def test_level_spans_give_each_node_its_role_and_each_window_its_modality() -> None:
    times = {"s1": (0.0, 400.0), "s2": (400.0, 800.0), "s3": (800.0, 1200.0)}
    spans = level_spans(_super_outcome(), times)
    roles = {(s.role, s.start, s.end) for s in spans}
    assert ("protected", 0.0, 400.0) in roles and ("selected", 400.0, 800.0) in roles
    assert ("candidate", 800.0, 1200.0) in roles
    assert ("visual", 300.0, 900.0) in roles and ("asr", 0.0, 1200.0) in roles
    assert sorted(s.start for s in spans if s.role == "frame") == [310.0, 600.0]
    # A node whose time is unknown is left out, not drawn at zero.
    assert all(s.label.split()[0] != "s3" for s in level_spans(_super_outcome(), {}))
    focus = LevelOutcome(
        level="subgraph", agent="Focus Agent", candidate_ids=["m1"],
        evidence_selection={"selected_ids": ["m1_bin02"], "selected_windows": [[60.0, 90.0]]},
    )  # fmt: skip
    [clip] = [s for s in level_spans(focus, {"m1": (0.0, 240.0)}) if s.role == "clip"]
    assert (clip.start, clip.end, clip.label) == (60.0, 90.0, "m1_bin02 (evidence clip)")


def test_timeline_geometry_maps_video_time_onto_the_plot_area() -> None:
    layout = TimelineLayout(width=1000, gutter=100, right=0)  # plot: x 100..1000 = 900 px
    spans = [
        Span("super", "selected", 300.0, 600.0, "a"),
        Span("super", "candidate", 0.0, 1200.0, "b"),
        Span("super", "frame", 600.0, 600.0, "f"),
        Span("super", "visual", 1199.9, 1500.0, "beyond the end"),
    ]
    lanes = [("super", spans), ("macro", [Span("macro", "selected", 0.0, 0.1, "tiny")])]
    boxes = layout_boxes(lanes, 1200.0, layout)
    by_label = {box.label: box for box in boxes}
    assert by_label["a"].x == pytest.approx(100 + 900 * 0.25)
    assert by_label["a"].width == pytest.approx(900 * 0.25)
    assert by_label["b"].width == pytest.approx(900)
    assert (by_label["f"].x, by_label["f"].width) == (pytest.approx(550.0), 1.0)
    # Past the end is clamped to the plot; a tiny span keeps a visible width inside it.
    edge = by_label["beyond the end"]
    assert edge.x + edge.width == pytest.approx(1000) and edge.width == layout.min_width
    assert by_label["tiny"].width == layout.min_width
    # Lanes stack; the candidate is drawn before (under) the selection of its lane.
    assert by_label["tiny"].y == by_label["a"].y + layout.lane
    labels = [box.label for box in boxes]
    assert labels.index("b") < labels.index("a")


def test_ticks_and_duration() -> None:
    assert axis_ticks(1200.0) == [i * 120.0 for i in range(11)]
    assert axis_ticks(45.0) == [0, 5, 10, 15, 20, 25, 30, 35, 40, 45]
    assert axis_ticks(0.0) == [0.0]
    assert len(axis_ticks(30 * 3600.0)) <= 11
    lanes = [("super", [Span("super", "visual", 0.0, 1300.0, "w")])]
    assert timeline_duration(1200.0, lanes) == 1300.0  # stretched to what was drawn
    assert timeline_duration(None, []) == 0.0


# --------------------------------------------------------------------------- composite memory


def _explored_levels(memory) -> list[LevelOutcome]:
    """A Super level with a protected, a compressed and an untouched node; a Skim level with
    a rewrite, a tiny summary and an untouched node; a Focus level under one MacroEvent."""
    supers = [s.id for s in memory.super_events()]
    static = {i: f"Stored text of {i}." for i in supers}
    refined = dict(static)
    refined[supers[0]] = f"Stored text of {supers[0]}.\n[Visual] The display reads 220°C."
    refined[supers[1]] = "Short."
    macros = [m.id for s in supers for m in memory.macro_events(s)][:3]
    macro_static = {i: f"Stored macro {i}." for i in macros}
    macro_refined = dict(macro_static)
    macro_refined[macros[0]] = f"{macros[0]} rewritten with the oven setting."
    macro_refined[macros[1]] = "Prep"  # the ≤10-character summary of an irrelevant node
    return [
        LevelOutcome(level="super", agent="Overview Agent", candidate_ids=supers,
                     refined=refined, static=static, protected_ids=[supers[0]],
                     selected_ids=[supers[0]]),
        LevelOutcome(level="macro", agent="Skim Agent", candidate_ids=macros,
                     refined=macro_refined, static=macro_static, selected_ids=[macros[0]]),
        LevelOutcome(level="subgraph", agent="Focus Agent", candidate_ids=[macros[0]],
                     refined={macros[0]: "- slot [10:15-10:35] oven display 220°C"},
                     static={macros[0]: "Evidence under it"}, stop=True),
    ]  # fmt: skip


def test_refined_compressed_and_kept_parts_of_an_assembled_memory() -> None:
    memory = open_memory(SAMPLE)
    levels = _explored_levels(memory)
    text = assemble(memory, levels, [], macros_shown="candidates").text
    parts = memory_parts(text, levels)
    assert "\n".join(part.text for part in parts) == text  # nothing lost or reordered
    status = {(p.level, p.node_id): p.status for p in parts if p.node_id}
    supers = levels[0].candidate_ids
    macros = levels[1].candidate_ids
    assert status[("super", supers[0])] == "refined"
    assert status[("super", supers[1])] == "compressed"
    assert status[("super", supers[2])] == "kept"
    assert status[("macro", macros[0])] == "refined"
    assert status[("macro", macros[1])] == "compressed"
    assert status[("macro", macros[2])] == "kept"
    assert status[("subgraph", macros[0])] == "refined"
    focus = next(p for p in parts if p.level == "subgraph")
    assert focus.text.startswith("    Evidence:") and "220°C" in focus.text
    assert parts[0].status == "structure" and parts[0].text.startswith("Video: ")
    assert node_statuses(levels)[("macro", macros[1])] == "compressed"
    # The fallback for traces without recorded times reads the same headers back.
    duration, times = times_from_memory_text(text, {*supers, *macros})
    assert duration == memory.duration
    assert times[macros[0]] == (
        memory.time_range(macros[0]).start,
        memory.time_range(macros[0]).end,
    )


@pytest.mark.parametrize(
    ("shown", "stopped", "expected"),
    [
        ("selected", False, [0]),  # the paper: the Skim agent's selection only
        ("candidates", False, [0, 1, 2]),  # every MacroEvent it examined
        ("selected", True, [0, 1, 2]),  # stopped at Macro: its path ends there, all kept
    ],
)
def test_the_composite_shows_the_macro_events_the_skim_agent_selected(
    shown, stopped, expected
) -> None:
    memory = open_memory(SAMPLE)
    levels = _explored_levels(memory)
    if stopped:
        levels = [levels[0], levels[1].model_copy(update={"selected_ids": [], "stop": True})]
    macros = levels[1].candidate_ids
    composite = assemble(memory, levels, [], macros_shown=shown)
    headed = [i for i, m in enumerate(macros) if f"  {m} [" in composite.text]
    assert headed == expected
    everything = assemble(memory, levels, [], macros_shown="candidates")
    assert (composite.tokens < everything.tokens) is (expected != [0, 1, 2])


# --------------------------------------------------------------------------- escaping


def _hostile_trace() -> Result:
    obs = Observation(
        kind="asr", level="super", source_id="A1", instruction=PAYLOAD, windows=[(0.0, 60.0)],
        result=PAYLOAD, uncertainty=PAYLOAD, evidence_lines=[(1.0, 3.0, PAYLOAD)],
        unmatched_evidence=[PAYLOAD], transcript_lines=4,
        images=[ImageRef(label=PAYLOAD, timestamps=[5.0], sha256="0" * 16, bytes=10)],
    )  # fmt: skip
    level = LevelOutcome(
        level="super", agent=PAYLOAD, candidate_ids=[PAYLOAD], selected_ids=[PAYLOAD],
        refined={PAYLOAD: PAYLOAD}, static={PAYLOAD: "x"}, observations=[obs],
        plan={"thought": PAYLOAD}, instruction_out=PAYLOAD, reason=PAYLOAD, notes=[PAYLOAD],
    )  # fmt: skip
    return Result(
        question_id=PAYLOAD, run_id=PAYLOAD, question=PAYLOAD, options=[f"A. {PAYLOAD}"],
        answer="A", reasoning=PAYLOAD, answer_source="answer", variant=PAYLOAD,
        memory_text=f"Video: r [00:00-01:00] {PAYLOAD}\nSuperEvents:\n{PAYLOAD} [00:00-01:00] x",
        memory_tokens=5, levels=[level], handoff_trace=PAYLOAD, trace=Trace(), prompt_hashes={},
        handoff=[HandoffEntry(agent=PAYLOAD, level="super", instruction=PAYLOAD, stop=False)],
        degraded=[Degradation(kind="asr_lost", level="super", what=PAYLOAD, why=PAYLOAD)],
        usage=UsageSummary.from_dict(
            {"calls": 1, "cost_usd": None, "by_role": {PAYLOAD: {"calls": 1}}}
        ),
        observation_disabled=PAYLOAD, memory_source=PAYLOAD, video_path=PAYLOAD,
        video_duration_s=60.0, node_times={PAYLOAD: (0.0, 60.0)},
    )  # fmt: skip


def test_all_memory_and_model_text_is_escaped() -> None:
    trace = _hostile_trace()
    page = question_page(trace, thumbnails_for(trace))
    fragment = question_fragment(trace)
    for html in (page, fragment):
        assert "<img src=x" not in html and '"><img' not in html
        assert "dataset.pwned" in html  # shown as text...
        assert "&lt;script&gt;document" in html and "&quot;&gt;&lt;img" in html
    assert page.count("<script") == 1  # ...and the page's own script is the only one
    assert "<script" not in fragment  # notebooks get no script at all
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    # The video path it records is not a file here: placeholders, and the page says why.
    assert "the video was not available" in page and 'class="vt-ph"' in page


def _four_options(answer: str) -> Result:
    return Result(
        question_id="q1", question="Which gate?", options=["A. one", "B. two", "C. three"],
        answer=answer, reasoning="", answer_source="answer", variant="full", memory_text="",
        memory_tokens=0, levels=[], handoff_trace="", trace=Trace(), prompt_hashes={},
        usage=UsageSummary.from_dict({"calls": 0}),
    )  # fmt: skip


def _options_list(page: str) -> str:
    start = page.index('<ul class="vt-options">')
    return page[start : page.index("</ul>", start)]


def test_the_tick_marks_the_right_option_and_chosen_marks_the_answer() -> None:
    # A wrong answer: ✓ on the right option (B), "chosen" and ✗ on the answer's (A).
    wrong = _options_list(question_page(_four_options("A"), correct="B"))
    assert '<li class="vt-chosen"><span class="vt-mark vt-wrong"' in wrong
    assert '✗</span>A. one <span class="vt-tag-chosen">chosen</span></li>' in wrong
    assert '<li class="vt-correct"><span class="vt-mark vt-right"' in wrong
    assert "✓</span>B. two</li>" in wrong
    assert wrong.count("✓") == 1 and "chosen" not in wrong.split("B. two")[1]
    page = question_page(_four_options("A"), correct="B")
    assert "✗ wrong (the right answer is B)" in page
    # A right answer: one option, both chosen and ticked.
    right = _options_list(question_page(_four_options("B"), correct="B"))
    assert right.count("✓") == 1 and right.count(">chosen<") == 1
    assert '<li class="vt-chosen vt-correct">' in right
    assert "✓ right" in question_page(_four_options("B"), correct="B")
    # No answer key: the chosen option says so, and nothing is ticked as right.
    unknown = question_page(_four_options("C"))
    assert "✓" not in _options_list(unknown) and "✗" not in unknown
    assert 'C. three <span class="vt-tag-chosen">chosen</span>' in unknown
    assert "✓ right" not in unknown and "✗ wrong" not in unknown


def test_one_page_per_question_marks_each_against_its_answer_key(tmp_path: Path) -> None:
    results = [_four_options("A"), replace(_four_options("C"), question_id="q2")]
    pages = write_question_pages(results, tmp_path, answers={"q1": "A", "q2": "B"})
    first, second = (path.read_text(encoding="utf-8") for path in pages)
    assert "✓ right" in first and '<li class="vt-chosen vt-correct">' in first
    assert "✗ wrong (the right answer is B)" in second


# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def answered(embedder, video: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """One real question whose model text carries markup; its result and saved trace."""
    scripted = ScriptedModel(
        display=PAYLOAD, final_answer={"reasoning": f"Because {PAYLOAD}", "answer": "B"}
    )
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer() as server:
        patch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789abcdefXYZ")
        patch.delenv("OPENAI_BASE_URL", raising=False)
        server.on(None, scripted)
        result = ask(make_vt(server, embedder), video)
    trace = result.save_trace(tmp_path_factory.mktemp("trace") / "q.json")
    yield result, trace


def test_a_run_records_the_video_and_node_times_its_picture_needs(answered, video) -> None:
    result, trace = answered
    assert result.video_path == str(video.resolve())
    assert result.video_duration_s == pytest.approx(1200.0)
    assert result.node_times["super_02"] == (420.0, 900.0)
    assert set(result.levels[1].candidate_ids) <= set(result.node_times)
    loaded = load_question_trace(trace)
    assert loaded.node_times == result.node_times and loaded.video_path == result.video_path
    # A trace saved before these were recorded still gets them, from the memory's headers.
    data = json.loads(trace.read_text(encoding="utf-8"))
    del data["node_times"], data["video"]
    old = trace.with_name("old.json")
    old.write_text(json.dumps(data), encoding="utf-8")
    legacy = load_question_trace(old)
    assert legacy.video_duration_s == 1200.0 and legacy.video_path is None
    assert legacy.node_times["macro_0002"] == result.node_times["macro_0002"]


@pytest.mark.browser
def test_inspect_writes_a_page_that_renders_in_a_real_browser(
    answered, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, trace = answered
    page = tmp_path / "q.html"
    assert main(["inspect", str(trace), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "Overview Agent" in out and f"wrote {page}" in out
    html = page.read_text(encoding="utf-8")
    # Every image the agents saw, decoded again from the video the trace recorded.
    refs = {ref.sha256 for o in result.levels for obs in o.observations for ref in obs.images}
    assert html.count('<img src="data:image/jpeg;base64,') == sum(
        len(obs.images) for o in result.levels for obs in o.observations
    )
    assert len(refs) > 20 and "frames decoded again from" in html
    assert "vt-mp-refined" in html and "Find the oven setting." in html
    assert PAYLOAD in result.memory_text and PAYLOAD in result.reasoning
    assert "&lt;script&gt;document" in html and "<img src=x" not in html

    root = root_element(browse(page, tmp_path, "--dump-dom").stdout)
    assert 'data-vt-ready="1"' in root  # the page's script ran to its end
    assert "data-js-errors" not in root  # no script error, no image failed to load
    assert "data-pwned" not in root  # the markup in model text stayed text

    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,900")
    image = np.asarray(Image.open(shot).convert("RGB"))
    plot = TimelineLayout().plot_width  # drawn 1:1: the page is wider than the SVG
    # Each level's selection in its colour and its observed window in its shade, each as
    # long as its share of the 20-minute video.
    [overview, skim, focus] = [o.observations[0].windows[0] for o in result.levels]
    expected = {
        LEVEL_COLOURS["super"]: (900 - 420) / 1200,  # super_02
        LEVEL_COLOURS["macro"]: (660 - 420) / 1200,  # macro_0002
        LEVEL_COLOURS["subgraph"]: 30 / 1200,  # one 30-second evidence clip
        LEVEL_SHADES["super"]: (overview[1] - overview[0]) / 1200,
        LEVEL_SHADES["macro"]: (skim[1] - skim[0]) / 1200,
        LEVEL_SHADES["subgraph"]: (focus[1] - focus[0]) / 1200,
    }
    for colour, share in expected.items():
        assert longest_run(image, colour) == pytest.approx(plot * share, abs=3), colour


def test_notebook_view_and_one_page_per_question(answered, tmp_path: Path) -> None:
    result, _ = answered
    fragment = result._repr_html_()
    assert "<script" not in fragment and "vt-timeline" in fragment
    assert fragment.count("data:image/jpeg;base64,") > 20  # the images the result kept
    failure = QuestionFailure(question_id="q2", error="boom", error_type="ModelCallError")
    twin = Result(**{**result.__dict__, "question_id": "a/b c"})
    pages = write_question_pages([result, failure, twin, twin], tmp_path / "pages")
    assert [p.name for p in pages] == [f"{result.question_id}.html", "a_b_c.html", "a_b_c-2.html"]
    text = pages[0].read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "the images the agents were sent" in text


def test_a_video_other_than_the_runs_gives_no_frames(answered, tmp_path: Path) -> None:
    from videotapestry.testing.media import make_test_video

    _, trace = answered
    other = make_test_video(tmp_path / "other.mp4", 20, fps=2, size=(160, 90)).path
    loaded = load_question_trace(trace)
    refs = [ref for o in loaded.levels for obs in o.observations for ref in obs.images]
    thumbs = from_video(other, refs, fingerprint=loaded.video_fingerprint)
    assert thumbs.urls == {} and "not the video this run saw" in thumbs.missing
    page = tmp_path / "q.html"
    assert main(["inspect", str(trace), "--html", str(page), "--video", str(other)]) == 0
    assert "not the video this run saw" in page.read_text(encoding="utf-8")


def test_inspect_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_trace = tmp_path / "x.json"
    not_trace.write_text('{"format": 1}', encoding="utf-8")
    assert main(["inspect", str(not_trace), "--html", str(tmp_path / "x.html")]) == 2
    assert "is not a trace this version reads" in capsys.readouterr().err
    assert main(["inspect", str(SAMPLE), "--video", "v.mp4"]) == 2
    assert "--video applies to a trace JSON" in capsys.readouterr().err
    damaged = tmp_path / "d.json"
    damaged.write_text('{"format": 2, "handoff": [], "result": {}}', encoding="utf-8")
    assert main(["inspect", str(damaged)]) == 2
    err = capsys.readouterr().err
    assert "fails validation: result.question_id: Field required" in err
    assert "\n" not in err.strip()
