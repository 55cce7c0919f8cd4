"""The command line: help, prompt listing with overrides, config errors, endpoint check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from videotapestry.cli import main
from videotapestry.contracts.builder import BUILDER_SCHEMAS
from videotapestry.contracts.judge import EVAL_SCHEMAS
from videotapestry.contracts.method import OUTPUT_SCHEMAS
from videotapestry.testing import FakeOpenAIServer, FakeReply


def test_console_script_help_lists_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "videotapestry.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for command in ("prompts", "config", "check-endpoint"):
        assert command in result.stdout


def test_prompts_list_shows_shipped_and_overridden_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prompts", "list"]) == 0
    shipped = capsys.readouterr().out.splitlines()
    # one template per role: the method's and the memory builder's
    assert len(shipped) == len(OUTPUT_SCHEMAS) + len(BUILDER_SCHEMAS) + len(EVAL_SCHEMAS)
    assert all(" shipped " in line for line in shipped)

    (tmp_path / "decision.jinja").write_text(
        "{% block system %}mine{% endblock %}{% block user %}{{ question }}{% endblock %}"
    )
    assert main(["prompts", "list", "--prompts-dir", str(tmp_path)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert " override " in rows["decision"] and str(tmp_path) in rows["decision"]
    assert " shipped " in rows["final_answer"]

    config = tmp_path / "run.yaml"
    config.write_text(f"prompts:\n  override_dir: {tmp_path}\n")
    assert main(["prompts", "list", "--config", str(config)]) == 0
    assert "override" in capsys.readouterr().out


def test_prompts_show_prints_the_template_and_its_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["prompts", "show", "asr_observation"]) == 0
    out = capsys.readouterr().out
    assert "# variables: asr, observation_instruction" in out
    assert "{% block system %}" in out


def test_errors_print_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts", "show", "nope"]) == 2
    assert "no prompt named 'nope'" in capsys.readouterr().err
    assert main(["config", "show", "-o", "agents.overview.max_framez=1"]) == 2
    err = capsys.readouterr().err
    assert "agents.overview.max_framez" in err and "Traceback" not in err


def test_config_show_applies_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--profile", "local", "-o", "agents.focus.max_frames=7"]) == 0
    out = capsys.readouterr().out
    assert "base_url: http://localhost:8000/v1" in out
    assert "max_frames: 7" in out


def test_check_endpoint_runs_one_json_call(
    fake_server: FakeOpenAIServer,
    api_key: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_server.script("answer", FakeReply.fenced({"reasoning": "blue car", "answer": "B"}))
    code = main(
        [
            "check-endpoint",
            "--json",
            "-o",
            f"models.default.base_url={fake_server.base_url}",
            "-o",
            "models.default.harness_headers=true",
            "-o",
            f"cache.path={tmp_path / 'c.sqlite'}",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["answer"] == "B" and report["json_mode"] == "json_schema"
    assert report["prompt_tokens"] > 0
    [request] = fake_server.requests
    assert request.prompt == "final_answer"
