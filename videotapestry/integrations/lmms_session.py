"""The lmms-eval model's settings and the run it answers into, without lmms-eval itself.

lmms-eval's ``--model_args`` become ``LmmsSettings``; an ``LmmsSession`` answers questions
with the same ``EvalRunner`` as ``videotapestry eval``, into a run directory of the same
layout (``run.json``, one ``results.jsonl`` line per finished question with its usage, a
trace per question, ``report.md``). Reusing the runner is what gives an lmms-eval run the
eval harness's behaviour for free: bounded concurrency, a missing memory built once per
video with ``build_missing``, a per-question failure instead of a crashed run, resume
(rerunning lmms-eval with the same ``output_dir`` asks only unfinished questions), and the
response cache of the config, which ``videotapestry eval`` with the same config also uses.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.errors import ConfigError, VideoTapestryError

if TYPE_CHECKING:
    from videotapestry.eval.questions import EvalQuestion
    from videotapestry.eval.records import ResultRecord
    from videotapestry.eval.runner import RunOutcome

#: ``benchmark`` of the run directory: the questions come from lmms-eval tasks (each
#: question's ``benchmark`` names its task).
BENCHMARK = "lmms-eval"
DEFAULT_OUTPUT_DIR = "videotapestry_lmms_run"
#: Keys lmms-eval passes to every model; they mean nothing to a method whose models are
#: served elsewhere (``base_url``), so they are accepted and ignored.
HOST_KEYS = ("batch_size", "max_batch_size", "device")
KNOWN_KEYS = (
    "memory_root",
    "output_dir",
    "build_missing",
    "profile",
    "config",
    "variant",
    "concurrency",
    "force",
    "stop_after",
)
#: How a failed request's response starts, so a reader of lmms-eval's samples log can tell
#: it from an answer.
ERROR_PREFIX = "[videotapestry error]"


@dataclass(frozen=True)
class LmmsSettings:
    """What ``--model_args memory_root=…,profile=…,models.default.model=…`` asks for.

    Keys with a dot are config overrides, exactly like ``-o section.key=value``.
    """

    memory_root: Path
    output_dir: Path = Path(DEFAULT_OUTPUT_DIR)
    build_missing: bool = False
    profile: str | None = None
    config: str | None = None
    variant: str | None = None
    concurrency: int = 4
    force: bool = False
    stop_after: int = 3
    overrides: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_model_args(cls, args: Mapping[str, Any]) -> LmmsSettings:
        """Settings from the parsed ``--model_args`` (lmms-eval has already turned
        ``true``/``3``/``0.5`` into bool/int/float)."""
        overrides = tuple(f"{key}={_text(value)}" for key, value in args.items() if "." in key)
        plain = {key: value for key, value in args.items() if "." not in key}
        unknown = sorted(set(plain) - set(KNOWN_KEYS) - set(HOST_KEYS))
        if unknown:
            raise ConfigError(
                f"videotapestry model: unknown model_args key {unknown[0]!r}; the keys are "
                f"{', '.join(KNOWN_KEYS)}, and any config override as section.key=value"
            )
        root = plain.get("memory_root")
        if root is None or not str(root).strip():
            raise ConfigError(
                "videotapestry model: model_args needs memory_root=DIR, the directory holding "
                "one memory per video as DIR/<video stem>/ (what `videotapestry build-memory "
                "--videos` writes); add build_missing=true to build the missing ones"
            )
        concurrency = _integer(plain, "concurrency", 4)
        if concurrency < 1:
            raise ConfigError(
                f"videotapestry model: concurrency must be at least 1, got {concurrency}"
            )
        return cls(
            memory_root=Path(str(root)).expanduser(),
            output_dir=Path(str(plain.get("output_dir") or DEFAULT_OUTPUT_DIR)).expanduser(),
            build_missing=_boolean(plain, "build_missing"),
            profile=_optional_text(plain, "profile"),
            config=_optional_text(plain, "config"),
            variant=_optional_text(plain, "variant"),
            concurrency=concurrency,
            force=_boolean(plain, "force"),
            stop_after=_integer(plain, "stop_after", 3),
            overrides=overrides,
        )


class LmmsSession:
    """One ``VideoTapestry`` and one run directory for the life of the lmms-eval model.

    ``variant=refined_super_only`` (or ``refined_paths_only``) runs ``full`` too, since
    those reassemble the full method's exploration (one Answer call each); the answers
    returned are the named variant's.
    """

    def __init__(self, settings: LmmsSettings, *, command: Sequence[str] | None = None) -> None:
        from videotapestry.api import VideoTapestry
        from videotapestry.eval.run_writer import RunDirectory, new_run_info
        from videotapestry.eval.runner import Inputs, RunnerOptions, check_variants
        from videotapestry.variants import exploration_source

        self.settings = settings
        self.vt = VideoTapestry(
            settings.config, profile=settings.profile, overrides=settings.overrides
        )
        self.variant = settings.variant or self.vt.config.variant
        source = exploration_source(self.variant)
        variants = (source, self.variant) if source != self.variant else (self.variant,)
        self.options = RunnerOptions(
            variants=check_variants(variants),
            concurrency=settings.concurrency,
            build_missing=settings.build_missing,
            stop_after_same_failures=settings.stop_after,
            build_missing_hint="add build_missing=true to --model_args",
        )
        info = new_run_info(
            benchmark=BENCHMARK,
            annotations=BENCHMARK,
            variants=self.options.variants,
            config=self.vt.config,
            prompts=self.vt.prompts,
            command=list(sys.argv if command is None else command),
        )
        # Not a file: the questions come from lmms-eval's tasks, named by each question.
        info = info.model_copy(update={"annotations": BENCHMARK})
        self._info = info
        self.run_dir = RunDirectory.open(settings.output_dir, info, force=settings.force)
        self._closed = False
        # Questions carry their video as an absolute path (what the task's doc_to_visual
        # gave), which the runner joins onto ``videos`` unchanged.
        self.inputs = Inputs(videos=Path("/"), memories=settings.memory_root)

    def answer(
        self, questions: Sequence[EvalQuestion]
    ) -> tuple[dict[str, ResultRecord], str | None]:
        """The latest record of each question under the session's variant (answered now, or
        kept from an earlier run of the same directory), and why the run stopped early (None
        when every question was attempted)."""
        from videotapestry.eval.run_writer import RunDirectory
        from videotapestry.eval.runner import EvalRunner

        if self._closed:  # lmms-eval cleaned the model up and evaluates with it again
            self.run_dir = RunDirectory.open(
                self.settings.output_dir, self._info, force=self.settings.force
            )
            self._closed = False
        runner = EvalRunner(self.vt, self.run_dir, self.inputs, self.options)
        outcome = asyncio.run(self._run(runner, questions))
        self._write_report()
        records = {
            question_id: record
            for (variant, question_id), record in outcome.records.items()
            if variant == self.variant
        }
        return records, outcome.stopped

    async def _run(self, runner: Any, questions: Sequence[EvalQuestion]) -> RunOutcome:
        try:
            return await runner.run(questions)
        finally:
            # Clients belong to this event loop; the next batch opens its own.
            await self.vt.aclose()

    def _write_report(self) -> None:
        """``report.md``/``report.json`` of the run directory so far; lmms-eval's own results
        are the run's product, so a report that cannot be written is only a warning."""
        from videotapestry.eval.report import write_report

        try:
            write_report(self.run_dir.path)
        except VideoTapestryError as exc:
            warnings.warn(f"videotapestry: no report written: {exc}", stacklevel=2)

    def close(self) -> None:
        """Close the results file (reopened if more questions come). The response cache
        stays open for the session's life; it commits every reply as it stores it."""
        if not self._closed:
            self.run_dir.close()
            self._closed = True


def failure_message(record: ResultRecord | None) -> str:
    """Why a question has no answer, as the error said it (for the log)."""
    if record is None:
        return "the question was not run"
    kind = record.error_type or record.status
    return f"{kind}: {record.error or record.status}"


def error_text(exc: BaseException) -> str:
    """Why a request failed before it became a question (its record, its visual)."""
    return f"{type(exc).__name__}: {exc}"


def failure_response(message: str) -> str:
    """The response of a request that has no answer: the message in lower case.

    lmms-eval's extractions take any capital choice letter in a response as its answer
    (Video-MME's and LVBench's fall back to the last capital A-D anywhere in the text), so
    an error naming ``/data/Videos/CLIP_A.mp4`` would be scored as an answer. With no
    capital letter in it, no extraction reads a letter and the question counts as wrong
    (EgoSchema's and LongVideoBench's extractions guess a random letter for any response
    they cannot read, as they do for every model). The exact message is in the log and in
    ``results.jsonl``.
    """
    return f"{ERROR_PREFIX} {message}".lower()


def _text(value: Any) -> str:
    # lmms-eval turned "true" into True; YAML reads "True" back as the same boolean.
    return str(value)


def _optional_text(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    return None if value is None or str(value).strip() == "" else str(value).strip()


def _boolean(args: Mapping[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"videotapestry model: {key} must be true or false, got {value!r}")


def _integer(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool):
        raise ConfigError(f"videotapestry model: {key} must be a whole number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"videotapestry model: {key} must be a whole number, got {value!r}"
        ) from None
    if not number.is_integer():
        raise ConfigError(f"videotapestry model: {key} must be a whole number, got {value!r}")
    return int(number)
