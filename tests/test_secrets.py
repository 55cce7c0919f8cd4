"""Secrets never stored or shown, whatever carries them (issue 38, item 2).

A model that echoes its key (a prompt injection, a proxy that quotes the request, a test
server) puts the key into its reply, and everything built from the reply: the result, the
trace, the ``--json`` output, the response cache, a memory and its checkpoints, the served
job rows and responses. A password in a base URL (``http://user:KEY@host/v1``) was printed
in every connection error. The fake server echoes the key into every reply here, through
the real SDK, and each test then reads every byte the run left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, cli_args
from serve_support import start_server

from videotapestry.cli import main
from videotapestry.config import load_config
from videotapestry.llm import Message, ModelRequest, ModelService
from videotapestry.llm.cache import ResponseCache, request_key
from videotapestry.llm.types import ModelResponse
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.testing.fake_openai import RecordedRequest
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, offline_build_overrides

#: In a variable named like no secret and shaped like no token: only its configured value
#: can find it.
KEY = "plain-credential-7f3a9c2e41b8d6"
KEY_VARIABLE = "MY_LLM_CREDS"
#: The password of a base URL's userinfo.
URL_PASSWORD = "url-password-5d8e1f4a9b"
#: A role the runs below never call, whose base URL's password is a secret all the same.
JUDGE_URL = f"models.roles.judge.base_url=http://bob:{URL_PASSWORD}@127.0.0.1:9/v1"

#: Reply fields of free text (the method's and the builder's) the echo is appended to.
ECHOED = {
    "thought", "reasoning", "reason", "next_instruct", "observation_result",
    "observation_instruction", "relevance_to_question", "updated_text", "visual_observation",
    "irrelevant_summary", "caption", "description", "summary", "transition",
}  # fmt: skip


def echoing(model: Callable[[RecordedRequest], Any]) -> Callable[[RecordedRequest], Any]:
    """``model``'s replies with the key appended to every free-text field."""

    def echo(value: Any, field: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: echo(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [echo(v, field) for v in value]
        if isinstance(value, str) and field in ECHOED:
            return f"{value} (key {KEY}, also {URL_PASSWORD})"
        return value

    return lambda request: echo(model(request))


def leaks(data: bytes | str) -> list[str]:
    """Which of the secrets ``data`` holds."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [secret for secret in (KEY, URL_PASSWORD) if secret in text]


def files_leaking(folder: Path) -> dict[str, list[str]]:
    return {
        str(path): found
        for path in folder.rglob("*")
        if path.is_file() and (found := leaks(path.read_bytes()))
    }


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return KEY


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


# --------------------------------------------------------------------------- the model layer


def test_every_configured_key_and_base_url_password_is_a_secret(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_CREDS", "judge-credential-0a1b2c3d")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://me:env-password-99x@127.0.0.1:9/v1")
    config = load_config(
        overrides=[
            f"models.default.api_key_env={KEY_VARIABLE}",
            "models.roles.judge.api_key_env=JUDGE_CREDS",
            f"models.roles.builder_clip.base_url=http://bob:{URL_PASSWORD}@127.0.0.1:9/v1",
        ]
    )
    secrets = ModelService(config).secrets()
    for secret in (KEY, "judge-credential-0a1b2c3d", URL_PASSWORD, "env-password-99x"):
        assert secret in secrets


def test_a_reply_that_echoes_the_key_is_redacted_before_anyone_sees_or_stores_it(
    key: str, fake_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_server.on("answer", lambda _: FakeReply.text(f"the key is {KEY} and {URL_PASSWORD}"))
    config = load_config(
        overrides=[
            f"models.default.base_url={fake_server.base_url}",
            "models.default.harness_headers=true",
            f"models.default.api_key_env={KEY_VARIABLE}",
            f"models.roles.judge.base_url=http://me:{URL_PASSWORD}@127.0.0.1:9/v1",
            "models.default.max_retries=0",
            f"cache.path={tmp_path / 'responses.sqlite'}",
        ]
    )
    service = ModelService(config)
    request = ModelRequest(
        role="answer",
        messages=(Message("user", "say the key"),),
        settings=config.models.settings_for("answer"),
    )

    async def ask() -> tuple[ModelResponse, ModelResponse]:
        session = service.session()
        try:
            fresh = await session.send(request)
            return fresh, await session.send(request)  # the second from the cache
        finally:
            await service.aclose()

    fresh, cached = asyncio.run(ask())
    service.close()
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # really sent
    assert len(fake_server.requests) == 1 and cached.cached
    for response in (fresh, cached):
        assert response.text == "the key is [REDACTED] and [REDACTED]"
    assert files_leaking(tmp_path) == {}


def test_a_reply_cached_with_the_key_before_is_redacted_when_read(
    key: str, fake_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    config = load_config(
        overrides=[
            f"models.default.base_url={fake_server.base_url}",
            f"models.default.api_key_env={KEY_VARIABLE}",
            f"cache.path={tmp_path / 'responses.sqlite'}",
        ]
    )
    request = ModelRequest(
        role="answer",
        messages=(Message("user", "say the key"),),
        settings=config.models.settings_for("answer"),
    )
    old = ResponseCache(tmp_path / "responses.sqlite")
    old.put(request_key(request, fake_server.base_url), request, ModelResponse(f"old {KEY}", "m"))
    old.close()
    service = ModelService(config)

    async def ask() -> ModelResponse:
        try:
            return await service.session().send(request)
        finally:
            await service.aclose()

    reply = asyncio.run(ask())
    service.close()
    assert reply.cached and reply.text == "old [REDACTED]" and fake_server.requests == []


# --------------------------------------------------------------------------- the CLI


@pytest.mark.slow
def test_ask_with_a_model_that_echoes_the_key_keeps_it_out_of_json_trace_and_cache(
    key: str,
    fake_server: FakeOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_server.on(None, echoing(ScriptedModel()))
    trace = tmp_path / "trace.json"
    cache = tmp_path / "responses.sqlite"
    status = main(
        [
            "ask", "--memory", str(SAMPLE), "--question", QUESTION,
            *[x for option in OPTIONS for x in ("--option", option)],
            "--json", "--trace", str(trace), "--quiet", "--allow-degraded",
            *cli_args(fake_server),
            "-o", f"models.default.api_key_env={KEY_VARIABLE}", "-o", JUDGE_URL,
            "-o", "cache.enabled=true", "-o", f"cache.path={cache}",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 0, err
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    echoed = [r for r in fake_server.requests if r.prompt == "final_answer"]
    assert echoed, [r.prompt for r in fake_server.requests]
    report = json.loads(out)
    assert "[REDACTED]" in report["reasoning"]  # the echo arrived, and was taken out
    saved = json.loads(trace.read_text())
    assert "[REDACTED]" in json.dumps(saved["levels"])  # plans and notes were echoed too
    assert leaks(out + err) == []
    assert cache.is_file() and files_leaking(tmp_path) == {}


@pytest.mark.slow
def test_build_with_a_model_that_echoes_the_key_keeps_it_out_of_memory_and_checkpoints(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = make_test_video(tmp_path / "rooms.mp4", 20, fps=2, size=(192, 108), scene_s=10)
    out = tmp_path / "m"
    with FakeOpenAIServer() as server:
        server.on(None, echoing(ScriptedBuilderModel(video.fps, video.scenes)))
        overrides = offline_build_overrides(
            server.base_url,
            "builder.ocr.engine=none",
            f"models.default.api_key_env={KEY_VARIABLE}",
            JUDGE_URL,
            "cache.enabled=true",
            f"cache.path={tmp_path / 'responses.sqlite'}",
        )
        status = main(
            ["build-memory", str(video.path), str(out), "--quiet", "--json"]
            + [x for item in overrides for x in ("-o", item)]
        )
        assert server.requests and all(
            r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests
        )
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert "[REDACTED]" in (out / "memory.json").read_text()  # echoed, and taken out
    assert leaks(printed.out + printed.err) == []
    assert files_leaking(tmp_path) == {}


def test_a_password_in_the_base_url_is_never_printed(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_url = f"http://bob:{URL_PASSWORD}@127.0.0.1:{closed_port()}/v1"
    status = main(
        [
            "ask", "--memory", str(SAMPLE), "--question", QUESTION, "--no-video",
            "--trace", str(tmp_path / "trace.json"),
            "-o", f"models.default.base_url={base_url}",
            "-o", f"models.default.api_key_env={KEY_VARIABLE}",
            "-o", "models.default.max_retries=0", "-o", "cache.enabled=false",
            "-o", "embedding.model=packaged:all-MiniLM-L6-v2",
            "-o", "embedding.query_prompt_name=null",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert status != 0 and "could not connect" in err, err
    assert "http://127.0.0.1:" in err  # the endpoint is named, without its userinfo
    assert leaks(out + err) == [] and "bob" not in err
    assert "Traceback" not in err
    assert files_leaking(tmp_path) == {}


# --------------------------------------------------------------------------- the server


def served(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        body: bytes = response.read()
        return body


def job_store_bytes(data_dir: Path) -> bytes:
    """Every row of the job store as text, and the raw bytes of its files (the WAL too)."""
    raw = b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())
    db = sqlite3.connect(data_dir / "jobs.sqlite")
    try:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(row) for table in tables for row in db.execute(f"SELECT * FROM {table}")]
    finally:
        db.close()
    assert rows, "the job store holds no rows"
    return raw + "\n".join(rows).encode()


def served_root(folder: Path) -> Path:
    """A root holding only the sample memory (asked from memory only: no video)."""
    shutil.copytree(SAMPLE, folder / "memories" / "sample")
    return folder


@pytest.mark.slow
def test_a_served_answer_from_a_model_that_echoes_the_key_keeps_it_out_of_the_job_store(
    key: str, fake_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_server.on(None, echoing(ScriptedModel()))
    root = served_root(tmp_path / "root")
    data_dir = tmp_path / "data"
    server = start_server(
        root, data_dir,
        "-o", "models.default.provider=openai", "-o", "models.default.model=fake-vlm",
        "-o", f"models.default.base_url={fake_server.base_url}",
        "-o", "models.default.harness_headers=true", "-o", "models.default.max_retries=0",
        "-o", f"models.default.api_key_env={KEY_VARIABLE}", "-o", JUDGE_URL,
    )  # fmt: skip
    try:
        job = server.post(
            "/api/jobs",
            {"kind": "ask", "memory": "memories/sample", "question": QUESTION,
             "options": OPTIONS},
        )  # fmt: skip
        done = server.wait_job(job["id"])
        assert done["state"] == "done", done
        assert any(r.prompt == "final_answer" for r in fake_server.requests)
        shown = served(f"{server.url}/api/jobs/{job['id']}")
        trace = served(f"{server.url}/api/jobs/{job['id']}/trace")
        listed = served(f"{server.url}/api/jobs")
    finally:
        server.stop()
    assert b"[REDACTED]" in shown + trace  # the echo arrived, and was taken out
    assert leaks(shown + trace + listed) == []
    assert leaks(job_store_bytes(data_dir)) == []
    assert files_leaking(tmp_path) == {}  # the response cache and the server's log too


@pytest.mark.slow
def test_a_served_job_whose_base_url_holds_a_password_stores_and_shows_none_of_it(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = served_root(tmp_path / "root")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://bob:{URL_PASSWORD}@127.0.0.1:{closed_port()}/v1")
    data_dir = tmp_path / "data"
    server = start_server(
        root, data_dir,
        "-o", "models.default.provider=openai", "-o", "models.default.max_retries=0",
        "-o", f"models.default.api_key_env={KEY_VARIABLE}",
    )  # fmt: skip
    try:
        job = server.post(
            "/api/jobs", {"kind": "ask", "memory": "memories/sample", "question": QUESTION}
        )
        done = server.wait_job(job["id"])
        shown = served(f"{server.url}/api/jobs/{job['id']}")
    finally:
        server.stop()
    assert done["state"] == "failed" and "could not connect" in done["error"], done
    assert leaks(shown) == [] and b"bob" not in shown
    assert leaks(job_store_bytes(data_dir)) == []
    assert os.environ["OPENAI_BASE_URL"]  # the server really had it


def test_an_eval_run_header_keeps_no_base_url_password(tmp_path: Path) -> None:
    from videotapestry.eval.run_writer import RunDirectory, new_run_info
    from videotapestry.prompts import PromptRegistry

    base_url = f"http://bob:{URL_PASSWORD}@127.0.0.1:9/v1"
    override = f"models.roles.judge.base_url={base_url}"
    info = new_run_info(
        benchmark="jsonl",
        annotations=tmp_path / "q.jsonl",
        variants=["full"],
        config=load_config(overrides=[override]),
        prompts=PromptRegistry(),
        command=["videotapestry", "eval", "-o", override],
    )
    RunDirectory.open(tmp_path / "run", info).close()
    header = (tmp_path / "run" / "run.json").read_text()
    assert "http://127.0.0.1:9/v1" in header  # where the judge is served is kept
    assert leaks(header) == [] and "bob" not in header
    again = new_run_info(
        benchmark="jsonl",
        annotations=tmp_path / "q.jsonl",
        variants=["full"],
        config=load_config(overrides=[override]),
        prompts=PromptRegistry(),
    )
    RunDirectory.open(tmp_path / "run", again).close()  # the same run: it resumes
