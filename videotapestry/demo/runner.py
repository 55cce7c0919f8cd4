"""``videotapestry demo``: build the sample video's memory, answer its questions, show why.

The demo is the framework's first impression, so it runs the real thing end to end — the
memory builder over the shipped sample video, then the full method for every shipped
question — and prints what a researcher would check first: the answer, whether it is right,
the levels visited and the moments (frames, transcript lines) the answer rests on. With the
offline profile nothing needs a key or a download. The memory and the model replies are
cached in the user cache directory, one cache per installation (version and checkout). The
builder keeps a memory that is up to date (its build stamp: the video's fingerprint, the
settings, prompts and models it was built with, its files as written), so a second run
rebuilds nothing, repeats no call and checks the memory in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.contracts.fields import parse_seconds
from videotapestry.errors import VideoTapestryError
from videotapestry.question import option_body, option_letters
from videotapestry.timecode import format_timestamp
from videotapestry.views.citation_text import node_spans, plain_text, shown_text, span_text

if TYPE_CHECKING:
    from videotapestry.api import VideoTapestry
    from videotapestry.result import Result


@dataclass(frozen=True)
class DemoQuestion:
    id: str
    question: str
    options: list[str]
    answer: str
    #: Where the answer is to be found: "screen", "speech" or "both".
    evidence: str = ""


@dataclass(frozen=True)
class Sample:
    video: Path
    questions: list[DemoQuestion]


@dataclass(frozen=True)
class Evidence:
    """Moments the answer rests on: frames read and transcript lines quoted."""

    frames: list[tuple[str, float, str]] = field(default_factory=list)  # level, time, text
    speech: list[tuple[float, float, str]] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)  # composite-memory lines, with times


@dataclass
class DemoOutcome:
    question: DemoQuestion
    result: Result
    evidence: Evidence

    @property
    def correct(self) -> bool:
        return self.result.answer == self.question.answer


@dataclass
class DemoReport:
    outcomes: list[DemoOutcome]
    memory_dir: Path
    build_s: float
    answer_s: float
    build_calls: int  # model calls the build made (0: the memory was current, or checkpoints)
    pages: list[Path] = field(default_factory=list)
    video: Path | None = None  # the video whose memory it is and whose questions were asked

    @property
    def score(self) -> tuple[int, int]:
        return sum(o.correct for o in self.outcomes), len(self.outcomes)


def demo_cache_dir() -> Path:
    """Where the demo keeps the sample's memory and its model replies between runs: one
    directory per installation (``installation_key``), so a fresh clone builds its own."""
    import videotapestry

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    package = Path(videotapestry.__file__).resolve().parent
    return (
        Path(base) / "videotapestry" / "demo" / installation_key(videotapestry.__version__, package)
    )


def installation_key(version: str, package_dir: Path) -> str:
    """``0.1.0-1a2b3c4d``: the package version and a short hash of the installed package's
    directory; every checkout (or environment) of one account gets a cache of its own."""
    from videotapestry.prompts import short_hash

    return f"{version}-{short_hash(str(package_dir))[:8]}"


def demo_memory_dir(video: Path, cache: Path | None = None) -> Path:
    """Where the demo keeps ``video``'s memory: one directory per video content, so the demo,
    the examples and a regenerated sample never share a memory by accident."""
    from videotapestry.video import fingerprint

    base = cache if cache is not None else demo_cache_dir()
    return base / "memories" / f"{video.stem}-{fingerprint(video)[:12]}"


def load_questions(path: str | Path) -> list[DemoQuestion]:
    """Questions in the shipped ``questions.json`` form (a list, or ``{"questions": [...]}``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VideoTapestryError(f"cannot read the demo questions {path}: {exc}") from None
    items = data.get("questions", []) if isinstance(data, dict) else data
    questions = []
    for number, item in enumerate(items, start=1):
        try:
            questions.append(
                DemoQuestion(
                    id=str(item.get("id", f"q{number}")),
                    question=str(item["question"]),
                    options=[str(o) for o in item["options"]],
                    answer=str(item["answer"]).strip().upper(),
                    evidence=str(item.get("evidence", "")),
                )
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise VideoTapestryError(
                f"{path}: question {number} lacks question, options or answer ({exc})"
            ) from None
    if not questions:
        raise VideoTapestryError(f"{path} holds no questions")
    return questions


def answer_evidence(result: Result) -> Evidence:
    """The observed moments and memory lines that name the chosen option.

    Visual observations report what was read with its time (``12:34-12:40: text``); ASR
    observations carry the transcript lines they quoted, already checked against the
    transcript; the composite memory holds what the Answer agent read. Only what names the
    chosen option is kept, so the display shows what the answer rests on.
    """
    chosen = _option_text(result)
    if not chosen:
        return Evidence()
    frames: list[tuple[str, float, str]] = []
    speech: list[tuple[float, float, str]] = []
    for outcome in result.levels:
        for observation in outcome.observations:
            if observation.kind == "asr":
                speech.extend(s for s in observation.evidence_lines if _names(chosen, s[2]))
                continue
            for line in re.split(r"\n|;\s+", observation.result):
                moment = _TIMED.match(line.strip())
                if moment and _names(chosen, moment[2]):
                    frames.append((outcome.level, parse_seconds(moment[1]), moment[2].strip()))
    memory = [
        part for line in result.memory_text.splitlines() for part in _naming_parts(chosen, line)
    ]
    return Evidence(_unique(frames), _unique(speech), _unique(memory))


def _naming_parts(option: str, line: str) -> list[str]:
    """A timed memory line that names the option; of a long line, the sentences that do,
    after the line's first time."""
    line = line.strip().removeprefix("- ")
    when = _TIME_RANGE.search(line)
    if when is None or not _names(option, line):
        return []
    if len(line) <= 200:
        return [line]
    parts = re.split(r"(?<=[.;!?\"])\s+", line)
    # A sentence that names its own time keeps it (not the line's, which may be far wider).
    return [
        p.strip() if _TIME_RANGE.search(p) else f"{when[0]}: {p.strip()}"
        for p in parts
        if _names(option, p)
    ][:2]


def memory_line_text(line: str) -> str:
    """A memory line as a person reads it: its own time (``03:32–04:18``), then its text
    without the memory's markup and ids (``views.citation_text.plain_text``)."""
    when = _TIME_RANGE.search(line)
    text = _TIME_RANGE.sub("", plain_text(line)) if when else plain_text(line)
    text = re.sub(r"^[\s\[\]():,;]+|[\s\[(]+$", "", re.sub(r"[\[(]\s*[\])]", "", text))
    if when is None:
        return text
    shown = "–".join(format_timestamp(parse_seconds(t)) for t in re.findall(_CLOCK, when[0]))
    return f"{shown}: {text}" if text else shown


async def run_demo(
    vt: VideoTapestry,
    sample: Sample,
    *,
    memory_dir: Path,
    rebuild: bool = False,
    progress: bool = True,
    on_outcome: Callable[[DemoOutcome], None] | None = None,
    html_dir: Path | None = None,
) -> DemoReport:
    """Build (or reuse) the sample's memory, then answer every question with ``vt``."""
    started = time.perf_counter()
    # The builder returns an up-to-date memory as it is, and otherwise redoes through its
    # checkpoints only what changed.
    build = await vt.abuild_memory(sample.video, memory_dir, restart=rebuild, progress=progress)
    build_calls = int(build.report.usage.get("calls", 0)) - int(
        build.report.usage.get("cached_calls", 0)
    )
    build_s = time.perf_counter() - started
    outcomes: list[DemoOutcome] = []
    answering = time.perf_counter()
    bar = _bar(len(sample.questions), progress)
    try:
        for question in sample.questions:
            result = await vt.aanswer(
                sample.video,
                memory_dir,
                question.question,
                question.options,
                question_id=question.id,
            )
            outcome = DemoOutcome(question, result, answer_evidence(result))
            outcomes.append(outcome)
            if bar is not None:
                bar.update(1)
            if on_outcome is not None:
                # The bar is wiped while the caller prints and redrawn below it after, so a
                # terminal never shows a line glued to the bar's end.
                with _bar_cleared(bar):
                    on_outcome(outcome)
    finally:
        if bar is not None:
            bar.close()
    report = DemoReport(
        outcomes,
        memory_dir,
        build_s,
        time.perf_counter() - answering,
        build_calls,
        video=sample.video,
    )
    if html_dir is not None:
        report.pages = _write_pages(outcomes, html_dir, sample.video)
    return report


def render_outcome(outcome: DemoOutcome, cited: Sequence[str] = ()) -> str:
    """A few lines per question: answer, right or wrong, levels, the times the answer cites
    (``cited``, as the command renders a result's citations), evidence, degradations."""
    question, result = outcome.question, outcome.result
    verdict = "right" if outcome.correct else f"WRONG (expected {question.answer})"
    chosen = _option_text(result) or "no usable letter"
    lines = [
        f"{question.id}: {question.question}",
        f"  answer {result.answer} — {chosen} ({verdict})",
        f"  levels: {' → '.join(result.levels_visited) or 'none'}",
        *(f"  {line}" for line in cited),
    ]
    for level, t, text in outcome.evidence.frames[:4]:
        lines.append(f"  frame {format_timestamp(t)} ({level}): {text}")
    for start, end, text in outcome.evidence.speech[:3]:
        lines.append(f"  said at {span_text(start, end)}: “{_shorten(text, 160)}”")
    for line in outcome.evidence.memory[:3]:
        lines.append(f"  memory: {_shorten(memory_line_text(line), 160)}")
    evidence = outcome.evidence
    if not (evidence.frames or evidence.speech or evidence.memory):
        lines.append("  evidence: nothing observed or stored names this option")
    if result.reasoning:
        because = shown_text(result.reasoning, node_spans(result))
        lines.append(f"  because: {_shorten(because, 200)}")
    lines.extend(f"  warning: {w.render()}" for w in result.warnings)
    lines.extend(f"  degraded: {d.render()}" for d in result.degraded)
    return "\n".join(lines)


def render_summary(report: DemoReport) -> str:
    right, total = report.score
    memory = f"built ({report.build_calls} model calls)" if report.build_calls else "cached"
    lines = [
        f"{right}/{total} right · memory {memory}, {report.build_s:.1f} s · answering "
        f"{report.answer_s:.1f} s",
        f"video:  {report.video}" if report.video is not None else "",
        f"memory: {report.memory_dir}",
    ]
    return "\n".join(line for line in lines if line)


# -- internals ------------------------------------------------------------------------------

_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
_TIMED = re.compile(rf"^\[?({_CLOCK})(?:\s*-\s*{_CLOCK})?\]?\s*[:\-–]\s*(.+)$")
_TIME_RANGE = re.compile(rf"{_CLOCK}\s*-\s*{_CLOCK}|@{_CLOCK}")


def _words(text: str) -> list[str]:
    return re.findall(r"[0-9a-z]+", text.casefold())


def _names(option: str, text: str) -> bool:
    """Whether ``text`` names the option: its whole text (spaces aside, as OCR drops them)
    or most of its longer words."""
    squashed = "".join(_words(text))
    if "".join(_words(option)) in squashed:
        return True
    wanted = [w for w in dict.fromkeys(_words(option)) if len(w) > 3 and w not in _COMMON]
    present = set(_words(text))
    return bool(wanted) and sum(w in present for w in wanted) * 2 >= len(wanted) + 1


_COMMON = frozenset(
    ("where", "what", "which", "when", "with", "from", "that", "this", "will", "have", "there")
)


def _option_text(result: Result) -> str:
    for letter, option in zip(option_letters(result.options), result.options, strict=True):
        if letter == result.answer:
            return option_body(option)
    return ""


def _unique(items: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="answering", unit="question", leave=False)


@contextmanager
def _bar_cleared(bar: Any) -> Iterator[None]:
    if bar is None:
        yield
        return
    with type(bar).external_write_mode():
        yield


def _write_pages(outcomes: list[DemoOutcome], out_dir: Path, video: Path) -> list[Path]:
    """One page per question, each marked against the sample's answer key."""
    from videotapestry.views.trace_html import write_question_pages

    answers = {o.result.question_id: o.question.answer for o in outcomes}
    return write_question_pages([o.result for o in outcomes], out_dir, video=video, answers=answers)
