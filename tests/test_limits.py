"""Size limits (issue 38 item 5): a request body over ``serve.max_request_bytes`` and a
question over ``question.max_chars`` are refused with the limit named, before anything is
stored or asked, wherever they come in: the REST API (a real server; the 64 MiB POST of the
trial, declared and chunked), ``ask``, ``chat --script``, eval rows and MCP's
``answer_question``.
"""

from __future__ import annotations

import asyncio
import json
import select
import shutil
import socket
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, cli_args, run_cli
from serve_support import Server, start_server

from videotapestry.testing import FakeOpenAIServer

LIMIT = "over the limit of 20,000 (config question.max_chars)"
#: A question of 2 MiB: what ``chat --script`` ran in the trial.
HUGE_QUESTION = "Which gate? " + "x" * (2 << 20)


# --------------------------------------------------------------------------- the REST API


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("limits")
    root = base / "root"
    (root / "memories").mkdir(parents=True)
    server = start_server(root, base / "data")
    try:
        yield server
    finally:
        server.stop()


def raw_post(server: Server, head: dict[str, str], parts: Iterator[bytes]) -> tuple[int, Any]:
    """POST /api/jobs over a socket, sending ``parts`` until the server answers (it may stop
    reading at any point); the status and JSON body of its answer."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        lines = ["POST /api/jobs HTTP/1.1", f"Host: {host}:{port}"]
        lines += [f"{name}: {value}" for name, value in head.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        try:
            for part in parts:  # as a client that reads the answer as soon as there is one
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body went
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1])


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1


def stored_jobs(server: Server) -> int:
    data = Path(server.log).parent / "data"
    with sqlite3.connect(data / "jobs.sqlite") as db:
        count: int = db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
    return count


@pytest.mark.slow  # a served app
def test_a_64_mib_question_is_refused_413_before_anything_is_stored(served: Server) -> None:
    body = json.dumps({"kind": "ask", "memory": "memories", "question": "x" * (64 << 20)}).encode()
    started = time.monotonic()
    declared = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    status, answer = raw_post(
        served, declared, (body[i : i + (1 << 20)] for i in range(0, len(body), 1 << 20))
    )
    assert status == 413, answer
    assert "over the limit of 1,048,576 bytes (config serve.max_request_bytes)" in answer["detail"]
    # Sent chunked (no declared length), it is read only up to the limit.
    chunked = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    pieces = (
        f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        for piece in (body[i : i + (1 << 18)] for i in range(0, len(body), 1 << 18))
    )
    status, answer = raw_post(served, chunked, pieces)
    assert status == 413, answer
    assert "config serve.max_request_bytes" in answer["detail"]
    assert time.monotonic() - started < 60
    assert served.get("/api/jobs") == [] and stored_jobs(served) == 0


@pytest.mark.slow  # a served app
def test_a_question_over_the_limit_is_refused_by_the_rest_api(served: Server) -> None:
    body = {"kind": "ask", "memory": "memories", "question": "Which gate? " + "x" * 30_000}
    with pytest.raises(urllib.error.HTTPError) as refused:
        served.post("/api/jobs", body)
    assert refused.value.code == 400
    detail = json.loads(refused.value.read())["detail"]
    assert "30,012 characters long, " + LIMIT in detail
    assert served.get("/api/jobs") == [] and stored_jobs(served) == 0


# --------------------------------------------------------------------------- ask, chat, eval


def test_ask_refuses_a_question_over_the_limit(
    quiet_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run_cli(
        capsys, "ask", "--memory", str(SAMPLE), "--question", HUGE_QUESTION, "--quiet",
        *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2 and LIMIT in err, err[:500]
    assert len(err) < 1000  # the question is not quoted back
    # The limit is the config's: a lower one is named as set.
    status, err = run_cli(
        capsys, "ask", "--memory", str(SAMPLE), "--question", QUESTION + " " + "y" * 200,
        *[x for option in OPTIONS for x in ("--option", option)], "--quiet",
        *cli_args(quiet_server, "-o", "question.max_chars=200"),
    )  # fmt: skip
    assert status == 2 and "over the limit of 200 (config question.max_chars)" in err, err
    assert quiet_server.requests == []


def test_chat_refuses_a_script_with_a_turn_over_the_limit_before_any_turn(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "turns.txt"
    script.write_text(f"{QUESTION}\n{HUGE_QUESTION}\n", encoding="utf-8")
    status, err = run_cli(
        capsys, "chat", "--memory", str(SAMPLE), "--script", str(script), "--quiet",
        "--trace-dir", str(tmp_path / "traces"), *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err[:500]
    assert f"the chat script {script}, turn 2: " in err and LIMIT in err
    assert quiet_server.requests == []  # not even the first turn was asked
    assert not (tmp_path / "traces").exists()


def test_eval_refuses_a_row_over_the_limit_before_the_run_starts(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memories = tmp_path / "memories"
    memories.mkdir()
    (memories / "cooking").symlink_to(SAMPLE)
    annotations = tmp_path / "q.jsonl"
    rows = [
        {"id": "short", "video": "cooking.mp4", "question": QUESTION, "options": OPTIONS},
        {"id": "long", "video": "cooking.mp4", "question": HUGE_QUESTION, "options": OPTIONS},
    ]
    annotations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = tmp_path / "run"
    status, err = run_cli(
        capsys, "eval", "--benchmark", "jsonl", "--annotations", str(annotations),
        "--no-video", "--memories", str(memories), "--out", str(run), "--quiet",
        *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err[:500]
    assert "question 'long' of the benchmark" in err and LIMIT in err
    assert not run.exists()  # nothing stored
    assert quiet_server.requests == []


# --------------------------------------------------------------------------- MCP


def test_mcp_refuses_a_question_over_the_limit_at_once(tmp_path: Path) -> None:
    from mcp import Client

    from videotapestry.config import load_config
    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server
    from videotapestry.serve.roots import Roots

    root = tmp_path / "root"
    shutil.copytree(SAMPLE, root / "memories" / "cooking")  # a link out of the root is refused
    (root / "cooking.mp4").write_bytes(b"not read: the question is refused first")
    config = load_config(None, profile="offline")
    server = create_mcp_server(McpSettings(config, Roots.of([root]), root / "traces"))
    question = "Which gate? " + "x" * (5 << 20)  # the trial's 5 MiB

    async def ask() -> Any:
        async with Client(server) as client:
            return await client.call_tool(
                "answer_question",
                {"video": "cooking.mp4", "memory": "memories/cooking", "question": question},
            )

    started = time.monotonic()
    answer = asyncio.run(ask())
    assert answer.is_error
    text = " ".join(getattr(part, "text", "") for part in answer.content)
    assert LIMIT in text and len(text) < 1000, text[:500]
    assert time.monotonic() - started < 30
    assert not any((root / "traces").glob("*"))
