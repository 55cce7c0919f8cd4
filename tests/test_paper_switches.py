"""Issue 37, item 2: each query-time deviation from the paper is a named switch.

For every switch, the rule as a pure function, then the method end to end (real HTTP to the
fake server, real frames from a generated video, the sample memory) showing that the switch
changes what the model is sent, and that the default sends what it sent before the switch.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from method_support import ask, make_vt
from PIL import Image

from videotapestry.agents.level_protocol import level_record, update_record
from videotapestry.agents.overview import FIXED_SUPER_UPDATE_INSTRUCTION, super_update_instruction
from videotapestry.agents.rules import transcript_follows_look
from videotapestry.agents.single_agent import controller_steps
from videotapestry.agents.state import Observation
from videotapestry.config import load_config
from videotapestry.testing import FakeReply
from videotapestry.testing.scripted import ScriptedModel, calls_by, section
from videotapestry.timecode import format_timestamp, label_decimals
from videotapestry.video import decode_indices, encode_jpeg, open_video, stamp_frame
from videotapestry.video.encoding import frame_side, resize_to_fit
from videotapestry.video.grids import draw_label, label_font, tab_height

GLOBAL_QUESTION = "What is the main idea of this video?"


def picture(width: int = 320, height: int = 180) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def visual(result: str = "A red door.", error: str | None = None) -> Observation:
    return Observation(
        kind="visual",
        level="macro",
        source_id="V1",
        instruction="Look at the door.",
        windows=[(600.0, 640.0)],
        result=result if error is None else "",
        error=error,
    )


# --------------------------------------------------------------------------- frame timestamps


def test_untouched_frames_keep_every_pixel() -> None:
    image = picture()
    assert stamp_frame(image, "10:12", "untouched") is image


def test_the_tab_covers_only_the_top_left_corner() -> None:
    image = picture()
    tabbed = stamp_frame(image, "10:12", "tab")
    assert tabbed.shape == image.shape
    rows, columns = np.nonzero((tabbed != image).any(axis=2))
    height = tab_height("10:12", label_font(180))
    assert rows.max() < height and columns.max() < image.shape[1] // 2
    assert rows.min() == 0 and columns.min() == 0


def test_the_strip_adds_rows_above_and_covers_nothing() -> None:
    image = picture()
    strip = tab_height("10:12", label_font(180))
    stamped = stamp_frame(image, "10:12", "strip")
    assert stamped.shape == (180 + strip, 320, 3)
    assert np.array_equal(stamped[strip:], image)
    band = stamped[:strip]
    assert (band > 128).any()  # the white digits
    # The tab is the strip's own height and black around its text, as over the picture.
    assert np.array_equal(band[:, -10:], np.zeros_like(band[:, -10:]))


# --------------------------------------------------------------------------- decision context


def test_the_level_record_holds_plan_observations_and_update() -> None:
    plan = {
        "thought": "The door matters. This supports option B.",
        "observation_instruction": "Look at the door.",
        "time_ranges": [[600, 640]],
        "update_memory_ids": ["macro_1"],
    }
    record = level_record(
        {"plan": plan},
        [visual(), visual(error="frame sampling failed: no frames")],
        update_record({"macro_1": "old", "macro_2": "old"}, {"macro_1": "new"}, made=True),
    ).splitlines()
    assert record[0].startswith('plan: {"thought": "The door matters."')
    assert "option B" not in record[0] and '"update_memory_ids": ["macro_1"]' in record[0]
    assert record[1] == "V1 visual observation [10:00-10:40]: A red door."
    assert record[2].endswith("[10:00-10:40]: failed (frame sampling failed: no frames)")
    assert record[3] == "update: rewrote ['macro_1']; stored text kept for ['macro_2']"


def test_the_update_record_says_when_nothing_was_updated_and_what_was_protected() -> None:
    same = {"super_01": "a", "super_02": "b"}
    assert update_record(same, same, made=False) == (
        "update: none made; every memory keeps its stored text"
    )
    line = update_record(same, {**same, "super_02": "b [Visual] c"}, made=True,
                         protected=["super_01", "super_02"])  # fmt: skip
    assert line.endswith("protected (stored text kept, evidence added): ['super_01', 'super_02']")


# --------------------------------------------------------------------------- super update


def test_the_super_update_instruction_comes_from_the_plan_when_asked() -> None:
    assert super_update_instruction("fixed", "Read the oven display.") == (
        FIXED_SUPER_UPDATE_INSTRUCTION
    )
    assert super_update_instruction("plan", " Read the oven display. ") == "Read the oven display."
    assert super_update_instruction("plan", "  ") == FIXED_SUPER_UPDATE_INSTRUCTION


# --------------------------------------------------------------------------- single agent


def test_the_anchor_call_is_one_of_the_controllers_steps() -> None:
    assert controller_steps(8, anchor_calls=1) == 7
    assert controller_steps(8, anchor_calls=0) == 8
    assert controller_steps(1, anchor_calls=1) == 0


# --------------------------------------------------------------------------- ASR after a look


@pytest.mark.parametrize(
    ("looked", "succeeded", "after_failed", "listens"),
    [
        (True, True, False, True),
        (True, False, False, False),  # the paper: no transcript after a failed look
        (True, False, True, True),  # ours: listen anyway
        (False, False, False, True),  # no visual tool (w/o visual): the transcript is all
    ],
)
def test_the_transcript_follows_the_look(
    looked: bool, succeeded: bool, after_failed: bool, listens: bool
) -> None:
    assert (
        transcript_follows_look(
            looked=looked, look_succeeded=succeeded, after_failed_look=after_failed
        )
        is listens
    )


# --------------------------------------------------------------------------- end to end


def level_looks(requests, level: str) -> list[list[bytes]]:
    return [
        r.images
        for r in requests
        if r.prompt == "visual_observation" and r.headers.get("x-videotapestry-level") == level
    ]


def decoded_frames(video: Path, times: list[float]) -> list[np.ndarray]:
    config = load_config()
    with open_video(video, config.video) as reader:
        fps = reader.info.fps
        return [f.image for f in decode_indices([reader], [round(t * fps) for t in times])]


def subtitles(tmp_path: Path) -> Path:
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:10:12,000 --> 00:10:15,000\nThe oven is on.\n", encoding="utf-8")
    return srt


def jpeg_pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def test_each_placement_sends_the_frames_it_names(server, embedder, video: Path) -> None:
    """untouched (the paper): not one pixel differs from the decoded frame scaled as sent;
    tab (the default): the frames sent before the switch; strip: the picture below the tab
    is the untouched frame."""
    config = load_config()
    side, quality = frame_side(config.images), config.images.jpeg_quality
    sent = {}
    for placement in ("untouched", "strip", "default"):
        server.reset()
        server.on(None, ScriptedModel())
        switch = [] if placement == "default" else [f"agents.frame_timestamps={placement}"]
        result = ask(make_vt(server, embedder, "agents.skim.max_frames=6",
                             "agents.focus.max_frames=6", *switch), video)  # fmt: skip
        for level, outcome in (("macro", result.levels[1]), ("subgraph", result.levels[2])):
            [images] = level_looks(server.requests, level)
            times = outcome.observations[0].frame_times
            assert len(images) == len(times) == 6
            sent[placement, level] = (images, times)
    assert config.agents.frame_timestamps == "tab"
    for level in ("macro", "subgraph"):
        images, times = sent["untouched", level]
        assert sent["strip", level][1] == sent["default", level][1] == times
        decimals = label_decimals(times)
        frames = [resize_to_fit(frame, side) for frame in decoded_frames(video, times)]
        for data, scaled in zip(images, frames, strict=True):
            # The JPEG is the one the frame alone encodes to.
            assert data == encode_jpeg(scaled, max_side=side, quality=quality)
            assert jpeg_pixels(data).shape == scaled.shape
        for data, scaled, t in zip(sent["default", level][0], frames, times, strict=True):
            # The drawing of before the switch, written out as it was.
            before = Image.fromarray(scaled)
            text = format_timestamp(t, decimals)
            draw_label(before, text, (0, 0, before.width, before.height), label_font(before.height))
            assert data == encode_jpeg(np.asarray(before), max_side=side, quality=quality)
        for data, scaled, t in zip(sent["strip", level][0], frames, times, strict=True):
            strip = tab_height(format_timestamp(t, decimals), label_font(scaled.shape[0]))
            assert jpeg_pixels(data).shape == (scaled.shape[0] + strip, *scaled.shape[1:])
            stamped = stamp_frame(scaled, format_timestamp(t, decimals), "strip")
            assert np.array_equal(stamped[strip:], scaled)
            assert data == encode_jpeg(stamped, max_side=side, quality=quality)
        assert len({tuple(sent[p, level][0]) for p in ("untouched", "strip", "default")}) == 3


def test_the_full_decision_context_adds_stored_texts_and_the_level_record(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    srt = subtitles(tmp_path)
    prompts = {}
    for context in ("refined", "full"):
        server.reset()
        server.on(None, ScriptedModel())
        vt = make_vt(server, embedder, "asr.source=subtitles", f"agents.decision_context={context}")
        ask(vt, video, subtitle_path=srt)
        prompts[context] = {
            r.headers.get("x-videotapestry-level"): r.text
            for r in server.requests
            if r.prompt == "decision"
        }
    ours, paper = prompts["refined"]["macro"], prompts["full"]["macro"]
    assert "old_memories" not in ours
    assert "visual observation: The oven display shows" in section(
        ours, "Trajectory of this level:"
    )
    stored = section(paper, "old_memories:", "updated_dynamic_memories:")
    assert "macro_0002 [" in stored and "Refined macro_0002" not in stored
    assert "Refined macro_0002" in section(paper, "updated_dynamic_memories:", "Trajectory")
    record = section(paper, "Trajectory of this level:").strip()
    assert 'plan: {"thought": "Check the oven."' in record
    assert "V1 visual observation [" in record and "update: rewrote [" in record
    super_record = section(prompts["full"]["super"], "Trajectory of this level:").strip()
    assert super_record.startswith('visual plan: {"thought"') and "protected (" in super_record
    assert 'asr plan: {"thought"' in super_record


def test_the_super_update_takes_the_plans_instruction_when_asked(
    server, embedder, video: Path
) -> None:
    sent = {}
    for source in ("fixed", "plan"):
        server.reset()
        server.on(None, ScriptedModel())
        ask(make_vt(server, embedder, f"agents.overview.update_instruction={source}"), video)
        [update] = [r for r in server.requests if r.prompt == "super_update"]
        sent[source] = section(update.text, "update_instruction:", "\n").strip()
    assert sent["fixed"] == FIXED_SUPER_UPDATE_INSTRUCTION
    assert sent["plan"] == "Read the oven display."  # the scripted Overview plan's instruction


def test_the_single_agent_makes_no_more_planning_calls_than_the_agents(
    server, embedder, video: Path
) -> None:
    # A controller that never finishes spends every step it is given.
    never_done = {"thought": "more", "action": "expand", "memory_ids": ["macro_0002"]}
    server.on(None, ScriptedModel(controller=never_done))
    ask(make_vt(server, embedder, "variant=single_agent"), video)
    made = calls_by(server.requests)
    assert made.count("locator_anchors") == 1 and made.count("controller") == 7
    server.reset()
    server.on(None, ScriptedModel(controller=never_done))
    ask(make_vt(server, embedder, "variant=single_agent"), video, question=GLOBAL_QUESTION)
    made = calls_by(server.requests)
    assert "locator_anchors" not in made and made.count("controller") == 8


def test_after_a_failed_look_the_transcript_is_read_unless_the_paper_is_followed(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    srt = subtitles(tmp_path)

    def blind_overview(request):
        if request.headers.get("x-videotapestry-level") == "super":
            return FakeReply.server_error(500)
        return ScriptedModel()._visual_observation(request)

    calls = {}
    results = {}
    for after_failed in ("true", "false"):
        server.reset()
        server.on(None, ScriptedModel(visual_observation=blind_overview))
        vt = make_vt(server, embedder, "asr.source=subtitles",
                     f"agents.overview.asr_after_failed_look={after_failed}")  # fmt: skip
        results[after_failed] = ask(vt, video, subtitle_path=srt)
        calls[after_failed] = calls_by(server.requests, level="super")
    assert {"asr_planning", "asr_observation"} <= set(calls["true"])
    assert not {"asr_planning", "asr_observation"} & set(calls["false"])
    paper = results["false"].levels[0]
    assert [o.kind for o in paper.observations] == ["visual"]
    assert any("asr_after_failed_look: false" in note for note in paper.notes)
    # A successful look is followed by the transcript under either setting.
    server.reset()
    server.on(None, ScriptedModel())
    paper_setting = "agents.overview.asr_after_failed_look=false"
    ask(make_vt(server, embedder, "asr.source=subtitles", paper_setting), video, subtitle_path=srt)
    assert {"asr_planning", "asr_observation"} <= set(calls_by(server.requests, level="super"))
