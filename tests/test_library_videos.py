"""A library of six generated videos, end to end with the offline model (SPEC §15).

Each video (48 s) shows four signs of 12 s each; one of them is its fact, which is also said
at a known time (SRT subtitles given to the build, stored as the memory's transcript: no
speech synthesis at test time). Two videos, a chess club's and a school fair's, both say
where the chess club meets. The memories are built with the offline profile and indexed into
one library through the ``library`` command; then ``library search`` and ``ask --library``
are checked against the facts' known times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from method_support import run_cli_output

from videotapestry.library import NONE_SHOWS_THIS
from videotapestry.testing.builder_media import ScheduledText, make_text_schedule_video

pytest.importorskip("lancedb")

DURATION_S = 48.0
SIGN_S = 12.0


@dataclass(frozen=True)
class Video:
    name: str
    signs: tuple[str, str, str, str]
    #: Which sign is the fact (shown from ``fact * SIGN_S`` for ``SIGN_S``).
    fact: int
    #: Said 2-7 s into the fact's sign.
    said: str
    #: Words to search the library for it by.
    query: str

    @property
    def moment(self) -> tuple[float, float]:
        return self.fact * SIGN_S, (self.fact + 1) * SIGN_S


VIDEOS = (
    Video("harbour", ("HARBOUR TOUR", "FERRY TICKET 42 EUROS", "PIER WALK", "THANK YOU"), 1,
          "The ferry ticket costs forty two euros.", "ferry ticket price"),
    Video("bakery", ("BAKERY VISIT", "OVEN ROOM", "RYE BREAD ON SUNDAYS", "THANK YOU"), 2,
          "Rye bread is baked only on Sundays.", "which day is rye bread baked"),
    Video("chess", ("CHESS CLUB", "NEW MEMBERS", "CHESS CLUB MEETS IN ROOM 9", "GOODBYE"), 2,
          "The chess club meets in room nine.", "chess club meets"),
    Video("garden", ("GARDEN NEWS", "LOST DOG NAMED PEPPER", "ROSE BEDS", "THANK YOU"), 1,
          "Our lost dog answers to the name Pepper.", "lost dog name"),
    Video("school", ("SCHOOL FAIR", "CHESS CLUB ROOM 9", "LUNCH AT NOON", "SEE YOU"), 1,
          "Chess players gather in room nine.", "chess players gather"),
    Video("museum", ("MUSEUM TOUR", "SCULPTURE HALL", "MUSEUM OPENS AT 10:30", "BYE"), 2,
          "The museum opens at half past ten.", "museum opens half past ten"),
)  # fmt: skip
BY_NAME = {v.name: v for v in VIDEOS}


def stamp(t: float) -> str:
    return f"00:{int(t // 60):02d}:{int(t % 60):02d},000"


def write_video(folder: Path, video: Video) -> tuple[Path, Path]:
    """The video (one sign at a time on coloured scenes) and its one subtitle, the fact said."""
    schedule = [
        ScheduledText(text, SIGN_S * k, SIGN_S * (k + 1)) for k, text in enumerate(video.signs)
    ]
    path, _ = make_text_schedule_video(
        folder / f"{video.name}.mp4",
        schedule,
        DURATION_S,
        fps=1,
        size=(320, 180),
        colour_s=24,
        frame_code=False,
    )
    start = video.moment[0] + 2.0
    subtitles = folder / f"{video.name}.srt"
    subtitles.write_text(
        f"1\n{stamp(start)} --> {stamp(start + 5.0)}\n{video.said}\n", encoding="utf-8"
    )
    return path, subtitles


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The six videos, their memories (offline profile) and one library of them."""
    from videotapestry.testing.fact_bench import OfflineModels, offline_facade

    root = tmp_path_factory.mktemp("library-videos")
    models = OfflineModels.load()
    for video in VIDEOS:
        path, subtitles = write_video(root / "videos", video)
        built = offline_facade("cache.enabled=false", models=models).build_memory(
            path, root / "memories" / video.name, subtitles
        )
        assert built.report.status == "complete", (video.name, built.report)
    return root


def overlaps(span: tuple[float, float], moment: tuple[float, float], slack: float = 0.5) -> bool:
    return span[0] <= moment[1] + slack and span[1] >= moment[0] - slack


def video_of(citation: dict) -> Video:
    return BY_NAME[Path(citation["video"]).stem]


@pytest.mark.slow
def test_search_and_questions_across_six_videos(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(library / "lib")
    offline = ("--profile", "offline")
    code, out, err = run_cli_output(
        capsys, "library", "index", str(library / "memories"), "--library", lib, "--quiet",
        *offline,
    )  # fmt: skip
    assert code == 0 and "6 added" in out, err

    # (a) A fact's words find its video first, at a moment that holds the fact.
    for video in VIDEOS:
        code, out, err = run_cli_output(
            capsys, "library", "search", video.query, "--library", lib, "--json", "--top", "3",
            *offline,
        )  # fmt: skip
        assert code == 0, err
        best = json.loads(out.splitlines()[0])
        assert Path(best["video"]).stem == video.name, (video.query, best)
        span = (best["start_s"], best["end_s"])
        assert overlaps(span, video.moment) and span[1] - span[0] <= SIGN_S, (video.query, best)

    def ask(question: str) -> dict:
        code, out, err = run_cli_output(
            capsys, "ask", "--library", lib, "--question", question, *offline, "--json"
        )
        assert code == 0, err
        result: dict = json.loads(out)
        # Every citation resolves to a video of the library and a span inside it.
        for citation in result["citations"]:
            assert citation["video"] and Path(citation["video"]).stem in BY_NAME
            assert all(0 <= s["start_s"] <= s["end_s"] <= DURATION_S for s in citation["sources"])
        return result

    def cited_at_fact(result: dict, video: Video) -> bool:
        """Some source cited in ``video`` lies at its fact (not just across the whole video)."""
        return any(
            overlaps((s["start_s"], s["end_s"]), video.moment) and s["end_s"] - s["start_s"] < 24
            for c in result["citations"]
            if video_of(c) is video
            for s in c["sources"]
        )

    # (b) A fact in exactly one video: that video, and a span at the fact.
    garden = BY_NAME["garden"]
    dog = ask("What is the name of the lost dog?")
    assert "pepper" in dog["answer_text"].lower() and not dog["none_found"], dog["reasoning"]
    assert {video_of(c).name for c in dog["citations"]} == {"garden"}, dog["citations"]
    assert dog["answered_from"] == [dog["citations"][0]["title"]]
    assert cited_at_fact(dog, garden), dog["citations"]

    # (c) A fact two videos show: both are cited, each at its own fact.
    room = ask("Which room does the chess club meet in?")
    assert "9" in room["answer_text"] and not room["none_found"], room["reasoning"]
    assert {video_of(c).name for c in room["citations"]} == {"chess", "school"}, room["citations"]
    assert len(room["answered_from"]) == 2
    assert cited_at_fact(room, BY_NAME["chess"]) and cited_at_fact(room, BY_NAME["school"])
    assert room["usage"]["calls"] == sum(v["usage"]["calls"] for v in room["videos"]) + 1

    # (d) Something none of them shows.
    none = ask("How many penguins live in Antarctica?")
    assert none["none_found"] and none["answer_text"] == NONE_SHOWS_THIS
    assert none["citations"] == [] and none["usage"]["calls"] == 0
