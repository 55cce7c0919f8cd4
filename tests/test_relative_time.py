"""Questions relative to now (issue 42 item 4, SPEC §16): "in the last 10 minutes", "just
now", "5 minutes ago", "since the start" read against the time the memory covers, and a
question about a moment past it answered with what the memory covers instead of a guess."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from method_support import run_cli_output

from videotapestry.agents.overview import locator_text
from videotapestry.agents.relative_time import (
    QUESTION_WINDOW,
    RelativeTime,
    WindowChoice,
    WindowLook,
    choose_in_window,
    look_in_window,
    meets_window,
    question_windows,
    resolve_relative_time,
    window_hints,
    with_relative_time,
)
from videotapestry.agents.state import MomentHint, QuestionInput

#: 10:00 covered: "the last N minutes" end there.
NOW = 600.0


def resolved(question: str, now_s: float = NOW, *, live: bool = False) -> RelativeTime:
    return resolve_relative_time(question, now_s, live=live)


@pytest.mark.parametrize(
    ("question", "expected", "window"),
    [
        (
            "What was on the whiteboard in the last 2 minutes?",
            "What was on the whiteboard between 08:00 and 10:00?",
            (480.0, 600.0),
        ),
        ("What happened in the past 10 minutes?", "What happened between 00:00 and 10:00?", None),
        ("Who spoke over the last minute?", "Who spoke between 09:00 and 10:00?", (540.0, 600.0)),
        (
            "What changed during the last ten minutes?",
            "What changed between 00:00 and 10:00?",
            None,
        ),
        ("What was said in the last 30 seconds?", "What was said between 09:30 and 10:00?", None),
        ("What was said in the last thirty secs?", "What was said between 09:30 and 10:00?", None),
        ("Who came in within the last twenty-five seconds?", None, (575.0, 600.0)),
        ("What did she say just now?", "What did she say between 09:00 and 10:00?", None),
        (
            "Which card was shown a moment ago?",
            "Which card was shown between 09:00 and 10:00?",
            None,
        ),
        ("Who waved a few seconds ago?", "Who waved between 09:00 and 10:00?", None),
        (
            "What was on the board 5 minutes ago?",
            "What was on the board at about 05:00 (between 04:30 and 05:30)?",
            (270.0, 330.0),
        ),
        ("What was shown two minutes ago?", None, (450.0, 510.0)),
        ("How many people have spoken so far?", None, (0.0, 600.0)),
        (
            "Since the start, how many people spoke?",
            "Between 00:00 and 10:00, how many people spoke?",
            (0.0, 600.0),
        ),
        (
            "Summarize everything from the beginning until now.",
            "Summarize everything between 00:00 and 10:00.",
            None,
        ),
    ],
)
def test_phrasings_relative_to_now_become_explicit_windows(
    question: str, expected: str | None, window: tuple[float, float] | None
) -> None:
    read = resolved(question)
    assert read.asked == question and read.past_covered == ""
    if expected is not None:
        assert read.question == expected
    if window is not None:
        assert read.window == pytest.approx(window)
    assert read.window is not None and 0.0 <= read.window[0] <= read.window[1] <= NOW


def test_an_hour_against_a_long_recording_and_half_an_hour() -> None:
    read = resolved("What happened in the last hour?", 2 * 3600.0)
    assert read.question == "What happened between 1:00:00 and 2:00:00?"
    half = resolved("What happened over the last half hour?", 2 * 3600.0)
    assert half.window == (5400.0, 7200.0)


def test_a_window_reaching_before_the_start_is_clipped_at_zero() -> None:
    read = resolved("What happened in the last 10 minutes?", 200.0)
    assert read.question == "What happened between 00:00 and 03:20?"
    assert read.window == (0.0, 200.0)
    near = resolved("What was shown 3 minutes ago?", 200.0)
    assert near.window == pytest.approx((0.0, 50.0))
    assert "at about 00:20 (between 00:00 and 00:50)" in near.question


@pytest.mark.parametrize(
    "question",
    [
        "What is the code for gate B?",
        "Who arrived at the last minute?",  # an idiom, not a window
        "What happened in the last minutes?",  # how many is not said
        "Which tent comes after the bridge?",
        "From the beginning to the end, what changes?",  # the whole video, said as such
        "Since the start of the second half, who scored?",
        "The meeting was set for 10:30 am; who was late?",  # a time of day, not of the video
        "What happens at 04:10?",  # inside the covered time
        "Did he spend 20 minutes in the kitchen?",  # a duration, not a moment
    ],
)
def test_nothing_changes_when_nothing_is_relative_to_now(question: str) -> None:
    read = resolved(question)
    assert read == RelativeTime(question)
    assert read.window is None and not read.asked


def test_a_clock_time_past_the_covered_time_is_said_not_guessed() -> None:
    read = resolved("What is on screen at 05:00?", 200.0, live=True)
    assert read.past_covered == "the recording so far covers 00:00-03:20; 05:00 is past that"
    assert read.question == "What is on screen at 05:00?" and read.windows == ()
    done = resolved("What happens at minute 4 and at 1:02:03?", 200.0)
    assert done.past_covered == ("the video covers 00:00-03:20; 1:02:03, minute 4 are past that")
    # Within a second of the covered time is covered (clock times are whole seconds).
    assert resolved("What is shown at 03:21?", 200.4).past_covered == ""
    assert resolved("What is shown at 03:22?", 200.4).past_covered != ""
    assert resolved("What happens 5 minutes in?", 200.0).past_covered.endswith(
        "5 minutes in is past that"
    )
    assert resolved("Who talks ten minutes into the video?", 200.0).past_covered.endswith(
        "ten minutes into the video is past that"
    )


def test_a_moment_ago_before_the_start_is_said_too() -> None:
    read = resolved("What was on the board ten minutes ago?", 200.0, live=True)
    assert read.past_covered == (
        "the recording so far covers 00:00-03:20; 'ten minutes ago' is before its start"
    )


def test_the_window_reaches_the_overview_agent_and_the_users_words_are_kept() -> None:
    library = MomentHint(start_s=10.0, end_s=20.0, text="gate", level="MacroEvent")
    item = QuestionInput(question="What was shown in the last 2 minutes?", hints=[library])
    read = resolved(item.question)
    asked = with_relative_time(item, read)
    assert asked.question == "What was shown between 08:00 and 10:00?"
    assert asked.asked == "What was shown in the last 2 minutes?"
    assert [h.level for h in asked.hints] == [QUESTION_WINDOW, "MacroEvent"]
    text = locator_text(None, asked.hints)
    assert "question_window (the time the question asks about):\n1. [08:00-10:00]" in text
    assert "library_search_hits" in text and "2. [00:10-00:20]" in text
    # A follow-up resolved first keeps its user's words.
    follow = QuestionInput(question="x between 08:00 and 10:00", asked="x just now")
    assert with_relative_time(follow, read).asked == "x just now"
    # Nothing resolved: the item as it was.
    assert with_relative_time(item, RelativeTime(item.question)) is item
    assert with_relative_time(item, None) is item
    assert window_hints(RelativeTime("q")) == []


# --------------------------------------------------------------------------- the levels follow it

#: MacroEvents of a 10-minute memory; "the last 2 minutes" is 08:00-10:00.
MACROS = {"m1": (0.0, 300.0), "m2": (300.0, 480.0), "m3": (480.0, 540.0), "m4": (540.0, 600.0)}
LAST_TWO = [(480.0, 600.0)]


def test_the_question_windows_are_read_from_its_hints_only() -> None:
    library = MomentHint(start_s=10.0, end_s=20.0, text="gate", level="MacroEvent")
    item = with_relative_time(
        QuestionInput(question="What was shown in the last 2 minutes?", hints=[library]),
        resolved("What was shown in the last 2 minutes?"),
    )
    assert question_windows(item.hints) == LAST_TWO
    assert question_windows([library]) == []


def test_a_node_that_only_touches_the_window_is_outside_it() -> None:
    assert meets_window((300.0, 480.0), (480.0, 600.0)) is False
    assert meets_window((470.0, 481.0), (480.0, 600.0)) is True
    # A moment (zero length) meets what contains it, ends included.
    assert meets_window((540.0, 600.0), (600.0, 600.0)) is True
    assert meets_window((500.0, 500.0), (480.0, 600.0)) is True


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        (["m3"], WindowChoice(("m3",))),  # inside: kept as chosen
        (["m4", "m3"], WindowChoice(("m4", "m3"))),  # order kept
        (["m2", "m4"], WindowChoice(("m4",), outside=("m2",))),  # kept to the window
        (["m1", "m2"], WindowChoice(("m3", "m4"), outside=("m1", "m2"), placed=True)),
        (["m1", "m1"], WindowChoice(("m3", "m4"), outside=("m1",), placed=True)),
        (["x9", "m2"], WindowChoice(("m3", "m4"), outside=("m2",), placed=True)),
    ],
)
def test_a_selection_is_kept_to_the_window_or_placed_on_it(
    chosen: list[str], expected: WindowChoice
) -> None:
    choice = choose_in_window(chosen, MACROS, LAST_TWO)
    assert choice == expected
    assert choice.moved == (expected.placed or bool(expected.outside))


def test_a_selection_without_a_window_or_anything_to_place_it_on_is_unchanged() -> None:
    assert choose_in_window(["m1", "m2"], MACROS, []) == WindowChoice(("m1", "m2"))
    assert not choose_in_window(["m1"], MACROS, []).moved
    assert choose_in_window([], MACROS, LAST_TWO) == WindowChoice(())  # a stop stays a stop
    # The candidates all lie before the window: nothing to place the choice on.
    early = {"m1": MACROS["m1"], "m2": MACROS["m2"]}
    assert choose_in_window(["m1"], early, LAST_TWO) == WindowChoice(("m1",))
    # Ids the spans do not know are the caller's to validate.
    assert choose_in_window(["x9", "m4"], MACROS, LAST_TWO) == WindowChoice(("x9", "m4"))


def test_a_look_is_cut_to_the_window_or_placed_on_it() -> None:
    intervals = list(MACROS.values())
    inside = ((480.0, 540.0), (540.0, 600.0))
    # The intervals the level may look at are the candidates' time inside the window.
    assert look_in_window([], intervals, LAST_TWO) == WindowLook(inside)
    assert look_in_window([(500.0, 560.0)], intervals, LAST_TWO) == WindowLook(inside)
    reaching = look_in_window([(450.0, 500.0)], intervals, LAST_TWO)
    assert reaching == WindowLook(inside, outside=((450.0, 500.0),)) and reaching.moved
    away = look_in_window([(60.0, 120.0), (400.0, 480.0)], intervals, LAST_TWO)
    assert away == WindowLook(inside, outside=((60.0, 120.0), (400.0, 480.0)), placed=True)
    # Only the part of a candidate inside the window: a long MacroEvent is cut.
    assert look_in_window([], [(300.0, 600.0)], LAST_TWO).intervals == ((480.0, 600.0),)
    # Malformed planned ranges are left to the observation's own validation.
    assert look_in_window([(560.0, 500.0)], intervals, LAST_TWO) == WindowLook(inside)


def test_a_look_without_a_window_or_candidates_inside_it_is_unchanged() -> None:
    intervals = [(0.0, 300.0), (300.0, 480.0)]
    assert look_in_window([(60.0, 90.0)], intervals, []) == WindowLook(tuple(intervals))
    assert look_in_window([(60.0, 90.0)], intervals, LAST_TWO) == WindowLook(tuple(intervals))
    assert not look_in_window([(60.0, 90.0)], intervals, LAST_TWO).moved


def test_a_levels_selection_outside_the_window_is_placed_on_it_and_said() -> None:
    from types import SimpleNamespace

    from videotapestry.agents.level_protocol import LevelLog, selection_in_window
    from videotapestry.agents.rules import ValidatedDecision
    from videotapestry.memory import open_memory

    memory = open_memory(Path(__file__).parent / "fixtures" / "memdreamer_sample")
    ctx: Any = SimpleNamespace(memory=memory)  # only its memory's times are read
    macros = [f"macro_000{k}" for k in range(6)]  # the last two: 15:00-17:30, 17:30-20:00
    question = "What was shown in the last 2 minutes?"
    asked = with_relative_time(QuestionInput(question=question), resolved(question, 1200.0))
    decision = ValidatedDecision(("macro_0001",), "look closer", False, None, "")
    log = LevelLog("macro")
    moved = selection_in_window(ctx, decision, asked, macros, log)
    assert moved.selected_ids == ("macro_0005",) and moved.instruction == "look closer"
    [warning] = log.warnings
    assert (warning.kind, warning.level, warning.what) == (
        "moved_to_question_window",
        "macro",
        "the decision's selection",
    )
    assert warning.why == (
        "macro_0001 lay outside the time the question names ([18:00-20:00]); placed on macro_0005"
    )
    assert log.notes == [f"the decision's selection: {warning.why}"]
    # Inside the window, without one, or stopping: as it was, and nothing said.
    inside = ValidatedDecision(("macro_0005",), "x", False, None, "")
    stop = ValidatedDecision((), None, True, None, "")
    quiet = LevelLog("macro")
    assert selection_in_window(ctx, inside, asked, macros, quiet) is inside
    assert selection_in_window(ctx, stop, asked, macros, quiet) is stop
    plain = QuestionInput(question="What was shown at the gate?")
    assert selection_in_window(ctx, decision, plain, macros, quiet) is decision
    assert quiet.warnings == [] and quiet.notes == []


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def sample_memory(demo_cache: Path) -> tuple[Path, Path]:
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    return video, demo_memory_dir(video, demo_cache)


def _ask(
    capsys: pytest.CaptureFixture[str],
    video: Path,
    memory: Path,
    question: str,
    trace: Path,
    *overrides: str,
) -> dict:
    code, out, err = run_cli_output(
        capsys,
        "ask", str(video), "--memory", str(memory), "--question", question,
        "--profile", "offline", "--json", "--trace", str(trace),
        "-o", "question.relative_time=always", *overrides,
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


LAST_TWO_MINUTES = "What was on screen in the last 2 minutes?"


def _ask_last_two_minutes(
    capsys: pytest.CaptureFixture[str],
    sample_memory: tuple[Path, Path],
    trace: Path,
    *overrides: str,
) -> tuple[dict, float]:
    """``LAST_TWO_MINUTES`` asked of the sample; the result and the memory's duration."""
    from videotapestry.memory import open_memory

    video, memory = sample_memory
    result = _ask(capsys, video, memory, LAST_TWO_MINUTES, trace, *overrides)
    return result, open_memory(memory).duration


@pytest.mark.slow
def test_the_last_two_minutes_cites_only_moments_inside_them(
    capsys: pytest.CaptureFixture[str], sample_memory: tuple[Path, Path], tmp_path: Path
) -> None:
    result, duration = _ask_last_two_minutes(capsys, sample_memory, tmp_path / "q.json")
    assert result["asked"] == LAST_TWO_MINUTES
    assert result["question"].startswith("What was on screen between ")
    sources = [s for c in result["citations"] for s in c["sources"]]
    assert sources, result
    start = duration - 120.0
    outside = [s for s in sources if s["start_s"] < start - 1.0 or s["end_s"] > duration + 1.0]
    assert outside == [], (start, duration, outside)
    # Every level looked inside the window: the Overview's look is placed on it (and widened
    # to its minimum span), the Skim and Focus agents' looks lie in it, and so does the
    # evidence the Focus agent was shown. The offline planners look elsewhere, and the
    # levels say that their looks were moved.
    trace = json.loads((tmp_path / "q.json").read_text())
    levels = {level["level"]: level for level in trace["levels"]}
    assert list(levels) == ["super", "macro", "subgraph"]
    overview_start, overview_end = levels["super"]["plan"]["visual_window"]
    assert overview_start <= start and duration <= overview_end + 1.0
    for name in ("macro", "subgraph"):
        looks = [w for o in levels[name]["observations"] for w in o["windows"]]
        assert looks, name
        assert all(start <= s and e <= duration for s, e in looks), (name, looks)
    times = trace["node_times"]
    assert all(times[i][1] > start for i in levels["macro"]["selected_ids"])
    moved = [(w["level"], w["what"]) for n in levels for w in levels[n]["warnings"]]
    assert ("macro", "the planned look") in moved, moved
    assert {w["kind"] for n in levels for w in levels[n]["warnings"]} == {
        "moved_to_question_window"
    }
    # ... and the answer carries the same warnings, for `ask` to print.
    assert [(w["level"], w["what"]) for w in result["warnings"]] == moved, result["warnings"]
    shown = [
        _line_span(match)
        for text in levels["subgraph"]["static"].values()
        for match in _EVIDENCE_LINE.finditer(text)
    ]
    assert shown and all(e > start for _, e in shown), shown


@pytest.mark.slow
def test_the_single_agent_looks_inside_the_window_too(
    capsys: pytest.CaptureFixture[str], sample_memory: tuple[Path, Path], tmp_path: Path
) -> None:
    result, duration = _ask_last_two_minutes(
        capsys, sample_memory, tmp_path / "q.json", "-o", "variant=single_agent"
    )
    trace = json.loads((tmp_path / "q.json").read_text())
    looks = [w for level in trace["levels"] for o in level["observations"] for w in o["windows"]]
    assert looks, trace["levels"]
    start = duration - 120.0

    # Frames inside the window; a grid look over it (widened to its minimum span).
    def inside(s: float, e: float) -> bool:
        return start - 1.0 <= s and e <= duration + 1.0

    def over(s: float, e: float) -> bool:
        return s <= start and duration <= e + 1.0

    assert all(inside(s, e) or over(s, e) for s, e in looks), (start, looks)
    assert any(inside(s, e) and e - s <= 121.0 for s, e in looks), looks  # frames, not a grid
    # The offline controller looks elsewhere first: each move onto the window is said.
    kinds = {w["kind"] for w in result["warnings"]}
    assert kinds == {"moved_to_question_window"}, result["warnings"]


#: One evidence node as the Focus agent is shown it: "- id [16:30-17:00] …", "- id [@16:36] …".
_EVIDENCE_LINE = re.compile(r"^- \S+ \[@?(\d[\d:]*)(?:-(\d[\d:]*))?\]", re.M)


def _line_span(match: re.Match[str]) -> tuple[float, float]:
    return _clock(match[1]), _clock(match[2] or match[1])


def _clock(text: str) -> float:
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


@pytest.mark.slow
def test_a_moment_past_the_memory_is_answered_with_what_it_covers(
    capsys: pytest.CaptureFixture[str], sample_memory: tuple[Path, Path], tmp_path: Path
) -> None:
    video, memory = sample_memory
    result = _ask(capsys, video, memory, "What is on screen at 59:00?", tmp_path / "q.json")
    assert result["answer_text"].startswith("the video covers 00:00-")
    assert result["answer_text"].endswith("59:00 is past that")
    assert result["citations"] == [] and result["degraded"] == []
    assert [w["kind"] for w in result["warnings"]] == ["question_past_covered"]
    assert result["usage"]["calls"] == 0 and result["levels_visited"] == []  # no agent guessed
    # As a person reads it: the message as the answer, and the warning saying why.
    code, out, err = run_cli_output(
        capsys,
        "ask", str(video), "--memory", str(memory), "--question", "What happens at 59:00?",
        "--profile", "offline", "--trace", str(tmp_path / "q2.json"),
        "-o", "question.relative_time=always",
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith("answer: the video covers 00:00-"), out
    assert "warning: setup: the question (answered without the agents) " in err, err
    assert "59:00 is past that" in err


def test_questions_are_read_against_now_for_live_memories_unless_configured() -> None:
    from videotapestry.agents.relative_time import relative_time_for

    question = "What happened in the last 2 minutes?"
    # The default: an ordinary memory (a benchmark's) keeps the question as written.
    assert relative_time_for(question, 600.0, mode="live", recording=None) is None
    live = relative_time_for(question, 600.0, mode="live", recording=True)
    assert live is not None and live.question == "What happened between 08:00 and 10:00?"
    ended = relative_time_for("What is at 12:00?", 600.0, mode="live", recording=False)
    assert ended is not None and ended.past_covered.startswith("the video covers")
    assert relative_time_for(question, 600.0, mode="always", recording=None) is not None
    assert relative_time_for(question, 600.0, mode="never", recording=True) is None
