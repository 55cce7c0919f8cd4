"""Composite query-adaptive memory: the refined levels put back under their parents.

The Super scaffold covers the whole video (protected SuperEvents in full with their new
evidence, the rest compressed); beneath the SuperEvents on the selected path sit the refined
MacroEvents the Skim agent examined (``agents.composite_macros``: ``candidates``, or
``selected``, the paper's, only those it selected), and beneath those the Focus agent's
refined evidence.
The compact handoff trace (instructions and STOP markers, no logs) goes alongside. What a
variant's Answer agent reads is its ``answer_reads`` in ``videotapestry.variants``:
``refined_super_only`` and ``refined_paths_only`` drop one of the two components (from one
fixed exploration: ``VideoTapestry.reanswer`` reassembles a finished run under another
variant and only the Answer agent runs again); ``append_only`` keeps the stored texts and
appends every observation as a flat log.

The option-steering filter runs where the agents write (instructions, rewrites,
observation summaries), never here: stored node texts and verbatim transcript lines reach the
Answer agent as they are, since they are what the video shows or says, not what a model
concluded, and the Static-Memory-Only variant reads the stored contents unchanged. Only the
handoff trace, all of it agent-written, is filtered once more on its way out.

The ``refs:`` lines name what the Answer agent may cite; with ``answer.citations`` off it is
asked for no citation, so the composite shows none (the paper's final memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from videotapestry.agents.citations import observation_refs, refs_text
from videotapestry.agents.options import strip_option_steering
from videotapestry.agents.state import HandoffEntry, LevelOutcome
from videotapestry.memory import VideoMemory
from videotapestry.memory.prompt_text import clock_range, serialize_root
from videotapestry.timecode import format_range
from videotapestry.tokens import estimate_tokens
from videotapestry.variants import FULL, variant_named


@dataclass(frozen=True)
class CompositeMemory:
    text: str
    handoff_trace: str
    tokens: int


def handoff_text(entries: Sequence[HandoffEntry]) -> str:
    return strip_option_steering("\n".join(entry.render() for entry in entries))


def assemble(
    memory: VideoMemory,
    levels: Sequence[LevelOutcome],
    handoff: Sequence[HandoffEntry],
    *,
    variant: str = FULL.name,
    macros_shown: Literal["selected", "candidates"] = "candidates",
    citations: bool = True,
) -> CompositeMemory:
    """The final memory the variant's Answer agent reads (``Variant.answer_reads``), with
    ``refs:`` lines when ``citations`` (``answer.citations``) asks it to cite."""
    row = variant_named(variant)
    by_level = {outcome.level: outcome for outcome in levels}
    supers = by_level.get("super")
    macros = by_level.get("macro")
    focus = by_level.get("subgraph")
    include_super = row.reads_super_scaffold
    include_paths = row.reads_paths

    lines = [f"Video: {serialize_root(memory).text}"]
    if include_super:
        lines.append("SuperEvents:")
    for super_event in memory.super_events():
        children = []
        if include_paths and macros is not None:
            for macro_id in _shown_macros(macros, macros_shown):
                parent = memory.parent(macro_id)
                if parent is None or parent.id != super_event.id:
                    continue
                children.append(_entry(memory, macro_id, macros.refined[macro_id], "  "))
                children += _refs(macros, macro_id, "  ", citations)
                if focus is not None and macro_id in focus.refined:
                    children.append("    Evidence:")
                    children += [f"    {line}" for line in focus.refined[macro_id].splitlines()]
                    children += _refs(focus, macro_id, "    ", citations)
        if include_super and supers is not None:
            lines.append(_entry(memory, super_event.id, supers.refined[super_event.id], ""))
            lines += _refs(supers, super_event.id, "", citations)
        elif children:
            lines.append(f"(in {super_event.id} [{clock_range(super_event.time_range)}])")
        lines += children
    if row.answer_reads == "evidence_log":
        lines += _evidence_log(levels, citations)
    text = "\n".join(lines)
    trace = handoff_text(handoff)
    return CompositeMemory(text=text, handoff_trace=trace, tokens=estimate_tokens(text))


def _shown_macros(macros: LevelOutcome, shown: Literal["selected", "candidates"]) -> list[str]:
    """The MacroEvents on the selected paths, in the candidates' order. A Skim agent that
    stopped selected none (the stop rule clears its selection): its path ends at Macro, so
    every MacroEvent it refined is kept rather than the level's work dropped."""
    selected = set(macros.selected_ids)
    if shown == "candidates" or not selected:
        return list(macros.candidate_ids)
    return [i for i in macros.candidate_ids if i in selected]


def _entry(memory: VideoMemory, node_id: str, text: str, indent: str) -> str:
    head = f"{indent}{node_id} [{clock_range(memory.time_range(node_id))}] "
    body = text.splitlines() or [""]
    return head + body[0] + "".join(f"\n{indent}  {line}" for line in body[1:])


def _refs(outcome: LevelOutcome, node_id: str, indent: str, citations: bool) -> list[str]:
    """The line naming the frames and transcript lines a refined node rests on, by the ids
    the Answer agent cites; none for a node that rests on its stored text alone, nor when
    the Answer agent is asked for no citations."""
    if not citations:
        return []
    text = refs_text(outcome.sources.get(node_id, []))
    return [f"{indent}  refs: {text}"] if text else []


def _evidence_log(levels: Sequence[LevelOutcome], citations: bool) -> list[str]:
    lines = ["Evidence log (new observations, in the order they were made):"]
    for outcome in levels:
        for obs in outcome.observations:
            if not obs.bears_evidence:  # a failed look, or one that found nothing
                continue
            windows = ", ".join(format_range(s, e) for s, e in obs.windows)
            lines.append(f"- {outcome.level} {obs.kind} {windows}: {obs.result.strip()}")
            lines += [f"  {format_range(s, e)} {text}" for s, e, text in obs.evidence_lines]
        refs = refs_text(observation_refs(outcome.observations)) if citations else ""
        if refs:
            lines.append(f"  refs: {refs}")
    return lines
