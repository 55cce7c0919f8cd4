"""Reading a question relative to now against the time the memory covers (SPEC §16).

"What was on the whiteboard in the last 10 minutes?" means nothing to a level agent: it sees
a memory and a question, not a clock. Resolving it in code, before the method runs, gives
every agent (and every model, the offline one included) the same explicit question,
"between 08:00 and 10:00", like the follow-up resolver does for "right after that". Now is
the video time the memory covers (``VideoMemory.duration``): for a memory still being
recorded that is the newest version's covered time; for a finished video "the last 10
minutes" means its last 10 minutes, so the same reading holds for every memory.

Resolved: "in/over/during the last (or past) N seconds/minutes/hours" (digits or number
words one..sixty; "the last minute", "the past hour"), "just now" / "a moment ago" (the last
``JUST_NOW_S``), "N minutes ago" (a moment: N minutes before now, give or
take ``AGO_MARGIN_S``), and "since the start" / "so far" / "from the beginning" (00:00 to
now). A window reaching before 00:00 is clipped there.

The question the agents are given is the resolved one (``with_relative_time``; ``asked``
keeps the user's words, a follow-up's when "after that" was resolved first), and each window
is handed to the Overview agent as a hint (``QUESTION_WINDOW``), which places its look there.
Every level follows it the same way (``question_windows``): a level's selection is kept to
the nodes the window overlaps (``choose_in_window``) and the Skim and Focus agents' looks to
their candidates' time inside it (``look_in_window``); a choice that lay outside is moved and
the level records a ``moved_to_question_window`` warning.

A question that names a moment the memory does not cover (a clock time or "at minute N"
past now, or "N minutes ago" before the start) is not resolved but reported
(``RelativeTime.past_covered``): the caller answers with that message instead of letting
the agents guess about video they have not seen. Pure functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from videotapestry.agents.state import MomentHint, QuestionInput
from videotapestry.timecode import format_timestamp

#: The ``MomentHint.level`` of a window a question relative to now was resolved to: the
#: Overview agent is shown it apart from a library search's hits.
QUESTION_WINDOW = "question_window"
#: What "just now" and "a moment ago" mean: the last minute of what is covered.
JUST_NOW_S = 60.0
#: "10 minutes ago" is a moment, not an instant: this much either side of it.
AGO_MARGIN_S = 30.0
#: How far past the covered time a named moment may lie and still count as covered (clock
#: times in a question are whole seconds; the covered time has a fraction).
PAST_COVERED_TOLERANCE_S = 1.0

_UNITS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}


def _number_words() -> dict[str, int]:
    words = {word: n for n, word in enumerate(_UNITS, 1)}
    words.update({word: n for n, word in enumerate(_TEENS, 10)})
    for tens, value in _TENS.items():
        words[tens] = value
        if value < 60:
            for n, unit in enumerate(_UNITS, 1):
                words[f"{tens}-{unit}"] = words[f"{tens} {unit}"] = value + n
    return words


#: "one" .. "sixty", "twenty-five" and "twenty five" alike.
NUMBER_WORDS = _number_words()
_WORD_ALTERNATIVES = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_NUMBER = rf"(?:\d+(?:\.\d+)?|{_WORD_ALTERNATIVES}|an|a)"
_UNIT = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?)"
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}

#: "in the last 10 minutes", "over the past hour", "the last two mins", "the last half hour".
_LAST = re.compile(
    rf"(?<!\bat )(?<!\bat the )\b(?:(?:in|over|during|within|for|from) )?(?:the )?(?:last|past) "
    rf"(?:(?P<half>half an? |half (?=hour))|(?P<n>{_NUMBER}) )?(?P<unit>{_UNIT})\b",
    re.I,
)
#: "just now", "a moment ago", "moments ago", "a few seconds ago" (not "right now", which
#: a question about a finished video may mean of the moment it shows, not of its end).
_JUST_NOW = re.compile(
    r"\b(?:just now|a (?:moment|second) ago|moments ago|a few (?:moments|seconds) ago)\b",
    re.I,
)
#: "10 minutes ago", "an hour ago", "half an hour ago".
_AGO = re.compile(
    rf"\b(?:(?P<half>half an? )|(?P<n>{_NUMBER}) )(?P<unit>{_UNIT}) ago\b",
    re.I,
)
#: "since the start", "so far", "from the beginning (until now)", "up to now".
_SINCE_START = re.compile(
    r"\b(?:(?:ever )?since the (?:start|beginning)(?! of\b)"
    r"|from the (?:start|beginning)(?: (?:until|till|to|up to) now)?"
    r"(?! (?:of|to|until|till|through)\b)"
    r"|so far|up (?:to|until) now|until now)\b",
    re.I,
)
#: A clock time in the question: "05:00", "1:02:03" (not a time of day, "10:30 am").
_CLOCK = re.compile(
    r"(?<![\d:.])(?:(?P<h>\d{1,2}):)?(?P<m>\d{1,3}):(?P<s>[0-5]\d)(?![\d:])"
    r"(?!\s*(?:am|pm|a\.m\.|p\.m\.|o'?clock)\b)",
    re.I,
)
#: "at minute 5", "minute 12", "5 minutes in," / "5 minutes into the video", "the 5-minute
#: mark" (not "10 minutes in the kitchen").
_MINUTE_MARK = re.compile(
    rf"\bminute (?P<a>\d+)\b|\b(?P<b>{_NUMBER}) minutes? "
    r"(?:into the (?:video|recording|stream)\b|in(?=\s*(?:[,?.!]|$)))"
    rf"|\bthe (?P<c>\d+)[- ]minute mark\b",
    re.I,
)


@dataclass(frozen=True)
class RelativeTime:
    """A question with its references to now replaced by explicit windows: ``question``
    as the agents are given it, ``asked`` the user's words (empty when nothing was
    resolved), ``windows`` the resolved spans in seconds, and ``past_covered`` what to say
    instead of answering when the question names a moment the memory does not cover."""

    question: str
    asked: str = ""
    windows: tuple[tuple[float, float], ...] = field(default=())
    past_covered: str = ""

    @property
    def window(self) -> tuple[float, float] | None:
        """The span every resolved window lies in; None when nothing was resolved."""
        if not self.windows:
            return None
        return (min(s for s, _ in self.windows), max(e for _, e in self.windows))


def resolve_relative_time(question: str, now_s: float, *, live: bool = False) -> RelativeTime:
    """``question`` with "in the last 10 minutes", "just now", "5 minutes ago" and "since the
    start" replaced by explicit windows ending at ``now_s`` (the time the memory covers);
    ``live``: the memory is still being recorded (said in ``past_covered``). Unchanged when
    the question says none of these."""
    now_s = max(0.0, float(now_s))
    span = f"00:00-{format_timestamp(now_s)}"
    covered = f"the recording so far covers {span}" if live else f"the video covers {span}"
    past = _past_covered(question, now_s)
    if past:
        named = ", ".join(past)
        return RelativeTime(question, past_covered=f"{covered}; {named} {_is(past)} past that")
    windows: list[tuple[float, float]] = []
    before_start: list[str] = []

    def between(start: float, end: float) -> str:
        start, end = max(0.0, start), max(0.0, min(end, now_s))
        windows.append((start, end))
        return f"between {format_timestamp(start)} and {format_timestamp(end)}"

    def last(match: re.Match[str]) -> str:
        if not (match["n"] or match["half"]) and match["unit"].lower().endswith("s"):
            return match[0]  # "in the last minutes": how many is not said
        return between(now_s - _seconds(match), now_s)

    def ago(match: re.Match[str]) -> str:
        at = now_s - _seconds(match)
        if at + AGO_MARGIN_S < 0:
            before_start.append(match[0])
            return match[0]
        start, end = at - AGO_MARGIN_S, at + AGO_MARGIN_S
        window = between(start, end)
        return f"at about {format_timestamp(max(0.0, at))} ({window})"

    resolved = _LAST.sub(last, question)
    resolved = _AGO.sub(ago, resolved)
    resolved = _JUST_NOW.sub(lambda _: between(now_s - JUST_NOW_S, now_s), resolved)
    resolved = _SINCE_START.sub(lambda _: between(0.0, now_s), resolved)
    if before_start:
        named = ", ".join(repr(words) for words in before_start)
        return RelativeTime(
            question,
            past_covered=f"{covered}; {named} {_is(before_start)} before its start",
        )
    if resolved == question:
        return RelativeTime(question)
    if question[:1].isupper():  # "Since the start, ..." -> "Between 00:00 and ..., ..."
        resolved = resolved[:1].upper() + resolved[1:]
    return RelativeTime(resolved, asked=question, windows=tuple(windows))


def _is(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


def _seconds(match: re.Match[str]) -> float:
    """How long "N units" / "half an hour" in ``match`` is, in seconds."""
    per = _UNIT_SECONDS[match["unit"][0].lower()]
    if match["half"]:
        return per / 2
    return _amount(match["n"]) * per


def _amount(number: str | None) -> float:
    if number is None:
        return 1.0
    word = number.lower()
    if word in ("a", "an"):
        return 1.0
    if word in NUMBER_WORDS:
        return float(NUMBER_WORDS[word])
    return float(word)


def _past_covered(question: str, now_s: float) -> list[str]:
    """The moments ``question`` names (clock times, "at minute N") that lie past ``now_s``,
    as written."""
    bound = now_s + PAST_COVERED_TOLERANCE_S
    past = []
    for match in _CLOCK.finditer(question):
        seconds = int(match["h"] or 0) * 3600 + int(match["m"]) * 60 + int(match["s"])
        if seconds > bound:
            past.append(match[0])
    for match in _MINUTE_MARK.finditer(question):
        minutes = _amount(match["a"] or match["b"] or match["c"])
        if minutes * 60 > bound:
            past.append(match[0])
    return past


def window_hints(resolved: RelativeTime) -> list[MomentHint]:
    """The resolved windows as hints for the Overview agent: where the question looks."""
    return [
        MomentHint(
            start_s=start,
            end_s=end,
            text=f"the question asked {resolved.asked!r}",
            level=QUESTION_WINDOW,
        )
        for start, end in resolved.windows
    ]


def relative_time_for(
    question: str, now_s: float, *, mode: str, recording: bool | None
) -> RelativeTime | None:
    """``resolve_relative_time`` when ``question.relative_time`` (``mode``) asks for it:
    ``recording`` is None for an ordinary memory, else whether its stream still runs."""
    if mode == "never" or (mode == "live" and recording is None):
        return None
    return resolve_relative_time(question, now_s, live=bool(recording))


def with_relative_time(item: QuestionInput, resolved: RelativeTime | None) -> QuestionInput:
    """``item`` asked with ``resolved``'s explicit question, its windows first among the
    hints; ``asked`` keeps the user's words (a follow-up's, when one was resolved first)."""
    if resolved is None or not resolved.asked:
        return item
    return item.model_copy(
        update={
            "question": resolved.question,
            "asked": item.asked or resolved.asked,
            "hints": [*window_hints(resolved), *item.hints],
        }
    )


# --------------------------------------------------------------------------- following the window

Span = tuple[float, float]


def question_windows(hints: Sequence[MomentHint]) -> list[Span]:
    """The windows a question relative to now was resolved to, as its hints carry them (empty
    for every other question: then no level changes anything)."""
    return [(h.start_s, h.end_s) for h in hints if h.level == QUESTION_WINDOW]


def meets_window(span: Span, window: Span) -> bool:
    """Whether ``span`` lies at least partly inside ``window``: a shared stretch of time, or
    for a zero-length window or span, one containing the other (a node that merely ends where
    the window starts does not count)."""
    if window[0] == window[1] or span[0] == span[1]:
        return span[0] <= window[1] and window[0] <= span[1]
    return span[0] < window[1] and window[0] < span[1]


@dataclass(frozen=True)
class WindowChoice:
    """A level's choice of nodes after the question's window: ``chosen`` as kept or placed,
    ``outside`` the ids of the original choice that lay outside the window (dropped), and
    ``placed`` when none lay inside, so the choice was put on the nodes the window
    overlaps."""

    chosen: tuple[str, ...]
    outside: tuple[str, ...] = ()
    placed: bool = False

    @property
    def moved(self) -> bool:
        """Whether the original choice was changed (what the level records as a warning)."""
        return self.placed or bool(self.outside)


def choose_in_window(
    chosen: Sequence[str], spans: Mapping[str, Span], windows: Sequence[Span]
) -> WindowChoice:
    """``chosen`` (ids of nodes whose times ``spans`` gives) kept to those ``windows`` overlap;
    when none of them does, placed on every node of ``spans`` the windows overlap, in the
    order of ``spans``.

    Unchanged when there is no window, nothing was chosen, or no node of ``spans`` meets a
    window (nothing to place the choice on); ids ``spans`` does not know are the caller's
    to validate and are kept. A question names its window outright ("between 08:00 and
    10:00"), so a level that chose elsewhere is not answering it."""
    chosen = list(dict.fromkeys(chosen))
    inside = [i for i, span in spans.items() if any(meets_window(span, w) for w in windows)]
    if not windows or not chosen or not inside:
        return WindowChoice(tuple(chosen))
    wanted = set(inside)
    outside = tuple(i for i in chosen if i in spans and i not in wanted)
    kept = tuple(i for i in chosen if i not in outside)
    if any(i in wanted for i in kept):
        return WindowChoice(kept, outside)
    return WindowChoice(tuple(inside), outside, placed=True)


@dataclass(frozen=True)
class WindowLook:
    """Where a level may look after the question's window: ``intervals``, its candidates'
    intervals cut to the window (its planned ranges are intersected with these, and when
    none meets them, these are the look); ``outside`` the planned ranges that reach outside
    the window; ``placed`` when none of them meets it, so the look is put on the window."""

    intervals: tuple[Span, ...]
    outside: tuple[Span, ...] = ()
    placed: bool = False

    @property
    def moved(self) -> bool:
        """Whether the planned look was changed (what the level records as a warning)."""
        return self.placed or bool(self.outside)


def look_in_window(
    planned: Sequence[Span], intervals: Sequence[Span], windows: Sequence[Span]
) -> WindowLook:
    """The candidates' ``intervals`` cut to ``windows``, and what that does to the ``planned``
    ranges (malformed ones are left to the observation's own validation).

    Unchanged when there is no window or no interval meets one (nothing to look at inside
    it); an empty plan moves nothing (the look is then the intervals inside the window)."""
    inside = [
        (max(s, a), min(e, b))
        for s, e in intervals
        for a, b in windows
        if meets_window((s, e), (a, b))
    ]
    if not windows or not inside:
        return WindowLook(tuple(intervals))
    plans = [(s, e) for s, e in planned if math.isfinite(s) and math.isfinite(e) and s <= e]
    outside = tuple(p for p in plans if not any(a <= p[0] and p[1] <= b for a, b in windows))
    placed = bool(plans) and not any(meets_window(p, i) for p in plans for i in inside)
    return WindowLook(tuple(inside), outside, placed)
