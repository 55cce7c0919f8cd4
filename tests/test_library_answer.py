"""Answering across a library (SPEC §15) with the offline model: the sample's memory among
two others, the method run on the videos the search puts forward, one answer citing
(video, time). The tagging of ids is a pure function tested on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from method_support import run_cli_output

from videotapestry.library import NONE_SHOWS_THIS
from videotapestry.library.answering import pick_candidates, tagged
from videotapestry.library.index import SearchHit
from videotapestry.memory import save_memory
from videotapestry.testing.memories import synthetic_memory

pytest.importorskip("lancedb")

#: The sample's key slide: "Door code 4417" (tests/test_conversation.py).
GATE_B = (212.0, 258.0)


def hit(key: str, title: str) -> SearchHit:
    return SearchHit(key, f"/m/{key}", None, title, "speech", "n", 0.0, 1.0, "t", 0.1)


def test_ids_are_tagged_with_their_video_and_nothing_else_is() -> None:
    text = (
        "super_01 [00:00-10:00] The super_01 stage\n  refs: F1-F9 (00:10-00:50), T2 (01:00-01:04)"
    )
    ids = {"super_01", "F1", "F9", "T2"}
    assert tagged(text, "V2", ids) == (
        "V2.super_01 [00:00-10:00] The V2.super_01 stage\n"
        "  refs: V2.F1-V2.F9 (00:10-00:50), V2.T2 (01:00-01:04)"
    )
    assert tagged("F12 and xF1 and super_012", "V1", ids) == "F12 and xF1 and super_012"


def test_candidates_are_the_videos_of_the_best_moments_in_order() -> None:
    hits = [hit("b", "B"), hit("a", "A"), hit("b", "B"), hit("c", "C"), hit("d", "D")]
    picked = pick_candidates(hits, 3)
    assert [(c.tag, c.title, len(c.hits)) for c in picked] == [
        ("V1", "B", 2),
        ("V2", "A", 1),
        ("V3", "C", 1),
    ]


@pytest.fixture(scope="module")
def library_root(demo_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's memory and two other memories (a drama, a cooking show) in one folder."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    root = tmp_path_factory.mktemp("library-root")
    (root / "sample").symlink_to(demo_memory_dir(sample_video_path(), demo_cache))
    for n, title in enumerate(("A city drama", "Sunday cooking")):
        memory = synthetic_memory(
            duration_s=600.0, supers=2, macros_per_super=3, seed=n, title=title
        )
        save_memory(memory, root / f"other_{n}")
    return root


@pytest.mark.slow
def test_ask_across_the_library_answers_from_the_video_that_shows_it(
    library_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(tmp_path / "lib")
    code, out, err = run_cli_output(
        capsys, "library", "index", str(library_root), "--library", lib, "--quiet",
        "--profile", "offline",
    )  # fmt: skip
    assert code == 0 and "3 added" in out, err
    question = "What is the door code for Gate B, the delivery gate?"
    code, out, err = run_cli_output(
        capsys, "ask", "--library", lib, "--question", question, "--profile", "offline", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert "4417" in result["answer_text"] and not result["none_found"]
    assert result["answered_from"] == ["Riverside Festival- volunteer briefing"]
    assert result["videos"][0]["title"] == "Riverside Festival- volunteer briefing"
    spans = [(s["start_s"], s["end_s"]) for c in result["citations"] for s in c["sources"]]
    assert spans and all(s <= GATE_B[1] + 1 and e >= GATE_B[0] - 1 for s, e in spans), spans
    assert all(c["video"].endswith("sample.mp4") for c in result["citations"])
    # A library question's calls are counted like one question's: the video's and the final.
    assert result["usage"]["calls"] == sum(v["usage"]["calls"] for v in result["videos"]) + 1

    # In words, with the video and the time of each citation.
    code, out, _ = run_cli_output(
        capsys, "ask", "--library", lib, "--question", question, "--profile", "offline"
    )
    assert code == 0 and "from: Riverside Festival- volunteer briefing" in out
    assert "  cites Riverside Festival- volunteer briefing at 0" in out

    # Something no video shows: no video is asked, no model is called.
    code, out, _ = run_cli_output(
        capsys, "ask", "--library", lib, "--question", "How many penguins live in Antarctica?",
        "--profile", "offline", "--json",
    )  # fmt: skip
    none = json.loads(out)
    assert code == 0 and none["none_found"] and none["answer_text"] == NONE_SHOWS_THIS
    assert none["videos"] == [] and none["usage"]["calls"] == 0


def test_ask_library_refuses_a_video_or_a_memory_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli_output(
        capsys, "ask", "video.mp4", "--library", str(tmp_path), "--question", "Who?",
        "--profile", "offline",
    )  # fmt: skip
    assert code == 2 and "give no VIDEO or --memory" in err
    code, _, err = run_cli_output(capsys, "ask", "--question", "Who?", "--profile", "offline")
    assert code == 2 and "--memory" in err and "--library" in err
    # Where the videos' runs go is a library question's choice only.
    code, _, err = run_cli_output(
        capsys, "ask", "--memory", str(tmp_path), "--question", "Who?", "--executor", "ray",
        "--profile", "offline",
    )  # fmt: skip
    assert code == 2 and "apply to ask --library" in err


def test_search_hits_reach_the_overview_prompt_after_the_locators_windows() -> None:
    """A library question's hits are numbered after the locator's windows, in their form,
    so a model (the offline one's reader here) takes them as candidate windows too."""
    from videotapestry.agents.overview import locator_text
    from videotapestry.agents.state import MomentHint
    from videotapestry.offline.prompt_reading import read_locator

    hints = [MomentHint(start_s=212.0, end_s=258.0, text="Door code 4417", level="screen")]
    text = locator_text(None, hints)
    windows, _ = read_locator(text)
    assert [(w.rank, w.start, w.end) for w in windows] == [(1, 212.0, 258.0)]
    assert "Door code 4417" in windows[0].matches
    assert locator_text(None) == ""


class _StubIndex:
    """The two things a library question reads of its index: search and the embedder."""

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits

        class _Embedder:
            model_name = "stub"

            def embed(self, texts, *, query=False):
                import numpy as np

                return np.eye(len(texts), 4, dtype=np.float32)  # orthogonal: not close

        self.embedder = _Embedder()

    def search(self, query: str, top_k: int = 10) -> list[SearchHit]:
        return self.hits[:top_k]


def _library(hits: list[SearchHit], answer_video) -> object:
    from videotapestry.library import Library

    return Library(
        _StubIndex(hits),  # type: ignore[arg-type]
        service=None,  # type: ignore[arg-type]
        prompts=None,  # type: ignore[arg-type]
        answer_video=answer_video,
        load_memory=lambda memory, fingerprint: None,  # type: ignore[arg-type,return-value]
    )


def test_no_video_is_asked_when_no_moment_bears_on_the_question() -> None:
    asked = []

    async def answer_video(*args):
        asked.append(args)

    unrelated = SearchHit("a", "/m/a", None, "A", "speech", "n", 0.0, 1.0, "Let us move on.", 0.1)
    result = _library([unrelated], answer_video).answer("Which penguins nest on the ice?")
    assert result.none_found and result.answer_text == NONE_SHOWS_THIS and asked == []


def test_when_every_video_fails_the_question_fails_with_the_first_error() -> None:
    from videotapestry.errors import MemoryFormatError

    async def answer_video(video, memory, question, options, hints):
        assert [h.text for h in hints] == ["The penguins nest on the ice."]
        raise MemoryFormatError(f"{memory} is broken")

    hits = [SearchHit("a", "/m/a", None, "A", "speech", "n", 5.0, 9.0,
                      "The penguins nest on the ice.", 0.1)]  # fmt: skip
    with pytest.raises(MemoryFormatError, match="/m/a is broken"):
        _library(hits, answer_video).answer("Which penguins nest on the ice?")
