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
    update_instruction: Literal["fixed", "plan"] = Field(
        "fixed",
        description="the one update_instruction the Super update call shares across its "
        "requests: a fixed sentence stating the update's job (add the observed facts to the "
        "SuperEvents the sources concern, summarize the others), or the instruction of the "
        "Overview agent's own plan, what its visual look was asked to find (the paper's "
        "update reads the plan); an empty planned instruction falls back to the fixed one",
    )
    asr_after_failed_look: bool = Field(
        True,
        description="plan and read the transcript even when the Overview's visual look "
        "failed (no frames, a failed call, an empty reply): speech can still link evidence; "
        "false: the transcript only follows a successful look (the paper's ASR planner reads "
        "the visual observation). Without the visual tool (variant wo_visual) the transcript "
        "is read either way",
    )


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
        description="planning calls per question: the planning and decision calls the three "
        "level agents make (anchors, plan, ASR plan and decision at Super; plan and decision "
        "at Macro and Subgraph); the anchor call, when made, is one of them, and the "
        "controller gets the rest",
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
    frame_timestamps: Literal["tab", "strip", "untouched"] = Field(
        "tab",
        description="how a Skim/Focus frame shows its time: a black tab burned over its "
        "top-left corner, the same tab on a black strip added above the frame (no pixel "
        "covered, the image a tab taller), or untouched frames as decoded, only scaled (the "
        "paper's); the prompt's image notes name every frame's time in each case. "
        "bench/bench_frame_timestamps.py: of text at the left edge of a frame's top quarter "
        "the tab leaves 45-50 % readable, strip and untouched 92-100 %, at the same OpenAI "
        "tile tokens (a strip adds 15-20 % Qwen-VL patch tokens); strip is not yet the "
        "default because the offline demo's rule model then answers its gate-B question "
        "wrong (the heading the tab hid names the other gate)",
    )
    decision_context: Literal["refined", "full"] = Field(
        "refined",
        description="what a level's decision call reads besides the question and the "
        "upstream instruction: the refined memories and the level's observation results, "
        "or also the candidates' stored texts and the level's whole record of plans, "
        "observations and updates (full: the paper's Decide, Algorithm 2 line 16)",
    )


class AnswerConfig(StrictModel):
    """What the Answer agent (and the Direct baseline, itself a final answer) is asked for."""

    citations: bool = Field(
        True,
        description="ask the answer to cite its evidence: a citation instruction and a "
        "'citations' key in the reply schema, and 'refs:' lines in the composite memory "
        "naming what can be cited (false: the paper's final call, keys reasoning and answer "
        "only, and no citations on the result)",
    )
