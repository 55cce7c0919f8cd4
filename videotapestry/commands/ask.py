"""``videotapestry ask``: one question about a video, with a progress display and a saved trace.

Exit status: 0 answered; 2 an error stopped it (bad input, a configuration the server
rejects, a refused key), or the answer was printed but its trace could not be written (a
read-only folder, a full disk: said after the answer); 3 answered, but the run lost part of
the method (``Result.degraded``: ASR or frames lost, a call that took its fallback, a guessed
answer), each loss printed on stderr; ``--allow-degraded`` turns 3 into 0; 130 stopped with Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from videotapestry.commands.common import (
    EXIT_DEGRADED,
    EXIT_ERROR,
    AddConfigOptions,
    add_budget_options,
    budget_overrides,
    check_key,
    default_trace_path,
    facade,
    finish,
    finite_float,
    interrupted,
    progress_printer,
    unwritten_trace,
)
from videotapestry.errors import VideoTapestryError


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="answer one question about a video from its memory (multiple-choice with "
        "--option, else free-form), citing the moments the answer rests on",
    )
    parser.add_argument("video", nargs="?", help="the video file (omit to answer from memory only)")
    parser.add_argument("--memory", required=True, help="memory directory (native or MemDreamer)")
    parser.add_argument("--question", required=True)
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar='"A. ..."',
        help="repeat per option; none: a free-form question, answered in words",
    )
    parser.add_argument("--no-video", action="store_true", help="disable observation")
    parser.add_argument("--subtitles", metavar="FILE", help="subtitle file (SRT, WebVTT, LVB JSON)")
    parser.add_argument("--subtitle-offset", type=finite_float, default=0.0, metavar="SECONDS")
    parser.add_argument("--question-id", help="id for traces (default: a hash of the question)")
    parser.add_argument(
        "--trace", metavar="PATH", help="trace JSON (default: ./videotapestry-traces)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--allow-degraded",
        action="store_true",
        help=f"exit 0 even when the run lost part of the method (default: exit {EXIT_DEGRADED})",
    )
    add_budget_options(parser)
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_ask(args))
    except KeyboardInterrupt:
        return interrupted("nothing was saved for this question")


async def _ask(args: argparse.Namespace) -> int:
    flags = ["asr.source=subtitles"] if args.subtitles else []
    vt = facade(args, *flags, *budget_overrides(args))
    try:
        check_key(vt, args.memory)
        result = await vt.aanswer(
            args.video,
            args.memory,
            args.question,
            args.option,
            question_id=args.question_id,
            no_video=args.no_video,
            subtitle_path=args.subtitles,
            subtitle_offset_s=args.subtitle_offset,
            progress=progress_printer(args.quiet),
        )
    finally:
        await vt.aclose()
    trace_path = args.trace or default_trace_path(result)
    try:
        saved = result.save_trace(trace_path)
    except (OSError, VideoTapestryError) as exc:  # a read-only folder, a full disk
        finish(result, None, as_json=args.json, allow_degraded=args.allow_degraded)
        print(unwritten_trace(trace_path, exc), file=sys.stderr)
        return EXIT_ERROR
    return finish(result, saved, as_json=args.json, allow_degraded=args.allow_degraded)
