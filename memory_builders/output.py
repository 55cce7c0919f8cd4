"""Stage 8b: the memory directory, written so that a kill at any moment leaves a usable one.

Everything is written into ``build/staging`` first and then moved into place, the manifest
last: a directory without a manifest is not a memory yet, so a kill between the moves never
leaves new files under an old manifest (the rerun writes them again). Beside the memory go
its transcript (what the ASR tool reads at question time) and the build report; a build
that stops leaves its report in the build directory instead, beside the checkpoints it
resumes from.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from memory_builders.context import BuildContext
from memory_builders.report import BUILDER_VERSION, BuildError
from memory_builders.scan import KeptFrames
from memory_builders.stamp import STAMP_ENTRY, keepable, stamp_record
from memory_builders.transcript import TranscriptResult
from videotapestry.asr import TRANSCRIPT_FILE
from videotapestry.contracts.builder import BUILDER_PROMPT_ROLES
from videotapestry.files import write_json_atomic
from videotapestry.memory import (
    MANIFEST_FILE,
    EntityNode,
    MemoryManifest,
    VideoMemory,
    new_manifest,
    save_memory,
)
from videotapestry.trace import without_url_credentials
from videotapestry.video import VideoInfo

log = logging.getLogger("memory_builders")

REPORT_FILE = "build_report.json"
#: Files of a memory that a new build may not write again (no embeddings, no transcript).
OPTIONAL_FILES = ("embeddings.npy", "embedding_ids.json", TRANSCRIPT_FILE)


def check_directory(out: Path, build_dir: Path) -> None:
    """Refuse a directory that holds something other than a build (before the build lock
    makes ``build_dir`` there)."""
    if out.exists() and not out.is_dir():
        raise BuildError(f"cannot build into {out}: it is a file, not a directory")
    if out.is_dir() and any(out.iterdir()):
        ours = build_dir.is_dir() or (out / MANIFEST_FILE).is_file()
        if not ours:
            raise BuildError(
                f"refusing to build into {out}: the directory is not empty and holds no "
                "build; choose a new or empty directory"
            )


def write_memory(
    ctx: BuildContext,
    memory: VideoMemory,
    info: VideoInfo,
    transcript: TranscriptResult,
    frames: KeptFrames,
    export_dir: Path | None,
    stamp: str | None = None,
) -> VideoMemory:
    """Write the finished build into ``ctx.out`` (and the released MemDreamer layout into
    ``export_dir``); the memory as written, with its manifest. ``stamp``: the build's key
    (``stamp.build_stamp``), recorded in the manifest when a rerun may keep this memory."""
    config = ctx.config
    roles = sorted(set(BUILDER_PROMPT_ROLES.values()))
    manifest = new_manifest(
        "builder",
        source_path=str(ctx.video.resolve()),
        video_fingerprint=info.fingerprint,
        models={role: config.models.settings_for(role).model for role in roles},
        prompt_hashes={name: ctx.prompt_hash(name) for name in BUILDER_PROMPT_ROLES},
        config=without_url_credentials(config.model_dump(mode="json")),
        build=_manifest_build(ctx, transcript),
    )
    memory = memory.with_manifest(manifest)
    staging = ctx.build_dir / "staging"
    if staging.exists():
        shutil.rmtree(staging)
    with ctx.timings.measure("write"):
        written = save_memory(memory, staging)
        memory = memory.with_manifest(written)
        if transcript.source != "none" and transcript.problem is None:
            write_json_atomic(
                staging / TRANSCRIPT_FILE, transcript.to_file(info.fingerprint).to_json()
            )
        write_json_atomic(staging / REPORT_FILE, ctx.report.to_json())
        if stamp is not None and keepable(ctx.report):
            memory = memory.with_manifest(_stamped(staging, ctx.out, written, stamp))
        _move_into_place(staging, ctx.out)
    if export_dir is not None:
        from memory_builders.export import export_released_layout

        def keyframe(entity: EntityNode) -> bytes | None:
            if entity.grounding_time is None:
                return None
            return frames.jpeg_nearest(entity.grounding_time)

        export_released_layout(memory, export_dir, keyframe=keyframe)
    # A followed recording's next version scans on from these frames (``scan``).
    if not ctx.settings.keep_frames and not ctx.report.failures and ctx.live_identity is None:
        shutil.rmtree(ctx.frames_dir, ignore_errors=True)
    return memory


def write_stop_report(ctx: BuildContext) -> None:
    path = ctx.build_dir / REPORT_FILE
    try:
        write_json_atomic(path, ctx.report.to_json())
    except OSError as exc:  # pragma: no cover - reporting must not hide the real error
        log.warning("cannot write %s: %s", path, exc)


def _move_into_place(staging: Path, out: Path) -> None:
    """The old manifest goes first and the new one moves last (see the module docstring)."""
    (out / MANIFEST_FILE).unlink(missing_ok=True)
    names = sorted(p.name for p in staging.iterdir() if p.name != MANIFEST_FILE)
    for stale in OPTIONAL_FILES:
        if stale not in names:
            (out / stale).unlink(missing_ok=True)
    for name in [*names, MANIFEST_FILE]:
        os.replace(staging / name, out / name)
    staging.rmdir()


def _stamped(staging: Path, out: Path, manifest: MemoryManifest, stamp: str) -> MemoryManifest:
    """The staged manifest with the build's stamp: its key and the digests of the files the
    memory directory will hold once the staging moves in (the staged ones, and those already
    in place that the move keeps, such as the frame proxy)."""
    files = {p.name: p for p in staging.iterdir() if p.is_file() and p.name != MANIFEST_FILE}
    for path in out.iterdir():
        name = path.name
        if name in files or name == MANIFEST_FILE or name in OPTIONAL_FILES:
            continue
        if path.is_file() and not name.startswith("."):
            files[name] = path
    build = {**manifest.build, STAMP_ENTRY: stamp_record(stamp, files)}
    stamped = manifest.model_copy(update={"build": build})
    write_json_atomic(staging / MANIFEST_FILE, stamped.model_dump(mode="json"))
    return stamped


def _manifest_build(ctx: BuildContext, transcript: TranscriptResult) -> dict[str, Any]:
    """The manifest's ``build`` entry: how the memory was made, in brief."""
    report = ctx.report
    data = report.to_json()
    ocr = ctx.tools.ocr
    return {
        "builder_version": BUILDER_VERSION,
        "status": data["status"],
        "partial": data["partial"],
        "failed_clips": data["failures"],
        "lost_spans": data["lost_spans"],
        "degradations": data["degradations"],
        "stages": data["stages"],
        "timings": data["timings"],
        "usage": data["usage"],
        "wall_s": round(report.wall_s, 3),
        "clips": report.clips,
        "transcript": {
            "source": transcript.source,
            "detail": transcript.detail,
            "lines": len(transcript.lines),
            # Whether the nodes may hold speech, or only the stored transcript does.
            "in_perception": ctx.settings.perception.transcript,
        },
        "ocr": getattr(ocr, "version", None) if ocr is not None else None,
    }
