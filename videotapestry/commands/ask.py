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
import json
import sys

from videotapestry.commands.common import (
    EXIT_DEGRADED,
    EXIT_ERROR,
    AddConfigOptions,
    add_budget_options,
    add_executor_options,
    budget_overrides,
    check_key,
    default_trace_path,
    executor_overrides,
    facade,
    finish,
    finite_float,
    interrupted,
    progress_printer,
    unwritten_trace,
)
from videotapestry.errors import ConfigError, VideoTapestryError
from videotapestry.question import option_label
from videotapestry.views.citation_text import moment_text


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="answer one question about a video from its memory (multiple-choice with "
        "--option, else free-form), citing the moments the answer rests on",
    )
    parser.add_argument("video", nargs="?", help="the video file (omit to answer from memory only)")
    parser.add_argument("--memory", help="memory directory (native or MemDreamer)")
    parser.add_argument(
        "--library",
        metavar="LIB",
        help="answer across a library (videotapestry library index) instead of one video: "
        "no VIDEO or --memory; the answer names the videos it rests on",
    )
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
    add_executor_options(
        parser,
        executor_help="with --library: where each candidate video's run goes: local (this "
        "process, default) or ray (one task per video on a Ray cluster; needs the [ray] extra, "
        "and videos and memories on storage every worker sees)",
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
    if args.library:
        if args.video or args.memory:
            raise ConfigError("ask --library answers across the library: give no VIDEO or --memory")
        return await _ask_library(args)
    if not args.memory:
        raise ConfigError("ask needs --memory (one video's memory) or --library LIB")
    if args.executor or args.ray_address:
        raise ConfigError("--executor and --ray-address apply to ask --library")
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


async def _ask_library(args: argparse.Namespace) -> int:
    """A question across a library: the answer, the videos it rests on, each citation as
    its video and time, what it cost."""
    from videotapestry.executors import open_library

    vt = facade(args, *executor_overrides(args), *budget_overrides(args))
    try:
        check_key(vt, None)
        with open_library(vt, args.library) as library:
            result = await library.aanswer(args.question, args.option)
    finally:
        await vt.aclose()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        chosen = next((o for o in result.options if option_label(o) == result.answer), "")
        print(f"answer: {chosen or result.answer_text or result.answer}")
        if result.answered_from:
            print(f"from: {'; '.join(result.answered_from)}")
        print(f"reasoning: {result.reasoning}")
        for number, citation in enumerate(result.citations, 1):
            print(f"claim {number}: {citation.claim}")
            where = citation.video or citation.memory
            times = ", ".join(dict.fromkeys(moment_text(s) for s in citation.sources))
            print(f"  cites {citation.title} at {times} ({where})")
        asked = ", ".join(c.title for c in result.candidates) or "none (no moment matched)"
        print(f"videos asked: {asked}")
        print(f"{result.usage.describe()}, {result.elapsed_s:.1f} s")
    for line in result.degraded:
        print(f"degraded: {line}", file=sys.stderr)
    if result.degraded and not args.allow_degraded:
        return EXIT_DEGRADED
    return 0
