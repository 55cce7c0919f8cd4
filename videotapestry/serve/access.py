"""Who may reach a server over the network: loopback by default, a token for anything else.

A server bound to 127.0.0.1 is reachable only from this machine, like any local tool. Bound
to another address it serves videos, memories and paid model calls to whoever can reach the
port, so it refuses to start without a token and then checks the token on every request
(SPEC §13). The check lives here, once, for every HTTP server of the package.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Any

from videotapestry.errors import VideoTapestryError

TOKEN_ENV = "VIDEOTAPESTRY_SERVE_TOKEN"
"""The environment variable a token is read from when ``--token`` is not given (a token on
the command line is visible to every user of the machine in the process list)."""

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class UnsafeBindError(VideoTapestryError):
    """A server asked to listen beyond this machine without a token."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve anywhere
        return False


def bind_token(host: str, token: str | None) -> str | None:
    """The token a server bound to ``host`` checks (``token``, else ``$VIDEOTAPESTRY_SERVE_TOKEN``);
    an error for a non-loopback host without one, before anything listens."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        raise UnsafeBindError(
            f"refusing to listen on {host} without a token: anyone who can reach it could read "
            f"the videos under the roots and spend model calls; pass --token or set {TOKEN_ENV}, "
            "or bind to 127.0.0.1"
        )
    return token


class BearerTokenMiddleware:
    """An ASGI wrapper answering 401 to any HTTP request without ``Authorization: Bearer
    <token>`` (compared in constant time); other traffic (lifespan) passes through."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                if scope["type"] == "http":
                    await _unauthorized(send)
                else:
                    await send({"type": "websocket.close", "code": 1008})
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Any) -> None:
    body = b'{"error": "missing or wrong token (Authorization: Bearer <token>)"}'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b"Bearer"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
