"""What every loader shares: its options, its error, and reading a file without tracebacks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.errors import VideoTapestryError


class DatasetError(VideoTapestryError):
    """An annotation file that cannot be read as the benchmark's format."""


@dataclass(frozen=True)
class LoadOptions:
    """Selections a researcher makes on the command line (``--duration long``)."""

    duration: str | None = None


def find_file(path: Path, names: tuple[str, ...]) -> Path:
    """``path`` itself, or the first of ``names`` inside the directory ``path``."""
    if path.is_file():
        return path
    for name in names:
        if (path / name).is_file():
            return path / name
    raise DatasetError(f"{path} holds none of {', '.join(names)}")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from None


def read_json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line's object with its line number (for messages)."""
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number} is not JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{number} is not a JSON object")
        rows.append((number, row))
    return rows
