"""The wheel carries prompts/ and configs/ as package data and works outside the repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from videotapestry.contracts.builder import BUILDER_SCHEMAS
from videotapestry.contracts.judge import EVAL_SCHEMAS
from videotapestry.contracts.method import OUTPUT_SCHEMAS

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, videotapestry
from videotapestry.config import load_config
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.speech import load_speech
from videotapestry.prompts import PromptRegistry
registry = PromptRegistry()
prompt = registry.render("final_answer", question="q", options=["A. a"], handoff_trace="",
                         memory="m")
config = load_config(profile="local")
print(json.dumps({"package": videotapestry.__file__,
                  "prompt": registry.resolve("final_answer").path.as_posix(),
                  "names": registry.names(), "hash": prompt.hash,
                  "base_url": config.models.default.base_url,
                  "sample": sample_video_path().as_posix(),
                  "sample_found": sample_video_path().is_file(),
                  "sample_questions": len(sample_questions()["questions"]),
                  "speech_clips": len(load_speech().clips)}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    [path] = out.glob("videotapestry-*.whl")
    return path


def test_wheel_ships_packages_prompts_and_configs(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "videotapestry/_resources/prompts/final_answer.jinja" in names
    assert "videotapestry/_resources/prompts/_no_steering.jinja" in names
    assert "videotapestry/_resources/configs/default.yaml" in names
    assert "videotapestry/_resources/configs/profiles/local.yaml" in names
    assert "memory_builders/__init__.py" in names
    assert "memory_builders/builder.py" in names
    # the demo sample and the speech clips it is regenerated from
    for data in ("sample.mp4", "questions.json", "speech/manifest.json", "speech/welcome_2.ogg"):
        assert f"videotapestry/demo/data/{data}" in names
    # the browser UI of `videotapestry serve`
    for static in ("index.html", "app.js", "style.css"):
        assert f"videotapestry/serve/static/{static}" in names
    top_level = {name.split("/")[0] for name in names}
    assert "prompts" not in top_level and "configs" not in top_level


def test_installed_wheel_loads_prompts_and_configs(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert probe["package"].startswith(str(target))
    assert probe["prompt"].startswith(target.as_posix() + "/videotapestry/_resources/prompts/")
    # every role ships: the method's and the memory builder's
    assert sorted(probe["names"]) == sorted([*OUTPUT_SCHEMAS, *BUILDER_SCHEMAS, *EVAL_SCHEMAS])
    assert probe["base_url"] == "http://localhost:8000/v1"
    assert probe["sample_found"]
    assert probe["sample"].startswith(target.as_posix() + "/videotapestry/demo/data/")
    assert probe["sample_questions"] >= 3 and probe["speech_clips"] > 0
