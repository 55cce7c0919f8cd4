"""The method and its ablations (paper Table 3) as one table of records.

Every place that behaves differently per variant asks a ``Variant`` record what the variant
turns off or which memory its Answer agent reads, instead of comparing names: the graph
(which agents run), the run context (which tools are on), ``assemble`` (what goes into the
final memory), the API (what can be reassembled, which model roles a question calls) and
eval (which variants ride on the full run, the report's component columns); the config
accepts exactly the names of this table. A new variant is one row here.

This module sits in the base layer: it imports nothing above ``videotapestry.errors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from videotapestry.errors import ConfigError

#: The model roles one question of the three-agent method calls (``config.MODEL_ROLES`` adds
#: the single agent's controller, the Direct baseline's role and the builder's roles).
METHOD_ROLES: tuple[str, ...] = (
    "overview",  # Overview agent planning (Super level) and the ASR planner
    "skim",  # Skim agent planning (Macro level)
    "focus",  # Focus agent planning (Subgraph level)
    "observation",  # visual observation tool
    "asr_observation",  # ASR observation tool (never sees the question)
    "update",  # memory update tool
    "decision",  # level decisions
    "answer",  # final Answer agent
)
#: The single-agent ablation's one controller.
CONTROLLER_ROLE = "controller"
#: The Direct baseline (uniform frames straight to the VLM).
DIRECT_ROLE = "direct"

#: The memory the Answer agent reads: the refined Super scaffold with the refined
#: Macro/Subgraph paths under their parents (``composite``), one of those two parts alone,
#: the stored texts along the explored path (``static``), or the stored texts with every
#: observation appended as a flat log (``evidence_log``).
AnswerMemory = Literal["composite", "super_scaffold", "refined_paths", "static", "evidence_log"]


@dataclass(frozen=True)
class Variant:
    """One row of Table 3: what the variant keeps of the method, and what it answers from.

    The switches say what the variant turns off; the properties below combine them into
    what actually runs (static memory turns off observation even though ``visual`` is not
    set to False, for instance).
    """

    name: str
    #: One line for docs and ``--help``.
    meaning: str
    #: False for the Direct baseline: no memory, no agents, frames straight to the model.
    method: bool = True
    #: False for static memory: no observation and no update at any level.
    explores: bool = True
    #: The visual observation tool (frame grids at Super, single frames below).
    visual: bool = True
    #: ASR planning and the transcript observation tool.
    asr: bool = True
    #: The update tool rewrites node texts; False is append-only (observations go to a log).
    rewrites: bool = True
    #: One controller over the whole hierarchy instead of the scale-aligned three agents.
    single_controller: bool = False
    #: The final memory given to the Answer agent; None when there is none (Direct).
    answer_reads: AnswerMemory | None = "composite"
    #: Its exploration is the full method's, so its final memory can be built again from any
    #: finished full exploration with only the Answer agent rerun (Table 3(b)).
    reassemblable: bool = False
    #: In an eval run it is not explored on its own: the named variant's exploration of the
    #: same question is reassembled (one Answer call).
    reassembled_from: str | None = None

    @property
    def observes_visual(self) -> bool:
        return self.method and self.explores and self.visual

    @property
    def observes_asr(self) -> bool:
        return self.method and self.explores and self.asr

    @property
    def rewrites_nodes(self) -> bool:
        return self.method and self.explores and self.rewrites

    @property
    def model_roles(self) -> tuple[str, ...]:
        """The model roles one question of this variant calls, whose keys must be there."""
        if not self.method:
            return (DIRECT_ROLE,)
        return (*METHOD_ROLES, CONTROLLER_ROLE) if self.single_controller else METHOD_ROLES

    @property
    def reads_refined_memory(self) -> bool:
        """Whether the Answer agent's memory holds refined texts at all."""
        return self.answer_reads in ("composite", "super_scaffold", "refined_paths")

    @property
    def reads_super_scaffold(self) -> bool:
        """Whether the final memory has the Super scaffold (refined, or as stored)."""
        return self.answer_reads is not None and self.answer_reads != "refined_paths"

    @property
    def reads_paths(self) -> bool:
        """Whether the final memory has the explored Macro/Subgraph paths."""
        return self.answer_reads is not None and self.answer_reads != "super_scaffold"


FULL = Variant("full", "VideoTapestry", reassemblable=True)
WO_VISUAL = Variant("wo_visual", "no visual observation at any level", visual=False)
WO_ASR = Variant("wo_asr", "no ASR planning or transcript observation", asr=False)
APPEND_ONLY = Variant(
    "append_only",
    "observations kept as a flat evidence log; no node rewrites",
    rewrites=False,
    answer_reads="evidence_log",
)
SINGLE_AGENT = Variant(
    "single_agent",
    "one controller for all levels, same budgets, one shared context",
    single_controller=True,
)
STATIC_MEMORY = Variant(
    "static_memory",
    "hierarchical retrieval only: no observation, update or compression",
    explores=False,
    answer_reads="static",
)
REFINED_SUPER_ONLY = Variant(
    "refined_super_only",
    "full exploration; the Answer agent sees only the Super scaffold",
    answer_reads="super_scaffold",
    reassemblable=True,
    reassembled_from=FULL.name,
)
REFINED_PATHS_ONLY = Variant(
    "refined_paths_only",
    "full exploration; only the refined Macro/Subgraph paths",
    answer_reads="refined_paths",
    reassemblable=True,
    reassembled_from=FULL.name,
)
DIRECT = Variant(
    "direct",
    "uniformly sampled frames straight to the model (the Direct baseline)",
    method=False,
    answer_reads=None,
)

#: Every variant, in the paper's order (the order of ``config.Variant`` and of help texts).
VARIANTS: tuple[Variant, ...] = (
    FULL,
    WO_VISUAL,
    WO_ASR,
    APPEND_ONLY,
    SINGLE_AGENT,
    STATIC_MEMORY,
    REFINED_SUPER_ONLY,
    REFINED_PATHS_ONLY,
    DIRECT,
)
VARIANT_NAMES: tuple[str, ...] = tuple(v.name for v in VARIANTS)
#: Final memories that can be built from one finished full exploration (Table 3(b)).
REASSEMBLY_VARIANTS: tuple[str, ...] = tuple(v.name for v in VARIANTS if v.reassemblable)


def exploration_source(name: str) -> str:
    """The variant whose exploration an eval answers ``name`` from: its own, or the one it
    is reassembled from."""
    return variant_named(name).reassembled_from or name


def variant_named(name: str) -> Variant:
    """The row of ``name``; an unknown name is a ConfigError that lists the known ones."""
    for variant in VARIANTS:
        if variant.name == name:
            return variant
    raise ConfigError(f"unknown variant {name!r}; choose from {', '.join(VARIANT_NAMES)}")
