"""The ``agents`` section: what each level agent is shown and how many tools it may call."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from videotapestry.config.base import StrictModel


class OverviewSettings(StrictModel):
    """The Overview agent (Super level): one visual window shown as timestamped grids."""

    max_frames: int = Field(120, ge=1)
    max_grids: int = Field(20, ge=1)
    grid_columns: int = Field(3, ge=1)
    grid_rows: int = Field(2, ge=1)
    min_window_s: float = Field(600.0, ge=0)


class LevelSettings(StrictModel):
    """A level that is shown individual frames (Skim, Focus, the Direct baseline)."""

    max_frames: int = Field(50, ge=1)


class FocusSettings(LevelSettings):
    """The Focus agent (Subgraph level): which leaf evidence it reads, and where it may look.

    The paper's Focus agent reads the whole local subgraphs of the MacroEvents handed down
    and intersects its planned ranges with those MacroEvents' intervals; SPEC §6 narrows what
    it reads to the PACE-Mem-selected clips. Each choice is one switch, so an ablation can
    compare them.
    """

    evidence: Literal["selected_clips", "whole_subgraphs"] = Field(
        "selected_clips",
        description="what the Focus agent reads under each selected MacroEvent: the clips "
        "PACE-Mem selects (SPEC §6), or the whole local subgraph (the paper's setting)",
    )
    frame_windows: Literal["candidates", "selected_clips"] = Field(
        "candidates",
        description="what the planned frame ranges are intersected with: the intervals of the "
        "MacroEvents handed down (the paper's setting), or the selected clips' windows, which "
        "replace planned ranges outside every clip",
    )


class LevelLimits(StrictModel):
    """Tool budget of one visited level (Algorithm 2)."""

    max_observations: int = Field(2, ge=0)
    max_updates: int = Field(2, ge=0)
    max_calls: int = Field(4, ge=0)


class SingleAgentSettings(StrictModel):
    """The single-agent ablation: one controller under the three levels' combined budgets."""

    max_steps: int = Field(
        8,
        ge=1,
        description="controller calls per question: the planning and decision calls the three "
        "level agents make (anchors, plan, ASR plan and decision at Super; plan and decision "
        "at Macro and Subgraph)",
    )


class AgentsConfig(StrictModel):
    """What each level agent is shown, and the tool budget of a visited level."""

    overview: OverviewSettings = OverviewSettings()
    skim: LevelSettings = LevelSettings()
    focus: FocusSettings = FocusSettings()
    direct: LevelSettings = LevelSettings()  # the Direct baseline's uniform frames
    single_agent: SingleAgentSettings = SingleAgentSettings()
    level_limits: LevelLimits = LevelLimits()
    prefetch_frames: bool = Field(
        True,
        description="while a Skim or Focus planning call is in flight, decode into the frame "
        "cache the frames an observation of the candidates' whole intervals reads (the "
        "fallback windows of Algorithm 2), and once the plan is known only those it reads; "
        "changes when frames are decoded, never which are shown (nothing to gain when "
        "video.frame_cache_mb is 0)",
    )
    composite_macros: Literal["selected", "candidates"] = Field(
        "candidates",
        description="which refined MacroEvents the composite memory places under their "
        "SuperEvents: every Macro candidate the Skim agent examined (beyond the paper: the "
        "neighbours of the selected one keep the context an 'after X' question needs), or "
        "the ones it selected (the paper's selected paths; all of them when it stopped at "
        "Macro and selected none)",
    )
