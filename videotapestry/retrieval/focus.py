"""Focus-level evidence: PACE-Mem over the clips under the selected MacroEvents, with every
selected MacroEvent that has evidence represented, and the query PACE-Mem scores against.

Why this exists: one PACE-Mem run over all candidate clips keeps 2-10 of them, wherever the
query matches best. When the Skim agent selected several MacroEvents because the answer is
spread over them (a count over distant branches: "how many contestants play the piano"), a
joint run can spend its whole depth on the best-matching branch and leave another with no
clip, so the Focus agent never sees that subgraph. ``evidence.focus_scope`` chooses how the
selection is made:

==================  ========================================================================
focus_scope         behaviour
==================  ========================================================================
joint               one run over all candidates (the earlier behaviour, kept as ablation); a
                    MacroEvent may end with no clip (status ``unrepresented``)
joint_with_floor    the joint run, then every MacroEvent with candidates but no chosen clip
                    gets its most relevant clip (status ``floor``); depth grows by at most
                    the number of such MacroEvents
per_macro           one run inside each MacroEvent; ``k_min``, ``k_max`` and ``fixed_k`` are
                    *totals* split across the MacroEvents that have clips (see
                    ``split_depth``), so the summed depth stays in the joint run's range
==================  ========================================================================

The PACE-Mem switches of ``EvidenceConfig`` (method, mmr, depth_selection, pooling, ...) apply
to every run unchanged; "most relevant" for the floor and the budget split is the relevance
the runs rank by (pooled, or the best record under ``pooling=false``). With
``method=adaptive_k`` there is no depth bound to split: each MacroEvent is cut at its own
largest gap. A clip under two MacroEvents (a builder clip straddling a boundary) counts for
both and is returned once. A selected MacroEvent with no clips at all is reported with status
``no_clips``, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from videotapestry.config import EvidenceConfig
from videotapestry.question import option_body
from videotapestry.retrieval.clips import Clip
from videotapestry.retrieval.from_memory import clips_under
from videotapestry.retrieval.pace_mem import PackedClips
from videotapestry.retrieval.selection import SelectionResult, clip_relevance, select_evidence

FocusScope = Literal["joint", "joint_with_floor", "per_macro"]
MacroStatus = Literal["selected", "floor", "unrepresented", "no_clips"]

# --------------------------------------------------------------------------- query


def focus_query_text(
    question: str,
    instruction: str | None = None,
    options: Sequence[str] = (),
    *,
    include_options: bool = False,
) -> str:
    """The text PACE-Mem embeds at the Focus level: question + upstream instruction, and the
    option texts when ``include_options`` (``evidence.query_options``).

    Options name what to look for that the question leaves implicit (the candidate people or
    actions), but the wrong ones pull their own clips in too; the switch exists so the coverage
    bench can measure which effect wins. Labels are stripped so "A." adds nothing to the query.
    """
    parts = [" ".join(question.split()), " ".join((instruction or "").split())]
    if include_options:
        texts = [text for text in (option_body(o) for o in options) if text]
        if texts:
            parts.append("Options: " + "; ".join(texts) + ".")
    return " ".join(part for part in parts if part)


# --------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class DepthBudget:
    """The depth bounds one per-MacroEvent run used (its share of the configured totals)."""

    k_min: int
    k_max: int
    fixed_k: int

    def to_dict(self) -> dict[str, int]:
        return {"k_min": self.k_min, "k_max": self.k_max, "fixed_k": self.fixed_k}


class _ChosenClips:
    """``clip_ids`` and ``windows`` of a ``clips`` field, for both result types."""

    clips: tuple[Clip, ...]

    @property
    def clip_ids(self) -> list[str]:
        return [clip.id for clip in self.clips]

    @property
    def windows(self) -> list[tuple[float, float]]:
        """Time ranges of the chosen clips, chronological: where frames are sampled."""
        return [(clip.start_s, clip.end_s) for clip in self.clips]


@dataclass(frozen=True, eq=False)
class MacroEvidence(_ChosenClips):
    """What the Focus agent is shown under one selected MacroEvent.

    ``clips`` are the chosen clips under it, chronological; ``record_ids`` the records of
    those clips that belong to it (a record's ``macro_id``, else its clip's), in clip order
    then record order. ``candidate_ids`` are all its clips (chronological). ``floor_clip_id``
    is the floor clip that represents it (status ``floor``); ``run`` and ``budget`` are its
    own PACE-Mem run and depth share (``per_macro``), else None.
    """

    macro_id: str
    status: MacroStatus
    clips: tuple[Clip, ...]
    record_ids: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    floor_clip_id: str | None = None
    run: SelectionResult | None = None
    budget: DepthBudget | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "macro_id": self.macro_id,
            "status": self.status,
            "selected_ids": self.clip_ids,
            "selected_windows": [list(w) for w in self.windows],
            "record_ids": list(self.record_ids),
            "candidate_ids": list(self.candidate_ids),
            "floor_clip_id": self.floor_clip_id,
            "budget": self.budget.to_dict() if self.budget else None,
            "run": self.run.to_dict() if self.run else None,
        }


@dataclass(frozen=True, eq=False)
class FocusSelection(_ChosenClips):
    """The Focus-level evidence for one query, per selected MacroEvent, with its trajectory.

    ``macros`` has one entry per selected MacroEvent, in the order given (repeats dropped).
    ``clips`` is every chosen clip once, chronological; ``floor_clip_ids`` the ones the floor
    added (``joint_with_floor``). ``joint`` is the joint PACE-Mem run (``joint`` /
    ``joint_with_floor``), None for ``per_macro`` (each MacroEvent holds its own run).
    """

    scope: FocusScope
    macros: dict[str, MacroEvidence]
    clips: tuple[Clip, ...]
    floor_clip_ids: tuple[str, ...]
    joint: SelectionResult | None
    settings: dict[str, Any]

    @property
    def macro_ids(self) -> list[str]:
        return list(self.macros)

    @property
    def depth(self) -> int:
        return len(self.clips)

    def with_status(self, *statuses: MacroStatus) -> list[str]:
        """Ids of the MacroEvents in one of ``statuses`` (e.g. "no_clips", "unrepresented")."""
        return [m.macro_id for m in self.macros.values() if m.status in statuses]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only, for traces; every run's full trajectory is included."""
        return {
            "scope": self.scope,
            "method": self.settings["method"],
            "depth": self.depth,
            "selected_ids": self.clip_ids,
            "selected_windows": [list(w) for w in self.windows],
            "floor_clip_ids": list(self.floor_clip_ids),
            "macros": {m: evidence.to_dict() for m, evidence in self.macros.items()},
            "joint": self.joint.to_dict() if self.joint else None,
            "settings": self.settings,
        }


# --------------------------------------------------------------------------- selection


def select_focus_evidence(
    query_vector: np.ndarray,
    packed: PackedClips,
    macro_ids: Sequence[str],
    config: EvidenceConfig,
) -> FocusSelection:
    """Choose the Focus evidence under ``macro_ids`` from a packed memory (see module table).

    ``packed`` is the whole memory's evidence (``pack_memory_evidence``) or any superset of the
    candidates; the clips under each MacroEvent are sliced out with ``clips_under``. Pure and
    deterministic: the same inputs give the same selection.
    """
    order = list(dict.fromkeys(macro_ids))
    candidates = clips_under(packed, order)
    under = {m: clips_under(candidates, [m]) for m in order}
    position = {clip_id: index for index, clip_id in enumerate(candidates.clip_ids)}
    # membership[m, c]: candidate clip c lies under the m-th MacroEvent.
    membership = np.zeros((len(order), candidates.size), dtype=bool)
    for row, macro_id in enumerate(order):
        membership[row, [position[c] for c in under[macro_id].clip_ids]] = True

    joint: SelectionResult | None = None
    runs: dict[str, SelectionResult] = {}
    budgets: dict[str, DepthBudget] = {}
    picked = np.zeros(candidates.size, dtype=bool)  # chosen by a PACE-Mem run
    if config.focus_scope == "per_macro":
        relevance, _ = clip_relevance(query_vector, candidates, config)
        budgets = _per_macro_budgets(order, membership, relevance, config)
        for macro_id, budget in budgets.items():
            share = config.model_copy(
                update={"k_min": budget.k_min, "k_max": budget.k_max, "fixed_k": budget.fixed_k}
            )
            runs[macro_id] = select_evidence(query_vector, under[macro_id], share)
            picked[[position[c] for c in runs[macro_id].selected_ids]] = True
    else:
        joint = select_evidence(query_vector, candidates, config)
        picked[joint.selected] = True
    floor = np.zeros(candidates.size, dtype=bool)  # added by the floor
    if joint is not None and config.focus_scope == "joint_with_floor":
        floor[_floor_clips(membership, joint.relevance, picked)] = True
    chosen = picked | floor

    macros = {}
    for row, macro_id in enumerate(order):
        members = membership[row]
        status: MacroStatus
        floor_clip = None
        if not members.any():
            status = "no_clips"
        elif (members & picked).any():
            status = "selected"
        elif (members & floor).any():
            status = "floor"
            floor_clip = candidates.clip_ids[int(np.flatnonzero(members & floor)[0])]
        else:
            status = "unrepresented"
        clips = tuple(candidates.clips[i] for i in np.flatnonzero(members & chosen))
        macros[macro_id] = MacroEvidence(
            macro_id=macro_id,
            status=status,
            clips=clips,
            record_ids=tuple(
                record.id
                for clip in clips
                for record in clip.records
                if (record.macro_id or clip.macro_id) == macro_id
            ),
            candidate_ids=under[macro_id].clip_ids,
            floor_clip_id=floor_clip,
            run=runs.get(macro_id),
            budget=budgets.get(macro_id),
        )
    return FocusSelection(
        scope=config.focus_scope,
        macros=macros,
        clips=tuple(candidates.clips[i] for i in np.flatnonzero(chosen)),
        floor_clip_ids=tuple(candidates.clip_ids[i] for i in np.flatnonzero(floor)),
        joint=joint,
        settings=config.model_dump(mode="json"),
    )


def split_depth(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` as ``len(weights)`` near-equal integer shares of at least 1.

    The remainder of the equal split goes to the largest weights (the earlier on ties), so the
    shares add up to ``total`` whenever there are at most ``total`` parts; with more parts each
    still gets 1, because every selected MacroEvent must be represented.
    """
    count = len(weights)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    base, extra = divmod(int(total), count)
    shares = np.full(count, base, dtype=np.int64)
    shares[np.argsort(-np.asarray(weights, dtype=np.float64), kind="stable")[:extra]] += 1
    return np.maximum(shares, 1)


def _per_macro_budgets(
    order: list[str], membership: np.ndarray, relevance: np.ndarray, config: EvidenceConfig
) -> dict[str, DepthBudget]:
    """Each MacroEvent's share of k_min, k_max and fixed_k, weighted by its best clip.

    One MacroEvent keeps the configured bounds, so per_macro then equals joint exactly.
    """
    rows = np.flatnonzero(membership.any(axis=1))
    if rows.size == 0:
        return {}
    best = np.where(membership[rows], relevance[None, :], -np.inf).max(axis=1)
    k_min = split_depth(config.k_min, best)
    k_max = np.maximum(split_depth(config.k_max, best), k_min)
    fixed = split_depth(config.fixed_k, best)
    return {
        order[row]: DepthBudget(int(k_min[i]), int(k_max[i]), int(fixed[i]))
        for i, row in enumerate(rows)
    }


def _floor_clips(membership: np.ndarray, relevance: np.ndarray, picked: np.ndarray) -> list[int]:
    """The most relevant clip (earliest on ties) of each MacroEvent the joint run left empty.

    MacroEvents are visited in the given order and a floor clip also represents every other
    MacroEvent it lies under, so a clip straddling two empty MacroEvents is added once.
    """
    represented = (membership & picked[None, :]).any(axis=1)
    added = []
    for row in np.flatnonzero(membership.any(axis=1)):
        if represented[row]:
            continue
        clip = int(np.argmax(np.where(membership[row], relevance, -np.inf)))
        added.append(clip)
        represented |= membership[:, clip]
    return added
