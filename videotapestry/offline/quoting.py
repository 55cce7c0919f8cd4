"""How the offline model quotes its evidence to a person: the words, where and when.

The memory it reads writes each fact inside markup (``- slot3_o7 [03:32-04:18] "Door code
4417" (scene_text): read by OCR``; a moment joins several such lines with " / "). A person
quoting it says ``"Door code 4417" on screen at 03:32-04:18``: the text as shown or said,
the kind of source, its time; never the memory's ids, kind labels or notes. ``stated`` takes
the markup off a line, ``supporting_part`` picks the part of it that holds a given text (the
line of the slide, the sentence said), and ``quote`` writes it for a reasoning. Pure
functions. (``views.citation_text.plain_text`` does the same for what the views show; the
offline model may not import the views, and reads lines the views never see.)
"""

from __future__ import annotations

import re
from typing import Literal

from videotapestry.offline.matching import contains_phrase, content_words, word_overlap
from videotapestry.offline.prompt_reading import CLOCK
from videotapestry.offline.timestamps import span_text

#: The ids of the shipped memory builders: ``slot2_o11``, ``macro_0003``, ``super_01`` …
NODE_ID = re.compile(r"\b(?:slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+|root_\d+)\b")
#: Kind labels and notes the memory adds to a text: ``(scene_text)``, ``read by OCR``.
_MARKUP = re.compile(r"\s*\((?:scene_text|text|speech|change)\)|:?\s*\bread by OCR\b[.;]?")
#: Where a stated text's parts end: a moment's " / " (not a page number's "5 / 20"), a
#: sentence end, a ``;``.
_PART_END = re.compile(r"(?<!\d)\s+/\s+|\s+/\s+(?!\d)|;\s+|(?<=[a-z0-9\"”)][.!?])\s+(?=\S)", re.I)
#: How long a quote may be before it is cut.
QUOTE_CHARS = 100

SourceKind = Literal["speech", "screen"]


def stated(unit: str) -> str:
    """An evidence line as said: without the video times, ids and kind labels that lead it
    (or lead each of the parts a moment joins with " / ") and the notes that follow them;
    a time the line shows ("10:00 Brass band") is its text and stays."""
    parts = []
    video_time = rf"\[@?{CLOCK}(?:-{CLOCK})?\]:?\s*|{CLOCK}-{CLOCK}:?\s*|{CLOCK}:\s+"
    unit = re.sub(
        r"\b\w+_\w+ \[[^\]]*\] [\w ]{0,30}\((?:change|speech)\): (?:The screen shows )?", "", unit
    )
    unit = re.sub(r"\s*\|\s*object: \w+", "", unit)
    for part in unit.split(" / "):
        text = re.sub(rf"^(?:{video_time})+", "", part.strip())
        text = re.sub(r"^(?:Observed|\[(?:Visual|Transcript|Evidence)\])[:\s]*", "", text)
        text = re.sub(rf"^(?:- )?[\w.:-]+ \[@?{CLOCK}(?:-{CLOCK})?\]\s*", "", text)
        text = re.sub(rf"^(?:{video_time})+", "", text)
        text = re.sub(r"^[\w ]{0,30}\(change\): ", "", text)
        text = re.sub(r"^(?:The screen shows|Someone says:?)\s*", "", text)
        text = re.sub(r"\s*\|\s*(?:object|attributes|themes|key entities):.*$", "", text)
        text = re.sub(r"\s*\((?:scene_text|text|speech)\)(?::.*)?$", "", text)
        text = text.strip().strip('".').strip()
        if text and text not in parts:
            parts.append(text)
    return " / ".join(parts)


def plain(unit: str) -> str:
    """``stated(unit)`` on one line, with any id, kind label or OCR note left standing inside
    it taken out too (a summary's sentence may still name a node)."""
    text = _MARKUP.sub("", stated(unit))
    text = NODE_ID.sub("", text)
    text = re.sub(r"\s+([,;:.])", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip(" -;,|/")


def text_parts(unit: str) -> list[str]:
    """The parts of ``plain(unit)``: a slide's lines, the sentences said, list items."""
    parts = (p.strip(' "“”') for p in _PART_END.split(plain(unit)))
    return [p for p in dict.fromkeys(parts) if re.search(r"[A-Za-z0-9]", p)]


def supporting_part(unit: str, text: str) -> str:
    """The part of ``unit`` that holds ``text`` (an option, an answer): the whole of it if one
    part spells it out, else the part holding most of its words; the plain unit when none
    holds any (or ``text`` has no words)."""
    parts = text_parts(unit)
    if not parts:
        return plain(unit)
    spelled = [p for p in parts if contains_phrase(text, p)]
    if spelled:
        return min(spelled, key=len)
    wanted = content_words(text)
    if not wanted:
        return plain(unit)
    shares = [word_overlap(wanted, p) for p in parts]
    best = max(range(len(parts)), key=lambda i: (shares[i], -i))
    return parts[best] if shares[best] > 0 else plain(unit)


def quote(
    text: str,
    start: float | None = None,
    end: float | None = None,
    kind: SourceKind | None = None,
    limit: int = QUOTE_CHARS,
) -> str:
    """``"Door code 4417" on screen at 03:32-04:18``: ``text`` in plain words and quotes (cut
    at a word past ``limit``), the kind of source and its time, as far as they are known."""
    words = " ".join(plain(text).split()) or " ".join(text.split())
    if len(words) > limit:
        cut = words[: limit - 1]
        words = (cut[: cut.rindex(" ")] if " " in cut[limit // 2 :] else cut).rstrip(" ,;:/-")
        words += "…"
    where = {"screen": "on screen", "speech": "said", None: "in the memory"}[kind]
    if start is None:
        return f'"{words}" {where}' if kind else f'"{words}"'
    when = span_text(start, end if end is not None else start)
    return f'"{words}" {where} at {when}' if kind else f'"{words}" (memory, {when})'
