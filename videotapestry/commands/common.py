"""What several commands share: the config options, the facade built from them, and how an
answered question is shown.

Every command that reads a configuration takes the same four options, and a command flag that
stands for a config key (``--prompts-dir``, ``--subtitles``, ``--executor``, ...) is applied as
one more override after the user's ``-o`` ones, so the flag wins over an ``-o`` of the same key.
``ask`` and ``reanswer`` print a result the same way and share its exit status: 0 answered,
3 answered but the run lost part of the method (``Result.degraded``), unless
``--allow-degraded``. A warning (``Result.warnings``: a cited id that named nothing) is
printed and leaves the status as it is: the answer and the method are untouched.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.config import Config, available_profiles, load_config
from videotapestry.prompts import PromptRegistry
from videotapestry.question import option_label

if TYPE_CHECKING:
    from videotapestry.agents.context import ProgressCallback
    from videotapestry.agents.state import Citation, LevelOutcome
    from videotapestry.api import VideoTapestry
    from videotapestry.result import Result

#: Our own errors (``VideoTapestryError``): one line on stderr instead of a traceback.
EXIT_ERROR = 2
#: Answered, but the run differs from the method (see ``Result.degraded``).
EXIT_DEGRADED = 3
#: An eval run stopped at its budget (``--max-usd``, ``--max-calls``): every finished record
#: is kept, and the same command with a larger budget asks only the rest.
EXIT_BUDGET = 4

#: Stopped with Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

#: How ``cli`` hands each command the shared config options for its parser.
AddConfigOptions = Callable[[argparse.ArgumentParser], None]


def add_config_options(parser: argparse.ArgumentParser) -> None:
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


def interrupted(what: str) -> int:
    """One line on stderr for a Ctrl-C, saying what was kept; the status to exit with."""
    print(f"\nvideotapestry: interrupted; {what}", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def finite_float(text: str) -> float:
    """An argparse type: a number of seconds that must be finite (``nan``/``inf`` parse as
    floats, and would shift every subtitle line to nowhere)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, got {text!r}")
    return value


def config_overrides(args: argparse.Namespace, *flag_overrides: str) -> list[str]:
    """The user's ``-o`` overrides, then ``--prompts-dir`` and the command's own flags."""
    overrides = list(args.override)
    if args.prompts_dir:
        overrides.append(f"prompts.override_dir={args.prompts_dir}")
    overrides += flag_overrides
    return overrides


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """The per-question caps of ``budget`` (SPEC §17) as flags: at a cap, refining stops and
    the answer comes from what was gathered, recorded as a ``budget_reached`` degradation."""
    group = parser.add_argument_group("budget per question (default: none, the paper's method)")
    group.add_argument(
        "--max-calls", type=int, metavar="N", help="model calls, the answer's included"
    )
    group.add_argument("--max-prompt-tokens", type=int, metavar="N", help="prompt tokens sent")
    group.add_argument("--max-usd", type=float, metavar="USD", help="dollars, from `pricing`")
    group.add_argument("--max-seconds", type=float, metavar="S", help="seconds of refining")


def budget_overrides(args: argparse.Namespace) -> list[str]:
    """The config keys ``add_budget_options``' flags set."""
    flags = ("max_calls", "max_prompt_tokens", "max_usd", "max_seconds")
    return [
        f"budget.{name}={getattr(args, name)}" for name in flags if getattr(args, name) is not None
    ]


def add_executor_options(parser: argparse.ArgumentParser, *, executor_help: str) -> None:
    """``--executor`` and ``--ray-address``, for the commands that can run on a Ray cluster."""
    parser.add_argument("--executor", choices=("local", "ray"), help=executor_help)
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --executor ray: the cluster (auto, HOST:PORT, ray://HOST:10001); default "
        "RAY_ADDRESS or a new Ray instance on this machine",
    )


def executor_overrides(args: argparse.Namespace) -> list[str]:
    """The config keys ``add_executor_options``' flags set."""
    overrides = []
    if args.executor:
        overrides.append(f"executor.kind={args.executor}")
    if args.ray_address:
        overrides.append(f"executor.ray.address={args.ray_address}")
    return overrides


def config_from(args: argparse.Namespace) -> Config:
    """The configuration of ``--config``, ``--profile`` and ``-o`` (``--prompts-dir`` left
    to the prompt registry)."""
    return load_config(args.config, profile=args.profile, overrides=args.override)


def prompt_registry(args: argparse.Namespace) -> PromptRegistry:
    """Templates from ``--prompts-dir``, else from the config's override directory (the
    config is only read when the option is absent)."""
    override = args.prompts_dir or config_from(args).prompts.override_dir
    return PromptRegistry(override)


def facade(args: argparse.Namespace, *flag_overrides: str) -> VideoTapestry:
    """The facade a question command answers with, configured from its options."""
    from videotapestry.api import VideoTapestry

    overrides = config_overrides(args, *flag_overrides)
    return VideoTapestry(args.config, profile=args.profile, overrides=overrides)


def check_key(vt: VideoTapestry, memory: str | Path | None) -> None:
    """Fail fast, before any model or memory loads, when a role's API key is not set; when
    ``memory`` was built with the offline model, the error says to add ``--profile offline``.
    """
    from videotapestry.errors import ModelAuthError
    from videotapestry.variants import variant_named

    try:
        vt.service.check_credentials(variant_named(vt.config.variant).model_roles)
    except ModelAuthError as exc:
        if memory is None or not built_offline(memory):
            raise
        raise ModelAuthError(
            f"{exc}; the memory at {memory} was built with the offline model: add "
            "--profile offline",
            role=exc.role,
            endpoint=exc.endpoint,
        ) from None


def built_offline(memory: str | Path) -> bool:
    """Whether the native memory at ``memory`` says (in its manifest) that the offline model
    built it; False when it records nothing readable (a MemDreamer memory, a bad path)."""
    from videotapestry.memory.formats.native import MANIFEST_FILE

    try:
        manifest = json.loads((Path(memory) / MANIFEST_FILE).read_text(encoding="utf-8"))
        config = manifest.get("config") or {}
        default = (config.get("models") or {}).get("default") or {}
        return config.get("profile") == "offline" or default.get("provider") == "offline"
    except (OSError, ValueError, AttributeError):
        return False


def progress_printer(quiet: bool) -> ProgressCallback:
    """Progress lines on stderr: each level's steps, and waits and retries of slow calls."""

    def progress(event: dict[str, Any]) -> None:
        if quiet:
            return
        step = event.get("step")
        if step in ("waiting", "retry"):
            what = "waiting for" if step == "waiting" else "retrying"
            problem = f", last: {event['last_problem']}" if event.get("last_problem") else ""
            reason = f" after {event['reason']}" if event.get("reason") else ""
            line = (
                f"[{event.get('level')}] {event.get('role')}: {what} "
                f"{event.get('target', 'the model server')}{reason} "
                f"(attempt {event.get('attempt')}, {event.get('waited_s')} s{problem})"
            )
        else:
            detail = {k: v for k, v in event.items() if k not in ("level", "step", "agent")}
            line = f"[{event.get('level')}] {step}" + (f" {detail}" if detail else "")
        print(line, file=sys.stderr, flush=True)

    return progress


def unwritten_trace(
    path: str | Path, exc: Exception, hint: str = "pass --trace a writable path"
) -> str:
    """The line said after an answer whose trace could not be written: the answer was
    printed first, so a full disk or a read-only folder loses only the trace."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
    return (
        f"videotapestry: error: the trace could not be written to {path}: {reason}{where}; "
        f"the answer above stands (exit status {EXIT_ERROR}; {hint})"
    )


def default_trace_path(result: Result) -> Path:
    """A new file per run, so a rerun of the same question never overwrites a trace."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("videotapestry-traces") / f"{result.question_id}-{stamp}-{result.run_id[:6]}.json"


def level_lines(
    levels: Sequence[LevelOutcome], names: Mapping[str, str] | None = None
) -> list[str]:
    """One line per visited level: candidates, what it looked at, what it handed on (each
    node as ``names`` shows it, ``views.citation_text.node_names``: its time and words)."""
    names = names or {}
    lines = []
    for outcome in levels:
        chosen = ", ".join(names.get(node, node) for node in outcome.selected_ids)
        handed = "STOP" if outcome.stop else f"-> {chosen}"
        looks = ", ".join(
            f"{o.kind} {_looked(o.kind, len(o.frame_times) or o.transcript_lines)}"
            + ("" if o.succeeded else " (failed)")
            for o in outcome.observations
        )
        seen = looks or "no observation"
        candidates = plural(len(outcome.candidate_ids), "candidate")
        lines.append(f"  {outcome.agent:<16} {candidates}, {seen}; {handed}")
    return lines


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 candidate``, ``3 candidates`` (``nouns`` for an irregular plural)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def _looked(kind: str, count: int) -> str:
    """What one observation took in: ``12 frames``, ``1 line`` of the transcript."""
    return plural(count, "frame") if kind == "visual" else plural(count, "line")


def citation_lines(
    citations: Sequence[Citation], *, asked: bool = True, texts: Mapping[str, str] | None = None
) -> list[str]:
    """Each cited claim in words, then its sources with their times (``views.citation_text``):

    ``claim 1: The code is 4417`` / ``  cites frames at 04:13, 04:17`` / ``  cites on screen
    at 03:32–04:18: “Door code 4417”``; a stored span as its own words (``texts``: the
    stored nodes' texts, ``views.citation_text.stored_texts``). The ids stay in ``--json``.
    """
    from videotapestry.views.citation_text import claim_text, sources_text

    if not asked:
        return ["cites: not asked for (answer.citations is off)"]
    if not citations:
        return ["cites: nothing (the answer gave no valid citation)"]
    lines = []
    for n, citation in enumerate(citations, 1):
        lines.append(f"claim {n}: {claim_text(citation.claim)}")
        shown = sources_text(citation.sources, texts=texts, claim=citation.claim)
        lines += [f"  cites {source}" for source in shown]
    return lines


def answer_line(result: Result) -> str:
    """``answer: C  C. 4417`` for a multiple-choice answer, ``answer: <words>`` for a
    free-form one, or for a question answered in words without choosing (a moment the
    memory does not cover)."""
    if result.options and (result.answer or not result.answer_text):
        chosen = next((o for o in result.options if option_label(o) == result.answer), "")
        return f"answer: {result.answer}  {chosen}"
    return f"answer: {result.answer_text or '(none)'}"


def finish(result: Result, trace_path: Path | None, *, as_json: bool, allow_degraded: bool) -> int:
    """Print one result (text or one JSON line), its warnings and degradations, and the exit
    status; ``trace_path`` None: the trace could not be written (the caller says why)."""
    if as_json:
        shown = None if trace_path is None else str(trace_path)
        print(json.dumps({**result.to_dict(), "trace_path": shown}, ensure_ascii=False))
    else:
        from videotapestry.views.citation_text import (
            node_names,
            node_spans,
            shown_text,
            stored_texts,
        )

        print(answer_line(result))
        if result.asked:  # the words resolved ("in the last 2 minutes"), as the agents read it
            print(f"question read as: {result.question}")
        if result.memory_covers:  # a live memory: the version read (SPEC §16)
            print(f"memory: {result.memory_covers['text']}")
        print(f"reasoning: {shown_text(result.reasoning, node_spans(result))}")
        texts = stored_texts(result.levels)
        for line in citation_lines(result.citations, asked=result.citations_asked, texts=texts):
            print(line)
        for line in level_lines(result.levels, node_names(result)):
            print(line)
        print(
            f"{result.usage.describe()}, memory ≈{result.memory_tokens} tokens, "
            f"{result.elapsed_s:.1f} s; trace: {trace_path or 'not written'}"
        )
        if result.observation_disabled:
            print(f"observation disabled: {result.observation_disabled}")
    for warning in result.warnings:
        print(f"warning: {warning.render()}", file=sys.stderr)
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
