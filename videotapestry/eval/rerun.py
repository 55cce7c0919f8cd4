"""Repeating a recorded run from its ``run.json``: ``videotapestry eval --rerun RUN``.

A rerun is only a repeat if it asks the same questions with the same settings and the same
prompt texts. The questions are the ones the run recorded (its benchmark, annotations and
question ids, not today's ``--limit``); the settings are its resolved config; the prompts
are the texts it recorded, written into ``NEW/prompts/`` and used as the new run's
``prompts.override_dir``, so a template edited since changes nothing. What cannot be held
equal is reported instead of hidden: a recorded prompt whose text differs from today's
shipped template, a config key this version added (its default is used), and, after the
run, a video, memory or served model that is not the one the run recorded.

Only settings that do not decide answers may be changed on a rerun (``-o`` of the keys in
``run_writer.OPERATIONAL_KEYS``: where a model is served, timeouts, the cache, the
executor): another lab needs its own server, not another method. Paths may be relocated
(``--annotations``, ``--videos``, ``--memories``, ``--subtitles``).
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from videotapestry.config import Config, load_config
from videotapestry.errors import ConfigError
from videotapestry.eval.provenance import print_differences
from videotapestry.eval.run_reader import (
    RUN_FILE,
    PromptRecord,
    RunDirectoryError,
    RunInfo,
    read_run_info,
)
from videotapestry.eval.run_writer import PROMPTS_DIR, config_differences, prompt_records
from videotapestry.eval.runner import RunnerOptions
from videotapestry.eval.session import EvalSpec
from videotapestry.files import write_atomic
from videotapestry.prompts import TEMPLATE_SUFFIX, PromptRegistry

#: A template's name as ``prompts/`` spells them: a file stem, never a path.
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Relocation:
    """Where this machine keeps the run's files, when not where the run found them."""

    annotations: Path | None = None
    videos: Path | None = None
    memories: Path | None = None
    subtitles: Path | None = None


@dataclass(frozen=True)
class Rerun:
    """A recorded run made ready to be asked again into ``out``."""

    source: Path
    info: RunInfo
    out: Path
    #: The recorded config, with ``prompts.override_dir`` at ``out/prompts``.
    config: Config
    #: What differs from the recorded run before anything is asked, one line each.
    notes: tuple[str, ...]


def recorded_run(run_dir: Path) -> RunInfo:
    """The run's header, refused when it lacks what a rerun repeats."""
    info = read_run_info(run_dir)
    missing = [
        what
        for what, present in (
            ("benchmark", info.benchmark),
            ("prompt texts", info.prompts),
            ("question selection", info.selection and info.selection.question_ids),
            ("input paths", info.inputs),
        )
        if not present
    ]
    if missing:
        command = " ".join(info.command) or "its eval command"
        raise RunDirectoryError(
            f"{run_dir / RUN_FILE} records no {', '.join(missing)} (it was made before runs "
            f"recorded them, or not by `videotapestry eval`), so it cannot be repeated exactly; "
            f"run its command again instead: {command}"
        )
    return info


def default_output(source: Path, now: dt.datetime | None = None) -> Path:
    """``RUN-rerun-<UTC time>`` beside the run, when ``--output`` is not given."""
    stamp = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y%m%d-%H%M%S")
    return source.parent / f"{source.name}-rerun-{stamp}"


def prompt_drift(
    recorded: Mapping[str, PromptRecord], shipped: Mapping[str, PromptRecord]
) -> list[str]:
    """One line per template whose recorded text is not today's shipped text (or that only
    one side has): the rerun uses the recorded text, and says so."""
    lines = []
    for name in sorted(set(recorded) | set(shipped)):
        was, now = recorded.get(name), shipped.get(name)
        if was is None:
            lines.append(
                f"prompt {name}: shipped now but not recorded in the run; today's text is used"
            )
        elif now is None:
            where = "an override, not a shipped template" if was.overridden else "no longer shipped"
            lines.append(f"prompt {name}: recorded in the run ({where}); the recorded text is used")
        elif was.hash != now.hash:
            source = " (the run used an override)" if was.overridden else ""
            lines.append(
                f"prompt {name}: the recorded text ({was.hash}) differs from today's shipped "
                f"template ({now.hash}){source}; the recorded text is used"
            )
    return lines


def write_prompts(prompts: Mapping[str, PromptRecord], directory: Path) -> None:
    """Every recorded template as a file of ``directory`` (an override directory)."""
    unsafe = sorted(name for name in prompts if not _TEMPLATE_NAME.fullmatch(name))
    if unsafe:  # run.json may come from anyone: a name must not lead out of the directory
        raise RunDirectoryError(f"run.json names a prompt {unsafe[0]!r} that is no file name")
    directory.mkdir(parents=True, exist_ok=True)
    for name, record in prompts.items():
        write_atomic(directory / f"{name}{TEMPLATE_SUFFIX}", record.text)


def rerun_config(
    info: RunInfo, prompts_dir: Path, overrides: Sequence[str] = ()
) -> tuple[Config, list[str]]:
    """The recorded config with the recorded prompts, and the keys this version adds to it.

    ``overrides`` may change only settings that do not decide answers; any other is refused
    with the keys it would change.
    """
    pinned = copy.deepcopy(info.config)
    pinned.setdefault("prompts", {})["override_dir"] = str(prompts_dir)
    recorded = load_config(pinned)
    notes = [
        f"{line} (this version's setting is used)"
        for line in config_differences(info.config, recorded.model_dump(mode="json"))
    ]
    config = load_config(pinned, overrides=overrides)
    changed = config_differences(recorded.model_dump(mode="json"), config.model_dump(mode="json"))
    if changed:
        raise ConfigError(
            "--rerun repeats the run's settings, but these overrides change what it answers:\n  "
            + "\n  ".join(changed)
            + "\nonly settings that do not decide answers may change (models.*.base_url, "
            "timeouts, retries, the cache, the executor); for another method, run "
            "`videotapestry eval` with its own options and compare the two runs"
        )
    return config, notes


def prepare(source: Path, out: Path | None, overrides: Sequence[str] = ()) -> Rerun:
    """Read the run, check the output directory, write the recorded prompts into it and
    build the config: everything before the first question."""
    info = recorded_run(source)
    out = out if out is not None else default_output(source)
    if out.expanduser().resolve() == source.expanduser().resolve():
        raise ConfigError(f"--output {out} is the run being repeated; choose a new directory")
    if out.is_dir() and any(out.iterdir()) and not (out / RUN_FILE).exists():
        raise RunDirectoryError(
            f"--output {out} is not empty and is not a run directory; choose a new or empty one"
        )
    prompts_dir = out / PROMPTS_DIR
    write_prompts(info.prompts, prompts_dir)
    config, notes = rerun_config(info, prompts_dir.resolve(), overrides)
    notes += prompt_drift(info.prompts, prompt_records(PromptRegistry()))
    if (info.model_extra or {}).get("amended"):
        notes.append(
            "the run was continued with another method (--force): the rerun repeats its "
            "latest method for every question"
        )
    return Rerun(source=source, info=info, out=out, config=config, notes=tuple(notes))


def rerun_spec(
    info: RunInfo,
    source: Path,
    out: Path,
    options: RunnerOptions,
    relocation: Relocation | None = None,
    *,
    command: Sequence[str] = (),
) -> EvalSpec:
    """The evaluation that repeats the run ``source`` (whose header is ``info``) into
    ``out``: its benchmark, questions, mode and variants, from its files or where
    ``relocation`` says they are now."""
    relocation = relocation or Relocation()
    assert info.inputs is not None and info.selection is not None  # recorded_run checked
    extra = info.model_extra or {}
    no_video = bool(extra.get("no_video", False))

    def where(moved: Path | None, recorded: str | None) -> Path | None:
        return moved if moved is not None else (Path(recorded) if recorded else None)

    return EvalSpec(
        benchmark=info.benchmark,
        annotations=relocation.annotations or Path(info.annotations),
        memories=where(relocation.memories, info.inputs.memories) or Path(),
        out=out,
        options=replace(options, variants=tuple(info.variants)),
        videos=None if no_video else where(relocation.videos, info.inputs.videos),
        # A run without video never read its recorded subtitles (older versions took them);
        # ones given now are refused by check_spec, as for a new run.
        subtitles=relocation.subtitles
        if no_video
        else where(relocation.subtitles, info.inputs.subtitles),
        mode="open" if extra.get("mode") == "open" else "mc",
        duration=info.selection.duration,
        ids=frozenset(info.selection.question_ids),
        command=tuple(command),
        rerun_of=source,
    )


def repeat_differences(recorded: RunInfo, repeat: RunInfo) -> list[str]:
    """What the repeat ran on that the recorded run did not, one line each: another video
    or memory, another model snapshot behind the same name, another package version. Any
    of these can explain a flip that ``compare`` shows."""
    lines = print_differences(recorded.fingerprints, repeat.fingerprints)
    for role in sorted(set(recorded.served_models) & set(repeat.served_models)):
        was, now = recorded.served_models[role], repeat.served_models[role]
        if set(was) != set(now):
            lines.append(
                f"model {role}: the server reported {', '.join(was)} in the run, "
                f"{', '.join(now)} now"
            )
    for name in sorted(set(recorded.packages) & set(repeat.packages)):
        was_version, now_version = recorded.packages[name], repeat.packages[name]
        if was_version != now_version:
            lines.append(f"package {name}: {was_version} in the run, {now_version} now")
    return lines


__all__ = [
    "Relocation",
    "Rerun",
    "default_output",
    "prepare",
    "prompt_drift",
    "recorded_run",
    "repeat_differences",
    "rerun_config",
    "rerun_spec",
    "write_prompts",
]
