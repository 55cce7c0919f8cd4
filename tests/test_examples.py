"""The examples stay runnable and compute their answers: the quickstart notebook and script
answer shipped questions from the sample video with the offline model, the prompt-swap example
shows one changed prompt changing the answer, and the structured-call script still runs."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_memory_dir

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHIPPED = sample_questions()["questions"]


def run_example(script: str, *args: str, env: dict[str, str] | None = None):
    # The cwd copy of the package, not whatever the installed one points at.
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True, text=True, timeout=600, env=environment,
    )  # fmt: skip


@pytest.mark.slow
def test_quickstart_notebook_answers_from_the_video(
    demo_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("videotapestry.demo.runner.demo_cache_dir", lambda: demo_cache)
    cells = json.loads((EXAMPLES / "quickstart.ipynb").read_text())["cells"]
    namespace: dict = {"__name__": "__main__"}

    async def run_cells() -> None:
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            code = compile(
                "".join(cell["source"]), "quickstart", "exec",
                flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            )  # fmt: skip
            outcome = eval(code, namespace)
            if asyncio.iscoroutine(outcome):
                await outcome

    asyncio.run(run_cells())
    result, question = namespace["result"], namespace["question"]
    assert namespace["memory"] == demo_memory_dir(sample_video_path(), demo_cache)
    assert namespace["build"].report.usage.get("calls", 0) == namespace["build"].report.usage.get(
        "cached_calls", 0
    )  # the fixture's memory was reused, not rebuilt
    assert result.answer == question["answer"] == SHIPPED[1]["answer"]
    assert result.levels_visited == ["super", "macro", "subgraph"] and not result.degraded
    assert result.usage.calls > result.usage.cached_calls
    # Computed, not replayed: the model was called, and the place is what was said.
    evidence = namespace["evidence"]
    said = [text for _start, _end, text in evidence.speech] + evidence.memory
    assert any("green tent next to the bridge" in text for text in said)
    assert "Focus Agent: STOP" in result.handoff_trace
    assert "final_answer" in result.trace.to_markdown()
    assert "<" in result._repr_html_()
    out = capsys.readouterr().out
    assert f"answer {result.answer} (shipped answer {question['answer']})" in out
    assert "green tent next to the bridge" in out
    assert "graph TD" in out  # the mermaid drawing


@pytest.mark.slow
def test_quickstart_script_answers_a_shipped_question(demo_cache: Path) -> None:
    done = run_example("quickstart.py", "--cache-dir", str(demo_cache), "--question", "2")
    assert done.returncode == 0, done.stderr
    expected = SHIPPED[1]["answer"]
    assert f"answer: {expected} (expected {expected})" in done.stdout
    assert "levels: super -> macro -> subgraph" in done.stdout
    assert "complete" in done.stdout and "degraded:" not in done.stdout


@pytest.mark.slow
def test_prompt_swap_changes_exactly_one_prompt_and_the_answer(
    demo_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "swap"
    done = run_example("prompt_swap.py", "--cache-dir", str(demo_cache), "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = {
        line.split()[0]: line.split()[1:]
        for line in done.stdout.splitlines()
        if re.match(r"^[a-z_]+ +\S+ +\S+", line)
    }
    # The spoken answer is in the refined MacroEvent paths, not in the Super scaffold.
    # Without them the model answers otherwise (which wrong option depends on the scaffold).
    shipped_answer, swapped_answer = rows["answer"]
    assert shipped_answer == SHIPPED[1]["answer"] != swapped_answer
    hashes = {n: pair[:2] for n, pair in rows.items() if re.fullmatch(r"[0-9a-f]{16}", pair[0])}
    changed = [name for name, (left, right) in hashes.items() if left != right]
    assert changed == ["final_answer"] and len(hashes) >= 8
    # The override is the shipped prompt with one edit, and the traces record what each used.
    override = (out / "prompts" / "final_answer.jinja").read_text()
    assert 'not line.startswith(" ")' in override and "{{ line }}" in override
    traces = {n: json.loads((out / f"{n}.trace.json").read_text()) for n in ("shipped", "override")}
    assert f"shipped trace: {out / 'shipped.trace.json'}" in done.stdout
    for name, trace in traces.items():
        assert (
            trace["result"]["prompt_hashes"]["final_answer"]
            == hashes["final_answer"][name == "override"]
        )
    assert traces["override"]["result"]["answer"] == swapped_answer
    # The second run replayed the exploration: only the changed prompt's call was new.
    new, calls = rows["new"][-1].split("/")
    assert int(new) == 1 < int(calls)


def test_structured_call_example_runs_against_the_fake_server() -> None:
    done = run_example("structured_call.py")
    assert done.returncode == 0, done.stderr
    assert "answer: A" in done.stdout
