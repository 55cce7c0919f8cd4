"""Questions relative to now (issue 42 item 4, SPEC §16): "in the last 10 minutes", "just
now", "5 minutes ago", "since the start" read against the time the memory covers, and a
question about a moment past it answered with what the memory covers instead of a guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from method_support import run_cli_output

from videotapestry.agents.overview import locator_text
from videotapestry.agents.relative_time import (
    QUESTION_WINDOW,
    RelativeTime,
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


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def sample_memory(demo_cache: Path) -> tuple[Path, Path]:
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    return video, demo_memory_dir(video, demo_cache)


def _ask(
    capsys: pytest.CaptureFixture[str], video: Path, memory: Path, question: str, trace: Path
) -> dict:
    code, out, err = run_cli_output(
        capsys,
        "ask", str(video), "--memory", str(memory), "--question", question,
        "--profile", "offline", "--json", "--trace", str(trace),
        "-o", "question.relative_time=always",
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_last_two_minutes_cites_only_moments_inside_them(
    capsys: pytest.CaptureFixture[str], sample_memory: tuple[Path, Path], tmp_path: Path
) -> None:
    from videotapestry.memory import open_memory

    video, memory = sample_memory
    duration = open_memory(memory).duration
    question = "What was on screen in the last 2 minutes?"
    result = _ask(capsys, video, memory, question, tmp_path / "q.json")
    assert result["asked"] == question
    assert result["question"].startswith("What was on screen between ")
    sources = [s for c in result["citations"] for s in c["sources"]]
    assert sources, result
    start = duration - 120.0
    outside = [s for s in sources if s["start_s"] < start - 1.0 or s["end_s"] > duration + 1.0]
    assert outside == [], (start, duration, outside)


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
