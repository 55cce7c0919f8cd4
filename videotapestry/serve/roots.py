"""The folders a server may read, and the one check every requested path goes through.

The REST API, the browser UI and the MCP server all take paths from whoever is on the other
end of a socket. Each such path is resolved here (``..``, symlinks, percent-encoding and
absolute paths included) and refused unless the resolved file lies under one of the roots the
server was started with, so no route or tool can read outside them by forgetting a check.

A file or folder whose name is not UTF-8 cannot be named to a client (JSON is text) nor asked
for back, so the listings skip it, with a logged warning naming it (bytes escaped) once per
server, instead of failing the whole listing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from videotapestry.errors import VideoTapestryError
from videotapestry.memory.live import LIVE_FILE, VERSIONS_DIR, live_state, live_video

VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v"})
"""File endings listed as videos under a root."""

MEMORY_MARKER = "memory.json"
"""A folder holding this file is listed as a stored memory."""

EVAL_RUN_MARKER = "results.jsonl"
"""A folder holding this file is listed as an eval run (one line per finished question)."""


_log = logging.getLogger(__name__)


class PathOutsideRootsError(VideoTapestryError, PermissionError):
    """A requested path resolves outside every configured root (or names nothing usable)."""


@dataclass(frozen=True)
class Roots:
    """The resolved folders a server may read; built once at start-up and passed explicitly."""

    folders: tuple[Path, ...]
    #: Names not UTF-8 already warned about (each is said once, not on every listing).
    _warned: set[str] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def of(cls, folders: Iterable[str | Path]) -> Roots:
        resolved: list[Path] = []
        for folder in folders:
            path = Path(folder).expanduser().resolve()
            if not path.is_dir():
                raise PathOutsideRootsError(f"root {folder}: not a folder; pass an existing one")
            if path not in resolved:
                resolved.append(path)
        if not resolved:
            raise PathOutsideRootsError("no root given; pass at least one --root folder")
        return cls(tuple(resolved))

    def asked_video(self, memory: Path, video: str) -> Path:
        """The video a question is asked with, under the roots; for a live memory (SPEC §16)
        also the URL it follows, which names its recording in the memory's folder."""
        from memory_builders.sources import is_remote

        if is_remote(video) and live_state(memory) is not None:
            return self.resolve(live_video(memory, video))
        return self.resolve(video)

    def resolve(self, requested: str | Path, *, must_exist: bool = True) -> Path:
        """The resolved path of ``requested`` if it lies under a root, else an error.

        A relative path is taken against each root in turn (the first under which it exists);
        percent-encoding is undone first, so ``..%2F`` is the ``../`` it stands for.
        """
        text = unquote(str(requested)) if isinstance(requested, str) else str(requested)
        if not text or "\x00" in text:
            raise PathOutsideRootsError(f"path {requested!r}: empty or not a valid path")
        candidate = Path(text).expanduser()
        tried = (
            [candidate] if candidate.is_absolute() else [root / candidate for root in self.folders]
        )
        for path in tried:
            resolved = Path(os.path.realpath(path))
            if not self.contains(resolved):
                continue
            if must_exist and not resolved.exists():
                continue
            return resolved
        raise PathOutsideRootsError(
            f"path {requested!s}: not under the server's roots "
            f"({', '.join(str(root) for root in self.folders)}) or does not exist"
        )

    def contains(self, resolved: Path) -> bool:
        """Whether an already resolved path is one of the roots or lies beneath one."""
        return any(resolved == root or resolved.is_relative_to(root) for root in self.folders)

    def relative(self, resolved: Path) -> str:
        """How a resolved path under a root is named to clients (relative to its root)."""
        for root in self.folders:
            if resolved == root or resolved.is_relative_to(root):
                return resolved.relative_to(root).as_posix() or "."
        raise PathOutsideRootsError(f"path {resolved}: not under the server's roots")

    def videos(self) -> Iterator[Path]:
        """Every video file under the roots (symlinks leading out are skipped)."""
        yield from self._walk(lambda path: path.is_file() and path.suffix.lower() in VIDEO_SUFFIXES)

    def memories(self) -> Iterator[Path]:
        """Every stored memory folder under the roots (a folder with ``memory.json``, or a
        followed one with ``live.json``, SPEC §16: its versions inside are not listed apart)."""
        for path in self._walk(lambda path: path.is_dir() and _is_memory(path)):
            if not (path.parent.name == VERSIONS_DIR and _is_live(path.parent.parent)):
                yield path

    def eval_runs(self) -> Iterator[Path]:
        """Every eval run directory under the roots (a folder with ``results.jsonl``)."""
        yield from self._walk(lambda path: path.is_dir() and (path / EVAL_RUN_MARKER).is_file())

    def _walk(self, wanted: Callable[[Path], bool]) -> Iterator[Path]:
        seen: set[Path] = set()
        for root in self.folders:
            for directory, subdirs, files in os.walk(root, followlinks=False):
                here = Path(directory)
                subdirs[:] = sorted(
                    name for name in subdirs if not name.startswith(".") and self._text(here, name)
                )
                for name in [*subdirs, *sorted(name for name in files if self._text(here, name))]:
                    resolved = Path(os.path.realpath(here / name))
                    if resolved in seen or not self.contains(resolved) or not wanted(resolved):
                        continue
                    seen.add(resolved)
                    yield resolved

    def _text(self, directory: Path, name: str) -> bool:
        """Whether ``name`` is UTF-8 (Python hands other bytes over as lone surrogates,
        which no JSON reply can carry); a skipped one is warned about once."""
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(directory / name).decode("utf-8", "backslashreplace")
            if shown not in self._warned:
                self._warned.add(shown)
                _log.warning(
                    "videotapestry: skipped %s: its name is not UTF-8, so it cannot be listed "
                    "or asked for (rename it)",
                    shown,
                )
            return False
        return True


def _is_memory(folder: Path) -> bool:
    return (folder / MEMORY_MARKER).is_file() or _is_live(folder)


def _is_live(folder: Path) -> bool:
    return (folder / LIVE_FILE).is_file()
