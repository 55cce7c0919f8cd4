"""Issue 23 item 5: the single-agent ablation differs from the full method only in having one
controller: the same anchors, the same protected set and the same compression.

Real HTTP to the fake server, real grids and frames over the sample memory (three
SuperEvents) and the 20-minute video (no audio, so no ASR). The visual window is kept short
(``agents.overview.min_window_s=100``) so that it concerns super_01 alone: super_01 and its
neighbour super_02 are protected and super_03 is compressed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from method_support import ask, make_vt

from videotapestry.agents.rules import compress_text
from videotapestry.testing.scripted import ScriptedModel, calls_by, section

SHORT_WINDOW = "agents.overview.min_window_s=100"
LOOK = {"action": "observe_visual", "mode": "grids", "time_ranges": [[0, 100]],
        "instruction": "Describe the preparation."}  # fmt: skip
UPDATE_SUPERS = {"action": "update", "level": "super", "memory_ids": ["super_01"],
                 "instruction": "Add what was seen."}  # fmt: skip


def controller(*steps: dict[str, Any]):
    """A controller that takes ``steps`` in turn, then finishes."""

    def reply(request):
        done = section(request.text, "What you have done so far:", "Left:").strip()
        count = 0 if done.startswith("(nothing yet)") else len(done.splitlines())
        step = steps[count] if count < len(steps) else {"action": "finish"}
        return {"thought": f"step {count + 1}", "memory_ids": [], "time_ranges": [], **step}

    return reply


def overview_plan(request):
    return {"observation_needed": True, "observation_instruction": "Describe the preparation.",
            "candidate_memory_ids": [], "time_ranges": [[0, 100]]}  # fmt: skip


def run(server, embedder, video: Path, variant: str, **overrides: Any):
    server.on(None, ScriptedModel(overview_planning=overview_plan, **overrides))
    result = ask(make_vt(server, embedder, f"variant={variant}", SHORT_WINDOW), video)
    made = calls_by(server.requests)
    server.reset()
    return result, made


def test_the_single_agent_protects_and_compresses_as_the_full_method(
    server, embedder, video: Path
) -> None:
    full, _ = run(server, embedder, video, "full")
    single, made = run(
        server, embedder, video, "single_agent", controller=controller(LOOK, UPDATE_SUPERS)
    )
    assert "super_update" in made and "level_update" not in made
    full_super, single_super = full.levels[0], single.levels[0]
    assert full_super.evidence_ids == single_super.evidence_ids == ["super_01"]
    assert full_super.protected_ids == single_super.protected_ids == ["super_01", "super_02"]
    # Protected: the stored text kept, the evidence part added by the program.
    for super_id in ("super_01", "super_02"):
        assert single_super.refined[super_id].startswith(single_super.static[super_id])
    assert "[Visual]" in single_super.refined["super_01"]
    # Every other SuperEvent compressed, exactly as the full method does it.
    assert single_super.refined["super_03"] == full_super.refined["super_03"]
    assert single_super.refined["super_03"] != single_super.static["super_03"]
    assert single_super.refined["super_03"] in single.memory_text


def test_the_scaffold_is_enforced_when_the_controller_never_updates_the_supers(
    server, embedder, video: Path
) -> None:
    single, made = run(server, embedder, video, "single_agent", controller=controller(LOOK))
    overview = single.levels[0]
    assert "super_update" not in made
    assert overview.protected_ids == ["super_01", "super_02"]
    assert overview.refined["super_01"] == overview.static["super_01"]
    assert overview.refined["super_03"] == compress_text(overview.static["super_03"])


def test_the_single_agent_takes_the_overview_agents_anchors(server, embedder, video: Path) -> None:
    full, _ = run(server, embedder, video, "full")
    single, made = run(server, embedder, video, "single_agent", controller=controller(LOOK))
    assert made.count("locator_anchors") == 1
    assert single.levels[0].plan["anchors"] == full.levels[0].plan["anchors"]
    assert single.levels[0].plan["anchor_source"] == "overview agent"
    assert single.levels[0].calls.locators == 1
