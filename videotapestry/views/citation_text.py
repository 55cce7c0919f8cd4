"""Citations a person reads: each claim in words, each source as its kind and its time.

Every view of an answer (``ask`` and ``chat``, the demo, the trace page and the notebook, the
web app, the MCP tools) shows a citation the same way, from these functions: a frame as
``frame at 04:18``, a transcript line as ``said at 03:12–03:16: “…”``, an OCR text stored in
the memory as ``on screen at 03:32–04:18: “Door code 4417”``, another stored node as
``memory, 00:37–01:47: its first words…``. One time convention holds throughout: a source's
moment is where a click on it seeks to (``seek_s``: a frame's own timestamp, else the start
of its span), and a span is written ``start–end``.

Internal ids (a frame's ``F3``, a stored node's ``slot2_o11``) are the structure's handles,
not words: they stay in ``--json`` and the trace's detail view, and never reach a shown
text. Claims and stored texts can carry the memory's prompt markup (a model quoting a memory
line, ``- slot2_o11 [03:32-04:18] "5/20" (scene_text): read by OCR``); ``plain_text`` takes
that markup out.

All functions here are pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from videotapestry.agents.state import Citation, EvidenceRef, LevelOutcome
from videotapestry.timecode import format_timestamp

if TYPE_CHECKING:
    from videotapestry.result import Result

#: How long a quoted transcript line or stored text may be before it is trimmed.
QUOTE_CHARS = 80
#: How many characters of a stored node's text stand for it (``memory, 00:37–01:47: …``).
MEMORY_CHARS = 60

_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
_RANGE = rf"@?{_CLOCK}(?:\s*[-–]\s*{_CLOCK})?"
#: The ids of the shipped memory builders and formats: ``slot2_o11``, ``macro_0003``,
#: ``super_01``, ``clip_0004``, ``root_0``.
NODE_ID = re.compile(r"\b(?:slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+|root_\d+)\b")
#: A memory line's head, as ``memory.prompt_text`` writes one: ``- <id> [<time>]`` (an id is
#: one token holding a digit or an underscore), or a subgraph's ``Subgraph of <id> [<time>]``.
_HEAD = re.compile(
    r"(?:(?<=\s)|^)(?:-\s+)?(?:Subgraph of\s+)?(?=[\w.:]*[\d_])[\w.:]+\s+"
    rf"\[(?P<time>{_RANGE})\]:?\s*"
)
#: A time leading a line or a moment (``03:33-04:18: …``, ``[03:32]``).
_LEADING_TIME = re.compile(rf"^(?:\[?{_RANGE}\]?:?\s+)+")
#: What a memory line appends after its text: ``| subject: slot2_e1``, ``| in: super_01``.
_TAIL = re.compile(r"\s*\|\s*(?:subject|object|in|attributes|key entities|themes):[^|]*")
#: A kind label in parentheses: ``(scene_text)`` anywhere, a one-word ``(speech)`` before
#: the description it heads; and the builder's note on an OCR text.
_KIND_TAG = re.compile(r"\s*\((?:[a-z]+_[a-z_]+|[a-z]+(?=\):))\)")
_OCR_NOTE = re.compile(r":?\s*read by OCR\b[.;]?")
#: Ids a model cites inline: ``[F3]``, ``[S3-S9]``, ``(T2, K4)``.
_REF_IDS = re.compile(r"\s*[\[(](?:[SKFTD]\d+)(?:\s*[-–,;]\s*[SKFTD]?\d+)*[\])]")
#: A parenthesis a cut left open at the end (``"Gate B" (scene_te``).
_CUT_OPEN = re.compile(r"\s*\([^)]*$")


def seek_s(source: EvidenceRef) -> float:
    """Where a click on ``source`` seeks to: a frame's own timestamp, else its span's start."""
    return source.at_s if source.at_s is not None else source.start_s


def span_text(start_s: float, end_s: float) -> str:
    """``03:12–03:16``; one time when both ends print the same."""
    start, end = format_timestamp(max(0.0, start_s)), format_timestamp(max(0.0, end_s))
    return start if start == end else f"{start}–{end}"


def moment_text(source: EvidenceRef, decimals: int = 0) -> str:
    """A source's time as every view writes it: a frame's timestamp (``04:18``; with
    ``decimals`` where a page must tell close frames apart), else its span
    (``03:12–03:16``), which starts where a click seeks to."""
    if source.at_s is not None:
        return format_timestamp(max(0.0, source.at_s), decimals)
    return span_text(source.start_s, source.end_s)


def kind_words(source: EvidenceRef) -> str:
    """What a source is, before its time: ``frame at``, ``said at``, ``on screen at``,
    ``memory,``."""
    if source.kind == "frame":
        return "frame at"
    if source.kind == "transcript_line":
        return "said at"
    return "on screen at" if source.node_kind == "OCRText" else "memory,"


def trimmed(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line, cut at a word before ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:/-") + "…"


def plain_text(text: str) -> str:
    """``text`` without the memory's markup and internal ids: the heads of memory lines
    (``- slot2_o11 [03:32-04:18]``) and a leading time, their tails (``| in: super_01``),
    kind labels (``(scene_text)``), the builder's ``read by OCR``, inline cited ids
    (``[F3]``) and any id of the shipped builders left standing."""
    text = " ".join(text.split())
    text = _LEADING_TIME.sub("", text)
    text = _HEAD.sub("", text)
    text = _LEADING_TIME.sub("", text)
    for pattern in (_TAIL, _KIND_TAG, _OCR_NOTE, _REF_IDS):
        text = pattern.sub("", text)
    text = NODE_ID.sub("", text)
    cut = _CUT_OPEN.search(text)
    if cut is not None:
        text = text[: cut.start()] + "…"
    text = re.sub(r"\s+([,;:.])", r"\1", text)
    text = re.sub(r"(?:\s*/\s*…?)+$", "", text)
    text = re.sub(r"\s{2,}", " ", text).strip(" -;,|")
    if len(text) >= 2 and text[0] == text[-1] == '"' and text.count('"') == 2:
        text = text[1:-1]
    return text.strip()


def claim_text(claim: str) -> str:
    """A claim in words: its markup and ids taken out, trimmed to a readable length."""
    return trimmed(plain_text(claim), 200) or "(no claim stated)"


def source_text(
    source: EvidenceRef,
    when: str | None = None,
    *,
    texts: Mapping[str, str] | None = None,
    claim: str = "",
) -> str:
    """One source as its kind, its time and a short quote: ``frame at 04:18``,
    ``said at 03:12–03:16: “…”``, ``on screen at 03:32–04:18: “Door code 4417”``,
    ``memory, 00:37–01:47: its first words…``; ``when`` its time written otherwise (the
    trace page's decimals), else ``moment_text``. With the stored nodes' ``texts``
    (``stored_texts``) a stored span reads as its own words, those nearest the ``claim``,
    not as its title (``source_words``)."""
    head = f"{kind_words(source)} {when or moment_text(source)}"
    words = source_words(source, texts, claim)
    if not words:
        return head
    if source.kind == "transcript_line" or source.node_kind == "OCRText":
        return f"{head}: “{trimmed(words)}”"
    return f"{head}: {trimmed(words, MEMORY_CHARS)}"


def sources_text(
    sources: Sequence[EvidenceRef], *, texts: Mapping[str, str] | None = None, claim: str = ""
) -> list[str]:
    """The sources of one citation in order, its frames as one item where the first is:
    ``frames at 04:13, 04:17, 04:18`` (``texts`` and ``claim`` as for ``source_text``)."""
    frames = [moment_text(s) for s in sources if s.kind == "frame"]
    shown: list[str] = []
    for source in sources:
        if source.kind != "frame" or len(frames) == 1:
            shown.append(source_text(source, texts=texts, claim=claim))
        elif frames:
            shown.append(f"frames at {', '.join(dict.fromkeys(frames))}")
            frames = []
    return shown


def citation_text(citation: Citation, texts: Mapping[str, str] | None = None) -> str:
    """A citation on one line: ``claim — frame at 04:18; said at 03:12–03:16: “…”``."""
    sources = sources_text(citation.sources, texts=texts, claim=citation.claim)
    return f"{claim_text(citation.claim)} — {'; '.join(sources)}"


# --------------------------------------------------------------------------- stored spans

#: A stored node's id with the time written beside it: ``slot3_o6 [03:32-04:18]`` (a memory
#: line's head), ``macro_0003 (03:00-05:30)``, ``slot3_e6 [@03:32]``.
_ID_TIME = re.compile(
    rf"(?P<id>{NODE_ID.pattern})\s*[\[(]@?(?P<start>{_CLOCK})(?:\s*[-–]\s*(?P<end>{_CLOCK}))?[\])]"
)
#: A memory line's list dash before its time (``… / - 03:32–04:18 "5 / 20"``).
_DASH = re.compile(rf"(?:(?<=\s)|^)-\s+(?={_CLOCK})")
#: A time followed at once by another (a moment's time before its quoted line's own,
#: ``03:33-04:18: 03:32–04:18``): the first goes.
_TWICE = re.compile(rf"{_RANGE}:?\s+(?={_RANGE})")
#: A memory line's tail within one quoted line (``| object: slot3_e1``), up to the next line.
_LINE_TAIL = re.compile(r"\s*\|\s*(?:subject|object|in|attributes|key entities|themes):[^|/\";\n]*")
#: What a span's text says that its shown time already says: the builder's ``From 03:00 to
#: 05:30`` before it, a quoted text's time in parentheses (``"4 / 20" (03:00-03:32)``).
_FROM_TO = re.compile(rf"^From {_CLOCK} to {_CLOCK},?\s*", re.IGNORECASE)
_TIME_IN_PARENS = re.compile(rf"\s*\({_RANGE}\)")
#: A sentence's end, where a span's text is cut into the sentences a claim is matched with.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”]?\s+")
#: How many characters of a chosen node's words a level line shows.
NAME_CHARS = 40


def _clock_s(clock: str) -> float:
    """Seconds of ``MM:SS``, ``H:MM:SS`` or ``MM:SS.s``."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def _id_time(match: re.Match[str]) -> tuple[float, float]:
    start = _clock_s(match["start"])
    return start, _clock_s(match["end"]) if match["end"] else start


def shown_text(text: str, spans: Mapping[str, tuple[float, float]]) -> str:
    """A model's own text (its reasoning, a level's reason) as a person reads it, on one
    line: each stored node's id as its time span (``macro_0003`` → ``03:00–05:30``; an id
    with its time beside it, as a quoted memory line writes it, as that time) and the
    memory's markup taken out (a line's tail ``| in: super_01``, kind labels, ``read by
    OCR``, inline cited ids ``[F3]``). An id ``spans`` (``node_spans``) does not know stays
    as it is written. Only the display changes: the result keeps the text as the model
    wrote it."""
    lines = [_LINE_TAIL.sub("", line) for line in text.splitlines()]
    text = " ".join(" ".join(lines).split())
    text = _ID_TIME.sub(lambda m: span_text(*_id_time(m)), text)
    text = _DASH.sub("", text)
    text = _TWICE.sub("", text)
    for pattern in (_KIND_TAG, _OCR_NOTE, _REF_IDS):
        text = pattern.sub("", text)
    text = NODE_ID.sub(lambda m: span_text(*spans[m[0]]) if m[0] in spans else m[0], text)
    text = re.sub(r"\s+([,;:.])", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def node_spans(result: Result) -> dict[str, tuple[float, float]]:
    """Where each stored node a result names lies in the video: the times it recorded, the
    stored nodes its evidence rests on, and every id written with its time in the texts it
    read (the composite memory, each level's stored and rewritten texts)."""
    spans: dict[str, tuple[float, float]] = {}
    texts = [result.memory_text]
    for outcome in result.levels:
        texts += [*outcome.static.values(), *outcome.refined.values()]
    for text in texts:
        for match in _ID_TIME.finditer(text):
            spans.setdefault(match["id"], _id_time(match))
    refs = [ref for outcome in result.levels for found in outcome.sources.values() for ref in found]
    refs += [ref for citation in result.citations for ref in citation.sources]
    spans.update({r.id: (r.start_s, r.end_s) for r in refs if r.kind == "stored_node"})
    spans.update(result.node_times)
    return spans


def stored_texts(levels: Iterable[LevelOutcome]) -> dict[str, str]:
    """Each stored node's own text as the Overview and Skim levels were given it."""
    return {
        node: text
        for outcome in levels
        if outcome.level in ("super", "macro")
        for node, text in outcome.static.items()
    }


def own_words(text: str, titles: Iterable[str] = ()) -> str:
    """A stored span's text without what does not tell it apart: a leading title among
    ``titles`` (its own label, the video's), those titles quoted again, and the times its
    shown span already gives (``From 03:00 to 05:30``, ``(03:32-04:18)``)."""
    words = plain_text(text)
    titles = sorted({t.strip() for t in titles if t.strip()}, key=len, reverse=True)
    for title in titles:
        rest = words[len(title) :].lstrip(" :-–") if words.startswith(title) else ""
        if rest:
            words = rest
            break
    words = _TIME_IN_PARENS.sub("", _FROM_TO.sub("", words))
    for title in titles:
        words = re.sub(rf'"{re.escape(title)}"(?:,\s*)?', "", words)
    return re.sub(r"\s{2,}", " ", words).strip(" ,;:")


def _tokens(text: str) -> set[str]:
    return {w for w in re.findall(r"[0-9a-z]+", text.casefold()) if len(w) > 2}


def nearest_sentence(text: str, claim: str) -> str:
    """The sentence of ``text`` that shares the most words with ``claim`` (the first when
    none does)."""
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()] or [text]
    wanted = _tokens(claim)
    best = max(sentences, key=lambda s: len(_tokens(s) & wanted))
    return best if _tokens(best) & wanted else sentences[0]


def source_words(
    source: EvidenceRef, texts: Mapping[str, str] | None = None, claim: str = ""
) -> str:
    """What a source says, without markup: a transcript line or an OCR text as it reads, a
    stored span as its own words (``texts``: its stored text, without its title: a title is
    the span's name, shared with the video or its neighbours, not what it holds; the
    sentence nearest ``claim``); "" for a frame."""
    if source.kind == "frame":
        return ""
    stored = (texts or {}).get(source.id)
    if source.kind != "stored_node" or source.node_kind == "OCRText" or not stored:
        return plain_text(source.text)
    return nearest_sentence(own_words(stored, [source.text]), claim) or plain_text(source.text)


def shared_titles(texts: Iterable[str]) -> set[str]:
    """The titles (what comes before a text's first ``: ``) that more than one of ``texts``
    begins with: the video's name on each of its parts tells none of them apart."""
    seen: dict[str, int] = {}
    for text in texts:
        head, colon, _ = plain_text(text).partition(": ")
        if colon:
            seen[head] = seen.get(head, 0) + 1
    return {title for title, count in seen.items() if count > 1}


def node_names(result: Result, limit: int = NAME_CHARS) -> dict[str, str]:
    """Each node a level handed on, as a person recognises it: its time span and its first
    words (a title the video or its neighbours share left out), ``03:00–05:30 “Gate B:
    deliveries…”``. A node of unknown time keeps its id."""
    spans, texts = node_spans(result), stored_texts(result.levels)
    root = re.sub(r"^Video: \S+ \[[^\]]*\]\s*", "", result.memory_text.split("\n", 1)[0])
    titles = shared_titles([root, *texts.values()])
    names: dict[str, str] = {}
    for node in (n for outcome in result.levels for n in outcome.selected_ids):
        words = trimmed(own_words(texts.get(node, ""), titles), limit)
        when = span_text(*spans[node]) if node in spans else node
        names[node] = f"{when} “{words}”" if words else when
    return names
