"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

The point is to exercise the real ``openai`` SDK code path (HTTP, retries, timeouts, error
classes, JSON decoding) without a network or a model, while letting a test decide exactly what
each agent role gets back. Replies are keyed by the ``x-videotapestry-role`` request header so a
multi-agent pipeline can be scripted per role rather than by global call order, which would make
tests brittle against harmless reordering of concurrent calls. The client sends that header only
when ``models.<role>.harness_headers`` is true, so a config aimed here sets it.

Standard library only, so it can ship inside the package and run in any test environment.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import socket
import sys
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "ReplyLike",
    "Responder",
    "main",
]

ROLE_HEADER = "x-videotapestry-role"
PROMPT_HEADER = "x-videotapestry-prompt"
#: The client setting that makes it send the role/prompt/level headers.
HEADERS_SETTING = "models.default.harness_headers"
IMAGE_TOKENS = 85  # what OpenAI charges for a low-detail image; keeps estimates plausible

# Errors raised when the client has already hung up (timeouts, cancelled tasks); they are
# expected in stall tests and must not spam stderr.
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def _error_body(
    message: str,
    *,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> bytes:
    """Shape errors like OpenAI does so the SDK surfaces ``message`` in its exception text."""
    error = {"message": message, "type": type_, "param": param, "code": code}
    return json.dumps({"error": error}).encode()


@dataclass
class FakeReply:
    """One canned answer; the factories name the failure modes LLM-facing code must survive."""

    content: str | None = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: bytes | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    #: Reported as ``usage.prompt_tokens_details.cached_tokens`` (a provider prefix-cache
    #: hit) and ``usage.completion_tokens_details.reasoning_tokens``; None leaves them out.
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def text(cls, content: str) -> FakeReply:
        return cls(content=content)

    @classmethod
    def json(cls, obj: Any) -> FakeReply:
        return cls(content=json.dumps(obj))

    @classmethod
    def fenced(cls, obj: Any) -> FakeReply:
        """Models often wrap JSON in a markdown fence even when told not to."""
        return cls(content=f"```json\n{json.dumps(obj)}\n```")

    @classmethod
    def with_trailing_text(cls, obj: Any) -> FakeReply:
        """Models sometimes append chatter after otherwise valid JSON."""
        return cls(content=f"{json.dumps(obj)}\n\nHope this helps!")

    @classmethod
    def malformed(cls) -> FakeReply:
        """Truncated JSON, as produced when a model hits max_tokens mid-object."""
        return cls(content='{"reasoning": "cut off')

    @classmethod
    def empty(cls) -> FakeReply:
        return cls(content="")

    @classmethod
    def rate_limited(cls, retry_after: float = 1.0) -> FakeReply:
        """A 429 with Retry-After, so callers' back-off logic has something real to parse."""
        body = _error_body(
            "Rate limit reached (fake server). Please try again later.",
            type_="requests",
            code="rate_limit_exceeded",
        )
        return cls(
            content=None, status=429, headers={"Retry-After": str(retry_after)}, raw_body=body
        )

    @classmethod
    def server_error(cls, status: int = 500) -> FakeReply:
        body = _error_body(
            "The server had an error while processing your request (fake server).",
            type_="server_error",
        )
        return cls(content=None, status=status, raw_body=body)

    @classmethod
    def stall(cls, seconds: float) -> FakeReply:
        """Hang before answering, to drive client timeouts; ``stop()`` cuts the wait short."""
        return cls(content="{}", delay_s=seconds)


def _decode_data_url(url: str) -> bytes | None:
    """Only inline images can be checked byte-for-byte; remote URLs are left alone."""
    if not url.startswith("data:") or "," not in url:
        return None
    header, _, payload = url.partition(",")
    if header.endswith(";base64"):
        return base64.b64decode(payload)
    return urllib.parse.unquote_to_bytes(payload)


@dataclass
class RecordedRequest:
    """What the server saw, so tests can assert on prompts, images and headers after the fact."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    role: str | None
    prompt: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        if self.body is None:
            return []
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def model(self) -> str | None:
        model = self.body.get("model") if self.body is not None else None
        return model if isinstance(model, str) else None

    def _parts(self) -> list[dict[str, Any]]:
        """Flatten both content shapes (plain string, list of parts) into a list of parts."""
        parts: list[dict[str, Any]] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append({"type": "text", "text": content})
            elif isinstance(content, list):
                parts.extend(p for p in content if isinstance(p, dict))
        return parts

    @property
    def text(self) -> str:
        texts = [p["text"] for p in self._parts() if isinstance(p.get("text"), str)]
        return "\n".join(texts)

    @property
    def images(self) -> list[bytes]:
        images: list[bytes] = []
        for part in self._parts():
            if part.get("type") != "image_url":
                continue
            image_url = part.get("image_url")
            url = image_url.get("url") if isinstance(image_url, dict) else image_url
            if isinstance(url, str) and (data := _decode_data_url(url)) is not None:
                images.append(data)
        return images

    @property
    def response_format(self) -> dict[str, Any] | None:
        fmt = self.body.get("response_format") if self.body is not None else None
        return fmt if isinstance(fmt, dict) else None


ReplyLike: TypeAlias = FakeReply | str | dict[str, Any] | list[Any]
Responder: TypeAlias = Callable[[RecordedRequest], ReplyLike]


def _coerce(reply: ReplyLike) -> FakeReply:
    """Let tests write plain strings and objects; JSON-ish replies are the common case."""
    if isinstance(reply, FakeReply):
        return reply
    if isinstance(reply, str):
        return FakeReply.text(reply)
    if isinstance(reply, dict | list):
        return FakeReply.json(reply)
    raise TypeError(f"fake server: unsupported reply type {type(reply).__name__}")


@dataclass
class _Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class _HTTPServer(ThreadingHTTPServer):
    """Per-instance server state; nothing lives at module level so servers never interfere."""

    daemon_threads = True
    # server_close() would otherwise join every handler thread, including stalled ones.
    block_on_close = False
    # The default listen backlog of 5 makes bursts of concurrent benchmark calls wait ~1 s for
    # SYN retransmits, which would show up as fake latency.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: FakeOpenAIServer) -> None:
        self.owner = owner
        self.stopping = threading.Event()
        self._conn_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def track(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self._connections.add(conn)

    def untrack(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self._connections.discard(conn)

    def close_connections(self) -> None:
        """Kick idle keep-alive connections so their handler threads exit instead of lingering."""
        with self._conn_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], _CLIENT_GONE):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keep-alive mirrors real servers and what httpx's pool expects.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the second waits for the client's
    # delayed ACK (~40 ms per call), which would swamp latency benchmarks.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            with contextlib.suppress(*_CLIENT_GONE):
                super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: per-request lines on stderr drown out pytest output."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        try:
            raw = self._read_body()
            path = urllib.parse.urlsplit(self.path).path.rstrip("/") or "/"
            headers = {k.lower(): v for k, v in self.headers.items()}
            response = self.server.owner._handle(self.command, path, headers, raw)
            if response.delay_s > 0 and self.server.stopping.wait(response.delay_s):
                # Stopped mid-stall: drop the connection rather than answer late.
                self.close_connection = True
                return
            self._send(response)
        except _CLIENT_GONE:
            self.close_connection = True

    def _send(self, response: _Response) -> None:
        headers = {"Content-Type": "application/json"}
        for name, value in response.headers.items():
            if name.lower() == "content-length":
                continue
            for existing in [k for k in headers if k.lower() == name.lower()]:
                del headers[existing]
            headers[name] = value
        self.send_response(response.status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)
        self.wfile.flush()


class FakeOpenAIServer:
    """Serves ``/v1/chat/completions`` on 127.0.0.1 with replies scripted per agent role."""

    def __init__(
        self,
        *,
        supports_json_schema: bool = True,
        supports_json_object: bool = True,
        latency_s: float = 0.0,
        model: str = "fake-model",
        port: int = 0,
        served_model: str | None = None,
    ) -> None:
        self.supports_json_schema = supports_json_schema
        self.supports_json_object = supports_json_object
        self.latency_s = latency_s
        self.model = model
        #: The model id every reply names; None names the one requested. Real servers often
        #: answer an alias with a dated snapshot ("gpt-4o" -> "gpt-4o-2024-08-06").
        self.served_model = served_model
        self._requested_port = port
        self._lock = threading.RLock()
        self._requests: list[RecordedRequest] = []
        self._scripts: dict[str | None, deque[FakeReply]] = {}
        self._handlers: dict[str | None, Responder] = {}
        self._completions = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        with self._lock:
            if self._httpd is not None:
                raise RuntimeError("fake server: already started")
            httpd = _HTTPServer(("127.0.0.1", self._requested_port), self)
            self._port = httpd.server_address[1]
            # A short poll interval keeps stop() fast; shutdown() waits for the next poll.
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"fake-openai-{self._port}",
                daemon=True,
            )
            self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.stopping.set()  # wakes stalled handlers before anything waits on them
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=2.0)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("fake server: not started")
        return f"http://127.0.0.1:{self._port}/v1"

    # -- scripting -------------------------------------------------------------------------

    def script(self, role: str | None, *replies: ReplyLike) -> None:
        coerced = [_coerce(r) for r in replies]  # fail in the test, not inside the server thread
        with self._lock:
            self._scripts.setdefault(role, deque()).extend(coerced)

    def on(self, role: str | None, responder: Responder) -> None:
        with self._lock:
            self._handlers[role] = responder

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, role: str | None) -> list[RecordedRequest]:
        return [r for r in self.requests if r.role == role]

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._scripts.clear()
            self._handlers.clear()

    # -- request handling (runs on handler threads) ----------------------------------------

    def _handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> _Response:
        body: dict[str, Any] | None = None
        body_ok = True
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
                body_ok = body is not None
            except ValueError:
                body_ok = False
        request = RecordedRequest(
            method=method,
            path=path,
            headers=headers,
            body=body,
            role=headers.get(ROLE_HEADER),
            prompt=headers.get(PROMPT_HEADER),
        )
        with self._lock:
            self._requests.append(request)

        if method == "GET" and path == "/v1/models":
            return _Response(200, self._models_body())
        if method != "POST" or path != "/v1/chat/completions":
            message = f"fake server: unknown endpoint {method} {path}"
            return _Response(404, _error_body(message, code="not_found"))

        response = self._chat(request, body_ok)
        response.delay_s += self.latency_s
        return response

    def _models_body(self) -> bytes:
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "videotapestry"}
        return json.dumps({"object": "list", "data": [model]}).encode()

    def _chat(self, request: RecordedRequest, body_ok: bool) -> _Response:
        if request.body is None or not body_ok:
            return _Response(400, _error_body("fake server: request body is not a JSON object"))
        if request.body.get("stream"):
            # Answering a streaming request with a plain JSON body would fail confusingly.
            message = "fake server: stream=true is not supported"
            return _Response(400, _error_body(message, param="stream"))
        fmt_type = (request.response_format or {}).get("type")
        unsupported = (fmt_type == "json_schema" and not self.supports_json_schema) or (
            fmt_type == "json_object" and not self.supports_json_object
        )
        if unsupported:
            message = f"response_format type '{fmt_type}' is not supported"
            return _Response(400, _error_body(message, param="response_format"))

        try:
            reply = self._resolve(request)
        except Exception as exc:  # a broken responder is a test bug; make it visible
            message = f"fake server: responder for role {request.role!r} raised {exc!r}"
            return _Response(500, _error_body(message, type_="server_error"))
        if reply is None:
            # 400, not 5xx, so the SDK fails fast instead of retrying into the same gap.
            message = f"fake server: no reply scripted for role '{request.role}'"
            if request.role is None:
                message += (
                    f" (the request carried no {ROLE_HEADER} header: set {HEADERS_SETTING}=true)"
                )
            return _Response(400, _error_body(message))
        return self._render(request, reply)

    def _resolve(self, request: RecordedRequest) -> FakeReply | None:
        """Role queue, role handler, then the same two for the None (default) role."""
        keys: Sequence[str | None] = (request.role, None) if request.role is not None else (None,)
        for key in keys:
            with self._lock:
                queue = self._scripts.get(key)
                if queue:
                    return queue.popleft()
                handler = self._handlers.get(key)
            if handler is not None:  # called without the lock so it may inspect the server
                return _coerce(handler(request))
        return None

    def _render(self, request: RecordedRequest, reply: FakeReply) -> _Response:
        if reply.raw_body is not None:
            return _Response(reply.status, reply.raw_body, dict(reply.headers), reply.delay_s)
        if reply.status >= 400:
            message = reply.content or f"fake server: scripted HTTP {reply.status}"
            body = _error_body(message, type_="server_error" if reply.status >= 500 else "error")
            return _Response(reply.status, body, dict(reply.headers), reply.delay_s)

        content = reply.content
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = math.ceil(len(request.text) / 4) + IMAGE_TOKENS * len(request.images)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = math.ceil(len(content or "") / 4)
        with self._lock:
            self._completions += 1
            number = self._completions
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        completion = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model or request.model or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": usage,
        }
        body = json.dumps(completion).encode()
        return _Response(reply.status, body, dict(reply.headers), reply.delay_s)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a server in the foreground, e.g. to point the CLI at while developing prompts."""
    parser = argparse.ArgumentParser(
        prog="python -m videotapestry.testing.fake_openai",
        description="Fake OpenAI-compatible server answering every chat request with --reply.",
    )
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--reply", default="{}", help="assistant content for every role")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument("--no-json-schema", action="store_true")
    parser.add_argument("--no-json-object", action="store_true")
    args = parser.parse_args(argv)

    server = FakeOpenAIServer(
        supports_json_schema=not args.no_json_schema,
        supports_json_object=not args.no_json_object,
        latency_s=args.latency,
        model=args.model,
        port=args.port,
    )
    reply: str = args.reply
    server.on(None, lambda _request: FakeReply.text(reply))
    with server:
        print(f"fake OpenAI server listening on {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
