"""The ``videotapestry`` command line.

Commands: ``build-memory`` (a raw video to a memory, resumable; memory_builders/cli.py),
``ask`` (one question, with a progress display and a saved trace),
``import-memdreamer`` and ``inspect`` (memories), ``prompts list|show`` (which template each
role uses, overrides included), ``config show`` (the fully resolved configuration) and
``check-endpoint`` (one real JSON call, to check a key, base URL and model name first).
Errors of ours print one line and exit with status 2 instead of a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from videotapestry import __version__
from videotapestry.config import MODEL_ROLES, Config, available_profiles, load_config
from videotapestry.errors import VideoTapestryError
from videotapestry.llm.service import ModelService
from videotapestry.prompts import PromptRegistry
from videotapestry.schemas import FinalAnswer


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="PATH|NAME", help="YAML config layered on configs/default.yaml"
    )
    parser.add_argument(
        "--profile", help=f"model profile ({', '.join(available_profiles())})", default=None
    )
    parser.add_argument(
        "-o",
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="dotted override, e.g. -o agents.overview.max_frames=60 (repeatable)",
    )
    parser.add_argument(
        "--prompts-dir", metavar="DIR", help="directory of templates overriding shipped ones"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="videotapestry",
        description="Question answering over long videos with query-adaptive memory refinement.",
    )
    parser.add_argument("--version", action="version", version=f"videotapestry {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    prompts = commands.add_parser("prompts", help="list or show the active prompt templates")
    prompt_commands = prompts.add_subparsers(dest="prompts_command", metavar="ACTION")
    listing = prompt_commands.add_parser("list", help="each role and the file it resolves to")
    _add_config_options(listing)
    show = prompt_commands.add_parser("show", help="print one role's template")
    show.add_argument("role")
    _add_config_options(show)

    config = commands.add_parser("config", help="show the resolved configuration")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION")
    config_show = config_commands.add_parser("show", help="print the merged config as YAML")
    _add_config_options(config_show)

    check = commands.add_parser(
        "check-endpoint", help="send one small JSON request to a role's configured model"
    )
    check.add_argument("--role", default="answer", choices=MODEL_ROLES)
    check.add_argument("--json", action="store_true", help="print one JSON object")
    _add_config_options(check)

    ask = commands.add_parser(
        "ask", help="answer one multiple-choice question about a video from its memory"
    )
    ask.add_argument("video", nargs="?", help="the video file (omit to answer from memory only)")
    ask.add_argument("--memory", required=True, help="memory directory (native or MemDreamer)")
    ask.add_argument("--question", required=True)
    ask.add_argument(
        "--option", action="append", required=True, metavar='"A. ..."', help="repeat per option"
    )
    ask.add_argument("--no-video", action="store_true", help="disable observation")
    ask.add_argument("--subtitles", metavar="FILE", help="subtitle file (SRT, WebVTT, LVB JSON)")
    ask.add_argument("--subtitle-offset", type=float, default=0.0, metavar="SECONDS")
    ask.add_argument("--question-id", help="id for traces (default: a hash of the question)")
    ask.add_argument("--trace", metavar="PATH", help="trace JSON (default: ./videotapestry-traces)")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _add_config_options(ask)

    importer = commands.add_parser(
        "import-memdreamer", help="convert a MemDreamer memory directory to the native format"
    )
    importer.add_argument("src", help="MemDreamer directory (holding phase2/ and phase3/)")
    importer.add_argument("dest", help="new or empty directory for the native memory")
    source = importer.add_mutually_exclusive_group()
    source.add_argument(
        "--video", help="the video the memory was built from (its fingerprint is recorded)"
    )
    source.add_argument(
        "--fingerprint", help="fingerprint of the video the memory was built from (recorded)"
    )
    importer.add_argument(
        "--embed",
        action="store_true",
        help="also compute node embeddings with the configured embedding model",
    )
    _add_config_options(importer)

    inspect = commands.add_parser(
        "inspect", help="show a memory (native or MemDreamer directory) as a tree, JSON or HTML"
    )
    inspect.add_argument("path", help="memory directory")
    inspect.add_argument(
        "--json", action="store_true", help="print counts and every node's id, kind, label, time"
    )
    inspect.add_argument("--html", metavar="FILE", help="also write a browsable HTML page")
    inspect.add_argument(
        "--depth", type=int, default=None, help="tree depth (1 SuperEvents, 2 MacroEvents)"
    )

    from memory_builders.cli import add_parser as add_build_memory

    add_build_memory(commands, _add_config_options)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "prompts" and args.prompts_command == "list":
            return _prompts_list(args)
        if args.command == "prompts" and args.prompts_command == "show":
            return _prompts_show(args)
        if args.command == "config" and args.config_command == "show":
            print(_config(args).to_yaml(), end="")
            return 0
        if args.command == "check-endpoint":
            return asyncio.run(_check_endpoint(args))
        if args.command == "ask":
            return asyncio.run(_ask(args))
        if args.command == "import-memdreamer":
            return _import_memdreamer(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "build-memory":
            from memory_builders.cli import run as build_memory

            return build_memory(args)
    except VideoTapestryError as exc:
        print(f"videotapestry: error: {exc}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0 if args.command is None else 2


def _config(args: argparse.Namespace) -> Config:
    return load_config(args.config, profile=args.profile, overrides=args.override)


def _registry(args: argparse.Namespace) -> PromptRegistry:
    override = args.prompts_dir or _config(args).prompts.override_dir
    return PromptRegistry(override)


def _prompts_list(args: argparse.Namespace) -> int:
    registry = _registry(args)
    rows = []
    for name in registry.names():
        source = registry.resolve(name)
        rows.append((name, "override" if source.overridden else "shipped", str(source.path)))
    width = max(len(r[0]) for r in rows)
    for name, origin, path in rows:
        print(f"{name:<{width}}  {origin:<8}  {path}")
    return 0


def _prompts_show(args: argparse.Namespace) -> int:
    registry = _registry(args)
    source = registry.resolve(args.role)
    variables = ", ".join(sorted(registry.variables(args.role)))
    origin = "override" if source.overridden else "shipped"
    print(f"# {args.role}: {source.path} ({origin})")
    print(f"# variables: {variables}")
    print(registry.source(args.role), end="")
    return 0


async def _check_endpoint(args: argparse.Namespace) -> int:
    config = _config(args)
    prompt = _registry(args).render(
        "final_answer",
        question="According to the memory, what colour is the car?",
        options=["A. Red", "B. Blue", "C. Green", "D. White"],
        handoff_trace="",
        memory="super_01 [00:00-01:00] A blue car is parked outside a bakery.",
    )
    service = ModelService(config)
    session = service.session()
    settings = config.models.settings_for(args.role)
    try:
        reply = await session.complete_json(args.role, prompt, FinalAnswer)
    finally:
        await service.aclose()
        service.close()
    usage = session.usage.summary()
    event = session.trace.events[-1]
    report = {
        "role": args.role,
        "model": settings.model,
        "base_url": settings.base_url,
        "json_mode": (event.usage or {}).get("json_mode"),
        "answer": reply.answer,
        "expected": "B",
        "cached": usage.cached_calls > 0,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "latency_s": round(usage.latency_s, 3),
    }
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>17}: {value}")
    return 0


def _import_memdreamer(args: argparse.Namespace) -> int:
    from videotapestry.memory import ensure_embeddings, import_memdreamer, save_memory

    video_fingerprint = args.fingerprint
    if args.video:
        from videotapestry.video import fingerprint

        video_fingerprint = fingerprint(args.video)
    memory = import_memdreamer(args.src, video_fingerprint=video_fingerprint)
    if args.embed:
        from videotapestry.embeddings import SentenceTransformerEmbedder

        memory = ensure_embeddings(memory, SentenceTransformerEmbedder(_config(args).embedding))
    manifest = save_memory(memory, args.dest)
    counts = ", ".join(f"{v} {k}" for k, v in manifest.counts.items() if v)
    embedded = f"; embeddings: {manifest.embedding_model}" if manifest.embedding_model else ""
    print(f"imported {args.src} -> {args.dest}: {counts}{embedded}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from pathlib import Path

    from videotapestry.memory import open_memory
    from videotapestry.memory.inspect import memory_html, memory_summary, memory_tree

    memory = open_memory(args.path)
    if args.html:
        target = Path(args.html)
        try:
            target.write_text(memory_html(memory), encoding="utf-8")
        except OSError as exc:
            raise VideoTapestryError(f"cannot write {target}: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps(memory_summary(memory), ensure_ascii=False, indent=1))
    else:
        print(memory_tree(memory, max_depth=args.depth))
        if args.html:
            print(f"wrote {args.html}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


async def _ask(args: argparse.Namespace) -> int:
    from videotapestry.api import VideoTapestry

    overrides = list(args.override)
    if args.prompts_dir:
        overrides.append(f"prompts.override_dir={args.prompts_dir}")
    if args.subtitles:
        overrides.append("asr.source=subtitles")
    vt = VideoTapestry(args.config, profile=args.profile, overrides=overrides)

    def progress(event: dict) -> None:
        if args.quiet:
            return
        detail = {k: v for k, v in event.items() if k not in ("level", "step", "agent")}
        extra = f" {detail}" if detail else ""
        print(f"[{event.get('level')}] {event.get('step')}{extra}", file=sys.stderr, flush=True)

    try:
        result = await vt.aanswer(
            args.video,
            args.memory,
            args.question,
            args.option,
            question_id=args.question_id,
            no_video=args.no_video,
            subtitle_path=args.subtitles,
            subtitle_offset_s=args.subtitle_offset,
            progress=progress,
        )
    finally:
        await vt.aclose()
    trace_path = result.save_trace(
        args.trace or Path("videotapestry-traces") / f"{result.question_id}.json"
    )
    summary = result.to_dict()
    if args.json:
        print(json.dumps({**summary, "trace_path": str(trace_path)}, ensure_ascii=False))
        return 0
    chosen = next((o for o in result.options if o.lstrip("( ").startswith(result.answer)), "")
    print(f"answer: {result.answer}  {chosen}")
    print(f"reasoning: {result.reasoning}")
    for outcome in result.levels:
        handed = "STOP" if outcome.stop else f"-> {', '.join(outcome.selected_ids)}"
        looks = ", ".join(
            f"{o.kind} {len(o.frame_times) or o.transcript_lines}" for o in outcome.observations
        )
        seen = looks or "no observation"
        print(f"  {outcome.agent:<15} {len(outcome.candidate_ids)} candidates, {seen}; {handed}")
    usage = result.usage
    print(
        f"calls {usage.calls}, images {usage.images}, tokens {usage.prompt_tokens}/"
        f"{usage.completion_tokens}, memory ≈{result.memory_tokens} tokens, "
        f"{result.elapsed_s:.1f} s; trace: {trace_path}"
    )
    if result.observation_disabled:
        print(f"observation disabled: {result.observation_disabled}")
    if result.answer_source == "fallback":
        print("warning: the Answer agent gave no usable option letter; this is the fallback")
    if usage.failed_calls:
        print(f"warning: {usage.failed_calls} model call(s) failed; see the trace")
    return 0
