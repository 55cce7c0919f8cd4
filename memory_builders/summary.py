"""Stage 7 rules: SuperEvents (contiguous stages of MacroEvents) and their fallback.

The model proposes stages by naming each stage's first MacroEvent. The program keeps the
proposal only where it is a valid partition: ids that exist, in strictly increasing order,
the first stage starting at the first MacroEvent, at most ``max_stages`` stages. Anything
else is repaired (unknown or out-of-order starts dropped; the first stage moved to the
start), so stages always tile the video without gaps or overlap. Without a usable reply,
stages are cut by time at about ``target_minutes`` each, on MacroEvent boundaries.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from videotapestry.contracts.builder import SuperStage


@dataclass
class StagePlan:
    """One SuperEvent: the indices of its MacroEvents and its text."""

    macros: list[int]
    label: str = ""
    description: str = ""
    key_entities: list[str] = field(default_factory=list)
    transition: str = ""


def super_id(number: int) -> str:
    return f"super_{number:02d}"


def stages_from_reply(
    stages: Sequence[SuperStage], macro_ids: Sequence[str], *, max_stages: int
) -> list[StagePlan]:
    position = {mid: i for i, mid in enumerate(macro_ids)}
    chosen: list[tuple[int, SuperStage]] = []
    for stage in stages:
        index = position.get(stage.first_macro_id.strip())
        if index is None or (chosen and index <= chosen[-1][0]):
            continue
        chosen.append((index, stage))
    if not chosen:
        return []
    chosen = chosen[:max_stages]
    if chosen[0][0] != 0:
        chosen[0] = (0, chosen[0][1])
    plans = []
    for k, (start, stage) in enumerate(chosen):
        end = chosen[k + 1][0] if k + 1 < len(chosen) else len(macro_ids)
        plans.append(
            StagePlan(
                list(range(start, end)),
                stage.label.strip(),
                stage.description.strip(),
                [n for n in stage.key_entities if n.strip()],
                stage.transition.strip(),
            )
        )
    return plans


def stages_by_time(
    starts: Sequence[float], ends: Sequence[float], *, target_s: float, max_stages: int
) -> list[StagePlan]:
    """Stages of about ``target_s`` each, cut where a MacroEvent starts."""
    if not starts:
        return []
    total = ends[-1] - starts[0]
    count = max(1, min(max_stages, len(starts), round(total / target_s) or 1))
    cuts = []
    for k in range(1, count):
        at = starts[0] + total * k / count
        best = min(range(1, len(starts)), key=lambda i: (abs(starts[i] - at), i))
        if best not in cuts and (not cuts or best > cuts[-1]):
            cuts.append(best)
    bounds = [0, *cuts, len(starts)]
    return [StagePlan(list(range(a, b))) for a, b in itertools.pairwise(bounds)]
