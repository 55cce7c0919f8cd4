"""The ``videotapestry`` command line.

Commands: ``build-memory`` (a raw video to a memory, resumable;
videotapestry/commands/build_memory.py), ``ask`` (one question, with a progress display and a
saved trace), ``import-memdreamer``,
``inspect`` (a memory, or a saved run's trace as a summary or an HTML picture),
``prompts list|show`` (which template each role uses, overrides included), ``config show``
(the fully resolved configuration), ``check-endpoint`` (one real JSON call, to check a
key, base URL and model name first), ``demo`` (the shipped sample video with the
offline model; videotapestry/commands/demo.py) and ``eval`` (a benchmark into a resumable run
directory; videotapestry/commands/evaluate.py).
Errors of ours print one line and exit with status 2 instead of a traceback.

Exit status of ``ask`` and ``reanswer``: 0 answered; 2 an error stopped it (bad input, a
configuration the server rejects, a refused key); 3 answered, but the run lost part of the
method (``Result.degraded``: ASR or frames lost, a call that took its fallback, a guessed
answer), each loss printed on stderr; ``--allow-degraded`` turns 3 into 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from videotapestry import __version__
from videotapestry.config import MODEL_ROLES, Config, available_profiles, load_config
from videotapestry.contracts.method import FinalAnswer
from videotapestry.errors import VideoTapestryError
from videotapestry.llm.service import ModelService
from videotapestry.prompts import PromptRegistry
from videotapestry.question import option_label

if TYPE_CHECKING:
    from videotapestry.agents.state import LevelOutcome
    from videotapestry.api import VideoTapestry
    from videotapestry.result import Result

EXIT_ERROR = 2
#: ``ask`` answered, but the run differs from the method (see ``Result.degraded``).
EXIT_DEGRADED = 3


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
    ask.add_argument(
        "--allow-degraded",
        action="store_true",
        help=f"exit 0 even when the run lost part of the method (default: exit {EXIT_DEGRADED})",
    )
    _add_config_options(ask)

    reanswer = commands.add_parser(
        "reanswer",
        help="answer a saved run again under another final memory (only the Answer agent runs)",
    )
    reanswer.add_argument("trace", help="trace JSON saved by `ask` (a full-method run)")
    reanswer.add_argument(
        "--variant",
        action="append",
        required=True,
        choices=("full", "refined_super_only", "refined_paths_only"),
        help="final memory to build from the saved exploration (repeatable)",
    )
    reanswer.add_argument("--memory", help="memory directory (default: the one the run used)")
    reanswer.add_argument("--json", action="store_true", help="print one JSON object per line")
    reanswer.add_argument("--allow-degraded", action="store_true")
    _add_config_options(reanswer)

    importer = commands.add_parser(
        "import-memdreamer",
        help="convert a MemDreamer memory (or a root of one per video) to the native format",
    )
    importer.add_argument(
        "src",
        help="one video's MemDreamer directory (phase2/ or phase2_topdown/, phase3/ or "
        "phase4/), or a root holding one such directory per video (<root>/<video_key>/)",
    )
    importer.add_argument(
        "dest",
        help="new or empty directory for the native memory; for a root, each video goes to "
        "DEST/<video_key>/",
    )
    importer.add_argument(
        "--force",
        action="store_true",
        help="replace a memory already in the destination (its embeddings are kept while "
        "still valid for the imported nodes)",
    )
    importer.add_argument(
        "--embedding-model",
        metavar="NAME",
        help="model that made embeddings.json (default: Qwen/Qwen3-Embedding-8B, MemDreamer's)",
    )
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
        help="make the node embeddings the configured model's (reusing stored or imported "
        "vectors of that model, computing the rest)",
    )
    _add_config_options(importer)

    inspect = commands.add_parser(
        "inspect",
        help="show a memory (native or MemDreamer directory) as a tree, JSON or HTML, or a "
        "saved run (trace JSON) as a summary or an HTML picture of what the agents did",
    )
    inspect.add_argument("path", help="memory directory, or trace JSON saved by `ask`")
    inspect.add_argument(
        "--json",
        action="store_true",
        help="memory: counts and every node's id, kind, label, time; trace: the result summary",
    )
    inspect.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page")
    inspect.add_argument(
        "--depth", type=int, default=None, help="tree depth (1 SuperEvents, 2 MacroEvents)"
    )
    inspect.add_argument(
        "--video",
        metavar="PATH",
        help="trace only: the video to take the frames from (default: the one the trace recorded)",
    )

    from videotapestry.commands.build_memory import add_parser as add_build_memory

    add_build_memory(commands, _add_config_options)
    from videotapestry.commands.demo import add_parser as add_demo

    add_demo(commands, _add_config_options)
    from videotapestry.commands.eval_report import add_parsers as add_eval_report

    add_eval_report(commands)
    from videotapestry.commands.evaluate import add_parser as add_eval

    add_eval(commands, _add_config_options)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what run.json records
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
        if args.command == "reanswer":
            return asyncio.run(_reanswer(args))
        if args.command == "import-memdreamer":
            return _import_memdreamer(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "build-memory":
            from videotapestry.commands.build_memory import run as build_memory

            return build_memory(args)
        if args.command == "demo":
            from videotapestry.commands.demo import run as demo

            return demo(args)
        if args.command in ("eval-report", "compare"):
            from videotapestry.commands.eval_report import run as eval_report

            return eval_report(args)
        if args.command == "eval":
            from videotapestry.commands.evaluate import run as evaluate

            return evaluate(args)
    except VideoTapestryError as exc:
        print(f"videotapestry: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
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
        base_url = service.endpoint_for(args.role)  # what the client really used
    finally:
        await service.aclose()
        service.close()
    usage = session.usage.summary()
    event = session.trace.events[-1]
    report = {
        "role": args.role,
        "model": settings.model,
        "base_url": base_url,
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
    """One video's memory, or every video of a release root (one line each; failures reported,
    the others still imported, exit 2 if any failed)."""
    from videotapestry.memory import (
        import_memdreamer_into,
        is_memdreamer_memory,
        memdreamer_videos,
    )

    src, dest = Path(args.src), Path(args.dest)
    single = is_memdreamer_memory(src)
    jobs = {str(src): (src, dest)} if single else {}
    if not single:
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
        jobs = {key: (path, dest / key) for key, path in videos.items()}
    video_fingerprint = args.fingerprint
    if args.video:
        from videotapestry.video import fingerprint

        video_fingerprint = fingerprint(args.video)
    config = _config(args)
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
    if failed:
        print(
            f"videotapestry: error: {len(failed)} of {len(jobs)} videos failed to import: "
            f"{', '.join(failed)}",
            file=sys.stderr,
        )
        return 2
    return 0


def _inspect(args: argparse.Namespace) -> int:
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


def _inspect_trace(args: argparse.Namespace) -> int:
    """A saved run: a short summary (or its result as JSON), and with ``--html`` its page."""
    from videotapestry.views.trace_data import load_question_trace
    from videotapestry.views.trace_html import question_page, thumbnails_for

    if args.depth is not None:
        raise VideoTapestryError(f"--depth applies to memories, and {args.path} is a trace")
    trace = load_question_trace(args.path)
    if args.html:
        page = question_page(trace, thumbnails_for(trace, video=args.video))
        target = Path(args.html)
        try:
            target.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise VideoTapestryError(f"cannot write {target}: {exc.strerror or exc}") from None
    if args.json:
        from videotapestry.result import read_trace

        print(json.dumps(read_trace(args.path)["result"], ensure_ascii=False, indent=1))
        return 0
    chosen = next((o for o in trace.options if option_label(o) == trace.answer), "")
    print(f"question {trace.question_id}: {trace.question}")
    print(f"answer: {trace.answer}  {chosen}  ({trace.answer_source}, variant {trace.variant})")
    for line in _level_lines(trace.levels):
        print(line)
    for degradation in trace.degraded:
        print(f"  degraded: {degradation.render()}")
    usage = trace.usage
    cost = "unknown" if usage.get("cost_usd") is None else f"${usage['cost_usd']:.4f}"
    print(
        f"calls {usage.get('calls', 0)}, images {usage.get('images', 0)}, tokens "
        f"{usage.get('prompt_tokens', 0)}/{usage.get('completion_tokens', 0)}, cost {cost}, "
        f"memory ≈{trace.memory_tokens} tokens"
    )
    if args.html:
        print(f"wrote {args.html}")
    return 0


def _level_lines(levels: Sequence[LevelOutcome]) -> list[str]:
    """One line per visited level: candidates, what it looked at, what it handed on."""
    lines = []
    for outcome in levels:
        handed = "STOP" if outcome.stop else f"-> {', '.join(outcome.selected_ids)}"
        looks = ", ".join(
            f"{o.kind} {len(o.frame_times) or o.transcript_lines}"
            + ("" if o.succeeded else " (failed)")
            for o in outcome.observations
        )
        seen = looks or "no observation"
        lines.append(
            f"  {outcome.agent:<16} {len(outcome.candidate_ids)} candidates, {seen}; {handed}"
        )
    return lines


def _progress_printer(quiet: bool):
    """Progress lines on stderr: each level's steps, and waits and retries of slow calls."""

    def progress(event: dict) -> None:
        if quiet:
            return
        step = event.get("step")
        if step in ("waiting", "retry"):
            what = "waiting for" if step == "waiting" else "retrying"
            problem = f", last: {event['last_problem']}" if event.get("last_problem") else ""
            reason = f" after {event['reason']}" if event.get("reason") else ""
            line = (
                f"[{event.get('level')}] {event.get('role')}: {what} the model server{reason} "
                f"(attempt {event.get('attempt')}, {event.get('waited_s')} s{problem})"
            )
        else:
            detail = {k: v for k, v in event.items() if k not in ("level", "step", "agent")}
            line = f"[{event.get('level')}] {step}" + (f" {detail}" if detail else "")
        print(line, file=sys.stderr, flush=True)

    return progress


def _default_trace_path(result: Result) -> Path:
    """A new file per run, so a rerun of the same question never overwrites a trace."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("videotapestry-traces") / f"{result.question_id}-{stamp}-{result.run_id[:6]}.json"


def _finish(result: Result, trace_path: Path, *, as_json: bool, allow_degraded: bool) -> int:
    """Print one result (text or one JSON line), its degradations, and the exit status."""
    if as_json:
        print(json.dumps({**result.to_dict(), "trace_path": str(trace_path)}, ensure_ascii=False))
    else:
        chosen = next((o for o in result.options if option_label(o) == result.answer), "")
        print(f"answer: {result.answer}  {chosen}")
        print(f"reasoning: {result.reasoning}")
        for line in _level_lines(result.levels):
            print(line)
        usage = result.usage
        cost = (
            f"cost ${usage.cost_usd:.4f}"
            if usage.cost_known
            else f"cost unknown ({usage.unpriced_calls} unpriced calls)"
        )
        print(
            f"calls {usage.calls}, images {usage.images}, tokens {usage.prompt_tokens}/"
            f"{usage.completion_tokens}, {cost}, memory ≈{result.memory_tokens} tokens, "
            f"{result.elapsed_s:.1f} s; trace: {trace_path}"
        )
        if result.observation_disabled:
            print(f"observation disabled: {result.observation_disabled}")
    if not result.degraded:
        return 0
    print(
        f"videotapestry: this run lost part of the method ({len(result.degraded)}):",
        file=sys.stderr,
    )
    for degradation in result.degraded:
        print(f"  degraded: {degradation.render()}", file=sys.stderr)
    if allow_degraded:
        return 0
    print(
        f"videotapestry: exiting with status {EXIT_DEGRADED}; pass --allow-degraded to accept "
        "a degraded answer",
        file=sys.stderr,
    )
    return EXIT_DEGRADED


def _facade(args: argparse.Namespace, overrides: list[str]) -> VideoTapestry:
    from videotapestry.api import VideoTapestry

    if args.prompts_dir:
        overrides.append(f"prompts.override_dir={args.prompts_dir}")
    return VideoTapestry(args.config, profile=args.profile, overrides=overrides)


async def _ask(args: argparse.Namespace) -> int:
    overrides = list(args.override)
    if args.subtitles:
        overrides.append("asr.source=subtitles")
    vt = _facade(args, overrides)
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
            progress=_progress_printer(args.quiet),
        )
    finally:
        await vt.aclose()
    trace_path = result.save_trace(args.trace or _default_trace_path(result))
    return _finish(result, trace_path, as_json=args.json, allow_degraded=args.allow_degraded)


async def _reanswer(args: argparse.Namespace) -> int:
    from videotapestry.result import load_exploration

    exploration = load_exploration(args.trace)
    vt = _facade(args, list(args.override))
    status = 0
    try:
        for variant in args.variant:
            result = await vt.areanswer(exploration, variant, memory=args.memory)
            trace_path = result.save_trace(Path(args.trace).with_suffix(f".{variant}.json"))
            code = _finish(
                result, trace_path, as_json=args.json, allow_degraded=args.allow_degraded
            )
            status = max(status, code)
    finally:
        await vt.aclose()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
