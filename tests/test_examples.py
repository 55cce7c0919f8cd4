"""The examples stay runnable: the quickstart notebook's cells and the structured-call script."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_notebook_runs_top_to_bottom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the notebook writes its generated video to the cwd
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    cells = json.loads((EXAMPLES / "quickstart.ipynb").read_text())["cells"]
    namespace: dict = {}

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

    namespace["__name__"] = "__main__"
    # The first cell finds the sample memory relative to the repository.
    monkeypatch.setattr(Path, "cwd", classmethod(lambda cls: EXAMPLES))
    asyncio.run(run_cells())
    result = namespace["result"]
    assert result.answer == "B" and result.levels_visited == ["super", "macro", "subgraph"]
    assert "Focus Agent: STOP" in capsys.readouterr().out


def test_structured_call_example_runs_against_the_fake_server() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "structured_call.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "answer: A" in done.stdout
