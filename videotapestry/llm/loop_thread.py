"""An event loop in a thread of its own, for a client's request work.

The ``openai`` SDK builds each request on the loop that awaits it: it walks the parameters
against their types and JSON-encodes the body in one piece, after the images were
base64-encoded. For an Overview observation of 20 grids that is about 30 ms of interpreter
time per request, and when the questions of an eval send their observations together, 16 of
them ran back to back on the loop that drives every question (a 0.3-0.45 s stall). Run on a
loop of its own, that work still needs the interpreter lock, but the asking loop gets it
back between the SDK's steps instead of waiting for all 16 requests to be written.

The SDK client and its connection pool belong to this loop alone; callers on any other loop
``await run(coroutine)``. Cancelling the awaiting task cancels the coroutine on this loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one event loop, started at first use, stopped by ``stop``
    or when the object is garbage-collected (a client nobody closed)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=_serve, args=(loop,), name=self._name, daemon=True)
                thread.start()
                weakref.finalize(self, _stop_soon, loop)
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``coroutine``'s result, computed on this thread's loop."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.start())
        return await asyncio.wrap_future(future)

    def stop(self) -> None:
        """Stop the loop (tasks still on it are cancelled) and wait for the thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        _stop_soon(loop)
        if thread is not threading.current_thread():
            thread.join()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _stop_soon(loop: asyncio.AbstractEventLoop) -> None:
    # RuntimeError: the loop closed between the check and the call.
    if not loop.is_closed():
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
