"""The fake server is the foundation of every LLM-facing test, so its behaviour is pinned here."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from videotapestry.testing import FakeOpenAIServer, FakeReply, RecordedRequest

ROLE = "x-videotapestry-role"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def chat(
    srv: FakeOpenAIServer,
    role: str | None = None,
    *,
    content: Any = "hello",
    timeout: float = 5.0,
    **extra: Any,
) -> httpx.Response:
    headers = {"Authorization": "Bearer test-key"}
    if role is not None:
        headers[ROLE] = role
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": content}], **extra}
    return httpx.post(
        f"{srv.base_url}/chat/completions", json=body, headers=headers, timeout=timeout
    )


def wait_for_threads_to_exit(before: set[threading.Thread], within_s: float = 1.0) -> set[str]:
    """Names of threads started since ``before`` that are still alive after ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        lingering = {t for t in threading.enumerate() if t not in before and t.is_alive()}
        if not lingering or time.monotonic() > deadline:
            return {t.name for t in lingering}
        time.sleep(0.02)


def answer(resp: httpx.Response) -> str | None:
    assert resp.status_code == 200, resp.text
    return resp.json()["choices"][0]["message"]["content"]


def test_scripted_replies_are_consumed_in_order_per_role(server: FakeOpenAIServer) -> None:
    server.script("planner", "p1", {"step": 2})
    server.script("critic", "c1")

    assert answer(chat(server, "planner")) == "p1"
    assert answer(chat(server, "critic")) == "c1"
    assert json.loads(answer(chat(server, "planner")) or "") == {"step": 2}
    # Queue exhausted and no fallback configured.
    assert chat(server, "planner").status_code == 400
    assert [r.role for r in server.requests] == ["planner", "critic", "planner", "planner"]
    assert len(server.requests_for("planner")) == 3


def test_handler_computes_reply_from_request(server: FakeOpenAIServer) -> None:
    seen: list[RecordedRequest] = []

    def responder(req: RecordedRequest) -> dict[str, Any]:
        seen.append(req)
        return {"echo": req.text.upper(), "prompt": req.prompt}

    server.on("answerer", responder)
    resp = httpx.post(
        f"{server.base_url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "what colour?"}]},
        headers={ROLE: "answerer", "x-videotapestry-prompt": "answer.v1"},
    )
    assert json.loads(answer(resp) or "") == {"echo": "WHAT COLOUR?", "prompt": "answer.v1"}
    assert len(seen) == 1 and seen[0].role == "answerer"


def test_script_queue_takes_precedence_over_handler(server: FakeOpenAIServer) -> None:
    server.on("r", lambda _req: "from handler")
    server.script("r", "from script")
    assert answer(chat(server, "r")) == "from script"
    assert answer(chat(server, "r")) == "from handler"


def test_none_role_is_the_fallback(server: FakeOpenAIServer) -> None:
    server.script(None, "default-scripted")
    server.on(None, lambda req: f"default-handler for {req.role}")
    server.script("special", "special-reply")

    assert answer(chat(server, "special")) == "special-reply"
    assert answer(chat(server, "other")) == "default-scripted"
    assert answer(chat(server, "other")) == "default-handler for other"
    assert answer(chat(server)) == "default-handler for None"


def test_unscripted_role_gets_400_and_is_recorded(server: FakeOpenAIServer) -> None:
    resp = chat(server, "ghost")
    assert resp.status_code == 400
    message = resp.json()["error"]["message"]
    assert message == "fake server: no reply scripted for role 'ghost'"
    assert [r.role for r in server.requests] == ["ghost"]


def test_json_schema_unsupported_is_rejected_but_recorded() -> None:
    with FakeOpenAIServer(supports_json_schema=False) as srv:
        srv.script("r", "never sent")
        fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
        resp = chat(srv, "r", response_format=fmt)
        assert resp.status_code == 400
        assert resp.json() == {
            "error": {
                "message": "response_format type 'json_schema' is not supported",
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        }
        assert len(srv.requests) == 1
        assert srv.requests[0].response_format == fmt
        # The rejected request must not have consumed the scripted reply.
        assert answer(chat(srv, "r", response_format={"type": "json_object"})) == "never sent"


def test_json_object_unsupported_is_rejected() -> None:
    with FakeOpenAIServer(supports_json_object=False) as srv:
        srv.script("r", "ok")
        resp = chat(srv, "r", response_format={"type": "json_object"})
        assert resp.status_code == 400
        assert resp.json()["error"]["param"] == "response_format"
        assert answer(chat(srv, "r")) == "ok"


def test_rate_limited_carries_retry_after(server: FakeOpenAIServer) -> None:
    server.script("r", FakeReply.rate_limited(2.5))
    resp = chat(server, "r")
    assert resp.status_code == 429
    assert resp.headers["retry-after"] == "2.5"
    assert resp.json()["error"]["code"] == "rate_limit_exceeded"


def test_server_error_and_raw_body(server: FakeOpenAIServer) -> None:
    server.script("r", FakeReply.server_error(503), FakeReply(raw_body=b"not json at all"))
    resp = chat(server, "r")
    assert resp.status_code == 503
    assert resp.json()["error"]["type"] == "server_error"
    resp = chat(server, "r")
    assert resp.status_code == 200
    assert resp.content == b"not json at all"


def test_content_factories() -> None:
    obj = {"reasoning": "r", "answer": "A"}
    assert FakeReply.json(obj).content == json.dumps(obj)
    assert FakeReply.fenced(obj).content == f"```json\n{json.dumps(obj)}\n```"
    assert FakeReply.with_trailing_text(obj).content == f"{json.dumps(obj)}\n\nHope this helps!"
    malformed = FakeReply.malformed().content or ""
    with pytest.raises(json.JSONDecodeError):
        json.loads(malformed)
    assert FakeReply.empty().content == ""
    assert FakeReply.stall(3).delay_s == 3


def test_stall_times_out_client_and_stop_is_prompt() -> None:
    before = set(threading.enumerate())
    srv = FakeOpenAIServer().start()
    try:
        srv.script("slow", FakeReply.stall(30))
        with pytest.raises(httpx.TimeoutException):
            chat(srv, "slow", timeout=0.3)
        assert [r.role for r in srv.requests] == ["slow"]
    finally:
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 2.0
    # The stalled handler thread must wake up too, not sleep out its 30 s.
    assert wait_for_threads_to_exit(before) == set()


def test_stop_interrupts_a_stall_with_client_still_waiting() -> None:
    before = set(threading.enumerate())
    srv = FakeOpenAIServer().start()
    srv.script("slow", FakeReply.stall(30))
    outcome: list[BaseException | httpx.Response] = []

    def client() -> None:
        try:
            outcome.append(chat(srv, "slow", timeout=20))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    deadline = time.monotonic() + 5
    while not srv.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert srv.requests, "request never reached the server"

    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 2.0
    thread.join(timeout=5)
    assert not thread.is_alive()
    # The stalled reply is dropped, never delivered late.
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.TransportError)
    assert wait_for_threads_to_exit(before) == set()


def test_stop_closes_idle_keep_alive_connections() -> None:
    before = set(threading.enumerate())
    srv = FakeOpenAIServer().start()
    srv.script(None, "a", "b")
    with httpx.Client(base_url=srv.base_url) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert client.post("/chat/completions", json=body).status_code == 200
        assert client.post("/chat/completions", json=body).status_code == 200
        # The pooled connection is still open here; stop() must not leave its thread behind.
        srv.stop()
        assert wait_for_threads_to_exit(before) == set()


def test_latency_is_added_to_chat_requests() -> None:
    with FakeOpenAIServer(latency_s=0.25) as srv:
        srv.script(None, "x")
        started = time.monotonic()
        assert answer(chat(srv)) == "x"
        assert time.monotonic() - started >= 0.25


def test_image_data_url_round_trips(server: FakeOpenAIServer) -> None:
    image = bytes(range(256)) * 3
    url = "data:image/jpeg;base64," + base64.b64encode(image).decode()
    parts = [
        {"type": "text", "text": "describe"},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "text", "text": "briefly"},
    ]
    server.script(None, "ok")
    answer(chat(server, content=parts))
    req = server.requests[0]
    assert req.images == [image]
    assert req.text == "describe\nbriefly"


def test_usage_estimates_and_overrides(server: FakeOpenAIServer) -> None:
    url = "data:image/png;base64," + base64.b64encode(b"\x89PNG").decode()
    parts = [{"type": "text", "text": "x" * 10}, {"type": "image_url", "image_url": {"url": url}}]
    server.script(None, "y" * 9, FakeReply(content="z", prompt_tokens=7, completion_tokens=3))

    body = chat(server, content=parts).json()
    # ceil(10 / 4) + 85 per image; ceil(9 / 4).
    assert body["usage"] == {"prompt_tokens": 88, "completion_tokens": 3, "total_tokens": 91}
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-test"
    assert body["id"].startswith("chatcmpl-fake-")

    body = chat(server).json()
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_authorization_header_is_recorded(server: FakeOpenAIServer) -> None:
    server.script(None, "ok")
    answer(chat(server, "r"))
    req = server.requests[0]
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.model == "gpt-test"
    assert req.messages == [{"role": "user", "content": "hello"}]


def test_models_endpoint_and_unknown_path() -> None:
    with FakeOpenAIServer(model="my-model") as srv:
        resp = httpx.get(f"{srv.base_url}/models")
        assert resp.status_code == 200
        assert [m["id"] for m in resp.json()["data"]] == ["my-model"]
        missing = httpx.get(f"{srv.base_url}/nowhere")
        assert missing.status_code == 404
        assert "error" in missing.json()


def test_reset_clears_everything(server: FakeOpenAIServer) -> None:
    server.script("r", "a")
    server.on(None, lambda _req: "b")
    chat(server, "x")
    server.reset()
    assert server.requests == []
    assert chat(server, "r").status_code == 400


def test_openai_sdk_round_trip(server: FakeOpenAIServer) -> None:
    payload = {"reasoning": "because", "answer": "A"}
    server.script("answerer", FakeReply.json(payload), FakeReply.rate_limited(0.5))
    server.script("verifier", FakeReply(content="done", finish_reason="length"))

    async def run() -> None:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        async with client:
            completion = await client.chat.completions.create(
                model="gpt-test",
                messages=[{"role": "user", "content": "Which option?"}],
                response_format={"type": "json_object"},
                extra_headers={ROLE: "answerer", "x-videotapestry-prompt": "answer.v1"},
            )
            assert json.loads(completion.choices[0].message.content or "") == payload
            assert completion.usage is not None
            assert completion.usage.prompt_tokens == 4  # ceil(len("Which option?") / 4)
            assert completion.usage.total_tokens == 4 + completion.usage.completion_tokens

            other = await client.chat.completions.create(
                model="gpt-test",
                messages=[{"role": "user", "content": "check"}],
                extra_headers={ROLE: "verifier"},
            )
            assert other.choices[0].finish_reason == "length"

            with pytest.raises(openai.RateLimitError) as rate_limited:
                await client.chat.completions.create(
                    model="gpt-test",
                    messages=[{"role": "user", "content": "again"}],
                    extra_headers={ROLE: "answerer"},
                )
            assert rate_limited.value.response.headers["retry-after"] == "0.5"

            with pytest.raises(openai.BadRequestError, match="no reply scripted"):
                await client.chat.completions.create(
                    model="gpt-test",
                    messages=[{"role": "user", "content": "nobody"}],
                    extra_headers={ROLE: "nobody"},
                )

    asyncio.run(run())
    first = server.requests_for("answerer")[0]
    assert first.headers["authorization"] == "Bearer test-key"
    assert first.prompt == "answer.v1"
    assert first.response_format == {"type": "json_object"}
    assert [r.role for r in server.requests] == ["answerer", "verifier", "answerer", "nobody"]


def test_sdk_rejects_unsupported_json_schema() -> None:
    with FakeOpenAIServer(supports_json_schema=False) as srv:

        async def run() -> None:
            client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
            async with client:
                await client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "hi"}],
                    response_format={
                        "type": "json_schema",
                        "json_schema": {"name": "a", "schema": {"type": "object"}},
                    },
                )

        with pytest.raises(openai.BadRequestError, match="json_schema"):
            asyncio.run(run())
        assert len(srv.requests) == 1


def test_concurrent_requests_are_served_in_parallel() -> None:
    """Benchmarks rely on latency overlapping across concurrent calls, not adding up."""
    with FakeOpenAIServer(latency_s=0.3) as srv:
        srv.on(None, lambda req: req.text)

        async def run() -> list[str | None]:
            client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
            async with client:
                calls = [
                    client.chat.completions.create(
                        model="m",
                        messages=[{"role": "user", "content": f"q{i}"}],
                        extra_headers={ROLE: f"worker-{i}"},
                    )
                    for i in range(20)
                ]
                return [c.choices[0].message.content for c in await asyncio.gather(*calls)]

        started = time.monotonic()
        contents = asyncio.run(run())
        elapsed = time.monotonic() - started
        assert contents == [f"q{i}" for i in range(20)]
        assert 0.3 <= elapsed < 2.0  # serial handling would take 6 s
        assert len(srv.requests) == 20
