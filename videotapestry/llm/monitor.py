"""Seeing a call wait: attempts, retries and seconds waited, for progress displays.

The openai SDK retries 429s, 5xx and timeouts on its own (honouring ``Retry-After``), which
is what we want, but it says nothing while it does: against a stalled server a user would
stare at a silent terminal for minutes. Each call therefore carries a ``CallMonitor`` in a
context variable; httpx event hooks on the SDK's HTTP client count the attempts and note
the status that caused a retry, and the model service reports "waiting" every few seconds
while the call is open. Nothing here changes what is sent or retried.

The hooks run where the SDK works, which may be a client's own loop thread
(``loop_thread.LoopThread``); a monitor's reports go to the loop that opened the call, so a
display is only ever told from the thread it lives on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

Report = Callable[[dict[str, Any]], None]
#: The SDK's HTTP client class: httpx's, or httpx2's in newer openai releases.
HttpClient = TypeVar("HttpClient")


class HttpResponse(Protocol):
    """What the response hook reads; httpx and httpx2 responses both have it."""

    @property
    def status_code(self) -> int: ...


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass
class CallMonitor:
    role: str
    level: str | None
    report: Report
    #: What the call waits for, as progress lines say it ("the model server at URL").
    target: str = "the model server"
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    last_problem: str | None = None
    #: The loop the call was opened on (None outside one): reports are made there.
    loop: asyncio.AbstractEventLoop | None = field(default_factory=_running_loop)

    @property
    def waited_s(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def event(self, step: str, **extra: Any) -> None:
        payload = {
            "level": self.level or "model",
            "step": step,
            "role": self.role,
            "target": self.target,
            "attempt": max(1, self.attempts),
            "waited_s": self.waited_s,
            **({"last_problem": self.last_problem} if self.last_problem else {}),
            **extra,
        }
        if self.loop is None or self.loop is _running_loop():
            self.report(payload)
            return
        # RuntimeError: the loop that opened the call is closed, so nobody is left to tell.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.report, payload)


CURRENT_CALL: contextvars.ContextVar[CallMonitor | None] = contextvars.ContextVar(
    "videotapestry_current_call", default=None
)

#: Statuses the openai SDK retries (it also retries timeouts and connection errors).
_RETRIED = {408, 409, 429} | set(range(500, 600))


async def on_request(request: object) -> None:
    monitor = CURRENT_CALL.get()
    if monitor is None:
        return
    monitor.attempts += 1
    if monitor.attempts > 1:
        monitor.event("retry", reason=monitor.last_problem or "no answer (timeout or lost)")


async def on_response(response: HttpResponse) -> None:
    monitor = CURRENT_CALL.get()
    if monitor is not None and response.status_code in _RETRIED:
        monitor.last_problem = f"HTTP {response.status_code}"


def monitored_http_client(client_class: Callable[..., HttpClient], **kwargs: Any) -> HttpClient:
    """An SDK HTTP client (``openai.DefaultAsyncHttpxClient``) with the monitor's hooks.

    Typed by the class it is given rather than by httpx: the package does not depend on httpx
    itself, and newer openai releases bring httpx2 instead."""
    return client_class(event_hooks={"request": [on_request], "response": [on_response]}, **kwargs)
