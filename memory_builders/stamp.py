"""The build stamp: whether a finished memory is up to date, known without building it.

Running the stages through their checkpoints redoes nothing, but still reads every
checkpoint, loads the embedding model and re-embeds: seconds, many on a long video. So a
build that finishes records one *stamp* in its manifest's ``build`` entry: a key of what its
checkpoints hash (the video's fingerprint, the builder settings, prompts, models and their
revisions, the embedder, the OCR engine, the subtitles given) and the digest of every file
of the memory directory. A new build into the same folder whose key is the same, of a
memory that is complete and whose files are still as written, returns that memory at once:
no decoding, no model, no embedder. Anything else (another video or setting, a partial or
degraded memory, a file of the memory edited or deleted, ``--restart``) builds as before,
through the checkpoints.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import videotapestry
from memory_builders.checkpoints import stage_key
from memory_builders.context import BuildTools
from memory_builders.report import BUILDER_VERSION, BuildReport
from videotapestry.contracts.builder import BUILDER_PROMPT_ROLES
from videotapestry.memory import MANIFEST_FILE
from videotapestry.prompts import short_hash
from videotapestry.trace import without_url_credentials

#: The manifest's ``build`` entry holding the stamp: ``{"key", "files": {name: digest}}``.
STAMP_ENTRY = "stamp"
#: The config sections the builder reads (``models``: only its roles', below); the others
#: (the agents, answering, the response cache, executors, serving, prices) do not change
#: what it writes.
CONFIG_SECTIONS = ("asr", "builder", "embedding", "images", "video")
#: Degradations that a rerun would repeat as they are (no OCR engine, frames that cannot be
#: turned upright, frames the video lacks); any other (a fallback reply, a failed transcript
#: or proxy) is retried by a rerun, so a memory that has one is never kept as it is.
LASTING_DEGRADATIONS = frozenset({"ocr", "frames"})
#: Files hashed whole up to this size; larger ones (a frame proxy) by size and samples.
WHOLE_FILE_BYTES = 64 << 20
_SAMPLE_BYTES = 1 << 20


def build_stamp(tools: BuildTools, fingerprint: str, subtitles: Path | None) -> str:
    """The key of a build of the video with ``fingerprint`` by ``tools``: what its
    checkpoints depend on, read from the config and files only (no model is loaded)."""
    config = tools.config
    sections = config.model_dump(mode="json", include=set(CONFIG_SECTIONS))
    models = {}
    for role in sorted(set(BUILDER_PROMPT_ROLES.values())):
        settings = config.models.settings_for(role)
        identity = settings.model_dump(
            mode="json", exclude={"timeout_s", "max_retries", "api_key_env"}
        )
        identity["revision"] = tools.service.revision_for(role)
        models[role] = identity
    ocr = tools.ocr
    parts = {
        "video": fingerprint,
        "package": videotapestry.__version__,
        "builder": BUILDER_VERSION,
        "config": without_url_credentials(sections),
        "models": without_url_credentials(models),
        "prompts": {
            name: short_hash(tools.prompts.source(name)) for name in sorted(BUILDER_PROMPT_ROLES)
        },
        "embedder": tools.embedder.model_name,
        "ocr": None if ocr is None else getattr(ocr, "version", getattr(ocr, "name", "?")),
        "subtitles": file_digest(subtitles) if subtitles is not None else None,
    }
    return stage_key("build_stamp", parts)


def keepable(report: BuildReport) -> bool:
    """Whether a rerun would give this build's memory again: complete, and degraded only in
    ways a rerun repeats."""
    return (
        report.status == "complete"
        and not report.partial
        and all(d.what in LASTING_DEGRADATIONS for d in report.degradations)
    )


def stamp_record(key: str, files: dict[str, Path]) -> dict[str, Any]:
    """The manifest's stamp entry: ``key`` and the digest of each memory file (by name)."""
    return {"key": key, "files": {name: file_digest(path) for name, path in sorted(files.items())}}


def up_to_date(out: Path, key: str) -> dict[str, Any] | None:
    """The manifest (as JSON) of the memory in ``out`` when it is a complete build stamped
    with ``key`` whose files are all as that build wrote them; else None."""
    try:
        manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    build = manifest.get("build") if isinstance(manifest, dict) else None
    record = build.get(STAMP_ENTRY) if isinstance(build, dict) else None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    assert isinstance(build, dict)
    if build.get("status") != "complete" or build.get("partial") is not False:
        return None
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        return None
    for name, digest in files.items():
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            return None
        if file_digest(out / name) != digest:
            return None
    return manifest


def file_digest(path: Path) -> str | None:
    """``<size>:<sha256>`` of a file (whole up to ``WHOLE_FILE_BYTES``, else of its size and
    five 1 MiB samples, as the video's fingerprint does); None when it cannot be read."""
    try:
        size = path.stat().st_size
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            if size <= WHOLE_FILE_BYTES:
                for block in iter(lambda: handle.read(_SAMPLE_BYTES), b""):
                    digest.update(block)
            else:
                for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
                    handle.seek(max(0, min(int(size * fraction), size - _SAMPLE_BYTES)))
                    digest.update(handle.read(_SAMPLE_BYTES))
    except OSError:
        return None
    return f"{size}:{digest.hexdigest()[:32]}"
