"""Reading the JSON files of a memory, whichever format they belong to.

A memory often comes from someone else's disk, so a broken file must be reported by its path
(and line and column when the JSON is malformed, or that it nests too deeply or holds a
number too long to read) instead of as a bare decoder traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videotapestry.errors import MemoryFormatError
from videotapestry.files import parse_json


def read_json(path: Path) -> Any:
    """JSON from ``path`` with errors that name the file (and line/column when malformed)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MemoryFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise MemoryFormatError(f"{path} is not UTF-8 text: {exc.reason}") from None
    return parse_json(text, str(path), MemoryFormatError)
