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
from collections.abc import Sequence

from videotapestry.agents.state import Citation, EvidenceRef
from videotapestry.timecode import format_timestamp

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


def source_text(source: EvidenceRef, when: str | None = None) -> str:
    """One source as its kind, its time and a short quote: ``frame at 04:18``,
    ``said at 03:12–03:16: “…”``, ``on screen at 03:32–04:18: “Door code 4417”``,
    ``memory, 00:37–01:47: its first words…``; ``when`` its time written otherwise (the
    trace page's decimals), else ``moment_text``."""
    head = f"{kind_words(source)} {when or moment_text(source)}"
    words = plain_text(source.text) if source.kind != "frame" else ""
    if not words:
        return head
    if source.kind == "transcript_line" or source.node_kind == "OCRText":
        return f"{head}: “{trimmed(words)}”"
    return f"{head}: {trimmed(words, MEMORY_CHARS)}"


def sources_text(sources: Sequence[EvidenceRef]) -> list[str]:
    """The sources of one citation in order, its frames as one item where the first is:
    ``frames at 04:13, 04:17, 04:18``."""
    frames = [moment_text(s) for s in sources if s.kind == "frame"]
    shown: list[str] = []
    for source in sources:
        if source.kind != "frame" or len(frames) == 1:
            shown.append(source_text(source))
        elif frames:
            shown.append(f"frames at {', '.join(dict.fromkeys(frames))}")
            frames = []
    return shown


def citation_text(citation: Citation) -> str:
    """A citation on one line: ``claim — frame at 04:18; said at 03:12–03:16: “…”``."""
    return f"{claim_text(citation.claim)} — {'; '.join(sources_text(citation.sources))}"
