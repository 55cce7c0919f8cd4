"""Issue 23 items 3 and 4: where the Focus agent may look, and what it reads.

Real HTTP to the fake server, real frames, embeddings and PACE-Mem over the sample memory
and the generated 20-minute video. Each switch is run at both of its values; the paper's
value is named in each test.
"""

from __future__ import annotations

from pathlib import Path

from method_support import ask, make_vt

from videotapestry.config import load_config
from videotapestry.testing.scripted import ScriptedModel

#: Inside macro_0002 ([07:00-11:00]) but outside every clip PACE-Mem selects for the question.
PLANNED = [470.0, 500.0]


def focus_looks_at(planned: list[float]):
    """A plan that always observes ``planned`` and rewrites nothing."""

    def plan(request):
        return {"observation_needed": True, "observation_instruction": "Look.",
                "time_ranges": [planned], "update_memory_ids": []}  # fmt: skip

    return plan


def focus_run(server, embedder, video: Path, *overrides: str):
    server.on(None, ScriptedModel(level_planning=focus_looks_at(PLANNED)))
    result = ask(make_vt(server, embedder, *overrides), video)
    server.reset()
    return result.levels[2]


def selected_windows(focus) -> list[tuple[float, float]]:
    return [
        (start, end)
        for macro in focus.evidence_selection["macros"].values()
        for start, end in macro["selected_windows"]
    ]


def test_the_switches_default_to_the_spec_clips_and_the_paper_windows() -> None:
    focus = load_config().agents.focus
    assert (focus.evidence, focus.frame_windows) == ("selected_clips", "candidates")


def test_planned_frames_outside_the_clips_are_kept_inside_the_macro_event(
    server, embedder, video: Path
) -> None:
    # The paper: planned ranges intersected with the candidate MacroEvents' intervals.
    paper = focus_run(server, embedder, video, "agents.focus.frame_windows=candidates")
    [look] = paper.observations
    assert paper.candidate_ids == ["macro_0002"]
    assert look.windows == [tuple(PLANNED)]
    clips = selected_windows(paper)
    assert clips and not any(s < PLANNED[1] and PLANNED[0] < e for s, e in clips)

    # The kept option: intersected with the selected clips, so the plan falls back to them.
    narrowed = focus_run(server, embedder, video, "agents.focus.frame_windows=selected_clips")
    [look] = narrowed.observations
    assert look.windows and look.windows != [tuple(PLANNED)]
    assert all(any(s <= ws and we <= e for s, e in clips) for ws, we in look.windows)


def test_a_plan_outside_the_macro_events_falls_back_to_their_intervals(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel(level_planning=focus_looks_at([1000.0, 1100.0])))
    result = ask(make_vt(server, embedder, "agents.focus.frame_windows=candidates"), video)
    [look] = result.levels[2].observations
    assert look.windows == [(420.0, 660.0)]  # macro_0002, the candidate handed down


def test_whole_subgraphs_show_every_node_and_relation(server, embedder, video: Path) -> None:
    selected = focus_run(server, embedder, video)
    whole = focus_run(server, embedder, video, "agents.focus.evidence=whole_subgraphs")
    # PACE-Mem leaves out the butter-rubbing event; the paper's whole subgraph has it.
    assert "slot2_v1" not in selected.static["macro_0002"]
    assert selected.evidence_selection is not None
    text = whole.static["macro_0002"]
    for node_id in ("slot2_e1", "slot2_v1", "slot2_v2", "slot2_o1", "slot2_e5"):
        assert node_id in text
    assert "slot2_e1 PERFORMS slot2_v1" in text
    assert whole.evidence_selection is None  # nothing was selected
    # Reading more costs tokens: the whole subgraph is the longer memory.
    assert len(text) > len(selected.static["macro_0002"])
