"""Reading a rendered prompt back into its parts: question, options, memories, lines, limits.

The offline model is given exactly what a VLM would be given, the rendered prompt text (and
images), not the program's Python objects, so its rules see only what the prompt shows and
a user's prompt override is read the same way. The formats read here are the ones the
program writes: memory lines ``id [mm:ss-mm:ss] text`` (``@mm:ss`` for an entity) with
continuation lines below them, transcript lines ``[mm:ss-mm:ss] text``, the locator's
``N. [mm:ss-mm:ss] (start-end s) ...`` windows, and section headers at the start of a line.
Everything here is a pure function of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from videotapestry.contracts.fields import parse_seconds
from videotapestry.images import ImagePart
from videotapestry.llm.types import ModelRequest
from videotapestry.question import option_body, option_label

CLOCK = r"\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?"
_ENTRY = re.compile(
    rf"^(?P<indent>[ \t]*)(?P<bullet>- )?(?P<id>[A-Za-z][\w.:-]*) "
    rf"\[(?P<when>@?{CLOCK}(?:-{CLOCK})?)\](?: (?P<text>.*))?$"
)
_TRANSCRIPT = re.compile(rf"^\s*\[(?P<start>{CLOCK})-(?P<end>{CLOCK})\] (?P<text>.*\S)\s*$")
_LOCATOR_WINDOW = re.compile(
    r"^\s*(?P<rank>\d+)\. \[[^\]]*\] \((?P<start>\d+(?:\.\d+)?)-(?P<end>\d+(?:\.\d+)?) s\)"
    r"(?P<rest>.*)$"
)
_OPTION = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])[.):])\s+\S")
_FACT = re.compile(rf"^\s*(?P<start>{CLOCK})(?:-(?P<end>{CLOCK}))?: (?P<text>.*\S)\s*$")


@dataclass(frozen=True)
class PromptView:
    """One request as the offline model reads it: prompt name, texts, images, level."""

    name: str
    system: str
    user: str
    images: tuple[ImagePart, ...] = ()
    level: str | None = None

    @classmethod
    def of(cls, request: ModelRequest) -> PromptView:
        name = request.prompt_name or (request.json_spec.name if request.json_spec else "")
        system = "\n".join(m.text for m in request.messages if m.role == "system")
        users = [m for m in request.messages if m.role == "user"]
        return cls(
            name=name or "",
            system=system,
            user=users[0].text if users else "",
            images=tuple(image for m in request.messages for image in m.images),
            level=request.level,
        )


def seconds(clock: str) -> float:
    """Seconds from ``mm:ss``, ``h:mm:ss`` or a plain number."""
    return parse_seconds(clock)


#: The lines that begin the question (``_question.jinja``: the earlier turns of a conversation,
#: then ``Question:``). Prompts put the question last, after what repeats across questions
#: (SPEC §17, for providers' prefix caches), so a section that ran to the end stops there.
QUESTION_HEADERS = ("Earlier in this conversation", "Question:")


def section(text: str, header: str, *stops: str) -> str:
    """The text after the line that starts with ``header``, up to the first line that starts
    with one of ``stops`` (or the end). Empty when the header is missing."""
    match = re.search(rf"^{re.escape(header)}", text, re.M)
    if match is None:
        return ""
    tail = text[match.end() :]
    end = len(tail)
    for stop in stops:
        found = re.search(rf"^{re.escape(stop)}", tail, re.M)
        if found is not None:
            end = min(end, found.start())
    return tail[:end].strip("\n")


def field_value(text: str, name: str) -> str:
    """The rest of the line ``name: value`` (first occurrence), or ''."""
    match = re.search(rf"^{re.escape(name)}:[ \t]*(.*)$", text, re.M)
    return match.group(1).strip() if match else ""


def number_after(text: str, pattern: str, default: float) -> float:
    """The first number matched by ``pattern`` (one group) in ``text``, else ``default``."""
    match = re.search(pattern, text)
    if match is None:
        return default
    try:
        return float(match.group(1))
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class QuestionView:
    question: str
    options: tuple[str, ...]  # as shown ("A. text")

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(option_label(o) or "?" for o in self.options)

    @property
    def bodies(self) -> tuple[str, ...]:
        return tuple(option_body(o) for o in self.options)


def read_question(text: str) -> QuestionView:
    """``Question: ...`` and the labelled option lines under ``Options:`` (``_question``);
    a free-form question (no options) has none."""
    free = re.search(r"^Question: (.*?)\n\(A free-form question", text, re.M | re.S)
    if free is not None:
        return QuestionView(free.group(1).strip(), ())
    match = re.search(r"^Question: (.*?)\nOptions:\n", text, re.M | re.S)
    if match is None:
        return QuestionView("", ())
    options = []
    for line in text[match.end() :].split("\n"):
        if not line.strip():
            break
        if _OPTION.match(line):
            options.append(line.strip())
        elif options:  # a wrapped option continues on the next line
            options[-1] += " " + line.strip()
        else:
            break
    return QuestionView(match.group(1).strip(), tuple(options))


@dataclass(frozen=True)
class Entry:
    """One memory line (and the lines that continue it): ``id [start-end] text``."""

    id: str
    start: float
    end: float
    head: str
    body: tuple[str, ...] = ()
    indent: int = 0
    bullet: bool = False

    @property
    def text(self) -> str:
        return "\n".join([self.head, *self.body]).strip()

    @property
    def span(self) -> tuple[float, float]:
        return (self.start, self.end)


def _entry_times(value: str) -> tuple[float, float]:
    """The start and end of a memory line's ``[mm:ss-mm:ss]`` (``[@mm:ss]``: one moment)."""
    if value.startswith("@"):
        t = seconds(value[1:])
        return t, t
    start, _, end = _split_range(value)
    a = seconds(start)
    return a, seconds(end) if end else a


def _split_range(value: str) -> tuple[str, str, str]:
    match = re.fullmatch(rf"({CLOCK})-({CLOCK})", value)
    return (match.group(1), "-", match.group(2)) if match else (value, "", "")


def _entry_head(match: re.Match[str]) -> Entry:
    """The entry a memory line starts, without the lines that continue it."""
    try:
        start, end = _entry_times(match.group("when"))
    except ValueError:
        start = end = 0.0
    return Entry(
        id=match.group("id"),
        start=start,
        end=end,
        head=(match.group("text") or "").strip(),
        indent=len(match.group("indent").expandtabs(4)),
        bullet=bool(match.group("bullet")),
    )


def read_entries(text: str, *, top_level: bool = True) -> list[Entry]:
    """Memory lines in ``text``. With ``top_level`` only unindented, unbulleted lines start an
    entry and everything below one belongs to it (a Focus evidence block, ``[Visual]``
    parts); otherwise every line that looks like a memory line is an entry of its own."""
    entries: list[Entry] = []
    current: Entry | None = None
    body: list[str] = []
    for line in text.split("\n"):
        match = _ENTRY.match(line)
        if match is not None and (
            not top_level or (not match.group("indent") and not match.group("bullet"))
        ):
            if current is not None:
                entries.append(replace(current, body=tuple(body)))
            current, body = _entry_head(match), []
        elif current is not None and line.strip():
            body.append(line.strip())
    if current is not None:
        entries.append(replace(current, body=tuple(body)))
    return entries


@dataclass(frozen=True)
class Line:
    """A transcript line as the prompt shows it; ``raw`` is kept for verbatim quoting."""

    start: float
    end: float
    text: str
    raw: str


def read_transcript(text: str) -> list[Line]:
    lines = []
    for raw in text.split("\n"):
        match = _TRANSCRIPT.match(raw)
        if match:
            lines.append(
                Line(
                    seconds(match.group("start")),
                    seconds(match.group("end")),
                    match.group("text").strip(),
                    raw.strip(),
                )
            )
    return lines


@dataclass(frozen=True)
class Fact:
    """One timestamped statement of an observation, as the offline observation writes it
    (``mm:ss: text`` or ``mm:ss-mm:ss: text``), or a quoted transcript line."""

    start: float
    end: float
    text: str


def read_facts(text: str) -> list[Fact]:
    """Timestamped facts in an observation result (one per line or ``;``-separated)."""
    facts = []
    for raw in re.split(r"\n|; (?=\d{1,2}:\d{2})", text):
        match = _FACT.match(raw)
        if match:
            start = seconds(match.group("start"))
            end = seconds(match.group("end")) if match.group("end") else start
            facts.append(Fact(start, end, match.group("text").strip()))
            continue
        line = _TRANSCRIPT.match(raw)
        if line:
            facts.append(
                Fact(seconds(line.group("start")), seconds(line.group("end")), line.group("text"))
            )
    return facts


@dataclass(frozen=True)
class Source:
    """One block of ``observation_sources`` / ``Observations at this level``."""

    id: str
    kind: str  # visual | transcript
    windows: tuple[tuple[float, float], ...]
    result: str
    facts: tuple[Fact, ...] = field(default=())


_SOURCE_HEAD = re.compile(
    r"^(?P<id>[AV]\d+) \((?P<kind>visual|transcript); (?P<windows>[^)]*)\): ?"
)


def read_sources(text: str) -> list[Source]:
    """Observation blocks ``V1 (visual; 05:20-15:20): result`` with their continuation lines."""
    blocks: list[tuple[re.Match, list[str]]] = []
    for line in text.split("\n"):
        match = _SOURCE_HEAD.match(line)
        if match:
            blocks.append((match, [line[match.end() :]]))
        elif blocks and not line.strip().startswith("uncertain:"):
            blocks[-1][1].append(line)
    sources = []
    for match, lines in blocks:
        windows = []
        for part in match.group("windows").split(","):
            start, _, end = _split_range(part.strip())
            if end:
                windows.append((seconds(start), seconds(end)))
        result = "\n".join(lines).strip()
        sources.append(
            Source(
                id=match.group("id"),
                kind=match.group("kind"),
                windows=tuple(windows),
                result=result,
                facts=tuple(read_facts(result)),
            )
        )
    return sources


@dataclass(frozen=True)
class LocatorWindow:
    rank: int
    start: float
    end: float
    matches: str


def read_locator(text: str) -> tuple[list[LocatorWindow], list[str]]:
    """The locator's candidate windows (best first) and its unresolved anchors."""
    windows = []
    for line in text.split("\n"):
        match = _LOCATOR_WINDOW.match(line)
        if match:
            windows.append(
                LocatorWindow(
                    int(match.group("rank")),
                    float(match.group("start")),
                    float(match.group("end")),
                    match.group("rest").strip(),
                )
            )
    unresolved = re.findall(r"'([^']*)'", field_value(text, "unresolved_anchors"))
    return windows, unresolved


def grid_shape_hint(text: str) -> tuple[int, int] | None:
    """(columns, rows) when the prompt says "a grid of N frames in C columns and R rows"."""
    match = re.search(r"in (\d+) columns and (\d+) rows", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]
