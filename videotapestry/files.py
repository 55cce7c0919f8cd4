"""Writing a file whole or not at all: through a temporary sibling, then one rename.

Memories, checkpoints, caches, traces and run files are read back by later runs, often after
a crash or a kill. A reader must never see half a file, so every writer here goes through
``replacing``: the data lands in a temporary file beside the target (same file system, so
``os.replace`` is atomic), is flushed to disk, and only then takes the target's name.

A full disk (or quota) while writing raises ``DiskFullError`` naming the directory, not a bare
``OSError`` from deep inside a stage; the target keeps its old contents, so checkpoints and
records written before stay usable for a resume.

The reading side, ``parse_json``, is here for the same reason: files read back may have
been damaged or edited by hand, and every reader must turn a bad document (malformed,
nested deeper than any file we write, a number too long to convert) into one error naming
the file rather than a ``RecursionError`` traceback.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from videotapestry.errors import DiskFullError

#: What a full file system or an exhausted quota raises.
_FULL = (errno.ENOSPC, errno.EDQUOT)


@contextmanager
def disk_full_named(directory: str | Path) -> Iterator[None]:
    """Turn a full-disk ``OSError`` in the block into ``DiskFullError`` naming ``directory``."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        raise DiskFullError(str(directory), exc.strerror or "no space left on device") from None


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; it replaces ``path`` when the block
    ends without an error and is removed otherwise. Parent directories are created."""
    path = Path(path)
    with disk_full_named(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(descriptor)
        temporary = Path(name)
        try:
            yield temporary
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8), synced to disk first."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path) as temporary, open(temporary, "wb") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())


def json_text(data: Any) -> str:
    """The JSON layout of every file the framework writes for people to read: UTF-8 text,
    one-space indents, a final newline."""
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def write_json_atomic(path: str | Path, data: Any) -> None:
    write_atomic(path, json_text(data))


def parse_json(
    text: str | bytes, source: str, error: Callable[[str], Exception] = ValueError
) -> Any:
    """The JSON document ``text`` from ``source`` (a path, or ``path:line``); ``error``
    makes the exception for a document that is malformed, nested deeper than the
    decoder's recursion allows, or holds a number Python refuses to convert."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise error(f"{source} nests JSON too deeply to read (about 1000 levels or more)") from None
    except ValueError as exc:  # e.g. an integer of over 4300 digits
        raise error(f"{source} is not JSON this program can read: {exc}") from None
