"""One answered question as one self-contained HTML page: what the agents did, as a picture.

People would rather look than read a trace's JSON. The page shows the timeline of the whole
video (where each level looked, what it selected), the grids and frames each level saw with
their timestamps, the transcript lines its ASR observations used, the composite memory with
its refined and compressed parts marked, the handoff trace, the degradations and the usage.
The answer's citations come first, after the answer: each claim with its sources, linked to
their marks in the timeline's cited lane and to the thumbnails of the frames they cite
(``views.cited``). The same renderer serves ``inspect TRACE.json --html``, a notebook's view
of a ``Result`` (``Result._repr_html_``, a fragment without script, whose links need none)
and ``write_question_pages`` (one page per question of a batch). All memory and model text
is escaped; the page loads nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from videotapestry.agents.state import ImageRef, LevelOutcome, Observation
from videotapestry.errors import VideoTapestryError
from videotapestry.images import ImagePart
from videotapestry.question import option_label
from videotapestry.result import Result
from videotapestry.timecode import format_range, format_timestamp, label_decimals
from videotapestry.views.anchors import Anchors
from videotapestry.views.citation_text import node_spans, shown_text
from videotapestry.views.cited import (
    CitedBy,
    FigureKey,
    citation_marks,
    citations_section,
    cited_figures,
    cited_lane,
    unpictured_frames,
)
from videotapestry.views.composite import memory_parts
from videotapestry.views.page import esc, html_fragment, html_page
from videotapestry.views.thumbnails import (
    Thumbnails,
    frame_key,
    frames_from_images,
    from_images,
    from_video,
    image_refs,
)
from videotapestry.views.timeline import (
    CITED,
    CITED_LANE,
    CITED_ROW,
    LEVEL_COLOURS,
    Span,
    level_spans,
    timeline_duration,
    timeline_legend,
    timeline_svg,
)
from videotapestry.views.trace_data import load_question_trace, with_node_times

_CSS = """
.vt-trace .vt-options { list-style: none; padding-left: 1.2em; }
.vt-trace .vt-options { padding-left: 1.6em; }
.vt-trace .vt-options li.vt-chosen { font-weight: 600; }
.vt-trace .vt-options .vt-mark { display: inline-block; width: 1.3em; margin-left: -1.5em; }
.vt-trace .vt-options .vt-right { color: #16a34a; }
.vt-trace .vt-options .vt-wrong { color: #b42318; }
.vt-trace .vt-options .vt-tag-chosen { color: #4b5563; font-size: 12px; margin-left: .4em; }
.vt-trace .vt-alert { border: 1px solid #d97706; background: #fffbeb; padding: .3em .8em;
  margin: .6em 0; }
.vt-trace .vt-timeline { display: block; max-width: 100%; height: auto; }
.vt-trace .vt-legend { font-size: 12px; color: #374151; }
.vt-trace .vt-legend > span { margin-right: 1.2em; white-space: nowrap; }
.vt-trace .vt-swatch { display: inline-block; width: 14px; height: 10px; margin-right: .3em;
  vertical-align: middle; }
.vt-trace .vt-level { border-left: 5px solid #999; padding: .1em 0 .4em .8em; margin: .8em 0; }
.vt-trace .vt-obs { margin: .4em 0 .6em .4em; }
.vt-trace .vt-thumbs { display: flex; flex-wrap: wrap; gap: 4px; margin: .3em 0; }
.vt-trace .vt-thumbs figure { margin: 0; }
.vt-trace .vt-thumbs img { display: block; }
.vt-trace .vt-thumbs figcaption { font-size: 10px; color: #4b5563; max-width: 260px; }
.vt-trace .vt-ph { background: #e5e7eb; color: #4b5563; font: 10px ui-monospace, monospace;
  display: flex; align-items: center; justify-content: center; text-align: center;
  padding: 2px; overflow: hidden; }
.vt-trace .vt-mp { border-left: 4px solid #d1d5db; background: #f9fafb; margin: 2px 0;
  padding: .1em .5em; }
.vt-trace .vt-mp pre { margin: 0; }
.vt-trace .vt-badge { float: right; font-size: 10px; text-transform: uppercase; color: #374151;
  margin-left: 1em; }
.vt-trace .vt-mp-refined { border-left-color: #059669; background: #ecfdf5; }
.vt-trace .vt-mp-compressed { border-left-color: #d97706; background: #fffbeb; }
.vt-trace .vt-mp-compressed pre { font-style: italic; }
.vt-trace .vt-mp-structure { border-left-color: transparent; background: none; color: #4b5563; }
.vt-trace .vt-mp-log { border-left-color: #3b82f6; background: #eff6ff; }
.vt-trace .vt-tag { color: #065f46; }
.vt-trace .vt-chip { display: inline-block; font: 11px ui-monospace, monospace;
  border: 1px solid #d1d5db; border-radius: 3px; padding: 0 .3em; margin: 1px; }
.vt-trace .vt-chip-selected { color: #fff; }
.vt-trace .vt-chip-protected { background: #f3f4f6; }
.vt-trace .vt-claims > li { margin: .3em 0; }
.vt-trace .vt-sources { margin: .1em 0 .3em; padding-left: 1.2em; }
.vt-trace figure.vt-cited img, .vt-trace figure.vt-cited .vt-ph {
  outline: 3px solid {CITED}; outline-offset: -3px; }
.vt-trace .vt-cited-tag { color: {CITED}; font-weight: 600; }
.vt-trace .vt-sources figure { margin: .2em 0; }
.vt-trace .vt-sources figcaption { font-size: 10px; color: #4b5563; }
.vt-trace li:target, .vt-trace figure:target { background: {CITED_ROW}; }
.vt-trace .vt-timeline rect:target { stroke: #111827; stroke-width: 2; }
""".replace("{CITED}", CITED).replace("{CITED_ROW}", CITED_ROW)

#: Records script errors (and images that fail to load) on the page itself, so a headless
#: browser or a reader can see them, and adds the expand/collapse button's behaviour.
_SCRIPT = (
    "window.addEventListener('error',function(e){var r=document.documentElement;"
    "var m=e.message||('failed to load '+((e.target&&e.target.tagName)||'a resource'));"
    "r.setAttribute('data-js-errors',(r.getAttribute('data-js-errors')||'')+m+'\\n');},true);"
    "document.addEventListener('DOMContentLoaded',function(){"
    "var b=document.getElementById('vt-toggle');if(b){b.hidden=false;"
    "b.addEventListener('click',function(){var d=document.querySelectorAll('.vt details');"
    "var open=!Array.prototype.every.call(d,function(x){return x.open;});"
    "d.forEach(function(x){x.open=open;});});}"
    "document.documentElement.setAttribute('data-vt-ready','1');});"
)

_PART_LABELS = {
    "refined": "refined",
    "compressed": "compressed",
    "kept": "stored text",
    "log": "evidence log",
}
_PART_LEGEND = (
    ("refined", "refined by the agents (rewritten, or the stored text with new evidence)"),
    ("compressed", "compressed to a short summary"),
    ("kept", "stored text, unchanged"),
    ("structure", "structure (video, headings)"),
)


# --------------------------------------------------------------------------- sections


def _option(option: str, chosen: str, correct: str | None) -> str:
    """One option: "chosen" beside the answer's, ✓ on the right one when the answer key is
    known (never on the chosen one for being chosen), ✗ on a chosen option that is wrong."""
    label = option_label(option)
    right = correct is not None and label == correct
    mark = ""
    if right:
        mark = '<span class="vt-mark vt-right" title="the right answer">✓</span>'
    elif correct is not None and label == chosen:
        mark = '<span class="vt-mark vt-wrong" title="chosen, and wrong">✗</span>'
    tag = ' <span class="vt-tag-chosen">chosen</span>' if label == chosen else ""
    css = [name for name, on in (("vt-chosen", label == chosen), ("vt-correct", right)) if on]
    return f'<li class="{" ".join(css)}">{mark}{esc(option)}{tag}</li>'


def _header(trace: Result, correct: str | None = None) -> str:
    options = "".join(_option(option, trace.answer, correct) for option in trace.options)
    facts = [
        f"question <code>{esc(trace.question_id)}</code>",
        f"run <code>{esc(trace.run_id or '-')}</code>",
        f"variant <code>{esc(trace.variant)}</code>",
    ]
    if trace.reassembled_from:
        facts.append(f"reassembled from run <code>{esc(trace.reassembled_from)}</code>")
    if trace.memory_source:
        facts.append(f"memory <code>{esc(trace.memory_source)}</code>")
    facts.append(f"video <code>{esc(trace.video_path or 'not recorded')}</code>")
    facts.append(f"{trace.elapsed_s:.1f} s")
    reasoning = shown_text(trace.reasoning, node_spans(trace))
    verdict = ""
    if correct is not None and trace.options:
        verdict = (
            ' <span class="vt-right">✓ right</span>'
            if trace.answer == correct
            else f' <span class="vt-wrong">✗ wrong (the right answer is {esc(correct)})</span>'
        )
    return (
        f"<h1>{esc(trace.question)}</h1>"
        f'<ul class="vt-options">{options}</ul>'
        f"<p><b>Answer: {esc(trace.answer or trace.answer_text or '(none)')}</b>{verdict} "
        f'<span class="muted">({esc(trace.answer_source)})</span> — {esc(reasoning)}</p>'
        f'<p class="muted">{" · ".join(facts)}</p>'
    )


def _alerts(trace: Result) -> str:
    parts = []
    if trace.observation_disabled:
        parts.append(f"<p><b>Observation disabled:</b> {esc(trace.observation_disabled)}</p>")
    if trace.degraded:
        items = "".join(f"<li>{esc(d.render())}</li>" for d in trace.degraded)
        parts.append(
            f"<p><b>Degraded run</b>: this run lost part of the method "
            f"({len(trace.degraded)}):</p><ul>{items}</ul>"
        )
    if trace.warnings:
        items = "".join(f"<li>{esc(w.render())}</li>" for w in trace.warnings)
        parts.append(
            f"<p><b>Warnings</b> ({len(trace.warnings)}; the run lost nothing of the method):"
            f"</p><ul>{items}</ul>"
        )
    return f'<div class="vt-alert">{"".join(parts)}</div>' if parts else ""


def _timeline(trace: Result, anchors: Anchors) -> str:
    lanes: list[tuple[str, list[Span]]] = [
        (outcome.level, level_spans(outcome, trace.node_times)) for outcome in trace.levels
    ]
    marks = citation_marks(trace.citations, anchors)
    duration = timeline_duration(trace.video_duration_s, [*lanes, (CITED_LANE, marks)])
    if marks:
        lanes.append((CITED_LANE, cited_lane(trace.citations, anchors, duration)))
    head = "<h2>Timeline</h2>"
    if not lanes or duration <= 0:
        return head + '<p class="muted">No level recorded any time: nothing to draw.</p>'
    labels: dict[str, str] = {outcome.level: outcome.agent for outcome in trace.levels}
    labels[CITED_LANE] = "Answer cites"
    links = {level: f"#{anchors.level(level)}" for level in labels}
    links[CITED_LANE] = f"#{anchors.citations()}"
    unknown = ""
    if not trace.node_times:
        unknown = (
            '<p class="muted">The trace records no node times: only the observed windows '
            "are drawn.</p>"
        )
    return (
        f'{head}<p class="muted">The whole video, 00:00–{esc(format_timestamp(duration))}: '
        "the nodes each level weighed and selected, the windows it observed and the frames "
        f"it saw (hover a shape for its id)"
        + ("; what the answer cites, a row per citation" if marks else "")
        + f".</p>{unknown}"
        f"{timeline_svg(lanes, duration, lane_labels=labels, lane_links=links)}"
        f"{timeline_legend(cited=bool(marks))}"
    )


def _chips(outcome: LevelOutcome) -> str:
    colour = LEVEL_COLOURS.get(outcome.level, "#555")
    chips = []
    for node in outcome.candidate_ids:
        if node in outcome.selected_ids:
            style = f' style="background:{colour};border-color:{colour}"'
            chips.append(f'<span class="vt-chip vt-chip-selected"{style}>{esc(node)}</span>')
        elif node in outcome.protected_ids:
            chips.append(f'<span class="vt-chip vt-chip-protected">{esc(node)} (P)</span>')
        else:
            chips.append(f'<span class="vt-chip">{esc(node)}</span>')
    return "".join(chips)


@dataclass(frozen=True)
class _Pictures:
    """What the levels' thumbnails need: the pictures, the page's ids, what cites them."""

    thumbnails: Thumbnails
    anchors: Anchors
    cited: Mapping[FigureKey, list[CitedBy]]

    def of(self, key: FigureKey) -> tuple[str, str]:
        """A thumbnail's id, and its "cited" tag linking to what cites it ("" if nothing)."""
        links = ", ".join(
            f'<a href="#{esc(self.anchors.source(n, m))}">claim {n}, {esc(what)}</a>'
            for n, m, what in self.cited.get(key, [])
        )
        tag = f'<br><span class="vt-cited-tag">cited: {links}</span>' if links else ""
        return self.anchors.figure(*key), tag


def _figure(
    label: str,
    timestamps: Sequence[float],
    url: str | None,
    grid: bool,
    decimals: int,
    anchor: str,
    cited: str,
) -> str:
    times = ", ".join(format_timestamp(t, decimals) for t in timestamps)
    width = 260 if grid else 120
    if url:
        picture = f'<img src="{url}" width="{width}" alt="{esc(label)}">'
    else:
        height = round(width * (0.375 if grid else 0.5625))  # 3×2 cells of 16:9, or one
        picture = f'<div class="vt-ph" style="width:{width}px;height:{height}px">{esc(times)}</div>'
    caption = f"{esc(label)}<br>{esc(times)}" if grid and url else esc(label)
    marked = ' class="vt-cited"' if cited else ""
    return (
        f'<figure id="{esc(anchor)}"{marked} title="{esc(times)}">{picture}'
        f"<figcaption>{caption}{cited}</figcaption></figure>"
    )


def _observation(obs: Observation, place: tuple[int, int], pictures: _Pictures) -> str:
    windows = ", ".join(format_range(s, e) for s, e in obs.windows) or "no window"
    state = "" if obs.succeeded else f" <b>failed</b>: {esc(obs.error or 'empty result')}"
    parts = [
        f'<div class="vt-obs"><b>{esc(obs.source_id)} {esc(obs.kind)}</b> {esc(windows)}'
        f'{state}<br><span class="muted">asked:</span> {esc(obs.instruction)}'
    ]
    if obs.result.strip():
        parts.append(f'<br><span class="muted">saw:</span> {esc(obs.result)}')
    if obs.uncertainty.strip():
        parts.append(f'<br><span class="muted">uncertain:</span> {esc(obs.uncertainty)}')
    if obs.images:
        decimals = label_decimals([t for ref in obs.images for t in ref.timestamps])
        figures = "".join(
            _figure(ref.label, ref.timestamps, pictures.thumbnails.urls.get(ref.sha256),
                    len(ref.timestamps) > 1, decimals, *pictures.of((place[0], place[1], k)))
            for k, ref in enumerate(obs.images)
        )  # fmt: skip
        what = "grids" if any(len(ref.timestamps) > 1 for ref in obs.images) else "frames"
        parts.append(
            f"<details open><summary>{len(obs.images)} {what} seen "
            f"({len(obs.frame_times)} frames)</summary>"
            f'<div class="vt-thumbs">{figures}</div></details>'
        )
    elif obs.frame_times:
        parts.append(f"<br>{len(obs.frame_times)} frames sampled, no image recorded")
    if obs.kind == "asr":
        parts.append(_transcript(obs))
    parts.append("</div>")
    return "".join(parts)


def _transcript(obs: Observation) -> str:
    seen = f"{obs.transcript_lines} transcript lines were in its windows"
    if not obs.evidence_lines:
        body = f'<p class="muted">{seen}; none was quoted as evidence.</p>'
    else:
        rows = "".join(
            f"<tr><td><code>{esc(format_range(s, e))}</code></td><td>{esc(text)}</td></tr>"
            for s, e, text in obs.evidence_lines
        )
        body = (
            f'<p class="muted">{seen}; the lines used (verbatim, matched by time and text):</p>'
            f"<table><tr><th>time</th><th>line</th></tr>{rows}</table>"
        )
    if obs.unmatched_evidence:
        items = "".join(f"<li>{esc(q)}</li>" for q in obs.unmatched_evidence)
        body += (
            f'<p class="muted">Quoted but matching no transcript line (dropped):</p>'
            f"<ul>{items}</ul>"
        )
    return body


def _selection(outcome: LevelOutcome) -> str:
    selection = outcome.evidence_selection
    if not selection:
        return ""
    ids = selection.get("selected_ids") or []
    windows = selection.get("selected_windows") or []
    clips = ", ".join(
        f"{ids[i] if i < len(ids) else '?'} {format_range(s, e)}"
        for i, (s, e) in enumerate(windows)
    )
    method = selection.get("method", "")
    return (
        f"<p>Evidence selection (<code>{esc(method)}</code>, scope "
        f"<code>{esc(selection.get('scope', ''))}</code>): {esc(clips or 'none')}</p>"
        f"<details><summary>selection details</summary>"
        f"<pre>{esc(json.dumps(selection, ensure_ascii=False, indent=1))}</pre></details>"
    )


def _level(index: int, outcome: LevelOutcome, pictures: _Pictures) -> str:
    colour = LEVEL_COLOURS.get(outcome.level, "#999")
    decision = (
        "<b>STOP</b>"
        if outcome.stop
        else "selected "
        + (", ".join(f"<code>{esc(i)}</code>" for i in outcome.selected_ids) or "nothing")
    )
    parts = [
        f'<section class="vt-level" id="{esc(pictures.anchors.level(outcome.level))}" '
        f'style="border-left-color:{colour}">',
        f'<h3 style="color:{colour}">{esc(outcome.agent)} '
        f'<span class="muted">({esc(outcome.level)})</span></h3>',
    ]
    if outcome.instruction_in:
        parts.append(
            f'<p><span class="muted">instruction in:</span> {esc(outcome.instruction_in)}</p>'
        )
    parts.append(
        f"<p>{len(outcome.candidate_ids)} candidates: {_chips(outcome)}</p>"
        f"<details><summary>plan</summary>"
        f"<pre>{esc(json.dumps(outcome.plan, ensure_ascii=False, indent=1))}</pre></details>"
    )
    if outcome.observations:
        parts += [
            _observation(obs, (index, j), pictures) for j, obs in enumerate(outcome.observations)
        ]
    else:
        parts.append('<p class="muted">No observation at this level.</p>')
    parts.append(_selection(outcome))
    parts.append(f"<p><b>Decision:</b> {decision}")
    if outcome.instruction_out:
        parts.append(f' → <span class="muted">next:</span> {esc(outcome.instruction_out)}')
    if outcome.template_type:
        parts.append(f" <code>{esc(outcome.template_type)}</code>")
    if outcome.reason:
        parts.append(f'<br><span class="muted">why:</span> {esc(outcome.reason)}')
    calls = outcome.calls
    parts.append(
        f'<br><span class="muted">tool calls: {calls.observations} observations, '
        f"{calls.updates} updates, {calls.locators} locators</span></p>"
    )
    if outcome.notes:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in outcome.notes) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def _levels(trace: Result, pictures: _Pictures) -> str:
    thumbnails = pictures.thumbnails
    head = "<h2>What each level did</h2>"
    if image_refs(trace.levels):
        if thumbnails.missing:
            head += (
                f'<p class="vt-alert">Frames are shown as timestamp placeholders: '
                f"{esc(thumbnails.missing)}.</p>"
            )
        if thumbnails.urls:
            head += f'<p class="muted">Pictures: {esc(thumbnails.source)}.</p>'
    return head + "".join(
        _level(index, outcome, pictures) for index, outcome in enumerate(trace.levels)
    )


def _memory(trace: Result) -> str:
    names: dict[str, str] = {outcome.level: outcome.agent for outcome in trace.levels}
    legend = "".join(
        f'<span class="vt-chip vt-mp vt-mp-{status}">{esc(text)}</span> '
        for status, text in _PART_LEGEND
    )
    blocks = []
    for part in memory_parts(trace.memory_text, trace.levels):
        badge = ""
        if part.status in _PART_LABELS:
            who = names.get(part.level, "") if part.level else ""
            badge = f'<span class="vt-badge">{esc(_PART_LABELS[part.status])}'
            badge += f" · {esc(who)}</span>" if who else "</span>"
        text = re.sub(
            r"\[(Visual|Transcript|Evidence)\]", r'<b class="vt-tag">[\1]</b>', esc(part.text)
        )
        node = f' data-node="{esc(part.node_id)}"' if part.node_id else ""
        blocks.append(
            f'<div class="vt-mp vt-mp-{part.status}"{node}>{badge}<pre>{text}</pre></div>'
        )
    return (
        f'<h2>Composite memory</h2><p class="muted">What the Answer agent read '
        f"(≈{trace.memory_tokens} tokens).</p><p>{legend}</p>{''.join(blocks)}"
    )


def _handoff(trace: Result) -> str:
    if not trace.handoff:
        return '<h2>Handoff trace</h2><p class="muted">No level handed anything on.</p>'
    items = "".join(
        f'<li><b style="color:{LEVEL_COLOURS.get(e.level, "#333")}">{esc(e.agent)}</b>: '
        + ("<b>STOP</b>" if e.stop else esc(e.instruction or "(no instruction)"))
        + "</li>"
        for e in trace.handoff
    )
    return f"<h2>Handoff trace</h2><ol>{items}</ol>"


def _usage(trace: Result) -> str:
    line = f"<p>{esc(trace.usage.describe())}</p>"
    rows = "".join(
        f"<tr><td>{esc(role)}</td><td>{r.calls}</td><td>{r.images}</td>"
        f"<td>{r.prompt_tokens}</td><td>{r.cached_prompt_tokens}</td>"
        f"<td>{r.completion_tokens}</td><td>{r.latency_s:.1f}</td>"
        f"<td>{esc(r.cost_text())}</td></tr>"
        for role, r in trace.usage.by_role.items()
    )
    table = (
        "<table><tr><th>role</th><th>calls</th><th>images</th><th>prompt</th><th>cached</th>"
        f"<th>completion</th><th>model s</th><th>cost</th></tr>{rows}</table>"
        if rows
        else ""
    )
    return f"<h2>Usage</h2>{line}{table}{_calls(trace)}"


def _calls(trace: Result) -> str:
    events = trace.trace.events
    if not events:
        return ""
    rows = []
    for index, event in enumerate(events, 1):
        usage = event.usage or {}
        tokens = (
            f"{usage.get('prompt_tokens', '')}/{usage.get('completion_tokens', '')}"
            if usage
            else ""
        )
        rows.append(
            f"<tr><td>{index}</td><td>{esc(event.kind)}</td><td>{esc(event.name)}</td>"
            f"<td>{esc(event.role or '')}</td><td>{esc(event.level or '')}</td>"
            f"<td><code>{esc(event.prompt_hash or '')}</code></td>"
            f"<td>{event.duration_s:.2f}</td><td>{esc(tokens)}</td>"
            f"<td>{esc(event.error or '')}</td></tr>"
        )
    return (
        f"<details><summary>Every call ({len(rows)})</summary><table><tr><th>#</th>"
        "<th>kind</th><th>name</th><th>role</th><th>level</th><th>prompt</th><th>s</th>"
        f"<th>tokens in/out</th><th>error</th></tr>{''.join(rows)}</table></details>"
    )


# --------------------------------------------------------------------------- pages


def question_body(
    trace: Result,
    thumbnails: Thumbnails | None = None,
    anchors: Anchors | None = None,
    *,
    correct: str | None = None,
) -> str:
    """The page's content (no document around it); ``correct``: the right option's letter,
    when the answer key is known (✓ marks it; the answer's option is marked "chosen")."""
    thumbnails = thumbnails or Thumbnails(missing="no pictures were supplied")
    anchors = anchors or Anchors()
    pictures = _Pictures(thumbnails, anchors, cited_figures(trace.levels, trace.citations))
    return (
        '<div class="vt-trace">'
        + _header(trace, correct)
        + _alerts(trace)
        + citations_section(trace, thumbnails, anchors)
        + _timeline(trace, anchors)
        + _levels(trace, pictures)
        + _memory(trace)
        + _handoff(trace)
        + _usage(trace)
        + "</div>"
    )


def question_page(
    trace: Result, thumbnails: Thumbnails | None = None, *, correct: str | None = None
) -> str:
    """A standalone page (inline styles, one small script, nothing loaded)."""
    toggle = '<p><button id="vt-toggle" type="button" hidden>expand / collapse all</button></p>'
    title = f"{trace.question_id}: {trace.question}"
    return html_page(
        title[:120],
        toggle + question_body(trace, thumbnails, correct=correct),
        css=_CSS,
        script=_SCRIPT,
    )


def question_fragment(trace: Result, thumbnails: Thumbnails | None = None) -> str:
    """The same content for a notebook cell (scoped styles and ids, no script)."""
    anchors = Anchors.scoped(trace.run_id, trace.question_id, trace.variant, trace.answer)
    return html_fragment(question_body(trace, thumbnails, anchors), css=_CSS)


def thumbnails_for(
    trace: Result,
    *,
    video: str | Path | None = None,
    images: Sequence[ImagePart] = (),
) -> Thumbnails:
    """The pictures of what each level saw: the kept images, else frames decoded from
    ``video`` (or the video the trace recorded), else the reason there are none; and of the
    cited frames no thumbnail shows, from the same sources."""
    refs = image_refs(trace.levels)
    kept = from_images(images, refs) if images and refs else Thumbnails()
    if refs and not kept.urls:
        # Every thumbnail will be decoded: only the frames on none need their own picture.
        alone = unpictured_frames(trace.levels, trace.citations, {r.sha256: "" for r in refs})
        return _decoded(trace, video, refs, alone)
    alone = unpictured_frames(trace.levels, trace.citations, kept.urls)
    frames = frames_from_images(images, alone)
    rest = [t for t in alone if frame_key(t) not in frames]
    decoded = _decoded(trace, video, [], rest) if rest else Thumbnails()
    return Thumbnails(
        kept.urls, kept.source, kept.missing or decoded.missing, {**frames, **decoded.frames}
    )


def _decoded(
    trace: Result, video: str | Path | None, refs: Sequence[ImageRef], frames: Sequence[float]
) -> Thumbnails:
    """Pictures decoded from ``video`` (else the video the trace recorded), or why not."""
    path = video or trace.video_path
    if path is None:
        return Thumbnails(
            missing="the video was not available (the trace records none); pass it with --video"
        )
    if not Path(path).is_file():
        return Thumbnails(
            missing=f"the video was not available ({path} is not a file on this machine); "
            "pass it with --video"
        )
    return from_video(path, refs, fingerprint=trace.video_fingerprint, frames=frames)


def result_fragment(result: Result) -> str:
    """A notebook cell's view of a live result: its kept images, or placeholders saying why."""
    trace = with_node_times(result)
    refs = image_refs(trace.levels)
    thumbnails = from_images(result.images, refs) if result.images else Thumbnails()
    alone = unpictured_frames(trace.levels, trace.citations, thumbnails.urls)
    if (refs or alone) and not result.images:
        thumbnails = Thumbnails(
            missing="this result keeps no images (answered with keep_images=False); "
            "`videotapestry inspect TRACE.json --html OUT.html` decodes them from the video"
        )
    frames = frames_from_images(result.images, alone)
    return question_fragment(trace, replace(thumbnails, frames=frames))


def result_html(
    result: Result, *, video: str | Path | None = None, correct: str | None = None
) -> str:
    """A standalone page for a live result (its kept images, else frames from the video)."""
    trace = with_node_times(result)
    pictures = thumbnails_for(trace, video=video, images=result.images)
    return question_page(trace, pictures, correct=correct)


def _write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise VideoTapestryError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def write_trace_page(
    trace_path: str | Path, out: str | Path, *, video: str | Path | None = None
) -> Path:
    """``inspect TRACE.json --html OUT``: the page of a saved trace."""
    return _write(Path(out), trace_page(trace_path, video=video))


def trace_page(
    trace_path: str | Path, *, video: str | Path | None = None, correct: str | None = None
) -> str:
    """The page of a saved trace, with its frames decoded from ``video`` (a server sends it
    as it is; ``inspect`` writes it to a file); ``correct``: the right option, if known."""
    trace = load_question_trace(trace_path)
    return question_page(trace, thumbnails_for(trace, video=video), correct=correct)


def _file_stem(question_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", question_id).strip("._") or "question"


def write_question_pages(
    results: Iterable[object],
    out_dir: str | Path,
    *,
    video: str | Path | None = None,
    answers: Mapping[str, str] | None = None,
) -> list[Path]:
    """One page per answered question in ``out_dir`` (``<question_id>.html``, made unique);
    anything that is not a ``Result`` (a batch's ``QuestionFailure``) is skipped.
    ``answers``: the right option of each question id, when the answer key is known."""
    out_dir = Path(out_dir)
    written: list[Path] = []
    used: set[str] = set()
    for result in results:
        if not isinstance(result, Result):
            continue
        stem = base = _file_stem(result.question_id)
        number = 1
        while stem in used:
            number += 1
            stem = f"{base}-{number}"
        used.add(stem)
        correct = (answers or {}).get(result.question_id)
        page = result_html(result, video=video, correct=correct)
        written.append(_write(out_dir / f"{stem}.html", page))
    return written
