"""``videotapestry reanswer``: a saved full-method run answered again under other final
memories (paper Table 3(b)); only the Answer agent runs, once per ``--variant``.

Each variant's trace is saved beside the original (``TRACE.<variant>.json``); the exit status
is the worst of the variants' (as ``ask``'s: 0, 2 or 3). A variant whose trace cannot be
written is printed first and then named with status 2, as ``ask`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from videotapestry.commands.common import (
    EXIT_ERROR,
    AddConfigOptions,
    facade,
    finish,
    unwritten_trace,
)
from videotapestry.errors import VideoTapestryError
from videotapestry.variants import REASSEMBLY_VARIANTS


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "reanswer",
        help="answer a saved run again under another final memory (only the Answer agent runs)",
    )
    parser.add_argument("trace", help="trace JSON saved by `ask` (a full-method run)")
    parser.add_argument(
        "--variant",
        action="append",
        required=True,
        choices=REASSEMBLY_VARIANTS,
        help="final memory to build from the saved exploration (repeatable)",
    )
    parser.add_argument("--memory", help="memory directory (default: the one the run used)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per line")
    parser.add_argument("--allow-degraded", action="store_true")
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_reanswer(args))


async def _reanswer(args: argparse.Namespace) -> int:
    from videotapestry.result import load_exploration

    exploration = load_exploration(args.trace)
    vt = facade(args)
    status = 0
    try:
        for variant in args.variant:
            result = await vt.areanswer(exploration, variant, memory=args.memory)
            trace_path = Path(args.trace).with_suffix(f".{variant}.json")
            try:
                saved = result.save_trace(trace_path)
            except (OSError, VideoTapestryError) as exc:  # a read-only folder, a full disk
                finish(result, None, as_json=args.json, allow_degraded=args.allow_degraded)
                hint = "copy the trace to a writable folder and re-answer it there"
                print(unwritten_trace(trace_path, exc, hint), file=sys.stderr)
                status = max(status, EXIT_ERROR)
                continue
            code = finish(result, saved, as_json=args.json, allow_degraded=args.allow_degraded)
            status = max(status, code)
    finally:
        await vt.aclose()
    return status
