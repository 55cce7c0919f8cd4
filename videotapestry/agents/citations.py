"""Provenance as structure: which moments of the video a rewritten node or an answer rests on.

Every observation already knows its times: the frames it was shown, the transcript lines it
quoted. Here they become ``EvidenceRef`` records with short ids the Answer agent can cite —
``S4`` (the fourth frame the Overview agent saw), ``K2`` (Skim), ``F7`` (Focus), ``T3`` (a
transcript line, verbatim) — and every stored node is citable by its own id, over its time
range. A rewritten node records the refs it rests on when it is rewritten (its stored node,
and the frames and lines of the observations linked to it that fall in its time range); a
compressed node keeps only its stored-node ref. Nothing is parsed back from model text: the
ids, spans and kinds come from the tools' own records, so a citation resolves to exact
moments whatever the model wrote around it.

All functions here are pure.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from videotapestry.agents.state import Citation, EvidenceRef, Level, LevelOutcome, Observation
from videotapestry.memory import VideoMemory, node_label
from videotapestry.timecode import format_timestamp

#: The id prefix of the frames each level's agent saw.
FRAME_PREFIX: dict[Level, str] = {"super": "S", "macro": "K", "subgraph": "F"}
TRANSCRIPT_PREFIX = "T"
#: A cited run of frames, as the composite memory prints one: ``S3-S9`` (or an en dash).
_ID_RUN = re.compile(r"^([A-Z])(\d+)\s*[-–]\s*\1?(\d+)$")


def frame_spans(
    frame_times: Sequence[float], windows: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The stretch of the video each sampled frame stands for.

    Frames are sampled across their window, so a frame stands for the stretch between the
    midpoints to its neighbours in the same window, and the first and last reach the
    window's ends. A frame outside every window (a keyframe snapped just past an edge)
    stands for its own moment only: its neighbours may lie in another window, far away.
    """
    spans: list[tuple[float, float]] = []
    for index, t in enumerate(frame_times):
        window = next(((s, e) for s, e in windows if s - 1e-6 <= t <= e + 1e-6), (t, t))
        prev = frame_times[index - 1] if index > 0 else None
        nxt = frame_times[index + 1] if index + 1 < len(frame_times) else None
        start = window[0] if prev is None or prev < window[0] else (prev + t) / 2
        end = window[1] if nxt is None or nxt > window[1] else (t + nxt) / 2
        spans.append((min(start, t), max(end, t)))
    return spans


def observation_refs(observations: Sequence[Observation]) -> list[EvidenceRef]:
    """The frames and quoted transcript lines of ``observations``, numbered in the order
    they were made: frames per level (each level has its own prefix), lines across all.

    Each level agent numbers its own observations, so the ids are unique within a question.
    """
    refs: list[EvidenceRef] = []
    frames: dict[str, int] = {}
    lines = 0
    for obs in observations:
        if not obs.succeeded:
            continue
        if obs.kind == "visual":
            prefix = FRAME_PREFIX[obs.level]
            for t, (start, end) in zip(
                obs.frame_times, frame_spans(obs.frame_times, obs.windows), strict=True
            ):
                frames[prefix] = frames.get(prefix, 0) + 1
                refs.append(
                    EvidenceRef(
                        id=f"{prefix}{frames[prefix]}",
                        kind="frame",
                        level=obs.level,
                        start_s=start,
                        end_s=end,
                        text=f"{obs.source_id} frame at {format_timestamp(t)}",
                        at_s=t,
                    )
                )
        for start, end, text in obs.evidence_lines:
            lines += 1
            refs.append(
                EvidenceRef(
                    id=f"{TRANSCRIPT_PREFIX}{lines}",
                    kind="transcript_line",
                    level=obs.level,
                    start_s=start,
                    end_s=end,
                    text=text,
                )
            )
    return refs


def node_level(memory: VideoMemory, node_id: str) -> Level:
    """The memory level a stored node sits at (the root counts with the scaffold)."""
    kind = memory.node(node_id).kind
    if kind in ("RootEvent", "SuperEvent"):
        return "super"
    return "macro" if kind == "MacroEvent" else "subgraph"


def stored_ref(memory: VideoMemory, node_id: str, level: Level) -> EvidenceRef:
    span = memory.time_range(node_id)
    return EvidenceRef(
        id=node_id,
        kind="stored_node",
        level=level,
        start_s=span.start,
        end_s=span.end,
        text=node_label(memory.node(node_id)),
        node_kind=memory.node(node_id).kind,
    )


def node_sources(
    memory: VideoMemory,
    node_id: str,
    level: Level,
    refs: Iterable[EvidenceRef],
    *,
    rewritten: bool,
    spans: Sequence[tuple[float, float]] | None = None,
) -> list[EvidenceRef]:
    """What ``node_id``'s new text rests on: its stored node, then — when it was rewritten
    from observations — the given refs that fall in its time (``spans``, else its range)."""
    own = stored_ref(memory, node_id, level)
    if not rewritten:
        return [own]
    within = spans or [(own.start_s, own.end_s)]
    return [own, *(r for r in refs if any(_overlap(r, s, e) for s, e in within))]


def _overlap(ref: EvidenceRef, start: float, end: float) -> bool:
    """A frame belongs to the stretch its own timestamp falls in; a line to any it overlaps."""
    if ref.at_s is not None:
        return start - 1e-6 <= ref.at_s <= end + 1e-6
    return ref.start_s < end and start < ref.end_s


def refs_text(refs: Sequence[EvidenceRef]) -> str:
    """The observed refs of a node as one compact line of the composite memory: runs of
    consecutive frames as ``S3-S9 (05:20-06:10)``, transcript lines one by one."""
    parts: list[str] = []
    run: list[EvidenceRef] = []

    def close_run() -> None:
        if run:
            first, last = run[0], run[-1]
            ids = first.id if first is last else f"{first.id}-{last.id}"
            parts.append(f"{ids} ({_span(first.start_s, last.end_s)})")
            run.clear()

    for ref in refs:
        if ref.kind == "stored_node":
            continue
        if ref.kind == "frame" and run and _next_frame(run[-1].id, ref.id):
            run.append(ref)
            continue
        close_run()
        if ref.kind == "frame":
            run.append(ref)
        else:
            parts.append(f"{ref.id} ({_span(ref.start_s, ref.end_s)})")
    close_run()
    return "; ".join(parts)


def _span(start: float, end: float) -> str:
    return f"{format_timestamp(start)}-{format_timestamp(end)}"


def _next_frame(previous: str, current: str) -> bool:
    return previous[0] == current[0] and int(current[1:]) == int(previous[1:]) + 1


def citable(levels: Sequence[LevelOutcome]) -> dict[str, EvidenceRef]:
    """Every observed ref an answer may cite, by id: the frames and transcript lines of every
    level's observations (a stored node is citable by its own id besides)."""
    known: dict[str, EvidenceRef] = {}
    for outcome in levels:
        for ref in observation_refs(outcome.observations):
            known.setdefault(ref.id, ref)
    return known


def resolve_id(cited: str, known: Mapping[str, EvidenceRef], memory: VideoMemory) -> list[str]:
    """The known ids ``cited`` names: itself, a run ``S3-S9``, or a stored node's id."""
    cited = cited.strip().strip("[]()")
    if cited in known or cited in memory:
        return [cited]
    run = _ID_RUN.match(cited)
    if run:
        prefix, first, last = run.group(1), int(run.group(2)), int(run.group(3))
        ids = [f"{prefix}{n}" for n in range(first, last + 1)]
        if ids and all(i in known for i in ids):
            return ids
    return []


def resolve_citations(
    claims: Iterable[tuple[str, Sequence[str]]],
    known: Mapping[str, EvidenceRef],
    memory: VideoMemory,
) -> tuple[list[Citation], list[str]]:
    """(citations whose ids resolve, the cited ids that do not exist).

    A claim keeps the sources its valid ids name; a claim left with none is dropped. A stored
    node cited directly resolves over its time range, at the level its kind belongs to.
    """
    citations: list[Citation] = []
    invalid: list[str] = []
    for claim, ids in claims:
        sources: list[EvidenceRef] = []
        for cited in ids:
            names = resolve_id(cited, known, memory)
            if not names:
                invalid.append(cited)
            for name in names:
                ref = known.get(name) or stored_ref(memory, name, node_level(memory, name))
                if ref not in sources:
                    sources.append(ref)
        if sources:
            citations.append(Citation(claim=claim.strip(), sources=sources))
    return citations, invalid


def observed_refs(sources: Collection[EvidenceRef]) -> list[EvidenceRef]:
    """The refs of a node's sources that come from observations (frames, lines)."""
    return [ref for ref in sources if ref.kind != "stored_node"]
