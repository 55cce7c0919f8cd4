"""``videotapestry chat``: questions about one video in turn, each a follow-up of the last.

Interactive by default: a prompt reads one question per line (line editing and history when
the terminal has readline), Ctrl-D or ``exit`` leaves. ``--script FILE`` runs a list of turns
without a terminal: a text file with one question per line (``#`` comments and blank lines
skipped), or JSON / JSON Lines of ``{"question": ..., "options": [...]}``. A line may carry
options after `` | `` (``Which gate? | A. Gate A | B. Gate B``). Each turn prints its answer,
the times it cites and what changed the method; a follow-up whose "that" was resolved shows
how it was read. Every turn's trace is saved. Exit status as ``ask``: 0, 2 on an error
(a refused scripted turn named by its number; a trace that could not be written, said after
that turn's answer), 3 when a turn lost part of the method (unless ``--allow-degraded``).
A byte-order mark before a script's first question is dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry.commands.common import (
    EXIT_DEGRADED,
    EXIT_ERROR,
    AddConfigOptions,
    add_budget_options,
    answer_line,
    budget_overrides,
    check_key,
    citation_lines,
    facade,
    plural,
    progress_printer,
    unwritten_trace,
)
from videotapestry.errors import QuestionError, VideoTapestryError
from videotapestry.files import parse_json
from videotapestry.question import check_question_length

if TYPE_CHECKING:
    from videotapestry.result import Result

PROMPT = "you> "
#: Typed alone on a line, these end an interactive chat (as Ctrl-D does).
LEAVE_WORDS = frozenset({"exit", "quit", ":q"})


@dataclass(frozen=True)
class ChatTurn:
    question: str
    options: list[str] = field(default_factory=list)


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "chat",
        help="ask about a video turn by turn; follow-ups ('what happened right after "
        "that?') are read against the previous answer's cited moment",
    )
    parser.add_argument("video", nargs="?", help="the video file (omit to answer from memory only)")
    parser.add_argument("--memory", required=True, help="memory directory (native or MemDreamer)")
    parser.add_argument(
        "--script",
        metavar="FILE",
        help="run these turns and exit: one question per line, or JSON / JSON Lines of "
        '{"question": ..., "options": [...]}',
    )
    parser.add_argument("--no-video", action="store_true", help="disable observation")
    parser.add_argument(
        "--trace-dir",
        metavar="DIR",
        default="videotapestry-traces",
        help="where each turn's trace is saved (default: ./videotapestry-traces)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per turn")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--allow-degraded",
        action="store_true",
        help=f"exit 0 even when a turn lost part of the method (default: exit {EXIT_DEGRADED})",
    )
    add_budget_options(parser)
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    turns = read_script(args.script) if args.script else None
    return asyncio.run(_chat(args, turns))


def parse_line(line: str) -> ChatTurn | None:
    """One typed or scripted line as a turn; None for a blank line or a comment."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    question, *options = [part.strip() for part in text.split(" | ")]
    return ChatTurn(question, [o for o in options if o])


def read_script(path: str | Path) -> list[ChatTurn]:
    """The turns of a script file (see the module docstring for its formats)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VideoTapestryError(f"cannot read the chat script {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise VideoTapestryError(
            f"the chat script {path} is not UTF-8 text (byte {exc.start})"
        ) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark (Notepad's) is no part of a question
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = _json(path, stripped)
        if not isinstance(rows, list):
            raise VideoTapestryError(f"{path}: a JSON chat script is a list of turns")
        return [_turn(path, n, row) for n, row in enumerate(rows, start=1)]
    if stripped.startswith("{"):  # JSON Lines: errors name the file's line, as an editor counts
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        return [
            _turn(path, turn, _json(path, line, number), f"{path}:{number}")
            for turn, (number, line) in enumerate(lines, start=1)
        ]
    turns = [parse_line(line) for line in text.splitlines()]
    found = [t for t in turns if t is not None]
    if not found:
        raise VideoTapestryError(f"the chat script {path} holds no question")
    return found


def _json(path: Path, text: str, line: int | None = None) -> object:
    where = f"{path}" if line is None else f"{path}:{line}"
    return parse_json(text, f"the chat script {where}", VideoTapestryError)


def _turn(path: Path, number: int, row: object, where: str | None = None) -> ChatTurn:
    where = where or str(path)
    if isinstance(row, str):
        row = {"question": row}
    if not isinstance(row, dict) or not isinstance(row.get("question"), str):
        raise VideoTapestryError(f"{where}: turn {number} needs a 'question' string")
    options = row.get("options") or []
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise VideoTapestryError(f"{where}: turn {number}'s 'options' must be a list of strings")
    return ChatTurn(row["question"], list(options))


def check_script(path: str | Path, turns: list[ChatTurn], max_chars: int) -> None:
    """Refuse a script with a turn over the question limit before its first turn is asked,
    rather than pay for the turns before it and stop part-way."""
    for number, turn in enumerate(turns, start=1):
        try:
            check_question_length(turn.question, turn.options, max_chars=max_chars)
        except QuestionError as exc:
            raise QuestionError(f"the chat script {path}, turn {number}: {exc}") from None


def _typed_turns() -> Iterator[ChatTurn]:
    """Questions typed at the prompt, until Ctrl-D or a leave word."""
    with contextlib.suppress(ImportError):  # Windows has no readline
        import readline  # noqa: F401  (line editing and history for input())
    print("Ask about the video; Ctrl-D (or 'exit') leaves.", file=sys.stderr)
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            print(file=sys.stderr)
            return
        if line.strip().lower() in LEAVE_WORDS:
            return
        turn = parse_line(line)
        if turn is not None:
            yield turn


async def _chat(args: argparse.Namespace, scripted: list[ChatTurn] | None) -> int:
    vt = facade(args, *budget_overrides(args))
    degraded = 0
    trace_dir = Path(args.trace_dir)
    try:
        if scripted is not None:
            check_script(args.script, scripted, vt.config.question.max_chars)
        check_key(vt, args.memory)
        with vt.conversation(
            args.video,
            args.memory,
            no_video=args.no_video,
            progress=progress_printer(args.quiet),
        ) as chat:
            turns = scripted if scripted is not None else _typed_turns()
            for number, turn in enumerate(turns, start=1):
                try:
                    result = await chat.aask(turn.question, turn.options or None)
                except QuestionError as exc:
                    if scripted is not None:  # the turns before it were answered and shown
                        raise QuestionError(
                            f"the chat script {args.script}, turn {number} "
                            f"({turn.question[:60]!r}): {exc}"
                        ) from None
                    print(f"videotapestry: {exc}", file=sys.stderr)  # typed wrong: ask again
                    continue
                path = trace_dir / f"chat-{result.run_id}-turn{number}.json"
                try:
                    trace = result.save_trace(path)
                except (OSError, VideoTapestryError) as exc:  # read-only folder, full disk
                    _show(number, result, None, as_json=args.json)
                    print(unwritten_trace(path, exc), file=sys.stderr)
                    return EXIT_ERROR
                degraded += bool(result.degraded)
                _show(number, result, trace, as_json=args.json)
    finally:
        await vt.aclose()
    if degraded and not args.allow_degraded:
        print(
            f"videotapestry: {plural(degraded, 'turn')} lost part of the method; exiting with "
            f"status {EXIT_DEGRADED} (--allow-degraded accepts them)",
            file=sys.stderr,
        )
        return EXIT_DEGRADED
    return 0


def _show(number: int, result: Result, trace: Path | None, *, as_json: bool) -> None:
    if as_json:
        shown = None if trace is None else str(trace)
        record = {"turn": number, **result.to_dict(), "trace_path": shown}
        print(json.dumps(record, ensure_ascii=False), flush=True)
        return
    print(f"[{number}] {result.asked or result.question}")
    if result.asked:
        print(f"    read as: {result.question}")
    print(f"    {answer_line(result)}")
    from videotapestry.views.citation_text import stored_texts

    texts = stored_texts(result.levels)
    for line in citation_lines(result.citations, asked=result.citations_asked, texts=texts):
        print(f"    {line}")
    for warning in result.warnings:
        print(f"    warning: {warning.render()}")
    for degradation in result.degraded:
        print(f"    degraded: {degradation.render()}")
    print(f"    cost: {result.usage.describe()}")
    print(f"    trace: {trace or 'not written'}", flush=True)
