"""One writer per memory folder: the lock a build holds on its build directory.

Two builds into one folder computed the same clips twice, raced to move their staging
folders into place (a raw ``Directory not empty``), or left one video's memory where the
other's had been, each reporting success. So every build, whoever starts it (the CLI, a
served job, an MCP tool call, a Ray task), holds an exclusive lock on ``<out>/build/lock``
for its whole run: it lives here in the builder, not in any one caller.

A second build is refused at once, with the holder named, rather than made to wait: a
caller that waits cannot tell a long build from a stuck one, the holder may be someone
else's terminal or server, and a build resumes from its checkpoints, so running the same
command again once the first has ended costs almost nothing. The lock is the operating
system's (``filelock``): a holder that is killed lets go of it with its process, so no stale
lock file ever has to be removed by hand.

A build of one video into a folder that holds the memory of another is refused too, unless
forced: the manifest records the fingerprint of the video it was made from.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memory_builders.report import BuildError
from videotapestry.errors import VideoError
from videotapestry.files import write_json_atomic
from videotapestry.memory import MANIFEST_FILE
from videotapestry.video import fingerprint

#: The lock file, and the note of who holds it (a separate file: taking the lock truncates
#: the lock file itself, which would wipe the holder's note for whoever tries next).
LOCK_FILE = "lock"
HOLDER_FILE = "lock.json"
#: What clearing the checkpoints (``--restart``) leaves in place: the lock its build holds.
LOCK_FILES = frozenset({LOCK_FILE, HOLDER_FILE})


class BuildLockedError(BuildError):
    """Another build is writing into the same memory folder."""


class OtherVideoError(BuildError):
    """The memory folder holds the memory of another video."""


def holder_note(video: Path) -> dict[str, Any]:
    """Who is building what, for the message a refused build shows."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "video": str(video),
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def describe_holder(note: Any) -> str:
    """A holder's note as words; what is missing (a holder that has only just taken the
    lock, or a note that cannot be read) is said so."""
    if not isinstance(note, dict):
        return "its holder has not written its name yet"
    parts = [f"process {note.get('pid', '?')} on {note.get('host', '?')}"]
    if note.get("video"):
        parts.append(f"building {note['video']}")
    if note.get("since"):
        parts.append(f"since {note['since']}")
    return ", ".join(parts)


@contextmanager
def build_lock(out: Path, build_dir: Path, video: Path) -> Iterator[None]:
    """Hold ``out``'s build lock for the ``with`` block, or raise ``BuildLockedError`` at
    once when another build holds it."""
    from filelock import FileLock, Timeout

    build_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(build_dir / LOCK_FILE, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise BuildLockedError(
            f"another build is writing into {out} ({describe_holder(_read(build_dir))}); "
            "one build at a time per memory folder: wait for it to end (or stop it), then run "
            "again, and the build resumes from its checkpoints"
        ) from None
    holder = build_dir / HOLDER_FILE
    try:
        write_json_atomic(holder, holder_note(video))
        yield
    finally:
        holder.unlink(missing_ok=True)
        lock.release()


def check_same_video(out: Path, video: Path, *, force: bool) -> None:
    """Refuse (unless ``force``) to build ``video`` into a folder whose memory was made from
    another video: the build would replace it, and both would be reported done."""
    manifest = _read(out, MANIFEST_FILE)
    stored = manifest.get("video_fingerprint") if isinstance(manifest, dict) else None
    if force or not isinstance(stored, str) or not stored:
        return
    try:
        current = fingerprint(video)
    except (VideoError, OSError):
        return  # the probe stage says what is wrong with the video, with its own report
    if current == stored:
        return
    source = manifest.get("source_path") if isinstance(manifest, dict) else None
    made_from = f"{source} (fingerprint {stored})" if source else f"fingerprint {stored}"
    raise OtherVideoError(
        f"refusing to build {video} into {out}: the folder holds the memory of another video, "
        f"{made_from}, and this video's fingerprint is {current}; choose another folder, or "
        "pass --force (REST and MCP: force) to replace that memory"
    )


def _read(directory: Path, name: str = HOLDER_FILE) -> Any:
    try:
        return json.loads((directory / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
