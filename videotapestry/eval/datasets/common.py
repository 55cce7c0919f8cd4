"""What every loader shares: its options, its error, and reading a file without tracebacks.

The checks here are the ones every benchmark needs the same way (required keys, option
lists, answer letters, evidence times, duration selection, unique ids, the answering mode),
so a malformed row gets the same kind of message whichever benchmark it came from: the
file, the row, and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from videotapestry.contracts.fields import parse_seconds
from videotapestry.errors import QuestionError, VideoTapestryError
from videotapestry.eval.questions import EvalQuestion
from videotapestry.files import parse_json
from videotapestry.question import (
    LETTERS,
    labelled_options,
    option_body,
    option_letters,
    validate_question,
)
from videotapestry.time_spans import Span, checked

#: How a benchmark's questions are asked: with their options (``mc``), or in words with
#: the right option's text as the reference answer (``open``, where the benchmark has it).
Mode = Literal["mc", "open"]
MODES: tuple[Mode, ...] = ("mc", "open")


class DatasetError(VideoTapestryError):
    """An annotation file that cannot be read as the benchmark's format."""


@dataclass(frozen=True)
class LoadOptions:
    """Selections a researcher makes on the command line (``--duration long``).

    ``duration`` names one duration group, or several separated by commas
    (``medium,long``); each benchmark says which names it knows. ``mode`` is how the
    questions are asked (``--mode``): ``mc`` every benchmark has; ``open`` only those that
    publish an open-ended form (CG-Bench), so asking another for it is an error, not a run
    of multiple-choice questions under an open-ended label.
    """

    duration: str | None = None
    mode: Mode = "mc"


def require_mode(options: LoadOptions, benchmark: str, modes: Sequence[Mode] = ("mc",)) -> None:
    """Refuse a ``--mode`` the benchmark does not publish."""
    if options.mode not in modes:
        raise DatasetError(
            f"{benchmark} has no {options.mode!r} mode (it has {', '.join(modes)}); drop --mode"
        )


def find_file(path: Path, names: tuple[str, ...]) -> Path:
    """``path`` itself, or the first of ``names`` inside the directory ``path``."""
    if path.is_file():
        return path
    for name in names:
        if (path / name).is_file():
            return path / name
    raise DatasetError(f"{path} holds none of {', '.join(names)}")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from None


def read_json(path: Path, *, lenient: bool = False) -> Any:
    """The JSON document in ``path``; ``lenient`` also accepts trailing commas.

    Some benchmarks publish hand-edited JSON (Video-MME's evaluation template ends objects
    and lists with a comma); those commas are dropped, never evaluated as Python.
    """
    text = read_text(path)
    if lenient:
        text = strip_trailing_commas(text)
    return parse_json(text, str(path), DatasetError)


def strip_trailing_commas(text: str) -> str:
    """``text`` with every comma that directly precedes ``]`` or ``}`` blanked out.

    Commas inside strings are kept; a dropped comma becomes a space so the line and column
    numbers of a later JSON error still point at the right place in the file.
    """
    out: list[str] = []
    in_string = escaped = False
    pending: int | None = None  # index in ``out`` of a comma not yet followed by a value
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string, pending = True, None
        elif char in "]}":
            if pending is not None:
                out[pending] = " "
            pending = None
        elif char == ",":
            pending = len(out)
        elif not char.isspace():
            pending = None
        out.append(char)
    return "".join(out)


def read_json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line's object with its line number (for messages)."""
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}:{number}", DatasetError)
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{number} is not a JSON object")
        rows.append((number, row))
    return rows


def read_parquet_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a Hugging Face parquet release, as dicts (pyarrow, the `eval` extra)."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise DatasetError(
            f"reading {path} needs pyarrow, which is not installed: run `pip install pyarrow` "
            "(or install the `eval` extra), or pass the rows exported as JSON lines"
        ) from None
    try:
        return parquet.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several kinds; name the file instead
        raise DatasetError(f"{path} is not a readable parquet file: {exc}") from None


def json_list_of_objects(path: Path, data: Any, what: str) -> list[dict[str, Any]]:
    """``data`` checked to be a JSON list of objects (one per ``what``)."""
    if not isinstance(data, list):
        raise DatasetError(
            f"{path} must hold a JSON list, one object per {what}, got {type(data).__name__}"
        )
    for index, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: {what} {index} is not a JSON object")
    return data


def require(row: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [key for key in keys if key not in row or row[key] is None]
    if missing:
        raise DatasetError(f"{where} lacks {', '.join(missing)}")


def text_field(row: Mapping[str, Any], key: str, where: str) -> str:
    """A field that must be non-empty text (ids may be given as numbers)."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DatasetError(f"{where}: {key} must be non-empty text, got {value!r}")
    return str(value).strip()


def number_field(row: Mapping[str, Any], key: str, where: str) -> float | None:
    """An optional number (absent or null gives None; anything else must be a number)."""
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(str(value))
        except ValueError:
            raise DatasetError(f"{where}: {key} must be a number, got {value!r}") from None
    return float(value)


def normalized_options(
    options: Any, where: str, counts: Iterable[int], *, plain: bool = False
) -> list[str]:
    """The options labelled ``A. …`` in order, after the checks a question gets before a call.

    ``counts`` are the option counts the benchmark publishes (4 for Video-MME, 4 or 5 for
    LongVideoBench): any other count means the row was read wrongly, not a new question.
    ``plain`` options (texts without letters) are labelled by position even when a text
    starts like a label ("C. elegans …" stays the text of whichever option it is).
    """
    allowed = sorted(set(counts))
    if not isinstance(options, (list, tuple)):
        raise DatasetError(f"{where}: options must be a list, got {type(options).__name__}")
    if len(options) not in allowed:
        expected = " or ".join(str(count) for count in allowed)
        raise DatasetError(f"{where}: expected {expected} options, got {len(options)}")
    if not all(isinstance(option, str) for option in options):
        raise DatasetError(f"{where}: every option must be text")
    if plain:
        for index, option in enumerate(options):
            if not option.strip():
                raise DatasetError(f"{where}: option {index + 1} ({option!r}) has no text")
        return [
            f"{letter}. {' '.join(option.split())}"
            for letter, option in zip(LETTERS, options, strict=False)
        ]
    try:
        letters = validate_question("?", list(options), max_chars=None)  # length: the run's
    except QuestionError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    if letters != list(LETTERS[: len(options)]):
        raise DatasetError(
            f"{where}: options are labelled {', '.join(letters)}; expected "
            f"{', '.join(LETTERS[: len(options)])} in order"
        )
    return labelled_options(list(options))


def answer_letter(value: Any, options: Sequence[str], where: str) -> str:
    """The gold letter from a letter (``"C"``, ``"(C)"``, ``"c."``) or a 0-based index."""
    letters = option_letters(options)
    if isinstance(value, bool):
        raise DatasetError(f"{where}: answer must be a letter or an index, got {value!r}")
    if isinstance(value, int):
        if not 0 <= value < len(options):
            raise DatasetError(
                f"{where}: answer index {value} is out of range for {len(options)} options"
            )
        return letters[value]
    if isinstance(value, str):
        letter = value.strip().strip("().:").strip().upper()
        if letter in letters:
            return letter
    raise DatasetError(
        f"{where}: answer {value!r} is not one of the option letters {', '.join(letters)}"
    )


def option_index(value: str, options: Sequence[str]) -> int | None:
    """The index of the option whose text is ``value`` (case and spacing aside), if any."""
    wanted = " ".join(value.split()).casefold()
    for index, option in enumerate(options):
        if option_body(option).casefold() == wanted:
            return index
    return None


def ordered_span(start: Any, end: Any) -> tuple[Span, bool]:
    """``(start, end)`` in seconds and in order, and whether it had to be put in order.

    The one rule for reversed spans in every loader: an evidence span given end first is
    the same stretch of video, so it is ordered, not refused or dropped, and the loader
    counts it (``EvidenceNotes.reversed``). Negative or non-finite times are still refused.
    """
    low, high = parse_seconds(start), parse_seconds(end)
    if high < low:
        return checked(high, low), True
    return checked(low, high), False


def evidence_spans(value: Any, where: str, key: str) -> tuple[list[Span], int]:
    """Evidence times given as a list of ``[start, end]`` pairs or of objects with
    ``start_s`` / ``end_s`` (seconds, or clock strings such as ``"01:05"``), and how many
    were reversed (put in order, ``ordered_span``); absent or null is no evidence. Anything
    else names the row, the field and the item."""
    if value is None:
        return [], 0
    if not isinstance(value, (list, tuple)):
        raise DatasetError(
            f"{where}: {key} must be a list of [start, end] seconds, got {type(value).__name__}"
        )
    spans = []
    reversed_spans = 0
    for index, item in enumerate(value, start=1):
        if isinstance(item, Mapping):
            pair: Any = (item.get("start_s"), item.get("end_s"))
        else:
            pair = item
        try:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or None in pair:
                raise ValueError("give [start, end] or {start_s, end_s}")
            span, was_reversed = ordered_span(pair[0], pair[1])
        except ValueError as exc:
            raise DatasetError(f"{where}: {key} item {index} ({item!r}): {exc}") from None
        spans.append(span)
        reversed_spans += was_reversed
    return spans, reversed_spans


#: A time: a clock (``MM:SS``, ``HH:MM:SS``, minutes may pass 59) or plain seconds, with
#: decimals and an optional ``s``.
_TIME = r"\d+(?::\d{1,2}){0,2}(?:\.\d+)?\s*s?"
#: What stands between a span's start and end: a dash of any kind, ``~`` or ``to``.
_TO = r"(?:[-\u2010-\u2015~]|\bto\b)"
_SPAN = re.compile(rf"^({_TIME})\s*{_TO}\s*({_TIME})$", re.IGNORECASE)
_POINT = re.compile(rf"^({_TIME})$", re.IGNORECASE)
#: A bracketed pair, ``[00:30, 01:00]`` or ``(30, 60)``: a comma inside is start and end.
_BRACKETED = re.compile(rf"[\[(]\s*({_TIME})\s*(?:,|{_TO})\s*({_TIME})\s*[\])]", re.IGNORECASE)
#: How long a single time (``"01:23"``) lasts as evidence: the second it names.
POINT_SECONDS = 1.0


def clock_spans(text: Any) -> tuple[list[Span], int] | None:
    """Spans from a time reference, and how many were reversed (put in order); None when
    the text does not read as times, so a caller can keep it raw and count it.

    Read: ``MM:SS-MM:SS`` and ``HH:MM:SS-HH:MM:SS`` (minutes may pass 59), plain seconds
    (``30-60``, ``30s-60s``), decimals, spaces around the separator, which may be a dash of
    any kind, ``~`` or ``to``; brackets (``[00:30, 01:00]``, a comma inside being the
    separator); several spans separated by ``,`` or ``;``; and a single time (``01:23``),
    read as the second it names (``POINT_SECONDS`` long), since a span of no length
    could never reach an IoU above 0.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    flat = _BRACKETED.sub(r"\1-\2", text)
    flat = re.sub(r"[\[\]()'\"]", " ", flat)
    spans = []
    reversed_spans = 0
    for part in (part.strip() for part in re.split(r"[,;]", flat)):
        if not part:
            continue
        span, point = _SPAN.match(part), _POINT.match(part)
        try:
            if span is not None:
                got, was_reversed = ordered_span(
                    _time_seconds(span.group(1)), _time_seconds(span.group(2))
                )
            elif point is not None:
                moment = _time_seconds(point.group(1))
                got, was_reversed = checked(moment, moment + POINT_SECONDS), False
            else:
                return None
        except ValueError:
            return None
        spans.append(got)
        reversed_spans += was_reversed
    return (spans, reversed_spans) if spans else None


def _time_seconds(time: str) -> float:
    """Plain seconds, or ``MM:SS`` / ``HH:MM:SS`` in seconds; minutes may run past 59
    (``118:05``, as an annotator of a two-hour video writes them), seconds may not."""
    time = time.strip().removesuffix("s").removesuffix("S").strip()
    if ":" not in time:
        return float(time)
    *larger, seconds = time.split(":")
    if float(seconds) >= 60 or (len(larger) == 2 and int(larger[1]) >= 60):
        raise ValueError(f"{time!r} is not a clock time")
    total = float(seconds)
    for scale, part in zip((60, 3600), reversed(larger), strict=False):
        total += scale * int(part)
    return total


def check_question(where: str, build: Callable[[], EvalQuestion]) -> EvalQuestion:
    """``build()``, with a pydantic validation error turned into a message naming the row,
    and its evidence spans clipped to the duration the benchmark gives (counted in its
    ``evidence_notes``, as ``EvalQuestion.within_video`` does)."""
    from pydantic import ValidationError

    try:
        question = build()
    except ValidationError as exc:
        problems = "; ".join(error["msg"] for error in exc.errors())
        raise DatasetError(f"{where}: {problems}") from None
    return question.within_video(question.duration_s)


def check_unique_ids(questions: Sequence[EvalQuestion], path: Path) -> None:
    """Results are keyed by question id, so two questions with one id would overwrite."""
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise DatasetError(f"{path}: question id {question.id!r} appears more than once")
        seen.add(question.id)


def select_duration(
    questions: list[EvalQuestion],
    options: LoadOptions,
    path: Path,
    benchmark: str,
    aliases: Mapping[str, str] | None,
) -> list[EvalQuestion]:
    """The questions in the duration groups ``options.duration`` names.

    ``aliases`` maps every name the benchmark accepts to its ``duration_group`` value
    (LongVideoBench: ``long`` → ``3600``); None means the benchmark has no groups, and asking
    for one is an error rather than a silently unfiltered run.
    """
    if options.duration is None:
        return questions
    if aliases is None:
        raise DatasetError(f"{benchmark} has no duration groups; drop --duration")
    wanted = set()
    for name in (part.strip().lower() for part in options.duration.split(",")):
        if name not in aliases:
            raise DatasetError(
                f"{benchmark} has no duration group {name!r}; choose from {', '.join(aliases)}"
            )
        wanted.add(aliases[name])
    chosen = [question for question in questions if question.duration_group in wanted]
    if not chosen:
        present = sorted({str(question.duration_group) for question in questions})
        raise DatasetError(
            f"no question in {path} is in duration group {options.duration!r} "
            f"(groups present: {', '.join(present) or 'none'})"
        )
    return chosen
