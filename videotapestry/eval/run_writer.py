"""A run directory's identity and its append-only results file (the writing side).

A run directory is only resumable if every record in it was produced by the same method:
the same settings that decide answers and the same prompt texts. ``run.json`` stores them
with a hash; a rerun compares and names what differs instead of silently mixing two
methods in one table. Settings that only change how a run goes (timeouts, retries, calls in
flight, the response cache) are left out of the identity, so a rerun may raise a timeout.

``run.json`` also keeps what another lab needs to repeat the run (``eval --rerun``) and to
trust the repeat: every prompt's full text beside its hash, which questions and files were
used, the package versions, and, once the run ends, the model ids the server reported and
each video's and memory's fingerprint (``provenance.py``).

Records are appended with one ``write`` per line, then ``fsync``, under a lock: a kill can
only cut the last line, which the reader (``results.py``) skips and ``mend_torn_tail``
removes before the next append. The reading side lives in ``results.py``. An opened
directory holds ``run_lock.RunLock`` until it is closed, so a second eval of the same
directory is refused before it reads what is left to ask.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from videotapestry.config import MODEL_ROLES, Config
from videotapestry.errors import VideoTapestryError
from videotapestry.eval.provenance import merge_models, package_versions
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_lock import LOCK_FILE, RunLock
from videotapestry.eval.run_reader import (
    RESULTS_FILE,
    RUN_FILE,
    RUN_FORMAT,
    TRACES_DIR,
    PromptRecord,
    RunDirectoryError,
    RunInfo,
    RunInputs,
    RunSelection,
    VideoPrints,
    mend_torn_tail,
    read_run_info,
)
from videotapestry.files import disk_full_named, write_json_atomic
from videotapestry.prompts import TEMPLATE_SUFFIX, PromptRegistry, short_hash
from videotapestry.trace import display_url, without_url_credentials

#: Where ``eval --rerun`` writes the recorded prompt texts inside the new run directory (the
#: run's ``prompts.override_dir``), so the repeat renders exactly what the run rendered.
PROMPTS_DIR = "prompts"

#: Dotted config keys (fnmatch patterns, after ``identity_items`` flattens the config) that
#: change how a run goes but never what it answers. ``variant`` is per-variant (the run's
#: variants are listed on their own); the prompt directory is covered by the prompt hashes.
OPERATIONAL_KEYS = (
    "variant",
    "cache.*",
    "models.max_concurrency_per_endpoint",
    "models.wait_report_s",
    "models.*.timeout_s",
    "models.*.max_retries",
    "models.*.api_key_env",
    "models.*.base_url",  # where a model is served, not which model answers
    "prompts.override_dir",
    "builder.concurrency",
    "builder.cpu_workers",
    "video.decode_threads",
    "video.parallel_decoders",
    "asr.cache_dir",
    "asr.cpu_threads",
    "executor.*",  # where questions run (this process or Ray workers), not what they answer
)


class RunMismatchError(VideoTapestryError):
    """The run directory was made with another config, prompt set or benchmark."""


# --------------------------------------------------------------------------- identity


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Leaves of nested mappings under dotted keys (lists are leaves)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def identity_items(config_json: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that decide answers, as dotted keys.

    Model settings are each role's *effective* ones (``models.default`` with the role's own
    values on top), so moving a model name from the default to every role is no change.
    """
    data = copy.deepcopy(dict(config_json))
    models = data.pop("models", None) or {}
    default = models.get("default") or {}
    roles = models.get("roles") or {}
    data["models"] = {
        role: {
            **default,
            **{k: v for k, v in (roles.get(role) or {}).items() if v is not None},
        }
        for role in sorted(set(MODEL_ROLES) | set(roles))
    }
    return {
        key: value
        for key, value in flatten(data).items()
        if not any(fnmatchcase(key, pattern) for pattern in OPERATIONAL_KEYS)
    }


def config_hash(config_json: Mapping[str, Any]) -> str:
    return short_hash(json.dumps(identity_items(config_json), sort_keys=True, default=str))


def prompt_records(registry: PromptRegistry) -> dict[str, PromptRecord]:
    """Every template a run can render, by name, with its text: role prompts and the ``_``
    partials they include (an override of a partial changes the prompts that include it)."""
    records = {}
    for name in registry.names():
        text = registry.source(name)
        overridden = registry.resolve(name).overridden
        records[name] = PromptRecord(hash=short_hash(text), text=text, overridden=overridden)
    partials: dict[str, Path] = {}
    for directory in (registry.base_dir, registry.override_dir):  # the override wins
        if directory is not None:
            partials.update({p.stem: p for p in directory.glob(f"_*{TEMPLATE_SUFFIX}")})
    for name, path in sorted(partials.items()):
        text = path.read_text(encoding="utf-8")
        overridden = registry.override_dir is not None and path.parent == registry.override_dir
        records[name] = PromptRecord(hash=short_hash(text), text=text, overridden=overridden)
    return dict(sorted(records.items()))


def models_by_role(config: Config) -> dict[str, str]:
    return {role: config.models.settings_for(role).model for role in MODEL_ROLES}


def new_run_info(
    *,
    benchmark: str,
    annotations: str | Path,
    variants: Sequence[str],
    config: Config,
    prompts: PromptRegistry,
    command: Sequence[str] = (),
    no_video: bool = False,
    mode: str = "mc",
    selection: RunSelection | None = None,
    inputs: RunInputs | None = None,
    rerun_of: str | None = None,
) -> RunInfo:
    """The header of a run; ``no_video`` (answers from the memories alone, no observation)
    and ``mode`` (the benchmark's questions asked with their options, ``mc``, or in words,
    ``open``: the same ids, other questions) are part of its identity like the config.
    ``selection`` and ``inputs`` (which questions, which files) are what ``eval --rerun``
    repeats; the prompt texts and package versions are taken here."""
    # Kept and shared: without a base URL's password (a rerun that needs it is given the URL
    # again, ``-o models.default.base_url=...``; where a model is served is no identity).
    config_json = without_url_credentials(config.model_dump(mode="json"))
    records = prompt_records(prompts)
    return RunInfo(
        format=RUN_FORMAT,
        benchmark=benchmark,
        annotations=str(Path(annotations).expanduser().resolve()),
        variants=list(variants),
        config=config_json,
        config_hash=config_hash(config_json),
        prompt_hashes={name: record.hash for name, record in records.items()},
        models=models_by_role(config),
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        command=[display_url(arg) for arg in command],
        prompts=records,
        packages=package_versions(),
        inputs=inputs,
        selection=selection,
        rerun_of=rerun_of,
        no_video=no_video,
        mode=mode,
    )


def identity_differences(stored: RunInfo, current: RunInfo) -> list[str]:
    """What makes ``current`` another method than the one ``stored`` ran, one line each."""
    lines = []
    if stored.benchmark != current.benchmark:
        lines.append(f"benchmark: {stored.benchmark!r} in the run, {current.benchmark!r} now")
    was_blind, now_blind = _no_video(stored), _no_video(current)
    if was_blind != now_blind:
        lines.append(f"no_video: {was_blind} in the run, {now_blind} now")
    was_mode, now_mode = _mode(stored), _mode(current)
    if was_mode != now_mode:
        lines.append(f"mode: {was_mode!r} in the run, {now_mode!r} now")
    lines += config_differences(stored.config, current.config)
    for name in sorted(set(stored.prompt_hashes) | set(current.prompt_hashes)):
        was = stored.prompt_hashes.get(name)
        now = current.prompt_hashes.get(name)
        if was != now:
            lines.append(f"prompt {name}: {was or 'absent'} in the run, {now or 'absent'} now")
    return lines


def config_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The settings that decide answers and differ between two configs (as JSON), one
    line each, ``config KEY: <stored> in the run, <current> now``."""
    if config_hash(stored) == config_hash(current):
        return []
    before, after = identity_items(stored), identity_items(current)
    changed: dict[tuple[str, str, str], list[str]] = {}
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key, "<unset>"), after.get(key, "<unset>")
        if was != now:
            # One line for a model setting every role inherits from models.default.
            section, _, rest = key.partition(".")
            role, _, setting = rest.partition(".")
            group = f"models.*.{setting}" if section == "models" and setting else key
            changed.setdefault((group, repr(was), repr(now)), []).append(role)
    lines = []
    for (group, was, now), roles in changed.items():
        if group.startswith("models.*.") and len(roles) < len(MODEL_ROLES):
            for role in roles:
                lines.append(f"config {group.replace('*', role)}: {was} in the run, {now} now")
        else:
            lines.append(f"config {group}: {was} in the run, {now} now")
    return lines


def _no_video(info: RunInfo) -> bool:
    return bool((info.model_extra or {}).get("no_video", False))


def _mode(info: RunInfo) -> str:
    """A run made before modes existed asked multiple-choice questions."""
    return str((info.model_extra or {}).get("mode", "mc"))


# --------------------------------------------------------------------------- the directory


def trace_name(question_id: str) -> str:
    """A file name for a question id (ids come from benchmarks: any characters); ids that
    need changing get a hash suffix so two of them never share a file."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", question_id).strip(".") or "q"
    if safe != question_id:
        safe = f"{safe[:80]}-{short_hash(question_id)[:8]}"
    return f"{safe}.json"


def _refuse_foreign(path: Path) -> None:
    """Refuse a directory without ``run.json`` that holds anything a run did not write."""
    if any(p.name not in (TRACES_DIR, LOCK_FILE, PROMPTS_DIR) for p in path.iterdir()):
        if (path / RESULTS_FILE).exists():
            raise RunDirectoryError(
                f"{path} has {RESULTS_FILE} but no {RUN_FILE}; it cannot be checked, so "
                "it cannot be resumed: choose a new --out directory"
            )
        raise RunDirectoryError(
            f"--out {path} is not empty and is not a run directory; choose a new or empty one"
        )


def _merged_selection(
    stored: RunSelection | None, current: RunSelection | None
) -> RunSelection | None:
    """The latest command's selection, holding every question either invocation asked."""
    if stored is None or current is None:
        return current or stored
    asked = list(dict.fromkeys([*stored.question_ids, *current.question_ids]))
    return current.model_copy(update={"question_ids": asked})


class ResultsWriter:
    """Appends records to ``results.jsonl``: one ``write`` per line, then ``fsync``.

    Safe to call from several threads (the runner persists off the event loop); the lock
    keeps lines whole even if the kernel ever takes a line in two writes.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, record: ResultRecord) -> None:
        data = memoryview((record.to_json_line() + "\n").encode("utf-8"))
        with self._lock:
            if self._fd is None:
                raise RunDirectoryError(f"{self.path} is closed")
            with disk_full_named(self.path.parent):  # a line cut short is mended on reopen
                while data:
                    written = os.write(self._fd, data)
                    data = data[written:]
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class RunDirectory:
    """An opened run directory: its checked identity, its traces and its results writer."""

    def __init__(self, path: Path, info: RunInfo, *, lock: RunLock, torn_bytes: int = 0) -> None:
        self.path = path
        self.info = info
        self.lock = lock
        #: Bytes of a torn last line (an interrupted write) cut off when the run was opened.
        self.torn_bytes = torn_bytes
        self.writer = ResultsWriter(path / RESULTS_FILE)

    @classmethod
    def open(cls, path: str | Path, info: RunInfo, *, force: bool = False) -> RunDirectory:
        """Create the directory, or resume one made by the same method.

        A directory made with another config, prompt set or benchmark is refused with the
        differences named, unless ``force``: then its records are kept (finished questions
        are not asked again) and ``run.json`` takes the new identity, the old one listed
        under ``amended`` so reports can say the run mixes two methods. A directory another
        process holds open is refused (``RunLockedError``).
        """
        path = Path(path).expanduser()
        if path.exists() and not path.is_dir():
            raise RunDirectoryError(f"--out {path} is a file, not a run directory")
        if path.is_dir() and not (path / RUN_FILE).exists():
            _refuse_foreign(path)  # before the lock, which would leave its file in it
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunDirectoryError(f"cannot create {path}: {exc.strerror or exc}") from None
        # Locked before anything is read, so what the identity check sees is not being
        # written by another eval.
        lock = RunLock(path)
        try:
            return cls._opened(path, info, force=force, lock=lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _opened(cls, path: Path, info: RunInfo, *, force: bool, lock: RunLock) -> RunDirectory:
        if (path / RUN_FILE).exists():
            stored = read_run_info(path)
            differences = identity_differences(stored, info)
            if differences and not force:
                raise RunMismatchError(
                    f"{path} was made by another method than this command's:\n  "
                    + "\n  ".join(differences)
                    + "\nuse another --out directory, or pass --force to continue it anyway "
                    "(its finished records are kept)"
                )
            extra = stored.model_extra or {}
            amended = list(extra.get("amended", []))
            if differences:
                amended.append(
                    {
                        "at": info.created,
                        "config_hash": stored.config_hash,
                        "prompt_hashes": stored.prompt_hashes,
                        "differences": differences,
                    }
                )
            variants = list(dict.fromkeys([*stored.variants, *info.variants]))
            info = info.model_copy(
                update={
                    "variants": variants,
                    "created": stored.created or info.created,
                    # What earlier invocations saw stays: they made records in this run too.
                    "served_models": stored.served_models,
                    "fingerprints": stored.fingerprints,
                    "selection": _merged_selection(stored.selection, info.selection),
                    "rerun_of": info.rerun_of or stored.rerun_of,
                }
            )
            if amended:
                info = RunInfo.model_validate({**info.model_dump(), "amended": amended})
        try:
            (path / TRACES_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunDirectoryError(f"cannot create {path}: {exc.strerror or exc}") from None
        write_json_atomic(path / RUN_FILE, info.model_dump(mode="json"))
        return cls(path, info, lock=lock, torn_bytes=mend_torn_tail(path))

    def record_run_end(
        self,
        *,
        served_models: Mapping[str, Iterable[str]],
        fingerprints: Mapping[str, VideoPrints],
    ) -> None:
        """Add to ``run.json`` what only the end of a run knows: the model ids the server
        reported and the fingerprints of the videos and memories read (a video's new
        fingerprints replace its old ones; model ids add up)."""
        info = self.info.model_copy(
            update={
                "served_models": merge_models(self.info.served_models, served_models),
                "fingerprints": {**self.info.fingerprints, **fingerprints},
            }
        )
        write_json_atomic(self.path / RUN_FILE, info.model_dump(mode="json"))
        self.info = info

    def trace_relpath(self, variant: str, question_id: str) -> str:
        return f"{TRACES_DIR}/{variant}/{trace_name(question_id)}"

    def close(self) -> None:
        self.writer.close()
        self.lock.release()
