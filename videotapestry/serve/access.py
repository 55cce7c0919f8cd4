"""Who may reach a server over the network: loopback by default, a token for anything else.

A server bound to 127.0.0.1 is reachable only from this machine, like any local tool. Bound
to another address it serves videos, memories and paid model calls to whoever can reach the
port, so it refuses to start without a token and then checks the token on every request
(SPEC §13). The check lives here, once, for every HTTP server of the package.

Loopback alone does not keep other sites out: any page the user opens can send requests to
127.0.0.1, and a page whose name re-resolves to 127.0.0.1 (DNS rebinding) even reads the
answers. So the web app answers only requests addressed to its own names, from its own pages,
with JSON bodies (:class:`OwnOriginsMiddleware`), the rule MCP's transport already keeps.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

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


# ---- Own origins only: the Host allow-list, the Origin check, JSON-only state changes ----

#: Methods that change something: a body on them must be JSON, which a cross-site form
#: cannot send (forms send urlencoded, multipart or text/plain).
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}

_PROXY_HINT = "behind a reverse proxy, add its host to serve.allowed_hosts"


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether a ``Host`` value (``name`` or ``name:port``, IPv6 in brackets) is one of
    ``allowed``, whose entries are ``name`` (as browsers send it on the default port),
    ``name:port`` or ``name:*`` (any port).

    The MCP SDK's transport security matches its ``allowed_hosts`` the same way, so one
    entry means the same thing to ``serve`` and ``mcp``; names compare case-insensitively,
    as DNS does.
    """
    host = host.lower()
    for entry in (e.lower() for e in allowed):
        if host == entry:
            return True
        if entry.endswith(":*"):
            base = entry[:-2]
            port = host.removeprefix(base + ":")
            if host == base or (port != host and port.isdigit()):
                return True
    return False


def own_hosts(server: tuple[str, int] | None, scheme: str, configured: Iterable[str]) -> list[str]:
    """The ``Host`` values a request may carry: this machine's loopback names and the address
    the request arrived on, all with the port it arrived on, then ``configured`` (the bound
    name, a reverse proxy's host)."""
    names = ["localhost", "127.0.0.1", "[::1]"]
    if server is None:  # a Unix socket: no port to pin
        return [*names, *(f"{name}:*" for name in names), *configured]
    address, port = server
    names.append(f"[{address}]" if ":" in address else address)
    hosts = [f"{name}:{port}" for name in names]
    if _DEFAULT_PORTS.get(scheme) == port:
        hosts += names
    return [*hosts, *configured]


def origin_host(origin: str) -> str | None:
    """The ``host[:port]`` of an ``Origin`` header, or None for one no page of ours sends
    (``null`` from a sandboxed frame or a file, another scheme, anything malformed)."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    if parts.path or parts.query or parts.fragment:
        return None
    return parts.netloc


def refusal(
    method: str, path: str, headers: Mapping[str, str], allowed: Sequence[str]
) -> tuple[int, str] | None:
    """Why a request from somewhere other than our own pages is refused (status, message),
    or None to serve it.

    A page of another site whose name resolves to this machine (DNS rebinding) reaches us
    with its own name in ``Host``: 421. A page of another site calling us by our own name
    carries its ``Origin``: 403. A cross-site ``<form>`` needs neither script nor CORS, but
    can only send form encodings: a state-changing request whose body is not JSON gets 415.
    An element of another site's page (``<video src>``, ``<img>``, ``<script>``) sends no
    Origin but its browser says ``Sec-Fetch-Site: cross-site``: 403, save a link followed to
    us (a top-level navigation), which shows the user our page and nothing to the other site.
    """
    host = headers.get("host")
    if not host:
        return 421, f"{method} {path}: no Host header; this server answers only to its own names"
    if not host_allowed(host, allowed):
        return 421, (
            f"Host {host!r} is not a name of this server (a page of another site whose name "
            f"points here?); it answers only to its own address and localhost; {_PROXY_HINT}"
        )
    origin = headers.get("origin")
    if origin is not None:
        from_host = origin_host(origin)
        if from_host is None or not host_allowed(from_host, allowed):
            return 403, (
                f"Origin {origin!r} is not this server's: requests from other sites' pages are "
                f"refused; {_PROXY_HINT}"
            )
    if (
        headers.get("sec-fetch-site", "").strip().lower() == "cross-site"
        and headers.get("sec-fetch-mode", "").strip().lower() != "navigate"
    ):
        return 403, (
            f"{method} {path}: another site's page may not embed or fetch this server's "
            "videos, frames or data (following a link to it is fine)"
        )
    if method in STATE_CHANGING:
        content_type = headers.get("content-type")
        has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
        media_type = (content_type or "").split(";")[0].strip().lower()
        if (content_type is not None or has_body) and media_type != "application/json":
            return 415, (
                f"{method} {path} takes a JSON body (Content-Type: application/json), not "
                f"{content_type or 'a body without a Content-Type'}"
            )
    return None


class OwnOriginsMiddleware:
    """An ASGI wrapper applying :func:`refusal` to every HTTP request (API, event streams,
    static pages alike) before anything else sees it; lifespan passes through."""

    def __init__(self, app: Any, allowed_hosts: Sequence[str] = ()) -> None:
        self.app = app
        self.allowed_hosts = tuple(allowed_hosts)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers: dict[str, str] = {}
            for key, value in scope["headers"]:  # a repeated header is all its values
                name, text = key.decode("latin-1"), value.decode("latin-1")
                headers[name] = f"{headers[name]}, {text}" if name in headers else text
            allowed = own_hosts(
                scope.get("server"), scope.get("scheme", "http"), self.allowed_hosts
            )
            method = scope.get("method", "GET")
            refused = refusal(method, scope.get("path", "/"), headers, allowed)
            if refused is not None:
                if scope["type"] == "http":
                    await _json_error(send, *refused)
                else:
                    await send({"type": "websocket.close", "code": 1008})
                return
        await self.app(scope, receive, send)


async def _json_error(send: Any, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
