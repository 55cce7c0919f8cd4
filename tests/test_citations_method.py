"""Issue 21, must show: a cited id that names no evidence is dropped and recorded, through the
whole method over HTTP to the fake server (tests/method_support.py) — by the API, and by
``ask`` as JSON and as text. The scripted Answer agent cites what the test tells it to.
Issue 37: that record is a warning, not a degradation (the answer is clean and ``ask`` exits
0), and ``answer.citations: false`` asks the Answer agent and the Direct baseline for the
paper's two keys only, over a composite memory without ``refs:`` lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, ask, cli_args, make_vt

from videotapestry.cli import main
from videotapestry.commands.common import citation_lines
from videotapestry.result import load_result
from videotapestry.serve.operations import ServedAnswer
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.citation_cost import without_refs_lines
from videotapestry.testing.fake_openai import RecordedRequest
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
    # The answer stands and the method lost nothing: a warning, and status 0.
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["answer"] == "B" and report["citations"] == []
    assert report["degraded"] == []
    [warning] = report["warnings"]
    assert (warning["kind"], warning["level"], warning["what"]) == (
        "citation_invalid",
        "answer",
        "citations of Z99",
    )
    assert "warning: answer: citations of Z99 (citation_invalid)" in captured.err
    assert "degraded" not in captured.err
    # The saved trace keeps the note of what was dropped, and the warning.
    saved = json.loads((tmp_path / "q.json").read_text())
    notes = [e["output"] for e in saved["events"] if e["name"] == "citation_invalid"]
    assert notes == [{"role": "answer", "ids": ["Z99"]}]
    loaded = load_result(tmp_path / "q.json")
    assert [w.what for w in loaded.warnings] == ["citations of Z99"] and not loaded.degraded

    # A trace saved while it was a degradation is read with it moved to the warnings.
    saved["result"]["degraded"], saved["result"]["warnings"] = saved["result"]["warnings"], []
    older = tmp_path / "older.json"
    older.write_text(json.dumps(saved), encoding="utf-8")
    loaded = load_result(older)
    assert [w.kind for w in loaded.warnings] == ["citation_invalid"] and not loaded.degraded

    # As text: the answer is printed, and that it cites nothing.
    assert main(ask_args(server, video, tmp_path / "q2.json")) == 0
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
    [warning] = result.warnings
    assert (warning.kind, warning.what) == ("citation_invalid", "citations of Z99")
    assert not result.degraded
    # As the web app and the MCP tool send it: a warning to show, not a degradation.
    served = ServedAnswer.of(result, trace=None)
    assert served.degraded == [] and served.degraded_text == []
    assert served.warnings_text == [warning.render()] and "Z99" in warning.render()
    # As ``ask`` prints it: the claim, then the frame's moment (its id only in --json).
    assert citation_lines(result.citations) == [
        f"claim 1: {CLAIM}",
        f"  cites frame at {format_timestamp(first)}",
    ]


def _asked_keys(request: RecordedRequest) -> set[str]:
    """The reply keys the request's JSON schema names."""
    assert request.response_format is not None
    return set(request.response_format["json_schema"]["schema"]["properties"])


def _system(request: RecordedRequest) -> str:
    return "\n".join(m["content"] for m in request.messages if m["role"] == "system")


def test_with_citations_off_the_answer_call_asks_for_reasoning_and_answer_only(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    # The reply cites anyway (a real and a made-up id): nothing is cited, nothing warned.
    server.on(None, ScriptedModel(final_answer=citing("K1", "Z99")))
    result = ask(make_vt(server, embedder, "answer.citations=false"), video)
    request = answer_request(server.requests)
    assert _asked_keys(request) == {"reasoning", "answer"}
    assert "citations" not in _system(request) and "refs" not in _system(request)
    assert "refs:" not in request.text and "refs:" not in result.memory_text
    assert result.answer == "B"
    assert result.citations == [] and result.warnings == [] and result.degraded == []
    uncited_memory = result.memory_text

    # The default asks for them, over a memory that shows its refs.
    server.reset()
    server.on(None, ScriptedModel(final_answer=citing("K1")))
    result = ask(make_vt(server, embedder), video)
    request = answer_request(server.requests)
    assert _asked_keys(request) == {"reasoning", "answer", "citations"}
    assert '"citations"' in _system(request)
    assert "refs: " in result.memory_text and "refs: K1" in request.text
    assert [s.id for c in result.citations for s in c.sources] == ["K1"]
    # The same exploration: the two memories differ by the refs lines alone.
    assert uncited_memory == without_refs_lines(result.memory_text)


@pytest.mark.parametrize("cite", [True, False])
def test_the_direct_baseline_asks_for_citations_as_the_switch_says(
    server: FakeOpenAIServer, embedder, video: Path, cite: bool
) -> None:
    reply = {"reasoning": "Frames show the display.", "answer": "B"}
    reply["citations"] = [{"claim": CLAIM, "ids": ["D2"]}]
    server.on(None, ScriptedModel(direct_answer=reply))
    vt = make_vt(server, embedder, "variant=direct", f"answer.citations={str(cite).lower()}")
    result = ask(vt, video)
    [request] = [r for r in server.requests if r.prompt == "direct_answer"]
    keys = {"reasoning", "answer", "citations"} if cite else {"reasoning", "answer"}
    assert _asked_keys(request) == keys
    assert ("citations" in _system(request)) is cite
    assert result.answer == "B"
    assert [s.id for c in result.citations for s in c.sources] == (["D2"] if cite else [])
