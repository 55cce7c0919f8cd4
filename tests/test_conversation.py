"""Follow-up questions: resolving "that" against the previous answer's citations, the
conversation API over the sample video with the offline model, and ``chat --script``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videotapestry.agents.follow_up import cited_moment, refers_back, resolve_follow_up
from videotapestry.agents.state import MAX_EARLIER_TURNS, EarlierTurn, earlier_turn_lines
from videotapestry.cli import main
from videotapestry.commands.chat import ChatTurn, parse_line, read_script
from videotapestry.config import VideoConfig
from videotapestry.errors import VideoTapestryError
from videotapestry.time_spans import overlaps
from videotapestry.video import FrameCache, open_video

GATE_B = (212.0, 257.0)  # the key slide: "Door code 4417"
GATE_C = (257.0, 322.0)  # the slide after it: "Door code 7457"
CODE_QUESTION = "What is the door code for Gate B, the delivery gate?"
AFTER_QUESTION = "What was on screen right after that?"


# --------------------------------------------------------------------------- pure rules


def turn(spans: list[tuple[float, float]]) -> EarlierTurn:
    return EarlierTurn(question="What is the code?", answer="4417", spans=spans)


def test_a_reference_to_the_previous_answer_becomes_its_cited_moment() -> None:
    history = [turn([(240.0, 243.5), (235.0, 235.5), (251.5, 252.5)])]
    follow = resolve_follow_up("What was on screen right after that?", history)
    assert follow.question == "What was on screen right after the moment at 03:55-04:12?"
    assert follow.asked == "What was on screen right after that?"
    assert follow.moment == (235.0, 252.5)
    before = resolve_follow_up("What did the speaker say just before this?", history)
    assert before.question == "What did the speaker say just before the moment at 03:55-04:12?"
    same = resolve_follow_up("Who was speaking at that moment?", history)
    assert same.question == "Who was speaking at the moment at 03:55-04:12?"
    following = resolve_follow_up("What came next?", history)
    assert following.question == "What came next, after the moment at 03:55-04:12?"


def test_only_the_latest_turn_is_pointed_at() -> None:
    history = [turn([(10.0, 20.0)]), turn([(600.0, 610.0)])]
    assert "10:00-10:10" in resolve_follow_up("And after that?", history).question


def test_a_question_that_names_its_moment_is_left_alone() -> None:
    history = [turn([(235.0, 252.5)])]
    for question in ("What is shown after the slide about tents?", "Which slide comes first?"):
        follow = resolve_follow_up(question, history)
        assert (follow.question, follow.asked, follow.unresolved) == (question, "", "")
    # "next to" is a place, not the moment after
    assert not refers_back("What is next to the stage?")
    # Without earlier turns there is nothing to point at, and nothing to report either.
    alone = resolve_follow_up("What happened after that?", [])
    assert (alone.question, alone.unresolved) == ("What happened after that?", "")


def test_pointing_at_an_answer_that_cited_nothing_is_reported_not_guessed() -> None:
    follow = resolve_follow_up("What happened after that?", [turn([])])
    assert follow.question == "What happened after that?"
    assert follow.asked == "" and follow.moment is None
    assert "cited no moment" in follow.unresolved
    assert cited_moment(turn([])) is None


def test_prompts_show_the_latest_earlier_turns_with_their_times() -> None:
    history = [
        EarlierTurn(question=f"q{n}", answer=f"a{n}", spans=[(60.0 * n, 60.0 * n + 5)])
        for n in range(1, 7)
    ]
    lines = earlier_turn_lines(history)
    assert len(lines) == MAX_EARLIER_TURNS
    assert lines[0] == "3. Asked: q3 | Answered: a3 | Cited: 03:00-03:05"
    assert lines[-1].startswith("6. Asked: q6")
    silent = earlier_turn_lines([EarlierTurn(question="q", answer="", spans=[])])
    assert silent == ["1. Asked: q | Answered: (no answer) | Cited: nothing"]


def test_readers_share_the_frames_one_of_them_decoded(video: Path) -> None:
    times = [12.0, 30.5, 61.0]
    one_frame = 320 * 180 * 3
    cache = FrameCache(max_bytes=8 * one_frame)
    with open_video(video, VideoConfig(), frame_cache=cache) as reader:
        first = reader.frames_at(times)
        with open_video(video, VideoConfig(), frame_cache=cache) as other:
            again = other.frames_at([*times, 90.0])
            assert other.reused_frames == 3 and reader.reused_frames == 0
        assert [f.image is g.image for f, g in zip(first, again, strict=False)] == [True] * 3
        assert again[3].index == round(90.0 * reader.info.fps)
        assert cache.bytes == 4 * one_frame
        reader.frames_at([float(t) for t in range(100, 120)])  # pushes the old ones out
        assert cache.bytes <= cache.max_bytes and cache.stats.evicted == 16
        reader.frames_at(times)
        assert reader.reused_frames == 0
    # Another decoded size is another frame: never served from the cache.
    with open_video(video, VideoConfig(decoded_max_side=160), frame_cache=cache) as small:
        assert small.frames_at(times[:1])[0].image.shape[1] == 160
        assert small.reused_frames == 0
    with open_video(video, VideoConfig()) as plain:
        plain.frames_at(times)
        plain.frames_at(times)
        assert plain.reused_frames == 0


def test_chat_scripts_are_read_as_text_json_or_json_lines(tmp_path: Path) -> None:
    text = tmp_path / "turns.txt"
    text.write_text("# warm-up\nWhat is shown?\n\nWhich gate? | A. Gate A | B. Gate B\n")
    assert read_script(text) == [
        ChatTurn("What is shown?"),
        ChatTurn("Which gate?", ["A. Gate A", "B. Gate B"]),
    ]
    listed = tmp_path / "turns.json"
    listed.write_text(json.dumps(["First?", {"question": "Second?", "options": ["A. x", "B. y"]}]))
    assert read_script(listed) == [ChatTurn("First?"), ChatTurn("Second?", ["A. x", "B. y"])]
    lines = tmp_path / "turns.jsonl"
    lines.write_text('{"question": "One?"}\n\n{"question": "Two?"}\n')
    assert [t.question for t in read_script(lines)] == ["One?", "Two?"]
    assert parse_line("   ") is None
    for body, problem in [
        ('[{"options": []}]', "needs a 'question'"),
        ('{"question": "a", "options": "A. x"}', "must be a list"),
        ("[1, 2", "not valid JSON"),
        ("# only a comment\n", "holds no question"),
    ]:
        bad = tmp_path / "bad.txt"
        bad.write_text(body)
        with pytest.raises(VideoTapestryError, match=problem):
            read_script(bad)
    with pytest.raises(VideoTapestryError, match="cannot read"):
        read_script(tmp_path / "missing.txt")


# --------------------------------------------------------------------------- the sample video


@pytest.fixture(scope="module")
def sample(demo_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The sample video and its memory (built once per session with the offline model), and
    overrides that keep this module's model replies in a cache of its own: every answer
    here is computed, none replayed from another module's run."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    root = tmp_path_factory.mktemp("conversation")
    video = sample_video_path()
    return {
        "video": video,
        "memory": demo_memory_dir(video, demo_cache),
        "overrides": [f"cache.path={root / 'responses.sqlite'}"],
    }


def spans_of(result: object) -> list[tuple[float, float]]:
    return [span for citation in result.citations for span in citation.spans]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_follow_up_answers_from_the_moment_after_the_previous_citation(
    sample: dict[str, object],
) -> None:
    from videotapestry.api import VideoTapestry

    vt = VideoTapestry(None, profile="offline", overrides=sample["overrides"])  # type: ignore[arg-type]

    async def two_turns() -> tuple[object, object, int]:
        with vt.conversation(sample["video"], sample["memory"]) as chat:  # type: ignore[arg-type]
            first = await chat.aask(CODE_QUESTION)
            second = await chat.aask(AFTER_QUESTION)
            return first, second, chat.reused_frames

    first, second, reused = vt.run_sync(two_turns())
    assert "4417" in first.answer_text  # type: ignore[attr-defined]
    cited = spans_of(first)
    assert cited and overlaps(cited, [GATE_B])
    # An OCRText node ends at the next frame OCR read without its text: up to one OCR
    # interval after the text left the screen.
    moment_end = max(end for _, end in cited) - vt.config.builder.ocr.interval_s
    # The follow-up was given the moment, in the user's words and as resolved.
    assert second.asked == AFTER_QUESTION  # type: ignore[attr-defined]
    assert second.question.startswith("What was on screen right after the moment at 03:")  # type: ignore[attr-defined]
    # It answers with the slide after the key slide, and cites only what came after it.
    assert "7457" in second.answer_text  # type: ignore[attr-defined]
    assert "4417" not in second.answer_text  # type: ignore[attr-defined]
    after = spans_of(second)
    assert after and all(start >= moment_end for start, _ in after)
    assert overlaps(after, [GATE_C])
    assert not second.degraded  # type: ignore[attr-defined]
    # The second turn looked again at moments the first one had decoded.
    assert reused > 0


def test_the_same_follow_up_without_an_earlier_answer_to_point_at_is_reported(
    sample: dict[str, object],
) -> None:
    from videotapestry.api import VideoTapestry

    # The reference is resolved (or not) before any level runs: the memory-only variant is
    # enough to see what the result records.
    overrides = [*sample["overrides"], "variant=static_memory"]  # type: ignore[misc]
    vt = VideoTapestry(None, profile="offline", overrides=overrides)
    silent = EarlierTurn(question=CODE_QUESTION, answer="", spans=[])
    result = vt.answer(sample["video"], sample["memory"], AFTER_QUESTION, history=[silent])
    assert result.question == AFTER_QUESTION and result.asked == ""
    kinds = [d.kind for d in result.degraded]
    assert "follow_up_unresolved" in kinds


@pytest.mark.slow
def test_chat_script_runs_three_turns_end_to_end(
    sample: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "turns.txt"
    script.write_text(
        f"{CODE_QUESTION}\n{AFTER_QUESTION}\n"
        "Where did the speaker tell volunteers to pick up their name cards? | "
        "A. At the main office | B. At the green tent next to the bridge | C. At the yellow tent\n"
    )
    overrides = [arg for o in sample["overrides"] for arg in ("-o", o)]  # type: ignore[attr-defined]
    traces = tmp_path / "traces"
    code = main(
        [
            "chat",
            str(sample["video"]),
            "--memory",
            str(sample["memory"]),
            "--profile",
            "offline",
            *overrides,
            "--script",
            str(script),
            "--trace-dir",
            str(traces),
            "--json",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    turns = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert "4417" in turns[0]["answer_text"]
    assert turns[1]["asked"] == AFTER_QUESTION and "7457" in turns[1]["answer_text"]
    assert turns[2]["answer"] == "B"
    name_cards = [s for c in turns[2]["citations"] for s in c["sources"]]
    assert overlaps([(s["start_s"], s["end_s"]) for s in name_cards], [(48.78, 52.67)])
    assert sorted(p.name.split("-turn")[1] for p in traces.iterdir()) == [
        "1.json",
        "2.json",
        "3.json",
    ]
