"""What a run directory records so that another lab can repeat the run and trust the repeat.

A config and prompt hashes say which method a run used, but not what it ran on: two labs
with the same config can still differ in the model snapshot a server resolved an alias to,
in the decoder or embedding library that turned a video into frames and vectors, or in the
memory built for a video. ``run.json`` therefore also keeps the model ids the server
reported, the versions of the packages that shape answers, and a fingerprint of each video
and memory the run read; ``eval --rerun`` compares the last of these after repeating a run.

Each function here is either pure or reads only what it names (files, installed package
metadata), so the runner calls them off the event loop at the end of a run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.run_reader import VideoPrints
from videotapestry.trace import TraceEvent

#: Distributions whose versions change what a run answers: the model clients and graph, the
#: decoders that make frames (av, decord, OpenCV), Whisper and the embedding model's library.
PACKAGES = (
    "videotapestry",
    "openai",
    "langgraph",
    "torch",
    "av",
    "decord",
    "opencv-python",
    "opencv-python-headless",
    "faster-whisper",
    "sentence-transformers",
)
NOT_INSTALLED = "not installed"

#: A memory file larger than this is fingerprinted by its size and sampled slices (as videos
#: are) instead of read whole: an array of embeddings can be large, and a run ends by
#: fingerprinting every memory it read.
WHOLE_FILE_LIMIT = 16 * 2**20
SLICE = 64 * 2**10
#: The native memory's manifest, which records the fingerprint of its video.
MANIFEST_FILE = "manifest.json"


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str]:
    """The Python version and each distribution's installed version, or ``NOT_INSTALLED``."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = NOT_INSTALLED
    return versions


def served_models(events: Iterable[TraceEvent]) -> dict[str, set[str]]:
    """Role -> the model ids that replies named, from a question's model-call events.

    A failed call has no reply, and its event names the configured model instead: it is
    left out, so what is recorded is only ever what a server said.
    """
    found: dict[str, set[str]] = {}
    for event in events:
        if event.kind != "model_call" or event.error is not None or not event.usage:
            continue
        model = event.usage.get("model")
        if isinstance(model, str) and model and event.role:
            found.setdefault(event.role, set()).add(model)
    return found


def merge_models(*sources: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """The union of several role -> model ids mappings, sorted, as ``run.json`` keeps them."""
    merged: dict[str, set[str]] = {}
    for source in sources:
        for role, models in source.items():
            merged.setdefault(role, set()).update(models)
    return {role: sorted(models) for role, models in sorted(merged.items())}


def memory_fingerprint(directory: Path) -> str | None:
    """A hash of every file under a memory directory (its relative path, size and content),
    or None when there is no such directory.

    Two labs whose memories of a video have the same fingerprint answered from the same
    memory; building the memory again (another builder model, another run of a
    non-deterministic one) changes it.
    """
    if not directory.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(directory).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            if size <= WHOLE_FILE_LIMIT:
                for chunk in iter(lambda: handle.read(2**20), b""):
                    digest.update(chunk)
            else:
                for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
                    handle.seek(max(0, min(int(size * fraction), size - SLICE)))
                    digest.update(handle.read(SLICE))
    return f"m1-{digest.hexdigest()[:32]}"


def video_prints(video: Path | None, memory: Path) -> VideoPrints:
    """The fingerprints of one video's files as they are now (absent files give None)."""
    from videotapestry.video import fingerprint

    video_print = None
    if video is not None:
        try:
            video_print = fingerprint(video)
        except (VideoTapestryError, OSError):
            video_print = None
    return VideoPrints(
        video=video_print,
        memory=memory_fingerprint(memory),
        memory_video=_manifest_fingerprint(memory / MANIFEST_FILE),
    )


def _manifest_fingerprint(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("video_fingerprint") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def print_differences(
    recorded: Mapping[str, VideoPrints], now: Mapping[str, VideoPrints]
) -> list[str]:
    """One line for each video whose video or memory is not the one ``recorded`` names.

    A fingerprint missing on either side is not a difference (a run without videos, a run
    made before fingerprints were kept): only two known values that disagree are.
    """
    lines = []
    for name in sorted(set(recorded) & set(now)):
        was, is_now = recorded[name], now[name]
        for what, before, after in (
            ("video", was.video, is_now.video),
            ("memory", was.memory, is_now.memory),
        ):
            if before and after and before != after:
                lines.append(
                    f"{name}: the {what} differs from the recorded run's ({before} -> {after})"
                )
    return lines


__all__ = [
    "NOT_INSTALLED",
    "PACKAGES",
    "memory_fingerprint",
    "merge_models",
    "package_versions",
    "print_differences",
    "served_models",
    "video_prints",
]
