"""Structured traces: one event per model or tool call, saved as JSON per question.

A researcher debugging a wrong answer needs to see what each agent was asked, what it saw
(image references with timestamps, never the bytes), what it returned and what it cost.
Secrets never reach a trace: events hold no request headers, and ``save`` also scrubs the
values of the configured API-key variables and anything shaped like a bearer token.

``redact`` is the one redaction step of the package: the model layer passes every reply
through it as the reply arrives (so results, memories, checkpoints and the response cache
never hold a key a model echoed), and errors, logs and traces pass through it on their way
out. It lives here, at the bottom of the layers, so that every layer can reach it.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from videotapestry.files import write_atomic

_SECRET_PATTERNS = (
    # A token follows "Bearer": a long run with a digit in it, so that reply text such as
    # "the bearer of the flag" is left alone.
    re.compile(r"(?i)\bbearer\s+(?=[A-Za-z0-9._\-~+/]*\d)[A-Za-z0-9._\-~+/]{12,}=*"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
)
#: The userinfo of a URL (``http://user:password@host``): dropped wherever a URL is shown.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@?#]+@")
REDACTED = "[REDACTED]"
#: A configured value shorter than this is a placeholder (``EMPTY``, ``ollama``, ``none``),
#: not a secret; replacing it would corrupt replies and memories that use the word.
MIN_SECRET_CHARS = 8


class TraceEvent(BaseModel):
    kind: Literal["model_call", "tool_call", "note"]
    name: str
    role: str | None = None
    level: str | None = None
    prompt_name: str | None = None
    prompt_hash: str | None = None
    started_at: float = Field(default_factory=time.time)
    duration_s: float = 0.0
    inputs: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    usage: dict[str, Any] | None = None
    error: str | None = None


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets``, anything shaped like a key and every URL's userinfo
    taken out. The longest secret goes first, so ``user:password`` leaves no ``user:`` behind."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return _USERINFO.sub(r"\1", text)


def display_url(url: str) -> str:
    """``url`` fit to print: without the ``user:password@`` a base URL may carry."""
    return _USERINFO.sub(r"\1", url)


def without_url_credentials(tree: Any) -> Any:
    """``tree`` (JSON-like: a resolved config) with every URL's ``user:password@`` dropped,
    for the copies of a config that are kept and shared (a memory's manifest, an eval run's
    header). Where a model is served decides no answer, so a copy without the password
    loses nothing of what it records."""
    if isinstance(tree, dict):
        return {key: without_url_credentials(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [without_url_credentials(value) for value in tree]
    return display_url(tree) if isinstance(tree, str) else tree


def url_credentials(urls: Iterable[str | None]) -> list[str]:
    """The credentials in the userinfo of ``urls`` (the whole ``user:password`` and the
    password), as written and percent-decoded, for ``redact`` to find wherever they appear
    alone, such as in a reply that echoes them."""
    found: list[str] = []
    for url in urls:
        if not url or "@" not in url:
            continue
        try:
            netloc = urllib.parse.urlsplit(url.strip()).netloc
        except ValueError:
            continue
        userinfo = netloc.rpartition("@")[0]
        password = userinfo.partition(":")[2]
        for value in (userinfo, password):
            if value:
                found += [value, urllib.parse.unquote(value)]
    return found


def secrets_from_env(variable_names: Iterable[str]) -> list[str]:
    return [value for name in set(variable_names) if (value := os.environ.get(name))]


#: Environment variables whose values are taken for secrets where no config is at hand.
_SECRET_NAME = re.compile(r"(?i)(?:key|token|secret|password)$")


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` fit to print or store: ``secrets``, the value of every environment variable
    named like a secret (``*_API_KEY``, ``*_TOKEN``, ...), the credentials of any URL in the
    environment (``OPENAI_BASE_URL=http://user:key@host``) and anything shaped like a bearer
    token or an ``sk-`` key replaced. For messages that leave the process (stderr, run
    records, build reports), which may quote a server's error body that echoes the key."""
    named = [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]
    in_urls = url_credentials(v for v in os.environ.values() if "://" in v)
    return redact(text, [*secrets, *named, *in_urls])


class Trace:
    """The events of one question, in the order they finished; shared by concurrent calls."""

    def __init__(self, *, secrets: Iterable[str] = ()) -> None:
        self._events: list[TraceEvent] = []
        self._lock = threading.Lock()
        self._secrets = list(secrets)

    def add(self, event: TraceEvent) -> None:
        with self._lock:
            self._events.append(event)

    def __getstate__(self) -> dict[str, Any]:
        """A pickled trace (a Ray worker's result on its way to the driver) carries its
        events with the secrets already redacted out, and never the secrets themselves."""
        events = [
            TraceEvent.model_validate_json(redact(event.model_dump_json(), self._secrets))
            for event in self.events
        ]
        return {"events": events}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._events = list(state["events"])
        self._lock = threading.Lock()
        self._secrets = []

    def note(self, name: str, **data: Any) -> None:
        self.add(TraceEvent(kind="note", name=name, output=data))

    @property
    def events(self) -> list[TraceEvent]:
        with self._lock:
            return list(self._events)

    def to_json(self) -> str:
        payload = [event.model_dump(mode="json") for event in self.events]
        return redact(json.dumps(payload, ensure_ascii=False, indent=1), self._secrets)

    def save(self, path: str | Path) -> Path:
        """Write atomically, so a crash never leaves half a trace behind."""
        path = Path(path)
        write_atomic(path, self.to_json())
        return path

    def to_markdown(self) -> str:
        lines = ["| # | kind | name | role | level | prompt | time (s) | tokens in/out | error |"]
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for index, event in enumerate(self.events, 1):
            usage = event.usage or {}
            tokens = (
                f"{usage.get('prompt_tokens', '')}/{usage.get('completion_tokens', '')}"
                if usage
                else ""
            )
            prompt = f"{event.prompt_name or ''} {event.prompt_hash or ''}".strip()
            lines.append(
                f"| {index} | {event.kind} | {event.name} | {event.role or ''} | "
                f"{event.level or ''} | {prompt} | {event.duration_s:.2f} | {tokens} | "
                f"{(event.error or '').replace('|', '/')} |"
            )
        return redact("\n".join(lines), self._secrets)
