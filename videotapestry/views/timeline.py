"""The timeline picture: where in the whole video each level looked and what it selected.

One lane per visited level, in the level's colour. The top track holds the memory nodes the
level weighed (grey candidates, tinted protected ones, solid selections; at Focus the
evidence clips PACE-Mem chose), the middle track the windows it observed in a darker shade
(solid: frames; striped: transcript), the bottom track a tick per frame it saw. The
geometry is a pure function of the spans, so it can be checked without drawing; the SVG is
plain shapes with fill colours as attributes, which a screenshot test can find pixel by
pixel.

An answer that cites evidence gets one more lane, "cited", in a colour no level uses: one row
per citation, holding a mark per source over the stretch of video it stands for (solid: a
frame; striped: a transcript line; outlined: a stored node). Its shapes carry ids and links,
so the page's Citations section and the marks lead to each other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from videotapestry.agents.state import LevelOutcome
from videotapestry.timecode import format_timestamp
from videotapestry.views.page import esc

LEVEL_COLOURS = {"super": "#2563eb", "macro": "#ea580c", "subgraph": "#16a34a"}
LEVEL_TINTS = {"super": "#bfdbfe", "macro": "#fed7aa", "subgraph": "#bbf7d0"}
#: Observed windows: a darker shade of the level's colour, told apart from its selections.
LEVEL_SHADES = {"super": "#1e3a8a", "macro": "#9a3412", "subgraph": "#14532d"}
CANDIDATE_FILL, CANDIDATE_STROKE, FRAME_TICK = "#e5e7eb", "#9ca3af", "#1f2937"
#: The cited lane: its marks, a stored node's fill, a citation's row.
CITED, CITED_TINT, CITED_ROW = "#db2777", "#fbcfe8", "#fdf2f8"
CITED_LANE = "cited"

SpanRole = Literal[
    "candidate", "protected", "selected", "clip", "visual", "asr", "frame",
    "cited_row", "cited_node", "cited_line", "cited_frame",
]  # fmt: skip
#: Drawing order inside a lane: later roles are drawn over earlier ones.
ROLE_ORDER: tuple[SpanRole, ...] = (
    "candidate", "protected", "selected", "clip", "visual", "asr", "frame",
    "cited_row", "cited_node", "cited_line", "cited_frame",
)  # fmt: skip
_TRACK: dict[SpanRole, str] = {
    "candidate": "node", "protected": "node", "selected": "node", "clip": "node",
    "visual": "window", "asr": "window", "frame": "frame",
    "cited_row": "cited", "cited_node": "cited", "cited_line": "cited", "cited_frame": "cited",
}  # fmt: skip


@dataclass(frozen=True)
class Span:
    level: str
    role: SpanRole
    start: float
    end: float
    label: str
    #: The drawn shape's id and where clicking it leads ("" for neither).
    anchor: str = ""
    href: str = ""
    #: Which of ``rows`` equal rows of its track the span sits in (the cited lane has one
    #: row per citation; every other track is one row).
    row: int = 0
    rows: int = 1


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    level: str
    role: SpanRole
    label: str
    anchor: str = ""
    href: str = ""


@dataclass(frozen=True)
class TimelineLayout:
    """Pixel sizes of the drawing; ``x`` maps video seconds to the plot area."""

    width: int = 960
    gutter: int = 130  # lane labels
    right: int = 14
    axis: int = 26
    lane: int = 54
    tracks: tuple[tuple[str, int, int], ...] = (
        ("node", 4, 18),
        ("window", 26, 10),
        ("frame", 40, 9),
        ("cited", 4, 46),
    )
    min_width: float = 2.0

    @property
    def plot_width(self) -> float:
        return self.width - self.gutter - self.right

    def x(self, t: float, duration: float) -> float:
        fraction = min(max(t / duration, 0.0), 1.0) if duration > 0 else 0.0
        return self.gutter + fraction * self.plot_width

    def track(self, name: str) -> tuple[int, int]:
        for track, top, height in self.tracks:
            if track == name:
                return top, height
        raise KeyError(name)

    def height(self, lanes: int) -> int:
        return self.axis + lanes * self.lane + 4


def level_spans(outcome: LevelOutcome, node_times: Mapping[str, tuple[float, float]]) -> list[Span]:
    """What one level weighed, selected and looked at, as time spans (unknown times left out)."""
    spans: list[Span] = []
    for node in outcome.candidate_ids:
        if node not in node_times:
            continue
        role: SpanRole = (
            "selected"
            if node in outcome.selected_ids
            else "protected"
            if node in outcome.protected_ids
            else "candidate"
        )
        start, end = node_times[node]
        spans.append(Span(outcome.level, role, start, end, f"{node} ({role})"))
    selection = outcome.evidence_selection or {}
    clip_ids = selection.get("selected_ids") or []
    for index, window in enumerate(selection.get("selected_windows") or []):
        name = clip_ids[index] if index < len(clip_ids) else f"clip {index + 1}"
        spans.append(Span(outcome.level, "clip", window[0], window[1], f"{name} (evidence clip)"))
    for obs in outcome.observations:
        role = "visual" if obs.kind == "visual" else "asr"
        for start, end in obs.windows:
            spans.append(
                Span(outcome.level, role, start, end, f"{obs.source_id} {obs.kind} window")
            )
        spans += [Span(outcome.level, "frame", t, t, f"frame {t:g} s") for t in obs.frame_times]
    return spans


def timeline_duration(duration: float | None, lanes: Sequence[tuple[str, Sequence[Span]]]) -> float:
    """The recorded duration, stretched to cover every span (0 when nothing is known)."""
    ends = [span.end for _, spans in lanes for span in spans]
    return max([duration or 0.0, *ends])


def layout_boxes(
    lanes: Sequence[tuple[str, Sequence[Span]]], duration: float, layout: TimelineLayout
) -> list[Box]:
    """Every span as a rectangle in drawing order; tiny spans keep a visible width."""
    boxes = []
    for lane_index, (_, spans) in enumerate(lanes):
        lane_top = layout.axis + lane_index * layout.lane
        for span in sorted(spans, key=lambda s: (s.row, ROLE_ORDER.index(s.role))):
            top, height = _row(layout.track(_TRACK[span.role]), span.row, span.rows)
            left = layout.x(span.start, duration)
            right = layout.x(span.end, duration)
            minimum = 1.0 if span.role == "frame" else layout.min_width
            width = max(right - left, minimum)
            left = min(left, layout.gutter + layout.plot_width - width)
            boxes.append(
                Box(left, lane_top + top, width, height, span.level, span.role, span.label,
                    span.anchor, span.href)
            )  # fmt: skip
    return boxes


def _row(track: tuple[int, int], row: int, rows: int) -> tuple[float, float]:
    """Top and height of one of ``rows`` rows of a track, a pixel apart (at least 2 px)."""
    top, height = track
    if rows <= 1:
        return top, height
    step = height / rows
    return top + row * step, max(step - 1.0, 2.0)


def axis_ticks(duration: float, max_ticks: int = 10) -> list[float]:
    """Tick times at a round step (10 s … 1 h) giving at most ``max_ticks`` + 1 ticks."""
    if duration <= 0:
        return [0.0]
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200)
    step = next((s for s in steps if duration / s <= max_ticks), None)
    if step is None:  # longer than 20 hours: whole hours
        step = math.ceil(duration / max_ticks / 3600) * 3600
    return [i * step for i in range(int(duration // step) + 1)]


_CITED_FILLS: dict[str, str] = {
    "cited_row": f'fill="{CITED_ROW}"',
    "cited_node": f'fill="{CITED_TINT}" stroke="{CITED}" stroke-width="1"',
    "cited_line": 'fill="url(#vt-cited-line)"',
    "cited_frame": f'fill="{CITED}"',
}


def _fill(box: Box) -> str:
    if box.role in _CITED_FILLS:
        return _CITED_FILLS[box.role]
    if box.role == "candidate":
        return f'fill="{CANDIDATE_FILL}" stroke="{CANDIDATE_STROKE}" stroke-width="1"'
    if box.role == "protected":
        colour = LEVEL_COLOURS.get(box.level, "#555")
        return f'fill="{LEVEL_TINTS.get(box.level, "#ddd")}" stroke="{colour}" stroke-width="1"'
    if box.role == "asr":
        return f'fill="url(#vt-asr-{esc(box.level)})"'
    if box.role == "frame":
        return f'fill="{FRAME_TICK}"'
    if box.role == "visual":
        return f'fill="{LEVEL_SHADES.get(box.level, "#333")}"'
    return f'fill="{LEVEL_COLOURS.get(box.level, "#555")}"'


def timeline_svg(
    lanes: Sequence[tuple[str, Sequence[Span]]],
    duration: float,
    *,
    lane_labels: Mapping[str, str],
    lane_links: Mapping[str, str] | None = None,
    layout: TimelineLayout | None = None,
) -> str:
    """The drawing: an axis over the whole video, then one labelled lane per level (and
    the cited lane); a lane's label links to ``lane_links[level]`` (default
    ``#vt-level-<level>``)."""
    layout = layout or TimelineLayout()
    height = layout.height(len(lanes))
    parts = [
        f'<svg class="vt-timeline" xmlns="http://www.w3.org/2000/svg" width="{layout.width}" '
        f'height="{height}" viewBox="0 0 {layout.width} {height}" role="img" '
        'aria-label="timeline of the video: what each level looked at and selected">',
        "<defs>",
    ]
    for level, colour in LEVEL_SHADES.items():
        parts.append(
            f'<pattern id="vt-asr-{level}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="3" height="6" fill="{colour}"/></pattern>'
        )
    parts.append(
        f'<pattern id="vt-cited-line" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="3" height="6" fill="{CITED}"/></pattern>'
        "</defs>"
    )
    left, right = layout.gutter, layout.gutter + layout.plot_width
    parts.append(
        f'<line x1="{left}" y1="{layout.axis - 6}" x2="{right}" y2="{layout.axis - 6}" '
        'stroke="#6b7280"/>'
    )
    for tick in axis_ticks(duration):
        x = layout.x(tick, duration)
        parts.append(
            f'<line x1="{x:.1f}" y1="{layout.axis - 10}" x2="{x:.1f}" y2="{layout.axis - 6}" '
            f'stroke="#6b7280"/><text x="{x:.1f}" y="{layout.axis - 13}" font-size="10" '
            f'text-anchor="middle" fill="#374151">{esc(format_timestamp(tick))}</text>'
        )
    links = lane_links or {}
    for index, (level, _) in enumerate(lanes):
        top = layout.axis + index * layout.lane
        colour = CITED if level == CITED_LANE else LEVEL_COLOURS.get(level, "#333")
        parts.append(
            f'<rect x="{left}" y="{top + 2}" width="{layout.plot_width}" '
            f'height="{layout.lane - 4}" fill="#f9fafb"/>'
            f'<a href="{esc(links.get(level, f"#vt-level-{level}"))}"><text x="4" '
            f'y="{top + 17}" font-size="12" font-weight="600" fill="{colour}">'
            f"{esc(lane_labels.get(level, level))}</text></a>"
            f'<text x="4" y="{top + 33}" font-size="10" fill="#6b7280">{esc(level)}</text>'
        )
    for box in layout_boxes(lanes, duration, layout):
        anchor = f' id="{esc(box.anchor)}"' if box.anchor else ""
        rect = (
            f'<rect class="vt-{box.role}"{anchor} x="{box.x:.1f}" y="{box.y:.1f}" '
            f'width="{box.width:.1f}" height="{box.height:.4g}" {_fill(box)}>'
            f"<title>{esc(box.label)}</title></rect>"
        )
        parts.append(f'<a href="{esc(box.href)}">{rect}</a>' if box.href else rect)
    parts.append("</svg>")
    return "".join(parts)


def timeline_legend(*, cited: bool = False) -> str:
    """What the shapes mean, drawn with the same colours (HTML, next to the SVG); with
    ``cited``, the cited lane's shapes too."""
    swatch = '<span class="vt-swatch" style="{}"></span>'
    items = [
        (swatch.format(f"background:{CANDIDATE_FILL};border:1px solid {CANDIDATE_STROKE}"),
         "candidate node"),
        (swatch.format(f"background:{LEVEL_TINTS['super']};border:1px solid "
                       f"{LEVEL_COLOURS['super']}"), "protected (Super)"),
        (swatch.format(f"background:{LEVEL_COLOURS['super']}"), "selected node / evidence clip"),
        (swatch.format(f"background:{LEVEL_SHADES['super']};height:6px"),
         "observed window (frames)"),
        (swatch.format(f"background:repeating-linear-gradient(45deg,{LEVEL_SHADES['super']} "
                       f"0 3px,transparent 3px 6px)"), "transcript window (ASR)"),
        (swatch.format(f"background:{FRAME_TICK};width:2px"), "one frame seen"),
    ]  # fmt: skip
    if cited:
        items += [
            (swatch.format(f"background:{CITED}"), "cited frame"),
            (swatch.format(f"background:repeating-linear-gradient(45deg,{CITED} 0 3px,"
                           "transparent 3px 6px)"), "cited transcript line"),
            (swatch.format(f"background:{CITED_TINT};border:1px solid {CITED}"),
             "cited stored node (one row per citation; click a mark for its claim)"),
        ]  # fmt: skip
    levels = " ".join(
        f'<span class="vt-swatch" style="background:{colour}"></span>{esc(level)}'
        for level, colour in LEVEL_COLOURS.items()
    )
    shown = " ".join(f"<span>{sw}{esc(text)}</span>" for sw, text in items)
    return (
        f'<p class="vt-legend">{shown}<br><span class="muted">colour per level:</span> {levels}</p>'
    )
