"""The largest request body the served app reads (``serve.max_request_bytes``).

Without a limit one POST of 64 MiB was read whole, parsed, validated and stored in the job
store, taking the server from 193 MB to 7.8 GB and every later listing to seconds. So the
size is checked before the body is read: a declared ``Content-Length`` over the limit is
answered 413 at once, and a body sent without one (chunked) is read here only up to the
limit. Kept as its own ASGI middleware, apart from the Host and Origin checks (``access``),
so the two stay independent and either can be tested alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def declared_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The request's ``Content-Length``, or None when it sends none (or one that is not a
    number, which the HTTP server itself refuses)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodySizeLimit:
    """Answers 413 to a request whose body is longer than ``max_bytes``; passes the rest."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope.get("headers", []))
        if declared is not None:
            # The server reads no more than a declared length, so the header is the check.
            if declared > self.max_bytes:
                await self._refuse(scope, receive, send, declared)
                return
            await self.app(scope, receive, send)
            return
        # No declared length: read the body here, no further than the limit, then hand it on.
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, None)
                return
            if not message.get("more_body", False):
                break
        pending = iter(messages)

        async def replay() -> Message:
            for message in pending:
                return message
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int | None) -> None:
        sent = f"{size:,} bytes" if size is not None else "more"
        response = JSONResponse(
            {
                "detail": f"request body too large: {sent}, over the limit of "
                f"{self.max_bytes:,} bytes (config serve.max_request_bytes); nothing was stored"
            },
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
