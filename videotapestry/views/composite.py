"""Which parts of a composite memory the agents refined, which they compressed, which they kept.

The composite memory (``assemble``) is one text; a reader comparing it with the stored memory
needs to see what the exploration changed. Each node's part is classified from its level's
outcome by the same rules that produced it (SPEC §5): at Super a protected node keeps its
text and gains evidence (refined) and every other changed node was compressed to a summary;
at Macro and Focus a changed text is a rewrite (refined) unless it is the very short summary
an irrelevant node becomes (compressed); an unchanged text is the stored one (kept). The
text is then split back into its node blocks along the headers ``assemble`` writes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from videotapestry.agents.rules import IRRELEVANT_SUMMARY_CHARS
from videotapestry.agents.state import LevelOutcome

NodeStatus = Literal["kept", "refined", "compressed"]
PartStatus = Literal["structure", "kept", "refined", "compressed", "log"]

_CLOCK = r"\d+(?::\d{2}){1,2}"
_RANGE = rf"(?P<start>{_CLOCK})-(?P<end>{_CLOCK})"
#: ``super_02 [07:00-15:00] text`` (indent 0) or ``  macro_0002 [07:00-11:00] text`` (indent 2).
_HEAD = re.compile(rf"^(?P<indent> *)(?P<id>[^\s\[\]()]+) \[{_RANGE}\]")
_ROOT = re.compile(rf"^Video: (?P<id>\S+) \[{_RANGE}\]")
_PARENT = re.compile(rf"^\(in (?P<id>\S+) \[{_RANGE}\]\)")
_HEAD_LEVELS = {0: "super", 2: "macro"}


@dataclass(frozen=True)
class MemoryPart:
    status: PartStatus
    text: str
    node_id: str | None = None
    level: str | None = None


def node_status(outcome: LevelOutcome, node_id: str) -> NodeStatus:
    text, original = outcome.refined[node_id], outcome.static.get(node_id)
    if text == original:
        return "kept"
    if outcome.level == "super":
        return "refined" if node_id in outcome.protected_ids else "compressed"
    return "compressed" if len(text) <= IRRELEVANT_SUMMARY_CHARS else "refined"


def node_statuses(levels: Sequence[LevelOutcome]) -> dict[tuple[str, str], NodeStatus]:
    """(level, node id) → status; the Focus level's entries are keyed by their MacroEvent."""
    return {
        (outcome.level, node_id): node_status(outcome, node_id)
        for outcome in levels
        for node_id in outcome.refined
    }


def memory_parts(text: str, levels: Sequence[LevelOutcome]) -> list[MemoryPart]:
    """``text`` cut into consecutive parts; joined with newlines they give ``text`` back."""
    statuses = node_statuses(levels)
    parts: list[tuple[PartStatus, str | None, str | None, list[str]]] = []
    macro: str | None = None
    in_log = False

    def start(status: PartStatus, node: str | None = None, level: str | None = None) -> None:
        parts.append((status, node, level, []))

    for line in text.split("\n"):
        head = _HEAD.match(line)
        level = _HEAD_LEVELS.get(len(head["indent"])) if head else None
        if in_log:
            pass
        elif line.startswith("Evidence log"):
            in_log = True
            start("log")
        elif head and level and (level, head["id"]) in statuses:
            node = head["id"]
            macro = node if level == "macro" else None
            start(statuses[(level, node)], node, level)
        elif line == "    Evidence:" and macro is not None:
            start(statuses.get(("subgraph", macro), "refined"), macro, "subgraph")
        elif line.startswith(("Video: ", "(in ")) or line == "SuperEvents:" or not parts:
            macro = None
            if not parts or parts[-1][0] != "structure":
                start("structure")
        parts[-1][3].append(line)
    return [
        MemoryPart(status, "\n".join(lines), node, level) for status, node, level, lines in parts
    ]


def _seconds(clock: str) -> float:
    value = 0.0
    for field in clock.split(":"):
        value = value * 60 + int(field)
    return value


def times_from_memory_text(
    text: str, node_ids: Collection[str]
) -> tuple[float | None, dict[str, tuple[float, float]]]:
    """(video duration, time ranges of ``node_ids``) as the composite memory's headers print
    them: for traces that did not record them (whole seconds, enough for a picture)."""
    duration: float | None = None
    times: dict[str, tuple[float, float]] = {}
    for line in text.split("\n"):
        match = _ROOT.match(line) or _PARENT.match(line) or _HEAD.match(line)
        if match is None or (match.re is not _ROOT and match["id"] not in node_ids):
            continue
        if match.re is _HEAD and len(match["indent"]) not in _HEAD_LEVELS:
            continue
        span = (_seconds(match["start"]), _seconds(match["end"]))
        times.setdefault(match["id"], span)
        if match.re is _ROOT:
            duration = span[1]
    return duration, times
