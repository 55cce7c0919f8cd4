"""``videotapestry import-memdreamer``: a MemDreamer memory, or a release root of one per
video, converted to the native format.

A root imports every video it holds, one line each; a video that fails is reported and the
others are still imported, with exit status 2 if any failed. A memory whose stored node
vectors are not the configured model's gets a ``note:`` line under its own: they were
replaced (``--embed``) or questions will replace them, which changes what search and
PACE-Mem pick (``embedding.stored_vectors``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from videotapestry.commands.common import EXIT_ERROR, AddConfigOptions, config_from
from videotapestry.errors import VideoTapestryError


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "import-memdreamer",
        help="convert a MemDreamer memory (or a root of one per video) to the native format",
    )
    parser.add_argument(
        "src",
        help="one video's MemDreamer directory (phase2/ or phase2_topdown/, phase3/ or "
        "phase4/), or a root holding one such directory per video (<root>/<video_key>/)",
    )
    parser.add_argument(
        "dest",
        help="new or empty directory for the native memory; for a root, each video goes to "
        "DEST/<video_key>/",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a memory already in the destination (its embeddings are kept while "
        "still valid for the imported nodes)",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="NAME",
        help="model that made embeddings.json (default: Qwen/Qwen3-Embedding-8B, MemDreamer's)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--video", help="the video the memory was built from (its fingerprint is recorded)"
    )
    source.add_argument(
        "--fingerprint", help="fingerprint of the video the memory was built from (recorded)"
    )
    parser.add_argument(
        "--embed",
        action="store_true",
        help="make the node embeddings the configured model's (reusing stored or imported "
        "vectors of that model unless embedding.stored_vectors=recompute, computing the "
        "rest); vectors of another model are replaced, and the report says so",
    )
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.memory import import_memdreamer_into

    src, dest = Path(args.src), Path(args.dest)
    jobs, single = _jobs(args, src, dest)
    video_fingerprint = args.fingerprint
    if args.video:
        from videotapestry.video import fingerprint

        video_fingerprint = fingerprint(args.video)
    config = config_from(args)
    embedder = None
    if args.embed:
        from videotapestry.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(config.embedding)  # loads once, on first use
    failed = []
    for key, (source, target) in jobs.items():
        try:
            outcome = import_memdreamer_into(
                source,
                target,
                force=args.force,
                video_fingerprint=video_fingerprint,
                embedding_model=args.embedding_model,
                preferred_model=config.embedding.model,
                embedder=embedder,
                stored_vectors=config.embedding.stored_vectors,
            )
        except (VideoTapestryError, OSError, ValueError) as exc:
            if single:
                raise
            failed.append(key)
            reason = " | ".join(str(exc).splitlines()) or type(exc).__name__
            print(f"failed {key}: {reason}", file=sys.stderr)
            continue
        manifest = outcome.manifest
        counts = ", ".join(f"{v} {k}" for k, v in manifest.counts.items() if v)
        embedded = ""
        if manifest.embedding_model:
            embedded = f"; embeddings: {manifest.embedding_model} ({outcome.embeddings_from})"
        print(f"imported {source} -> {target}: {counts}{embedded}")
        if outcome.vectors_note:
            print(f"  note: {outcome.vectors_note}")
    if failed:
        print(
            f"videotapestry: error: {len(failed)} of {len(jobs)} videos failed to import: "
            f"{', '.join(failed)}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return 0


def _jobs(
    args: argparse.Namespace, src: Path, dest: Path
) -> tuple[dict[str, tuple[Path, Path]], bool]:
    """(source and target directory per video, whether ``src`` is one video's memory)."""
    from videotapestry.memory import is_memdreamer_memory, memdreamer_videos

    if is_memdreamer_memory(src):
        return {str(src): (src, dest)}, True
    videos = memdreamer_videos(src)
    if not videos:
        raise VideoTapestryError(
            f"{src} is neither a MemDreamer memory (phase3/ or phase4/ with "
            "hierarchical_graph_final.json) nor a root of them (<root>/<video_key>/…)"
        )
    if args.video or args.fingerprint:
        raise VideoTapestryError(
            f"--video and --fingerprint name one video, but {src} holds {len(videos)}; "
            "import each video folder on its own to record its fingerprint"
        )
    return {key: (path, dest / key) for key, path in videos.items()}, False
