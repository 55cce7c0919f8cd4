"""The ``videotapestry`` command line: one sub-command per module of ``videotapestry/commands``.

Commands: ``prompts list|show`` (which template each role uses, overrides included),
``config show`` (the fully resolved configuration), ``check-endpoint`` (one real JSON call, to
check a key, base URL and model name first), ``ask`` (one question, with a progress display
and a saved trace), ``reanswer`` (a saved run under another final memory),
``import-memdreamer``, ``inspect`` (a memory, or a saved run's trace as a summary or an HTML
picture), ``build-memory`` (a raw video to a memory, resumable), ``demo`` (the shipped sample
video with the offline model), ``eval-report`` and ``compare`` (run directories), ``eval``
(a benchmark into a resumable run directory) and ``mcp`` (the tools as an MCP server). Each
module's docstring gives its exit status.

A command module has ``add_parser(subparsers, add_config)``, which adds its parser (with the
shared config options where it reads a config) and names its ``run`` as the parser's
handler, and ``run(args) -> int``, the exit status. Errors of ours print one line and exit
with status 2 instead of a traceback, with the message scrubbed of secrets (``trace.scrub``),
and Ctrl-C one line and status 130; that is handled here, once for every command (``ask``,
``build-memory`` and ``eval`` say what they kept). Command-line text that is not UTF-8 is
refused here too, before any command sees it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Protocol

from videotapestry import __version__
from videotapestry.commands import (
    ask,
    build_memory,
    chat,
    check_endpoint,
    compare,
    demo,
    eval_report,
    evaluate,
    import_memdreamer,
    inspect,
    library,
    mcp,
    prompts,
    reanswer,
    serve,
    show_config,
)
from videotapestry.commands.common import (
    EXIT_ERROR,
    AddConfigOptions,
    add_config_options,
    interrupted,
)
from videotapestry.errors import VideoTapestryError
from videotapestry.trace import scrub


class CommandModule(Protocol):
    """What ``main`` needs of a module of ``videotapestry/commands``."""

    def add_parser(
        self, subparsers: argparse._SubParsersAction, add_config: AddConfigOptions
    ) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


#: In the order ``videotapestry --help`` lists them.
COMMANDS: tuple[CommandModule, ...] = (
    prompts,
    show_config,
    check_endpoint,
    ask,
    chat,
    reanswer,
    import_memdreamer,
    inspect,
    build_memory,
    demo,
    eval_report,
    compare,
    evaluate,
    library,
    mcp,
    serve,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="videotapestry",
        description="Question answering over long videos with query-adaptive memory refinement.",
    )
    parser.add_argument("--version", action="version", version=f"videotapestry {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers, add_config_options)
    return parser


def undecodable_argument(arguments: Sequence[str]) -> str | None:
    """Why an argument is not text, if one is not: Python hands bytes that are not UTF-8
    over as lone surrogates, which every later print, trace or request would choke on."""
    for number, argument in enumerate(arguments, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as exc:
            raw = argument.encode("utf-8", "surrogateescape")
            shown = raw.decode("utf-8", "backslashreplace")
            byte = ord(argument[exc.start]) - 0xDC00
            return (
                f'argument {number} ("{shown}") is not UTF-8 text (byte 0x{byte:02x}); '
                "give command-line text in UTF-8 (check the terminal's or the script's encoding)"
            )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    problem = undecodable_argument(arguments)
    if problem is not None:
        print(f"videotapestry: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    parser = build_parser()
    args = parser.parse_args(arguments)
    args.argv = arguments  # what run.json records
    handler = getattr(args, "handler", None)
    if handler is None:  # no command, or ``prompts``/``config`` without an action
        parser.print_help()
        return 0 if args.command is None else EXIT_ERROR
    try:
        status: int = handler(args)
    except VideoTapestryError as exc:
        print(f"videotapestry: error: {scrub(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:  # a command without its own message for it
        return interrupted("stopped before it finished")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
