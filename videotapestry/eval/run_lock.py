"""One writer per run directory: an exclusive ``flock`` on ``RUN/run.lock``.

Two evals resuming the same directory at once would each see the same questions unanswered
and pay for them twice, and their lines would interleave in ``results.jsonl``. The second
one is refused instead. The lock is ``fcntl.flock`` on an open file, not the file's
existence: the kernel drops it when the holder's descriptor closes, which includes the
process dying by SIGKILL or a crash, so a killed eval never leaves a stale lock to clear by
hand. The file only carries the holder's pid, for the message the second eval prints.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from videotapestry.errors import VideoTapestryError

LOCK_FILE = "run.lock"


class RunLockedError(VideoTapestryError):
    """Another process is writing the run directory."""


class RunLock:
    """The held lock of one run directory; ``release`` (or the process ending) frees it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunLockedError(
                f"{directory} is being written by another eval{holder}; wait for it to "
                "finish (or stop it), or choose another --out directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _holder(fd: int) -> str:
    """`` (pid N)`` from the lock file, or nothing when it says no pid yet."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f" (pid {text})" if text.isdigit() else ""
