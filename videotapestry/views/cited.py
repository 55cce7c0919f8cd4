"""What an answer cites, on its page: the Citations section and the timeline's cited lane.

A reader checks an answer by going from each claim to the moments it cites and looking at
them, so every source is listed as a person reads it (``citation_text``: what it is, its
time, its words without the memory's markup) with the level that produced it, a transcript
line verbatim, a stored node with its time range, and its ids in a closed detail view; every
source
links to its mark on the timeline, and a frame to the thumbnail it is on (marked as cited),
or carries a picture of its own when no thumbnail shows it. All of it is plain links between
ids (``Anchors``), so a notebook's fragment, which runs no script, works the same. Claims
and quoted text come from the model and are escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from videotapestry.agents.state import (
    AGENT_NAMES,
    Citation,
    EvidenceRef,
    ImageRef,
    LevelOutcome,
)
from videotapestry.result import Result
from videotapestry.timecode import format_timestamp, label_decimals
from videotapestry.views.anchors import Anchors
from videotapestry.views.citation_text import (
    claim_text,
    kind_words,
    moment_text,
    source_text,
    source_words,
    stored_texts,
)
from videotapestry.views.page import esc
from videotapestry.views.thumbnails import Thumbnails
from videotapestry.views.timeline import CITED_LANE, Span, SpanRole

#: A level's thumbnail by its place in the trace: (level, observation, image) positions.
FigureKey = tuple[int, int, int]
#: Which citation cites a frame on a thumbnail: (citation number, source number, the
#: source's time and level in words, ``03:31, Overview level``).
CitedBy = tuple[int, int, str]
#: A level in words, as a thumbnail's "cited" tag names it (the agents' names, by level).
LEVEL_WORDS = {
    "super": "Overview level",
    "macro": "Skim level",
    "subgraph": "Focus level",
    "direct": "Direct baseline",
}

_ROLES: dict[str, SpanRole] = {
    "frame": "cited_frame",
    "transcript_line": "cited_line",
    "stored_node": "cited_node",
}
_SIDE = 120


def figure_of(levels: Sequence[LevelOutcome], source: EvidenceRef) -> FigureKey | None:
    """The first thumbnail of ``source``'s level that shows its frame (matched by time:
    a frame ref and the image it was sent in record the same timestamp)."""
    if source.kind != "frame" or source.at_s is None:
        return None
    for i, outcome in enumerate(levels):
        if outcome.level != source.level:
            continue
        for j, obs in enumerate(outcome.observations):
            for k, ref in enumerate(obs.images if obs.kind == "visual" else []):
                if any(abs(t - source.at_s) < 1e-3 for t in ref.timestamps):
                    return i, j, k
    return None


def cited_figures(
    levels: Sequence[LevelOutcome], citations: Sequence[Citation]
) -> dict[FigureKey, list[CitedBy]]:
    """The thumbnails that show a cited frame, with what cites them: the citation, the
    source, and the source's time (as the thumbnail's caption writes it) and level in words."""
    figures: dict[FigureKey, list[CitedBy]] = {}
    for n, citation in enumerate(citations, 1):
        for m, source in enumerate(citation.sources, 1):
            key = figure_of(levels, source)
            if key is not None:
                when = moment_text(source, _figure_decimals(levels, key))
                level = LEVEL_WORDS.get(source.level, f"{source.level} level")
                figures.setdefault(key, []).append((n, m, f"{when}, {level}"))
    return figures


def unpictured_frames(
    levels: Sequence[LevelOutcome], citations: Sequence[Citation], urls: Mapping[str, str]
) -> list[float]:
    """The times of cited frames that no thumbnail with a picture (``urls``) shows."""
    times: list[float] = []
    for citation in citations:
        for source in citation.sources:
            if source.kind != "frame" or source.at_s is None:
                continue
            key = figure_of(levels, source)
            if key is not None and _image(levels, key).sha256 in urls:
                continue
            if source.at_s not in times:
                times.append(source.at_s)
    return times


def _image(levels: Sequence[LevelOutcome], key: FigureKey) -> ImageRef:
    i, j, k = key
    return levels[i].observations[j].images[k]


def _figure_decimals(levels: Sequence[LevelOutcome], key: FigureKey) -> int:
    """The decimals the thumbnails of ``key``'s observation label their times with."""
    i, j, _ = key
    return label_decimals([t for ref in levels[i].observations[j].images for t in ref.timestamps])


# --------------------------------------------------------------------------- the timeline


def source_moments(trace: Result) -> list[list[str]]:
    """Each cited source's time exactly as this page writes it (the web app shows the same):
    a frame on a thumbnail as the thumbnail labels it, another frame with the decimals that
    tell the cited frames apart, a span as ``start–end``."""
    frames = [s.at_s for c in trace.citations for s in c.sources if s.at_s is not None]
    decimals = label_decimals(frames)
    return [
        [moment_text(source, _decimals(trace.levels, source, decimals)) for source in c.sources]
        for c in trace.citations
    ]


def _decimals(levels: Sequence[LevelOutcome], source: EvidenceRef, cited: int) -> int:
    """A frame on a thumbnail reads as its caption does; others as the cited frames tell
    apart (``cited`` decimals)."""
    key = figure_of(levels, source)
    return cited if key is None else _figure_decimals(levels, key)


def citation_marks(citations: Sequence[Citation], anchors: Anchors) -> list[Span]:
    """A mark per source over the stretch it stands for, in its citation's row, linked to
    the source's entry."""
    rows = len(citations)
    return [
        Span(source.level, _ROLES[source.kind], source.start_s, source.end_s,
             f"citation {n}: {claim_text(citation.claim)} — {source_text(source)} "
             f"({source.level})",
             anchors.mark(n, m), f"#{anchors.source(n, m)}", n - 1, rows)
        for n, citation in enumerate(citations, 1)
        for m, source in enumerate(citation.sources, 1)
    ]  # fmt: skip


def cited_lane(citations: Sequence[Citation], anchors: Anchors, duration: float) -> list[Span]:
    """The cited lane: a row per citation across the whole video (linked to its claim),
    under its marks; empty when nothing is cited."""
    rows = [
        Span(CITED_LANE, "cited_row", 0.0, duration, f"citation {n}: {claim_text(citation.claim)}",
             anchors.cite(n), f"#{anchors.claim(n)}", n - 1, len(citations))
        for n, citation in enumerate(citations, 1)
    ]  # fmt: skip
    return [*rows, *citation_marks(citations, anchors)] if citations else []


# --------------------------------------------------------------------------- the section


def _level_name(level: str, names: Mapping[str, str]) -> str:
    return f"{names[level]} ({level})" if level in names else level


def _picture(source: EvidenceRef, anchor: str, thumbnails: Thumbnails, decimals: int) -> str:
    """A cited frame's own picture: kept or decoded, else a placeholder with its time."""
    at = source.at_s if source.at_s is not None else source.start_s
    when = esc(format_timestamp(at, decimals))
    url = thumbnails.frame(at)
    if url:
        picture = f'<img src="{url}" width="{_SIDE}" alt="frame at {when}">'
    else:
        height = round(_SIDE * 0.5625)
        picture = f'<div class="vt-ph" style="width:{_SIDE}px;height:{height}px">{when}</div>'
    return (
        f'<figure class="vt-cited" id="{esc(anchor)}" title="{when}">{picture}'
        f"<figcaption>frame at {when}</figcaption></figure>"
    )


@dataclass(frozen=True)
class _Context:
    """What every source entry of one page needs to be written."""

    levels: Sequence[LevelOutcome]
    anchors: Anchors
    thumbnails: Thumbnails
    names: Mapping[str, str]
    #: Decimals that tell the cited frames' timestamps apart.
    decimals: int
    unpictured: frozenset[float]
    #: The stored nodes' texts, and each citation's claim: a stored span shows its own words.
    texts: Mapping[str, str]
    claims: Sequence[str]

    @classmethod
    def of(cls, trace: Result, thumbnails: Thumbnails, anchors: Anchors) -> _Context:
        frames = [s.at_s for c in trace.citations for s in c.sources if s.at_s is not None]
        return cls(
            levels=trace.levels,
            anchors=anchors,
            thumbnails=thumbnails,
            names={
                **{str(level): name for level, name in AGENT_NAMES.items()},
                "direct": "Direct baseline",
                **{outcome.level: outcome.agent for outcome in trace.levels},
            },
            decimals=label_decimals(frames),
            unpictured=frozenset(unpictured_frames(trace.levels, trace.citations, thumbnails.urls)),
            texts=stored_texts(trace.levels),
            claims=[citation.claim for citation in trace.citations],
        )


def _source(n: int, m: int, source: EvidenceRef, context: _Context) -> str:
    anchors = context.anchors
    key = figure_of(context.levels, source)
    decimals = _decimals(context.levels, source, context.decimals)
    when = esc(moment_text(source, decimals))
    # Readable first (what it is, its time, its words); the ids in a closed detail view.
    parts = [
        f'<li id="{esc(anchors.source(n, m))}"><span class="kind">{kind_words(source)}</span> '
        f'<a href="#{esc(anchors.mark(n, m))}" title="its mark on the timeline">{when}</a>'
    ]
    words = source_words(source, context.texts, context.claims[n - 1])
    if source.kind == "frame":
        places = label_decimals([source.start_s, source.end_s])
        stretch = "–".join(format_timestamp(t, places) for t in (source.start_s, source.end_s))
        parts.append(f' <span class="muted">(stands for {esc(stretch)})</span>')
    elif words:
        parts.append(f": “{esc(words)}”")
    parts.append(f' <span class="muted">· from {esc(_level_name(source.level, context.names))}')
    if key is not None:
        parts.append(f' · <a href="#{esc(anchors.figure(*key))}">its thumbnail</a>')
    parts.append("</span>")
    detail = f"<code>{esc(source.id)}</code> {esc(source.kind)}" + (
        f" · {esc(source.text)}" if source.text else ""
    )
    parts.append(f'<details class="vt-ids"><summary>ids</summary>{detail}</details>')
    if source.kind == "frame" and source.at_s in context.unpictured:
        parts.append(_picture(source, anchors.frame(n, m), context.thumbnails, decimals))
    parts.append("</li>")
    return "".join(parts)


def citations_section(trace: Result, thumbnails: Thumbnails, anchors: Anchors) -> str:
    """The answer in words, then each claim with its sources, linked both ways."""
    head = (
        f'<section class="vt-citations" id="{esc(anchors.citations())}"><h2>Citations</h2>'
        f"<p><b>The answer in words:</b> {esc(trace.answer_text or '(none)')}</p>"
    )
    dropped = "".join(
        f'<p class="muted">Dropped: {esc(w.what)} — {esc(w.why)} (see the warnings above).</p>'
        for w in trace.warnings
        if w.kind == "citation_invalid"
    )
    if not trace.citations:
        return f'{head}<p class="vt-alert">This answer cites no evidence.</p>{dropped}</section>'
    context = _Context.of(trace, thumbnails, anchors)
    entries = []
    for n, citation in enumerate(trace.citations, 1):
        sources = "".join(
            _source(n, m, source, context) for m, source in enumerate(citation.sources, 1)
        )
        entries.append(
            f'<li id="{esc(anchors.claim(n))}"><b>{esc(claim_text(citation.claim))}'
            f'</b> <a href="#{esc(anchors.cite(n))}">on the timeline</a>'
            f'<ul class="vt-sources">{sources}</ul></li>'
        )
    placeholders = ""
    if any(context.thumbnails.frame(t) is None for t in context.unpictured):
        why = context.thumbnails.missing or "no picture of them was supplied"
        placeholders = (
            f'<p class="muted">Cited frames that no thumbnail shows are drawn as their '
            f"times: {esc(why)}.</p>"
        )
    return f'{head}<ol class="vt-claims">{"".join(entries)}</ol>{placeholders}{dropped}</section>'
