"""Shared by the end-to-end method tests: the sample memory, the question, the facade aimed at
the fake server, and a synchronous ``ask``. Their fixtures (``embedder``, ``video``,
``server``) are in conftest.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from videotapestry.api import VideoTapestry
from videotapestry.cli import main
from videotapestry.testing import FakeOpenAIServer

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"
QUESTION = "What temperature was the oven set to?"
OPTIONS = ["A. 180°C", "B. 220°C", "C. 250°C", "D. 200°C"]
MINILM = "packaged:all-MiniLM-L6-v2"


def make_vt(server: FakeOpenAIServer, embedder, *overrides: str) -> VideoTapestry:
    return VideoTapestry(
        overrides=[
            f"models.default.base_url={server.base_url}",
            "models.default.harness_headers=true",
            "models.default.max_retries=0",
            "cache.enabled=false",
            *overrides,
        ],
        embedder=embedder,
    )


def ask(vt: VideoTapestry, video, memory=SAMPLE, question=QUESTION, options=OPTIONS, **kwargs):
    async def run():
        try:
            return await vt.aanswer(video, memory, question, options, **kwargs)
        finally:
            await vt.aclose()

    return asyncio.run(run())


def cli_args(server: FakeOpenAIServer, *extra: str) -> list[str]:
    """Config options every CLI test passes: the fake server and the packaged embedder."""
    return [
        "-o", f"models.default.base_url={server.base_url}",
        "-o", "models.default.harness_headers=true",
        "-o", "models.default.max_retries=0",
        "-o", "cache.enabled=false",
        "-o", f"embedding.model={MINILM}",
        "-o", "embedding.query_prompt_name=null",
        *extra,
    ]  # fmt: skip


def run_cli_output(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one command; a traceback anywhere fails the test."""
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out, captured.err
    return status, captured.out, captured.err


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """(exit status, stderr) of one command; a traceback anywhere fails the test."""
    status, _, err = run_cli_output(capsys, *args)
    return status, err
