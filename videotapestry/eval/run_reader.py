"""Reading a run directory back: ``results.jsonl`` records and the ``run.json`` header.

The runner appends one line per finished question and may be killed at any byte, so the
reader is the one place that decides what a half-written file means: a torn last line is
skipped and counted (never an error, since a rerun is how the run heals), and when a
question was answered twice the later line wins (a ``--force`` rerun, a retried failure).
The report, ``compare`` and the runner's resume all read through here so they agree on
which records a run holds; a writer calls ``mend_torn_tail`` once before appending, so its
first new line is not glued onto a torn one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.records import ResultRecord

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"
TRACES_DIR = "traces"
RUN_FORMAT = 1

Key = tuple[str, str]


class RunDirectoryError(VideoTapestryError):
    """A run directory that cannot be read: missing, without results, or a bad ``run.json``."""


class PromptRecord(BaseModel):
    """A template as a run rendered it, kept whole: a hash names a text but cannot bring it
    back, and ``eval --rerun`` asks with the text the run used, not today's file."""

    hash: str = Field(description="prompts.short_hash of the text")
    text: str = Field(description="the template file's text")
    overridden: bool = Field(False, description="the text came from prompts.override_dir")


class VideoPrints(BaseModel):
    """Which video and memory a run's questions of one video were answered from."""

    video: str | None = Field(
        None,
        description="the video file's fingerprint (size and sampled content); null "
        "when the file was absent or the run had no video",
    )
    memory: str | None = Field(
        None, description="a hash of every file of the memory directory; null when absent"
    )
    memory_video: str | None = Field(
        None, description="the video fingerprint the memory's manifest records"
    )


class RunInputs(BaseModel):
    """Where the run found its files (absolute paths), the defaults of ``eval --rerun``."""

    videos: str | None = None
    memories: str = ""
    subtitles: str | None = None


class RunSelection(BaseModel):
    """Which of the benchmark's questions the run asked, so a rerun asks the same ones."""

    duration: str | None = Field(None, description="--duration as given")
    ids: list[str] = Field(default_factory=list, description="--ids as given, sorted")
    limit: int | None = Field(None, description="--limit as given")
    question_ids: list[str] = Field(
        default_factory=list,
        description="every question id the run was asked, in the order first asked (a "
        "resumed run with a larger --limit adds its new ones)",
    )


class RunInfo(BaseModel):
    """``RUN/run.json``: what produced the run, so reruns and comparisons can check it.

    Every field has a default, so a ``run.json`` written before a field existed still reads
    (its reports and comparisons work; ``eval --rerun`` needs ``prompts`` and
    ``selection``, and says so when they are missing).
    """

    model_config = ConfigDict(extra="allow")

    format: int = RUN_FORMAT
    benchmark: str = ""
    annotations: str = ""
    variants: list[str] = Field(default_factory=list)
    #: The resolved configuration as JSON (``Config.model_dump(mode="json")``).
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: str = ""
    #: Prompt name -> ``prompts.short_hash`` of its resolved template.
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    #: Model role -> model name.
    models: dict[str, str] = Field(default_factory=dict)
    created: str = ""
    command: list[str] = Field(default_factory=list)
    prompts: dict[str, PromptRecord] = Field(
        default_factory=dict,
        description="every template the run could render (role prompts and _ partials), "
        "with its hash and full text",
    )
    served_models: dict[str, list[str]] = Field(
        default_factory=dict,
        description="model role -> the model ids the server reported in its replies "
        "(a dated snapshot where the config names an alias)",
    )
    packages: dict[str, str] = Field(
        default_factory=dict,
        description="python and the installed versions of the packages that decide answers "
        '("not installed" when absent)',
    )
    fingerprints: dict[str, VideoPrints] = Field(
        default_factory=dict,
        description="video file name (as the benchmark names it) -> its video and memory "
        "fingerprints, taken when the run ends",
    )
    inputs: RunInputs | None = Field(
        None, description="where the run found its videos, memories and subtitles"
    )
    selection: RunSelection | None = Field(
        None, description="which of the benchmark's questions the run asked"
    )
    rerun_of: str | None = Field(
        None, description="the run directory this run repeats (eval --rerun)"
    )


@dataclass(frozen=True)
class RecordsRead:
    """Every valid record of ``results.jsonl`` in file order, and what was skipped.

    ``torn_lines`` is 1 when the last line is not a valid record (a write cut short by a
    kill); ``invalid_lines`` holds the 1-based numbers of other lines that did not parse,
    which a single-write appender never produces, so a report shows them as a warning.
    """

    records: list[ResultRecord] = field(default_factory=list)
    torn_lines: int = 0
    invalid_lines: tuple[int, ...] = ()

    @property
    def skipped_lines(self) -> int:
        return self.torn_lines + len(self.invalid_lines)


def results_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / RESULTS_FILE


def parse_records(data: bytes) -> RecordsRead:
    """The records in the bytes of a ``results.jsonl`` (pure; see ``read_records``).

    Lines are decoded one by one, so a kill in the middle of a multi-byte character spoils
    only the line it cut.
    """
    lines = data.split(b"\n")
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    records: list[ResultRecord] = []
    bad: list[int] = []
    for number, line in numbered:
        record = _parse_line(line)
        if record is None:
            bad.append(number)
        else:
            records.append(record)
    torn = 0
    if bad and numbered and bad[-1] == numbered[-1][0]:
        torn = 1
        bad.pop()
    return RecordsRead(records=records, torn_lines=torn, invalid_lines=tuple(bad))


def _parse_line(line: bytes) -> ResultRecord | None:
    try:
        row = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, too deep, a huge number
        return None
    if not isinstance(row, dict):
        return None
    try:
        return ResultRecord.model_validate(row)
    except ValidationError:
        return None


def read_records(run_dir: str | Path) -> RecordsRead:
    """The records of ``RUN/results.jsonl``; none when the file does not exist yet."""
    path = results_path(run_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return RecordsRead()
    except OSError as exc:
        raise RunDirectoryError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_records(data)


def require_records(run_dir: str | Path) -> RecordsRead:
    """The records of a run that must already have some (reports, ``compare``)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise RunDirectoryError(f"run directory {run} does not exist")
    read = read_records(run)
    if not read.records:
        path = results_path(run)
        absent = "" if path.exists() else " (the file does not exist)"
        raise RunDirectoryError(
            f"no results in {path}{absent}; run `videotapestry eval ... --out {run}` first"
        )
    return read


def latest(records: Iterable[ResultRecord]) -> dict[Key, ResultRecord]:
    """The last record of each (variant, question_id), in the order keys first appeared."""
    chosen: dict[Key, ResultRecord] = {}
    for record in records:
        chosen[record.key] = record
    return chosen


def finished_keys(records: Iterable[ResultRecord]) -> set[Key]:
    """Keys whose latest record is answered or failed: a resume does not ask these again."""
    return {key for key, record in latest(records).items() if record.finished}


def mend_torn_tail(run_dir: str | Path) -> int:
    """Make ``results.jsonl`` end on a line boundary before more lines are appended.

    Without this, the first line a rerun appends would be glued onto a torn one and both
    would be lost. A torn tail is cut off; a complete record that only lacks its newline
    gets one. Returns the number of bytes cut (0 when nothing was torn).
    """
    path = results_path(run_dir)
    try:
        with path.open("rb+") as handle:
            data = handle.read()
            if not data or data.endswith(b"\n"):
                return 0
            start = data.rfind(b"\n") + 1
            if _parse_line(data[start:]) is not None:
                handle.write(b"\n")
                cut = 0
            else:
                handle.truncate(start)
                cut = len(data) - start
            handle.flush()
            os.fsync(handle.fileno())
            return cut
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise RunDirectoryError(f"cannot repair {path}: {exc.strerror or exc}") from None


def read_run_info(run_dir: str | Path) -> RunInfo:
    """``RUN/run.json``; a missing or malformed header is an error naming the file."""
    path = Path(run_dir) / RUN_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunDirectoryError(
            f"{path} does not exist; is {run_dir} a run directory made by `videotapestry eval`?"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirectoryError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunDirectoryError(f"{path} is not JSON: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:  # nested too deeply, a huge number
        raise RunDirectoryError(f"{path} is not JSON this program can read: {exc!r}") from None
    if not isinstance(data, dict):
        raise RunDirectoryError(f"{path} must hold a JSON object")
    try:
        info = RunInfo.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise RunDirectoryError(f"{path} is not a valid run header: {problems}") from None
    if info.format != RUN_FORMAT:
        raise RunDirectoryError(
            f"{path} has format {info.format}; this version reads format {RUN_FORMAT}"
        )
    return info


def read_run_info_if_present(run_dir: str | Path) -> RunInfo | None:
    """``run.json`` when there is one (a malformed one is still an error)."""
    return read_run_info(run_dir) if (Path(run_dir) / RUN_FILE).exists() else None
