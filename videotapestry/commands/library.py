"""``videotapestry library``: index every memory under some roots, search them as one, list
them (SPEC §15).

    videotapestry library index ROOT... --library LIB     build or update (changed ones only)
    videotapestry library search "words" --library LIB    ranked moments across the videos
    videotapestry library ls --library LIB                 what the library holds
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from videotapestry.commands.common import EXIT_ERROR, AddConfigOptions, config_from, interrupted
from videotapestry.timecode import format_range, format_timestamp
from videotapestry.views.citation_text import trimmed

if TYPE_CHECKING:
    from videotapestry.library import LibraryIndex


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "library",
        help="a library of videos: index every memory under some folders, search them as one",
    )
    actions = parser.add_subparsers(dest="library_action", metavar="ACTION", required=True)

    index = actions.add_parser(
        "index",
        help="build or update the library from every memory under ROOT (new and changed "
        "memories are indexed, removed ones dropped, the rest left as they are)",
    )
    index.add_argument("roots", nargs="+", metavar="ROOT", help="a memory, or a folder of them")
    index.add_argument("--quiet", action="store_true", help="no progress bar")

    search = actions.add_parser("search", help="the moments across the library that fit TEXT")
    search.add_argument("text", help="words to look for: by their words and by their meaning")
    search.add_argument("--top", type=int, default=10, metavar="K", help="moments shown (10)")
    search.add_argument("--json", action="store_true", help="one JSON object per moment")

    listing = actions.add_parser("ls", help="the videos the library holds")
    listing.add_argument("--json", action="store_true", help="one JSON object per video")

    for action in (index, search, listing):
        action.add_argument("--library", required=True, metavar="LIB", help="the library directory")
        add_config(action)
        action.set_defaults(handler=run)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.embeddings import SentenceTransformerEmbedder
    from videotapestry.library import LibraryIndex

    config = config_from(args)
    library = LibraryIndex(args.library, SentenceTransformerEmbedder(config.embedding))
    try:
        if args.library_action == "index":
            return _index(library, args)
        if args.library_action == "search":
            return _search(library, args)
        return _list(library, args)
    except KeyboardInterrupt:
        return interrupted("each memory indexed before the interrupt is kept; run it again")


def _index(library: LibraryIndex, args: argparse.Namespace) -> int:
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(desc="library", unit="memory", file=sys.stderr, leave=True)

    def progress(memory: str, done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        report = library.update(args.roots, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    print(
        f"library {library.path}: {len(report.added)} added, {len(report.updated)} updated, "
        f"{len(report.removed)} removed, {report.unchanged} unchanged; "
        f"{report.rows_written} moments written, {library.count()} in all"
    )
    for memory, why in report.failed:
        print(f"videotapestry: not indexed: {memory}: {why}", file=sys.stderr)
    return EXIT_ERROR if report.failed else 0


def _search(library: LibraryIndex, args: argparse.Namespace) -> int:
    hits = library.search(args.text, args.top)
    if args.json:
        for hit in hits:
            print(json.dumps(hit.to_dict(), ensure_ascii=False))
        return 0
    if not hits:
        print("nothing found (is the library indexed? videotapestry library index ROOT ...)")
        return 0
    for number, hit in enumerate(hits, 1):
        where = hit.video or hit.memory
        when = (
            f"at {format_timestamp(hit.start_s)}"
            if hit.end_s <= hit.start_s
            else format_range(hit.start_s, hit.end_s)
        )
        print(f"{number:>2}. {hit.title} — {when} ({hit.level})")
        print(f"    {trimmed(hit.text, 160)}")
        print(f"    {where}")
    return 0


def _list(library: LibraryIndex, args: argparse.Namespace) -> int:
    videos = library.videos()
    if args.json:
        for video in videos:
            print(json.dumps({**video.__dict__, "moments": library.count(video.key)}))
        return 0
    if not videos:
        print(f"{library.path} holds no video yet: videotapestry library index ROOT ...")
        return 0
    for video in videos:
        minutes = video.duration_s / 60
        print(f"{video.title} — {minutes:.1f} min, {library.count(video.key)} moments")
        print(f"    memory: {video.memory}")
        if video.video:
            print(f"    video:  {video.video}")
    return 0
