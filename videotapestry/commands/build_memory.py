"""``videotapestry build-memory``: one video into ``OUT``, or many into ``ROOT/<video stem>/``.

``--executor ray`` builds each video in its own Ray task (``videotapestry.executors``); the
output root must then be on storage every Ray worker sees, since the checkpoints a retried
task resumes from live there.

``--library LIB`` indexes each memory built into the library at ``LIB`` (SPEC §15), and
with ``--follow`` each version as it is published (SPEC §16), the way a served follow job
keeps the server's library current (``videotapestry.library.index_built``).

Exit status: 0 when every memory is complete, 3 when a memory is partial (some clips failed,
or part of the video could not be decoded; ``--allow-partial`` makes that 0), 2 when a build
stopped (its checkpoints are kept: run the same command again to resume) or a memory built
could not be indexed into ``--library``, 130 when stopped with Ctrl-C (checkpoints kept too).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.commands.common import (
    EXIT_ERROR,
    AddConfigOptions,
    add_executor_options,
    config_overrides,
    executor_overrides,
    interrupted,
)
from videotapestry.errors import VideoTapestryError
from videotapestry.executors.base import BuildJob, BuildOutcome
from videotapestry.trace import scrub

if TYPE_CHECKING:
    from videotapestry.config import Config
    from videotapestry.embeddings import Embedder
    from videotapestry.library import LibraryIndex

VIDEO_SUFFIXES = (".mp4", ".mkv", ".avi", ".mov", ".webm", ".m4v", ".mpg", ".mpeg", ".ts")
EXIT_PARTIAL = 3


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "build-memory",
        help="build a hierarchical memory from a raw video (resumable)",
        description="Build a memory from a video with the configured models. A killed or "
        "stopped build resumes when run again with the same arguments; a finished memory that "
        "is up to date (same video, settings, prompts and models, files unchanged) is kept as "
        "it is, without running a stage.",
        epilog="exit status: 0 complete, 3 partial (clips failed, video lost), 2 stopped "
        "(or not indexed into --library)",
    )
    parser.add_argument(
        "video",
        nargs="?",
        help="the video file (with --follow: an HLS playlist, an RTSP/RTMP/SRT URL or a file "
        "still being written)",
    )
    parser.add_argument("out", nargs="?", help="new or empty directory for the memory")
    parser.add_argument(
        "--videos",
        metavar="DIR_OR_LIST",
        help="build every video in a directory, or listed in a text file (one path a line)",
    )
    parser.add_argument(
        "--out", dest="out_root", metavar="ROOT", help="with --videos: ROOT/<video stem>/"
    )
    parser.add_argument("--subtitles", metavar="FILE", help="subtitles instead of Whisper")
    parser.add_argument(
        "--subtitles-dir",
        metavar="DIR",
        help="with --videos: subtitles named after each video (<stem>.srt/.vtt/.json)",
    )
    parser.add_argument("--concurrency", type=int, metavar="N", help="model calls in flight")
    parser.add_argument(
        "--restart",
        action="store_true",
        help="discard the checkpoints and start over (also when the memory is up to date)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="build even when OUT holds the memory of another video (it is replaced); "
        "without it such a build is refused",
    )
    parser.add_argument(
        "--export-memdreamer",
        metavar="DIR",
        help="also write MemDreamer's released layout (with --videos: DIR/<video stem>/)",
    )
    add_executor_options(
        parser,
        executor_help="where the builds run: local (this process, default) or ray (one task "
        "per video; needs the [ray] extra and output on storage every worker sees)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="the source is still arriving (an HLS playlist, a path or an http(s) URL; an "
        "RTSP, RTMP or SRT URL; or a file still being written: MPEG-TS, fragmented MP4, "
        "Matroska): build a new version of the memory as video arrives, until it ends "
        "(ENDLIST, the server ends the stream, no growth for builder.follow.idle_end_s, or "
        "Ctrl-C)",
    )
    parser.add_argument(
        "--library",
        metavar="LIB",
        help="also index each memory built into the library at LIB (made when new; its other "
        "memories are kept); with --follow, each version as it is published, so a library "
        "search finds what the stream has shown so far",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print the build reports as JSON")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="exit 0 even when some clips failed or part of the video was lost",
    )
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    flags = [] if args.concurrency is None else [f"builder.concurrency={args.concurrency}"]
    if args.follow:
        try:
            return _follow(args, config_overrides(args, *flags))
        except KeyboardInterrupt:
            return interrupted(
                "the newest version stays readable; run the same command again to go on "
                "following from the recorded video"
            )
    jobs = _jobs(args)
    overrides = config_overrides(args, *flags, *executor_overrides(args))
    try:
        return _build_all(args, jobs, overrides)
    except KeyboardInterrupt:
        return interrupted(
            "the finished stages are checkpointed, run the same command again to resume"
        )


def _jobs(args: argparse.Namespace) -> list[BuildJob]:
    """One job per memory to build."""
    if args.videos:
        if args.video or args.out:
            raise VideoTapestryError("give either VIDEO OUT or --videos ... --out ROOT, not both")
        if not args.out_root:
            raise VideoTapestryError("--videos needs --out ROOT (one memory per video under it)")
        if args.subtitles:
            raise VideoTapestryError("--subtitles is for one video; use --subtitles-dir")
        videos = _list_videos(Path(args.videos))
        root = Path(args.out_root)
        jobs = []
        for video in videos:
            subtitles = None
            if args.subtitles_dir:
                subtitles = next(
                    (
                        Path(args.subtitles_dir) / f"{video.stem}{suffix}"
                        for suffix in (".srt", ".vtt", ".json")
                        if (Path(args.subtitles_dir) / f"{video.stem}{suffix}").is_file()
                    ),
                    None,
                )
            export = Path(args.export_memdreamer) / video.stem if args.export_memdreamer else None
            jobs.append(BuildJob(video, root / video.stem, subtitles, export, force=args.force))
        return jobs
    if not args.video or not (args.out or args.out_root):
        raise VideoTapestryError(
            "build-memory needs VIDEO OUT (or --videos DIR_OR_LIST --out ROOT)"
        )
    out = Path(args.out or args.out_root)
    export = Path(args.export_memdreamer) if args.export_memdreamer else None
    subtitles = Path(args.subtitles) if args.subtitles else None
    return [BuildJob(Path(args.video), out, subtitles, export, force=args.force)]


def _list_videos(source: Path) -> list[Path]:
    if source.is_dir():
        videos = sorted(p for p in source.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    elif source.is_file():
        base = source.parent
        lines = [line.strip() for line in source.read_text(encoding="utf-8").splitlines()]
        videos = [
            (Path(line) if Path(line).is_absolute() else base / line)
            for line in lines
            if line and not line.startswith("#")
        ]
    else:
        raise VideoTapestryError(f"--videos {source}: no such directory or list file")
    if not videos:
        raise VideoTapestryError(f"--videos {source}: no video files found")
    stems = [v.stem for v in videos]
    repeated = sorted({s for s in stems if stems.count(s) > 1})
    if repeated:
        raise VideoTapestryError(
            f"--videos {source}: several videos share the name {repeated[0]!r}; their memories "
            "would go to the same directory"
        )
    return videos


def _build_all(args: argparse.Namespace, jobs: list[BuildJob], overrides: list[str]) -> int:
    from memory_builders.report import summary_text
    from videotapestry.config import load_config
    from videotapestry.executors import make_executor

    config = load_config(args.config, profile=args.profile, overrides=overrides)
    library = _library(args.library, config)
    executor = make_executor(config)
    reports = []
    failed = partial = False

    def started(job: BuildJob) -> None:
        if len(jobs) > 1 and not args.quiet and executor.name == "local":
            print(f"== {job.video} -> {job.out}", file=sys.stderr, flush=True)

    def finished(outcome: BuildOutcome) -> None:
        nonlocal failed, partial
        if outcome.error is not None:
            if len(jobs) == 1:
                return  # raised below, as the one build's error
            error = scrub(outcome.error)
            print(f"videotapestry: error: {outcome.job.video}: {error}", file=sys.stderr)
            failed = True
            return
        assert outcome.report is not None
        reports.append(outcome.report.to_json())
        if not args.json:
            print(summary_text(outcome.report), flush=True)
        partial = partial or outcome.report.partial

    outcomes = executor.build_memories(
        config,
        jobs,
        restart=args.restart,
        progress=not args.quiet,
        on_start=started,
        on_outcome=finished,
    )
    if len(jobs) == 1 and outcomes and outcomes[0].error is not None:
        raise outcomes[0].exception or VideoTapestryError(outcomes[0].error)
    if library is not None:  # every memory built, partial ones too: each is readable
        built = [o.job.out for o in outcomes if o.ok]
        indexed = _indexed(library, built) if built else {"indexed": True}
        failed = failed or not indexed["indexed"]
        for report in reports:
            report["library"] = indexed
    if args.json:
        print(json.dumps(reports if len(jobs) > 1 else reports[0], ensure_ascii=False))
    if failed:
        return EXIT_ERROR
    return EXIT_PARTIAL if partial and not args.allow_partial else 0


def _library(
    path: str | None, config: Config, embedder: Embedder | None = None
) -> LibraryIndex | None:
    """The library ``--library`` names, opened before any build so that a missing LanceDB
    or an unusable folder stops the command before hours of building, not after."""
    if path is None:
        return None
    from videotapestry.embeddings import SentenceTransformerEmbedder
    from videotapestry.library import LibraryIndex

    index = LibraryIndex(path, embedder or SentenceTransformerEmbedder(config.embedding))
    index.count()  # connects: LanceDB installed, the folder made or readable
    return index


def _indexed(library: LibraryIndex, memories: list[Path]) -> dict[str, Any]:
    """``memories`` indexed into ``--library`` as a served follow indexes its versions; a
    failure is said on stderr and the memories stand (a follow goes on: its next version,
    or ``library index``, catches up)."""
    from videotapestry.library import index_built

    indexed = index_built(library, memories)
    if not indexed["indexed"]:
        print(
            f"videotapestry: not indexed into {library.path}: {indexed.get('why', '')}",
            file=sys.stderr,
            flush=True,
        )
    return indexed


def _follow(args: argparse.Namespace, overrides: list[str]) -> int:
    """``--follow``: one line per version published, then the last build's summary."""
    import asyncio

    from memory_builders.builder import BuildResult, MemoryBuilder
    from memory_builders.follow import follow
    from memory_builders.progress import BuildProgress
    from memory_builders.report import summary_text
    from videotapestry.config import load_config
    from videotapestry.memory import LiveState

    if args.videos or args.restart or args.export_memdreamer or args.subtitles:
        raise VideoTapestryError(
            "--follow takes one SOURCE and MEM; --videos, --restart, --subtitles and "
            "--export-memdreamer are for finished files"
        )
    if not args.video or not (args.out or args.out_root):
        raise VideoTapestryError("build-memory --follow needs SOURCE MEM")
    config = load_config(args.config, profile=args.profile, overrides=overrides)
    builder = MemoryBuilder(config, progress=BuildProgress(enabled=False))
    out = Path(args.out or args.out_root)
    library = _library(args.library, config, builder.embedder)
    indexed: dict[str, Any] = {"indexed": True}

    def published(result: BuildResult, state: LiveState) -> None:
        nonlocal indexed
        line: dict[str, Any] = {**state.to_json(), "report": result.report.to_json()}
        text = f"{state.version}: {state.describe()}, {result.report.clips} clips"
        if library is not None:  # each version indexed as it is published
            indexed = line["library"] = _indexed(library, [out])
            text += f"; indexed into {library.path}" if indexed["indexed"] else ""
        if args.json:  # one line per version: its pointer, its build report (and its index)
            print(json.dumps(line, ensure_ascii=False), flush=True)
        else:
            print(text, flush=True)

    async def run_follow() -> BuildResult:
        try:
            return await follow(builder, args.video, out, on_version=published)
        finally:
            await builder.service.aclose()

    result = asyncio.run(run_follow())
    if not args.json:
        print(summary_text(result.report), flush=True)
    if not indexed["indexed"]:  # the last version is not in the library: say so by status
        return EXIT_ERROR
    return EXIT_PARTIAL if result.partial and not args.allow_partial else 0
