"""What a user sees in a real terminal (issue 39, item 6): progress bars that never swallow
the next line, waits that say what is waited for, a missing key that names the offline
profile, the demo's paths, and a demo cache of its own per checkout that is checked, not
rebuilt."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest

from videotapestry.cli import main
from videotapestry.commands.common import progress_printer
from videotapestry.demo import sample_video_path
from videotapestry.demo.runner import (
    DemoReport,
    demo_cache_dir,
    installation_key,
    render_summary,
)

ROOT = Path(__file__).resolve().parents[1]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# -- a terminal's view of the output -----------------------------------------------------------


def run_in_terminal(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Run ``argv`` with stdout and stderr on one pseudo-terminal (120 columns, TERM set) and
    return everything it wrote."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, cwd=cwd,
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120"},
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], timeout)
            if not ready:
                raise AssertionError(f"no output for {timeout} s: {b''.join(chunks)[-2000:]!r}")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        process.wait(timeout=timeout)
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def screen_lines(raw: str) -> list[str]:
    """The lines a terminal shows: a carriage return moves back to the line's start, and
    what follows overwrites what was there."""
    lines = []
    for line in _ANSI.sub("", raw).replace("\r\n", "\n").split("\n"):
        cells: list[str] = []
        column = 0
        for char in line:
            if char == "\r":
                column = 0
                continue
            if column < len(cells):
                cells[column] = char
            else:
                cells.append(char)
            column += 1
        lines.append("".join(cells).rstrip())
    return lines


def glued(lines: list[str], bar_end: str) -> list[str]:
    """Lines where a bar's end is followed by other text."""
    return [line for line in lines if bar_end in line and line.split(bar_end, 1)[1].strip()]


_FAKE_DEMO = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from types import SimpleNamespace
    from videotapestry.demo import runner

    class Answers:
        async def abuild_memory(self, *args, **kwargs):  # the builder keeps the memory
            return SimpleNamespace(report=SimpleNamespace(usage={}), partial=False)

        async def aanswer(self, *args, **kwargs):
            await asyncio.sleep(0.15)
            return object()

    runner.answer_evidence = lambda result: runner.Evidence()
    questions = [runner.DemoQuestion(f"q{n}", f"question {n}?", ["A. a", "B. b"], "A")
                 for n in range(1, 5)]

    def show(outcome):
        print(f"{outcome.question.id}: {outcome.question.question}", flush=True)
        print("  answer A", flush=True)

    asyncio.run(runner.run_demo(Answers(), runner.Sample(Path(sys.argv[1]), questions),
                                memory_dir=Path("memory"), on_outcome=show))
    print("done", flush=True)
    """
)


def test_the_demo_bar_never_swallows_the_next_line(tmp_path: Path) -> None:
    raw = run_in_terminal(
        [sys.executable, "-c", _FAKE_DEMO, str(sample_video_path())],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    lines = screen_lines(raw)
    assert "s/question]" in raw or "question/s]" in raw, raw  # a bar was drawn
    assert [f"q{n}: question {n}?" for n in range(1, 5)] == [
        line for line in lines if re.match(r"q\d: ", line)
    ], lines
    assert not glued(lines, "/question]") and not glued(lines, "question/s]"), lines
    assert lines[-2:] == ["done", ""] or lines[-1] == "done", lines


@pytest.mark.slow
def test_the_demo_command_in_a_terminal_prints_clean_lines(
    demo_cache: Path, tmp_path: Path
) -> None:
    from videotapestry.demo import sample_questions

    [first] = sample_questions()["questions"][:1]
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": [first]}))
    raw = run_in_terminal(
        [sys.executable, "-m", "videotapestry.cli", "demo", "--cache-dir", str(demo_cache),
         "--video", str(sample_video_path()), "--questions", str(questions)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
    )  # fmt: skip
    lines = screen_lines(raw)
    assert any(line.startswith(f"{first['id']}: ") for line in lines), lines
    assert not glued(lines, "/question]") and not glued(lines, "question/s]"), lines
    assert f"video:  {sample_video_path()}" in lines, lines


# -- waits say what is waited for ---------------------------------------------------------------


def test_a_wait_for_the_in_process_model_names_no_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from videotapestry.config import load_config
    from videotapestry.llm import ModelService
    from videotapestry.llm.types import Message, ModelRequest, ModelResponse, TokenUsage
    from videotapestry.offline.client import OfflineModelClient

    class Slow:
        def __init__(self, settings, *, in_process: bool) -> None:
            self.in_process = in_process
            self.endpoint = "offline:slow" if in_process else "http://models.example:8000/v1"

        async def complete(self, request: ModelRequest) -> ModelResponse:
            await asyncio.sleep(0.25)
            return ModelResponse(text="{}", model="m", usage=TokenUsage(1, 1), latency_s=0.25)

        async def aclose(self) -> None:
            return None

    assert OfflineModelClient.in_process is True
    cases = (
        (True, "the in-process model offline:slow"),
        (False, "the model server at http://models.example:8000/v1"),
    )
    for in_process, expected in cases:
        config = load_config(
            profile="offline", overrides=["models.wait_report_s=0.05", "cache.enabled=false"]
        )
        factories = {"offline": lambda s, flag=in_process: Slow(s, in_process=flag)}
        service = ModelService(config, client_factories=factories)
        events: list[dict] = []
        session = service.session(progress=events.append)
        request = ModelRequest(
            role="overview",
            messages=(Message("user", "hi"),),
            settings=config.models.settings_for("overview"),
        )
        asyncio.run(session.send(request))
        waiting = [e for e in events if e.get("step") == "waiting"]
        assert waiting and all(e["target"] == expected for e in waiting), events
        progress_printer(quiet=False)(waiting[0])
        line = capsys.readouterr().err
        assert f"waiting for {expected}" in line
        assert ("model server" in line) is not in_process, line


# -- a missing key names the offline profile ------------------------------------------------------


def _memory(tmp_path: Path, profile: str, provider: str) -> Path:
    memory = tmp_path / f"memory-{profile}"
    memory.mkdir()
    manifest = {
        "schema_version": 1,
        "source": "builder",
        "created": "2026-01-01T00:00:00+00:00",
        "config": {"profile": profile, "models": {"default": {"provider": provider}}},
        "build": {"status": "complete", "partial": False},
    }
    (memory / "manifest.json").write_text(json.dumps(manifest))
    return memory


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_a_missing_key_names_the_offline_profile_and_the_offline_memory(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "turns.txt"
    script.write_text("What is on the slide?\n")
    extra = ["--script", str(script)]
    if command == "ask":
        extra = ["--question", "What is on the slide?"]

    offline = _memory(tmp_path, "offline", "offline")
    assert main([command, "--memory", str(offline), *extra]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY is not set" in err and "--profile offline" in err
    assert f"the memory at {offline} was built with the offline model: add --profile offline" in err

    served = _memory(tmp_path, "local", "openai")
    assert main([command, "--memory", str(served), *extra]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY is not set" in err and "--profile offline" in err
    assert "built with the offline model" not in err


def test_the_client_s_own_key_error_names_the_offline_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from videotapestry.config import load_config
    from videotapestry.errors import ModelAuthError
    from videotapestry.llm.openai_client import OpenAICompatibleClient

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = load_config().models.settings_for("overview")
    with pytest.raises(ModelAuthError, match="needs no key: --profile offline"):
        OpenAICompatibleClient.from_settings(settings)


# -- the demo's paths and cache --------------------------------------------------------------------


def test_the_demo_summary_prints_the_video_beside_the_memory(tmp_path: Path) -> None:
    report = DemoReport([], tmp_path / "memory", 0.1, 2.0, 0, video=Path("/videos/sample.mp4"))
    lines = render_summary(report).splitlines()
    assert lines[0].startswith("0/0 right · memory cached")
    assert lines[1:] == ["video:  /videos/sample.mp4", f"memory: {tmp_path / 'memory'}"]


def test_each_checkout_and_version_has_a_demo_cache_of_its_own() -> None:
    one, other = Path("/home/u/src/videotapestry/videotapestry"), Path("/tmp/clone/videotapestry")
    assert installation_key("0.1.0", one) == installation_key("0.1.0", one)
    assert installation_key("0.1.0", one) != installation_key("0.1.0", other)
    assert installation_key("0.1.0", one) != installation_key("0.2.0", one)
    assert installation_key("0.1.0", one).startswith("0.1.0-")


def test_a_fresh_clone_does_not_see_another_checkout_s_demo_cache(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "videotapestry", clone / "videotapestry",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))  # fmt: skip
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = "from videotapestry.demo.runner import demo_cache_dir; print(demo_cache_dir())"

    def cache_of(checkout: Path) -> Path:
        found = subprocess.run(
            [sys.executable, "-c", code], cwd=checkout, env={**env, "PYTHONPATH": str(checkout)},
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return Path(found.stdout.strip())

    here, there = cache_of(ROOT), cache_of(clone)
    assert here.parent == there.parent == tmp_path / "cache" / "videotapestry" / "demo"
    assert here != there


def test_demo_cache_dir_is_under_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import videotapestry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    package = Path(videotapestry.__file__).resolve().parent
    key = installation_key(videotapestry.__version__, package)
    assert demo_cache_dir() == tmp_path / "videotapestry" / "demo" / key
