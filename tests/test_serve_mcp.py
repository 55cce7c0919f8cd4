"""``videotapestry mcp``: the MCP SDK's own client drives the real server in a subprocess.

One stdio session (module fixture) builds a one-minute video's memory, with progress
notifications, answers a shipped question about the sample (its memory is the test run's one
build of it) with the offline model and tries paths that leave the roots; the tests below
check what it got back. The streamable HTTP transport is started and stopped by its test on
127.0.0.1 with a token.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from serve_support import free_port

from videotapestry.cli import main
from videotapestry.demo import sample_questions, sample_video_path

pytestmark = pytest.mark.slow

GATE_B = next(q for q in sample_questions()["questions"] if q["id"] == "gate_b_code")
#: The video the session builds: six 10 s scenes.
SHORT_S = 60
#: What list_videos shows of the root: its two videos with their sizes.
VIDEOS = [
    {"path": "sample.mp4", "size_bytes": 2231964},
    {"path": "short.mp4", "size_bytes": ANY},
]
TOOLS = {
    "list_videos", "list_memories", "build_memory", "answer_question", "read_trace",
    "search_library", "answer_across_library",
}  # fmt: skip


def server_command(root: Path, cache: Path, *extra: str) -> list[str]:
    """The server as a user starts it: the CLI with the offline model, confined to ``root``."""
    return [
        sys.executable, "-m", "videotapestry.cli", "mcp", "--root", str(root),
        "--profile", "offline", "-o", "cache.enabled=true",
        "-o", f"cache.path={cache / 'responses.sqlite'}", *extra,
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    """This test's environment (the worktree on PYTHONPATH, the offline caches) for the child."""
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    return env


@dataclass
class Session:
    """What one stdio session of the SDK's client got back."""

    root: Path
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    videos: dict[str, Any] = field(default_factory=dict)
    build: Any = None
    #: The progress notifications of the build, then of the answer.
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    answer_progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    memories: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    #: The answer's text content: what a client shows a person.
    answer_text: str = ""
    tree: str = ""
    trace: Any = None
    refused: dict[str, Any] = field(default_factory=dict)
    bad_input: dict[str, Any] = field(default_factory=dict)
    resource_refused: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> tuple[Path, Path]:
    """A root holding a copy of the sample video with its memory and a one-minute video to
    build, a folder outside it with a file of its own, and a symlink inside the root that
    leads there."""
    from videotapestry.demo.runner import demo_memory_dir
    from videotapestry.testing.media import make_test_video

    base = tmp_path_factory.mktemp("mcp")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copy(sample_video_path(), root / "sample.mp4")
    shutil.copytree(demo_memory_dir(sample_video_path(), demo_cache), root / "memories/sample")
    make_test_video(root / "short.mp4", SHORT_S, fps=2, size=(320, 180), scene_s=10)
    (outside / "secret.json").write_text('{"format": "secret"}', encoding="utf-8")
    shutil.copy(sample_video_path(), outside / "elsewhere.mp4")
    (root / "leak").symlink_to(outside, target_is_directory=True)
    return root, outside


def escapes(outside: Path) -> dict[str, str]:
    """Paths that name a file outside the root, one per way of trying."""
    return {
        "dotdot": "../outside/secret.json",
        "absolute": str(outside / "secret.json"),
        "symlink": "leak/secret.json",
        "encoded": "..%2Foutside%2Fsecret.json",
    }


async def _session(root: Path, outside: Path, cache: Path) -> Session:
    got = Session(root)
    params = StdioServerParameters(
        command=sys.executable, args=server_command(root, cache)[1:], env=server_env()
    )

    heard = got.progress

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async with Client(params) as client:
        got.tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        got.videos = (await client.call_tool("list_videos", {})).structured_content or {}
        build = await client.call_tool(
            "build_memory", {"video": "short.mp4"}, progress_callback=on_progress
        )
        got.build = build.structured_content if not build.is_error else build.content
        got.memories = (await client.call_tool("list_memories", {})).structured_content or {}
        heard = got.answer_progress
        answer = await client.call_tool(
            "answer_question",
            {
                "video": "sample.mp4",
                "memory": "memories/sample",
                "question": GATE_B["question"],
                "options": GATE_B["options"],
            },
            progress_callback=on_progress,
        )
        got.answer = answer.structured_content if not answer.is_error else answer.content
        got.answer_text = "\n".join(getattr(block, "text", "") for block in answer.content)
        resource = await client.read_resource("memory://memories/sample")
        got.tree = resource.contents[0].text  # type: ignore[union-attr]
        if isinstance(got.answer, dict):
            trace = await client.call_tool("read_trace", {"path": got.answer["trace"]})
            got.trace = trace.structured_content
        for how, path in escapes(outside).items():
            got.refused[f"read_trace {how}"] = await client.call_tool("read_trace", {"path": path})
            try:
                await client.read_resource(f"memory://{path}")
                got.resource_refused[how] = "read"
            except MCPError as exc:
                got.resource_refused[how] = str(exc)
        got.refused["answer video symlink"] = await client.call_tool(
            "answer_question",
            {"video": "leak/elsewhere.mp4", "memory": "memories/sample", "question": "Who?"},
        )
        got.refused["build out absolute"] = await client.call_tool(
            "build_memory", {"video": "sample.mp4", "out": str(outside / "memory")}
        )
        got.bad_input["empty question"] = await client.call_tool(
            "answer_question", {"video": "sample.mp4", "memory": "memories/sample", "question": ""}
        )
        got.bad_input["one option"] = await client.call_tool(
            "answer_question",
            {
                "video": "sample.mp4",
                "memory": "memories/sample",
                "question": "Which?",
                "options": ["A. only"],
            },
        )
        got.bad_input["options not a list"] = await client.call_tool(
            "answer_question",
            {"video": "sample.mp4", "memory": "memories/sample", "question": "Q", "options": 3},
        )
    return got


@pytest.fixture(scope="module")
def session(roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Session:
    root, outside = roots
    return asyncio.run(_session(root, outside, tmp_path_factory.mktemp("mcp-cache")))


def test_the_client_lists_the_tools_with_schemas_from_their_type_hints(session: Session) -> None:
    assert set(session.tools) == TOOLS
    answer = session.tools["answer_question"]
    assert set(answer["required"]) == {"video", "memory", "question"}
    assert "options" in answer["properties"]
    assert session.videos == {"videos": VIDEOS}


def test_building_a_video_reports_progress_and_lists_the_memory(session: Session) -> None:
    build = session.build
    assert isinstance(build, dict), build
    assert build["memory"] == "memories/short" and build["status"] == "complete"
    assert build["clips"] == SHORT_S // 10
    assert build["failures"] == [] and build["degradations"] == []
    assert (session.root / "memories" / "short" / "memory.json").is_file()
    # Progress notifications arrived while it built, growing, and named the stages.
    values = [p for p, _total, _message in session.progress]
    assert len(values) > 3 and values == sorted(values) and len(set(values)) == len(values)
    messages = " ".join(m or "" for _p, _t, m in session.progress)
    assert "scan" in messages and "perception" in messages
    assert session.memories["memories"] == [
        {"path": f"memories/{name}", "resource_uri": f"memory://memories/{name}"}
        for name in ("sample", "short")
    ]
    assert "SuperEvent" in session.tree and "MacroEvent" in session.tree


def test_the_answer_is_right_with_citations_at_the_code_and_a_trace(session: Session) -> None:
    answer = session.answer
    assert isinstance(answer, dict), answer
    assert answer["answer"] == GATE_B["answer"] == "C"
    assert answer["degraded"] == []  # a faithful run says so; a degraded one lists each loss
    assert answer["levels_visited"] == ["super", "macro", "subgraph"]
    [span] = GATE_B["evidence_spans"]
    sources = [s for c in answer["citations"] for s in c["sources"]]
    assert sources, answer["citations"]
    assert all(span["start_s"] - 1 <= s["start_s"] <= span["end_s"] + 1 for s in sources)
    # Each level's steps arrived as progress too.
    assert any((m or "").startswith("subgraph: ") for _p, _t, m in session.answer_progress)
    # The trace is saved under the root and read back by its tool, naming the same answer.
    assert (session.root / answer["trace"]).is_file()
    assert session.trace["result"]["answer"] == "C"
    assert session.trace["result"]["citations"] == answer["citations"]


def test_the_answer_text_reads_as_words_with_no_internal_ids(session: Session) -> None:
    """Issue 39: the text a person is shown cites each source as its kind and time; the
    ids stay in the structured result."""
    text = session.answer_text
    assert text.startswith("answer: C"), text
    cited = [line for line in text.splitlines() if line.startswith(("claim ", "  cites "))]
    assert cited and cited[0].startswith("claim 1: "), text
    for line in cited:
        assert not re.search(r"\b(slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+)\b", line)
        assert not re.search(r"\b[SKFTD]\d+\b|\(scene_text\)|read by OCR", line), line
    # Each shown source: its words, and the time the trace page shows and a click seeks to.
    answer = session.answer
    for shown, cites in zip(answer["citations_shown"], answer["citations"], strict=True):
        for source, ref in zip(shown["sources"], cites["sources"], strict=True):
            at = ref["at_s"] if ref["at_s"] is not None else ref["start_s"]
            assert source["seek_s"] == at and f"  cites {source['shown']}" in text
    # What the answer cost, in words: the offline model is priced at zero, so dollars show.
    calls = answer["usage"]["calls"]
    assert f"cost: {calls} calls" in text and "$0.0000" in text
    assert answer["usage_text"] in text


def test_paths_leaving_the_root_are_refused_with_a_clear_message(
    session: Session, roots: tuple[Path, Path]
) -> None:
    _root, outside = roots
    assert len(session.refused) == 6
    for how, result in session.refused.items():
        assert result.is_error, how
        text = result.content[0].text
        assert "not under the server's roots" in text, (how, text)
        assert "Traceback" not in text
    for how, message in session.resource_refused.items():
        assert "not under the server's roots" in message, (how, message)
    assert not (outside / "memory").exists()


def test_bad_input_is_a_tool_error_naming_the_problem(session: Session) -> None:
    for how, result in session.bad_input.items():
        assert result.is_error, how
        assert "Traceback" not in result.content[0].text
    assert "question" in session.bad_input["empty question"].content[0].text
    assert "option" in session.bad_input["one option"].content[0].text.lower()
    assert "options" in session.bad_input["options not a list"].content[0].text


def test_what_a_run_loses_of_the_method_is_returned_to_the_caller(session: Session) -> None:
    """A server configured to read subtitles, asked without any, answers from the memory's
    stored transcript: the answer says so instead of passing for a faithful run (the SDK's
    client connected in-process to a server from the same factory)."""
    from videotapestry.config import load_config
    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server
    from videotapestry.serve.roots import Roots

    config = load_config(None, profile="offline", overrides=["asr.source=subtitles"])
    roots = Roots.of([session.root])
    server = create_mcp_server(McpSettings(config, roots, session.root / "other-traces"))

    async def ask() -> Any:
        async with Client(server) as client:
            arguments = {"question": GATE_B["question"], "options": GATE_B["options"]}
            return await client.call_tool(
                "answer_question", {"video": "sample.mp4", "memory": "memories/sample", **arguments}
            )

    answer = asyncio.run(ask())
    assert not answer.is_error, answer.content
    [lost] = answer.structured_content["degraded"]
    assert lost["kind"] == "asr_substituted" and lost["level"] == "setup"
    assert "stored transcript" in lost["why"]


# --------------------------------------------------------------------------- streamable HTTP


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def http_server(roots: tuple[Path, Path], tmp_path: Path) -> Iterator[str]:
    """The server on streamable HTTP at 127.0.0.1 with a token, stopped after the test."""
    root, _outside = roots
    port = free_port()
    command = server_command(root, tmp_path, "--transport", "http", "--port", str(port))
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen([*command, "--token", "s3cret"], env=server_env(), stderr=log)
    try:
        deadline = time.monotonic() + 300  # a guard against a server that never listens
        while process.poll() is None and not listening(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert process.poll() is None and listening(port), log_path.read_text()
        assert f"serving http://127.0.0.1:{port}/mcp (token required)" in log_path.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_streamable_http_answers_a_call_and_refuses_a_wrong_token(http_server: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"})
        async with http, Client(streamable_http_client(http_server, http_client=http)) as client:
            return (await client.call_tool("list_videos", {})).structured_content

    assert asyncio.run(call()) == {"videos": VIDEOS}
    for header in ({}, {"Authorization": "Bearer wrong"}):
        request = urllib.request.Request(
            http_server, data=json.dumps({}).encode(), headers=header, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 401


def test_a_bind_beyond_loopback_without_a_token_refuses_to_start(
    roots: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIDEOTAPESTRY_SERVE_TOKEN", raising=False)
    root, _outside = roots
    args = ["mcp", "--root", str(root), "--transport", "http", "--host", "0.0.0.0"]
    assert main(args) == 2
    assert "without a token" in capsys.readouterr().err
