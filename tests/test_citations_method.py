"""Issue 21, must show: a cited id that names no evidence is dropped and recorded, through the
whole method over HTTP to the fake server (tests/method_support.py) — by the API, and by
``ask`` as JSON and as text. The scripted Answer agent cites what the test tells it to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, ask, cli_args, make_vt

from videotapestry.cli import main
from videotapestry.commands.common import EXIT_DEGRADED, citation_lines
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.scripted import ScriptedModel, answer_request
from videotapestry.timecode import format_timestamp

CLAIM = "The oven display reads 220°C"


def citing(*ids: str) -> dict:
    """The Answer agent's reply: the right letter, one claim citing ``ids``."""
    return {
        "reasoning": "The refined memory says the display shows 220°C.",
        "answer": "B",
        "citations": [{"claim": CLAIM, "ids": list(ids)}],
    }


def ask_args(server: FakeOpenAIServer, video: Path, trace: Path, *extra: str) -> list[str]:
    options = [x for option in OPTIONS for x in ("--option", option)]
    return [
        "ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION, *options,
        "--trace", str(trace), "--quiet", *extra, *cli_args(server),
    ]  # fmt: skip


def test_an_answer_citing_only_a_made_up_id_cites_nothing_and_says_so(
    server: FakeOpenAIServer, video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on(None, ScriptedModel(final_answer=citing("Z99")))
    code = main(ask_args(server, video, tmp_path / "q.json", "--json"))
    captured = capsys.readouterr()
    assert code == EXIT_DEGRADED, captured.err  # the answer stands, but the run lost its proof
    report = json.loads(captured.out)
    assert report["answer"] == "B" and report["citations"] == []
    [lost] = report["degraded"]
    assert (lost["kind"], lost["level"], lost["what"]) == (
        "citation_invalid",
        "answer",
        "citations of Z99",
    )
    assert "answer: citations of Z99 (citation_invalid)" in captured.err
    # The saved trace keeps the note of what was dropped.
    saved = json.loads((tmp_path / "q.json").read_text())
    notes = [e["output"] for e in saved["events"] if e["name"] == "citation_invalid"]
    assert notes == [{"role": "answer", "ids": ["Z99"]}]

    # As text: the answer is printed, and that it cites nothing.
    assert main(ask_args(server, video, tmp_path / "q2.json", "--allow-degraded")) == 0
    out = capsys.readouterr().out.splitlines()
    assert "answer: B  B. 220°C" in out
    assert "cites: nothing (the answer gave no valid citation)" in out


def test_a_valid_id_is_kept_with_its_times_and_a_made_up_one_beside_it_dropped(
    server: FakeOpenAIServer, embedder, video: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on(None, ScriptedModel(final_answer=citing("K1", "Z99")))
    result = ask(make_vt(server, embedder), video)
    assert result.answer == "B"
    # K1 is the first frame the Skim agent saw, as the composite memory showed it.
    [skim_look] = result.levels[1].observations
    first, second = skim_look.frame_times[:2]
    [(window_start, _window_end)] = skim_look.windows
    assert window_start <= first < second
    assert "refs: K1-K" in answer_request(server.requests).text
    [citation] = result.citations
    assert citation.claim == CLAIM
    [source] = citation.sources
    # Its moment, and the stretch from the window's start to the midpoint with the next frame.
    assert (source.id, source.kind, source.level) == ("K1", "frame", "macro")
    midpoint = (first + second) / 2
    assert (source.at_s, source.start_s, source.end_s) == (first, window_start, midpoint)
    [lost] = result.degraded
    assert (lost.kind, lost.what) == ("citation_invalid", "citations of Z99")
    # As ``ask`` prints it: the frame's moment and its id.
    assert citation_lines(result.citations) == [f"cites {format_timestamp(first)} [K1]: {CLAIM}"]
