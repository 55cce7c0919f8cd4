"""``videotapestry inspect``: a memory (native or MemDreamer) as a tree, JSON or an HTML page,
or a run saved by ``ask`` (its trace JSON) as a summary or an HTML picture of what the
agents did."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from videotapestry.commands.common import AddConfigOptions, level_lines
from videotapestry.errors import VideoTapestryError
from videotapestry.question import option_label


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show a memory (native or MemDreamer directory) as a tree, JSON or HTML, or a "
        "saved run (trace JSON) as a summary or an HTML picture of what the agents did",
    )
    parser.add_argument("path", help="memory directory, or trace JSON saved by `ask`")
    parser.add_argument(
        "--json",
        action="store_true",
        help="memory: counts and every node's id, kind, label, time; trace: the result summary",
    )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page")
    parser.add_argument(
        "--depth", type=int, default=None, help="tree depth (1 SuperEvents, 2 MacroEvents)"
    )
    parser.add_argument(
        "--video",
        metavar="PATH",
        help="trace only: the video to take the frames from (default: the one the trace recorded)",
    )
    parser.set_defaults(handler=run)  # reads files only: no config options


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.is_file() or path.suffix.lower() == ".json":
        return _inspect_trace(args)
    if args.video:
        raise VideoTapestryError(
            f"--video applies to a trace JSON, and {path} is a memory directory"
        )
    from videotapestry.memory import open_memory
    from videotapestry.memory.inspect import memory_summary, memory_tree
    from videotapestry.views.memory_page import memory_html

    memory = open_memory(args.path)
    if args.html:
        _write_page(Path(args.html), memory_html(memory))
    if args.json:
        print(json.dumps(memory_summary(memory), ensure_ascii=False, indent=1))
    else:
        print(memory_tree(memory, max_depth=args.depth))
        if args.html:
            print(f"wrote {args.html}")
    return 0


def _inspect_trace(args: argparse.Namespace) -> int:
    """A saved run: a short summary (or its result as JSON), and with ``--html`` its page."""
    from videotapestry.views.citation_text import node_names
    from videotapestry.views.trace_data import load_question_trace
    from videotapestry.views.trace_html import question_page, thumbnails_for

    if args.depth is not None:
        raise VideoTapestryError(f"--depth applies to memories, and {args.path} is a trace")
    trace = load_question_trace(args.path)
    if args.html:
        _write_page(Path(args.html), question_page(trace, thumbnails_for(trace, video=args.video)))
    if args.json:
        from videotapestry.result import read_trace

        print(json.dumps(read_trace(args.path)["result"], ensure_ascii=False, indent=1))
        return 0
    chosen = next((o for o in trace.options if option_label(o) == trace.answer), "")
    print(f"question {trace.question_id}: {trace.question}")
    print(f"answer: {trace.answer}  {chosen}  ({trace.answer_source}, variant {trace.variant})")
    for line in level_lines(trace.levels, node_names(trace)):
        print(line)
    for warning in trace.warnings:
        print(f"  warning: {warning.render()}")
    for degradation in trace.degraded:
        print(f"  degraded: {degradation.render()}")
    print(f"{trace.usage.describe()}, memory ≈{trace.memory_tokens} tokens")
    if args.html:
        print(f"wrote {args.html}")
    return 0


def _write_page(target: Path, page: str) -> None:
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise VideoTapestryError(f"cannot write {target}: {exc.strerror or exc}") from None
