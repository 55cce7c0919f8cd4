"""The offline model's parts on their own: prompt reading, OCR of grids, scoring, rules.

Real OCR (rapidocr) on frames drawn here, real grids from the program's own packer, real
MiniLM vectors (the session ``embedder``); no video and no model service.
"""

from __future__ import annotations

import asyncio

import cv2
import numpy as np
import pytest

from videotapestry.config import load_config
from videotapestry.errors import ConfigError, ModelRequestError
from videotapestry.llm.service import ModelService
from videotapestry.llm.types import Message, ModelRequest
from videotapestry.offline import OfflineClientFactory
from videotapestry.offline.builder_roles import boundary_cuts, same_entity, stage_cuts
from videotapestry.offline.matching import (
    best_option,
    contains_phrase,
    distinctive_words,
    names_share,
    score_options,
    split_units,
)
from videotapestry.offline.perception import Perception, grid_layout, label_keys
from videotapestry.offline.prompt_reading import (
    read_entries,
    read_facts,
    read_question,
    read_sources,
    read_transcript,
    section,
)
from videotapestry.offline.query_roles.planning import merge_ranges
from videotapestry.offline.screen_text import readings
from videotapestry.video.encoding import frame_images, overview_images
from videotapestry.video.reader import Frame

# --------------------------------------------------------------------------- reading


def test_memory_lines_keep_their_continuations_and_times() -> None:
    text = (
        "super_01 [00:00-07:00] Preparation: Maria preps.\n"
        "[Visual] 05:22: SCENE 3\n"
        "super_02 [1:07:00-1:15:30] Roasting.\n"
        "macro_0002 [07:00-11:00] Evidence under macro_0002 (oven):\n"
        "- slot2_e1 [@07:05] Chef Maria (person): chef\n"
        '- slot2_o1 [10:15-10:35] "220°C" (display): oven display'
    )
    entries = read_entries(text)
    assert [e.id for e in entries] == ["super_01", "super_02", "macro_0002"]
    assert entries[0].body == ("[Visual] 05:22: SCENE 3",)
    assert entries[1].span == (4020.0, 4530.0)
    assert len(entries[2].body) == 2
    nested = read_entries("\n".join(entries[2].body), top_level=False)
    assert [(e.id, e.span) for e in nested] == [
        ("slot2_e1", (425.0, 425.0)),
        ("slot2_o1", (615.0, 635.0)),
    ]


def test_question_options_transcript_and_sources_are_read_back() -> None:
    prompt = (
        "Question: Which code\nis on the sign?\nOptions:\nA. 1447\nB. 4417\n\n"
        "asr:\n[00:05-00:09] Remember the code.\n[01:05-01:10] Go now.\n\n"
        "observation_sources:\nV1 (visual; 00:00-03:00): 00:30: GATE 12\n01:00-01:29: EXIT 4417\n"
        "  uncertain: 02:00: PUMP\nA1 (transcript; 00:00-03:00): 00:05-00:09: said: Hi\n"
    )
    question = read_question(prompt)
    assert question.question == "Which code\nis on the sign?"
    assert question.letters == ("A", "B") and question.bodies == ("1447", "4417")
    lines = read_transcript(section(prompt, "asr:", "observation_sources:"))
    assert [(line.start, line.text) for line in lines] == [
        (5, "Remember the code."),
        (65, "Go now."),
    ]
    assert lines[0].raw == "[00:05-00:09] Remember the code."
    visual, speech = read_sources(section(prompt, "observation_sources:"))
    assert [(f.start, f.end, f.text) for f in visual.facts] == [
        (30, 30, "GATE 12"),
        (60, 89, "EXIT 4417"),
    ]
    assert visual.windows == ((0.0, 180.0),) and speech.kind == "transcript"
    assert [f.text for f in speech.facts] == ["said: Hi"]
    assert [f.text for f in read_facts("00:01: A; 00:02-00:04: B C")] == ["A", "B C"]


# --------------------------------------------------------------------------- seeing


def _frame(t: float, text: str, size: tuple[int, int] = (320, 180)) -> Frame:
    image = np.full((size[1], size[0], 3), (40, 70, 200), np.uint8)
    cv2.putText(image, text, (20, 110), cv2.FONT_HERSHEY_DUPLEX, 1.4, (255, 255, 255), 2)
    return Frame(t, round(t), image)


@pytest.fixture(scope="module")
def engine():
    from videotapestry.config import BuilderOcrSettings
    from videotapestry.ocr import RapidOcrEngine

    return RapidOcrEngine(BuilderOcrSettings(threads=0))


def test_grid_texts_get_their_cells_times_and_never_the_timestamp_tabs(engine) -> None:
    config = load_config(profile="offline")
    frames = [_frame(70 + k, "GATE 12" if k < 3 else "EXIT 4417") for k in range(6)]
    frames += [_frame(80 + k, f"BAY {k + 5}") for k in range(4)]
    grids = overview_images(frames, config.images, config.agents.overview)
    assert len(grids) == 2
    perception = Perception(ocr_engine=engine)
    seen = perception.read(grids)
    by_time = {}
    for item in seen:
        by_time.setdefault(item.time_s, []).append(item.text.replace(" ", ""))
    assert by_time[70.0] == by_time[72.0] == ["GATE12"]
    assert by_time[73.0] == by_time[75.0] == ["EXIT4417"]
    assert [by_time[80.0 + k] for k in range(4)] == [[f"BAY{k + 5}"] for k in range(4)]
    labels = {key for t in by_time for key in label_keys(t)}
    assert not any(text.replace(":", "") in labels for texts in by_time.values() for text in texts)
    # Grid 1 shows two pictures: two crops read; grid 2 four: one whole-grid pass.
    assert perception.images_read == 3
    assert readings(seen)[0].fact.replace(" ", "") in ("01:10-01:12:GATE12",)
    perception.read(grids)
    assert perception.images_read == 3  # every image is read once


def test_single_frames_that_repeat_are_read_once_per_request(engine) -> None:
    config = load_config(profile="offline")
    frames = [_frame(10 + k, "GATE 7") for k in range(5)] + [_frame(20, "YARD 9")]
    parts = frame_images(frames, config.images, max_frames=50)
    perception = Perception(ocr_engine=engine)
    seen = perception.read(parts)
    assert perception.images_read == 2
    assert [(s.time_s, s.text.replace(" ", "")) for s in seen] == [
        *((10.0 + k, "GATE7") for k in range(5)),
        (20.0, "YARD9"),
    ]
    assert [r.fact.replace(" ", "") for r in readings(seen)] == ["00:10-00:14:GATE7", "00:20:YARD9"]


def test_grid_layout_is_found_from_the_gaps_between_cells() -> None:
    config = load_config(profile="offline")
    frames = [_frame(k, "X") for k in range(4)]
    [grid] = overview_images(frames, config.images, config.agents.overview)
    from videotapestry.offline.perception import decode_rgb

    image = decode_rgb(grid.jpeg)
    assert grid_layout(image, 4) == (3, 2)
    assert grid_layout(image, 1) == (1, 1)
    assert grid_layout(np.full((100, 300, 3), 200, np.uint8), 6) == (1, 1)  # no gaps: one cell


# --------------------------------------------------------------------------- matching


def test_an_option_is_found_in_ocr_text_but_not_inside_a_longer_number() -> None:
    assert contains_phrase("4417", "01:00-01:29: EXITC0DE4417")
    assert contains_phrase("exit code", "EXITC0DE 4417")
    assert not contains_phrase("4417", "CODE 14417")
    assert not contains_phrase("441", "CODE 4417")
    assert contains_phrase("A1", "bay A1 left") and not contains_phrase("A1", "BAY A12")
    assert distinctive_words(["CODE 4417", "CODE 7144"]) == [["44l7"], ["7l44"]]


def test_the_option_spelled_in_the_evidence_wins_over_lookalikes(embedder) -> None:
    units = split_units(
        "super_01 [00:00-03:00] A tour of the plant.\n"
        "  [Visual] 00:30: GATE 12; 01:00-01:29: EXIT CODE 4417\n"
        "  macro_0001 [01:52-03:00] The pump room; the exit is on the left."
    )
    assert ("01:00-01:29: EXIT CODE 4417", True) in units
    texts = [u for u, _ in units]
    question = "What is the exit code?"
    bodies = ["1447", "4417", "7144", "4471"]
    vectors = dict(
        zip([question, *bodies, *texts], embedder.embed([question, *bodies, *texts]), strict=True)
    )
    scores = score_options("ABCD", bodies, texts, vectors, question, observed=[o for _, o in units])
    best = best_option(scores)
    assert best.letter == "B" and best.line == "01:00-01:29: EXIT CODE 4417"
    assert best.score > 2 * max(s.score for s in scores if s is not best)


def test_merge_ranges() -> None:
    assert merge_ranges([(55, 72), (63, 95), (100, 110), (5, 9)]) == [(5, 9), (55, 95), (100, 110)]


# --------------------------------------------------------------------------- builder rules


def test_boundaries_fall_where_captions_change_at_least_a_minute_apart() -> None:
    starts = [0, 20, 40, 60, 80, 100, 120]
    sims = np.array([1.0, 0.95, 0.3, 0.9, 0.2, 0.92, 0.94])
    assert boundary_cuts(starts, sims) == [4]  # 40 s is under a minute from the start
    sims = np.array([1.0, 0.95, 0.9, 0.3, 0.9, 0.9, 0.25])
    assert boundary_cuts(starts, sims) == [3, 6]


def test_entity_merges_need_the_same_name_not_the_same_role() -> None:
    assert same_entity("Maria", "person", "Chef Maria", "person")
    assert not same_entity("the chef", "person", "chef Maria", "person")
    assert not same_entity("Maria", "person", "Maria", "place")
    assert same_entity("EXIT C0DE", "text", "exit code", "text")
    assert not same_entity("EXIT CODE 4417", "text", "EXIT CODE 4471", "text")


def test_stages_split_near_even_cuts() -> None:
    starts = [0, 120, 300, 500, 610, 900, 1250]
    ends = [*starts[1:], 1800]
    assert stage_cuts(starts, ends, target_s=600, max_stages=12) == [0, 4, 6]
    assert stage_cuts(starts, ends, target_s=900, max_stages=1) == [0]


# --------------------------------------------------------------------------- the client


def _request(prompt_name: str, model: str = "offline-rules") -> ModelRequest:
    config = load_config(profile="offline", overrides=[f"models.default.model={model}"])
    return ModelRequest(
        role="answer",
        messages=(Message("user", "Question: q?\nOptions:\nA. x\nB. y\n"),),
        settings=config.models.settings_for("answer"),
        prompt_name=prompt_name,
    )


def test_unknown_prompts_and_models_are_clear_errors() -> None:
    factory = OfflineClientFactory(Perception(ocr_engine=object(), embedder=object()))
    client = factory(_request("final_answer").settings)
    with pytest.raises(ModelRequestError, match="no rule for prompt 'my_prompt'"):
        asyncio.run(client.complete(_request("my_prompt")))
    with pytest.raises(ConfigError, match="one model, 'offline-rules'"):
        factory(_request("final_answer", model="gpt-5.5").settings)


def test_the_offline_profile_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    service = ModelService(load_config(profile="offline"))
    service.check_credentials()  # would raise ModelAuthError for the openai provider
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        ModelService(load_config()).check_credentials()


# --------------------------------------------------------------------------- rules on real prompts

QUESTION = "What is the exit code shown on the sign?"
OPTIONS = ["A. 1447", "B. 4417", "C. 7144", "D. 4471"]
SUPERS = (
    "super_01 [00:00-02:00] Arrival: the tour starts at the gate.\n"
    "super_02 [02:00-04:00] Exit hall: signs by the doors.\n"
    "super_03 [04:00-06:00] Control room: screens and pumps."
)


@pytest.fixture(scope="module")
def text_only(embedder) -> Perception:
    return Perception(ocr_engine=object(), embedder=embedder)  # these prompts carry no image


def _rule(name: str, perception: Perception, level: str | None = None, **variables) -> dict:
    from videotapestry.contracts.builder import BUILDER_SCHEMAS
    from videotapestry.contracts.method import OUTPUT_SCHEMAS
    from videotapestry.offline.client import RULES
    from videotapestry.offline.prompt_reading import PromptView
    from videotapestry.prompts import PromptRegistry

    prompt = PromptRegistry().render(name, **variables)
    reply = RULES[name](PromptView(name, prompt.system, prompt.user, (), level), perception)
    {**OUTPUT_SCHEMAS, **BUILDER_SCHEMAS}[name].model_validate(reply)
    return reply


def test_the_transcript_tool_quotes_lines_the_program_accepts_as_verbatim(text_only) -> None:
    from videotapestry.agents.rules import match_evidence_lines
    from videotapestry.asr import TranscriptLine, format_transcript

    lines = [
        TranscriptLine(5, 9, "Welcome to the plant tour."),
        TranscriptLine(65, 70, "Remember the exit code on the sign by the door."),
        TranscriptLine(95, 99, "The pumps are loud today."),
    ]
    reply = _rule(
        "asr_observation",
        text_only,
        observation_instruction="Quote what is said about exit code sign.",
        asr=format_transcript(lines),
    )
    quoted = match_evidence_lines(reply["asr_evidence"], lines, windows=[(0, 120)])
    assert quoted.lines == (lines[1],) and not quoted.unmatched
    assert "01:05-01:10" in reply["observation_result"]


def test_the_overview_plan_stays_inside_the_video_and_names_no_option(text_only) -> None:
    reply = _rule(
        "overview_planning",
        text_only,
        question=QUESTION,
        options=OPTIONS,
        video_duration=360.0,
        observation_time_bounds=[0.0, 360.0],
        global_summary="root [00:00-06:00] A plant tour.",
        memories=SUPERS,
        locator_results=(
            "tool=multi_locator_compressed\nanchors: ['exit', 'code']\ncandidate_windows:\n"
            "1. [02:30-02:40] (150-160 s) exit -> slot1_o1 OCRText 'EXIT 4417' [02:30-02:40]\n"
            "unresolved_anchors: []"
        ),
        trajectory="",
        limits={"max_observations": 2, "max_updates": 2, "max_calls": 4},
        min_window_s=240,
    )
    [(start, end)] = reply["time_ranges"]
    assert 0 <= start < 150 < 160 < end <= 360 and end - start == 240
    assert set(reply["candidate_memory_ids"]) <= {"super_01", "super_02", "super_03"}
    assert "super_02" in reply["candidate_memory_ids"]
    assert not any(code in reply["observation_instruction"] for code in ("1447", "4417"))
    assert reply["locator_time_hints_used"]


def test_updates_write_in_range_facts_into_requested_memories_only(text_only) -> None:
    import json

    requests = [
        {"memory_id": i, "time_range": r, "old_memory_text": t, "source_refs": ["V1"]}
        for i, r, t in (
            ("super_01", "00:00-02:00", "Arrival."),
            ("super_02", "02:00-04:00", "Exit hall."),
        )
    ]
    reply = _rule(
        "super_update",
        text_only,
        question=QUESTION,
        options=OPTIONS,
        previous_instruction="",
        update_instruction="Add the observed facts.",
        observation_sources="V1 (visual; 00:00-04:00): 00:30: GATE 12\n02:30-02:59: EXIT CODE 4417",
        update_requests=json.dumps(requests),
    )["updated_memories"]
    assert set(reply) == {"super_01", "super_02"}
    assert reply["super_02"]["visual_observation"] == "02:30-02:59: EXIT CODE 4417"
    assert reply["super_01"]["visual_observation"] == "00:30: GATE 12"

    macros = (
        "macro_0001 [02:00-03:00] The exit hall with its doors.\n"
        "macro_0002 [03:00-04:00] Corridor.\n"
        "macro_0003 [04:00-05:00] Pumps in a row.\n"
        "macro_0004 [05:00-06:00] Screens."
    )
    reply = _rule(
        "level_update",
        text_only,
        level="macro",
        agent_name="Skim Agent",
        memory_level="macro",
        question=QUESTION,
        options=OPTIONS,
        upstream_instruction="",
        update_instruction="",
        memories=macros,
        observations="V1 (visual; 02:00-03:00): 02:30-02:59: EXIT CODE 4417",
    )["updated_memories"]
    assert set(reply) == {"macro_0001", "macro_0002", "macro_0003", "macro_0004"}
    assert reply["macro_0001"]["updated_text"].endswith("Observed: 02:30-02:59: EXIT CODE 4417")
    irrelevant = [v for v in reply.values() if v["is_relevant"] is False]
    assert irrelevant and all(len(v["updated_text"]) <= 10 for v in irrelevant)


def test_decisions_select_the_observed_entry_and_stop_where_the_method_says(text_only) -> None:
    common = {
        "question": QUESTION,
        "options": OPTIONS,
        "upstream_instruction": "",
        "trajectory": "",
    }
    memories = SUPERS.replace(
        "signs by the doors.", "signs by the doors.\n[Visual] 02:30-02:59: EXIT CODE 4417"
    )
    reply = _rule(
        "decision",
        text_only,
        level="super",
        agent_name="Overview Agent",
        memory_level="super",
        memories=memories,
        **common,
    )
    assert reply["selected_child_memory_ids"][0] == "super_02" and not reply["stop_descending"]
    assert (
        reply["template_type"] in {"identity", "temporal_order"}
        and "4417" not in reply["next_instruct"]
    )
    reply = _rule(
        "decision",
        text_only,
        level="super",
        agent_name="Overview Agent",
        memory_level="super",
        memories=SUPERS,
        **{**common, "question": "What is the main idea of the video?"},
    )
    assert reply["stop_descending"] and reply["template_type"] == "main_idea"
    reply = _rule(
        "decision",
        text_only,
        level="subgraph",
        agent_name="Focus Agent",
        memory_level="subgraph",
        memories=SUPERS,
        **common,
    )
    assert reply["stop_descending"] and reply["selected_child_memory_ids"] == []


def test_the_controller_follows_its_budget(text_only) -> None:
    variables = {
        "question": QUESTION,
        "options": OPTIONS,
        "video_duration": 360.0,
        "global_summary": "root",
        "locator_results": "",
        "hierarchy": SUPERS.replace("\nsuper_02", "\n  macro_0001 [00:00-02:00] Gate.\nsuper_02"),
        "limits": {"max_observations": 6, "max_updates": 6, "max_calls": 12, "max_steps": 8},
        "min_window_s": 600,
        "max_frames": 50,
        "max_asr_windows": 3,
        "asr_min_s": 600,
        "asr_max_s": 1200,
    }

    def step(trajectory: str, **left) -> dict:
        counts = {"steps": 8, "observations": 6, "updates": 6, "calls": 12} | left
        return _rule("controller", text_only, trajectory=trajectory, left=counts, **variables)

    assert step("")["action"] == "observe_visual" and step("")["mode"] == "grids"
    assert step("", observations=0)["action"] != "observe_visual"
    done = "V1 visual observation [00:00-06:00]: 00:30: GATE 12"
    assert step(done)["action"] == "observe_asr"
    done += "\nobserve_asr: the transcript is not available"
    assert step(done)["action"] == "update" and step(done)["level"] == "super"
    done += "\nupdate (super): rewrote ['super_01']"
    assert step(done) | {"memory_ids": ["macro_0001"]} == step(done)
    assert step(done)["action"] == "expand"
    assert step(done, steps=1)["action"] == "finish"


def test_a_line_naming_the_asked_for_numbered_name_outweighs_look_alikes() -> None:
    question = "Which code was shown on screen for Pier 88?"
    assert names_share(question, "28:37: PIER88C0DE1584") == 1.0
    assert names_share(question, "24:52: BAY 87 C0DE 9656") == 0.0
    assert names_share(question, "PIER 881 CODE 2") == 0.0  # not inside a longer number
    assert names_share("What is the door code for Gate B?", "GATE B") == 0.0
    units = ["28:37-28:42: PIER88C0DE1584", "24:52: BAY 87 C0DE 9656"]
    scores = score_options(["A", "B"], ["9656", "1584"], units, {}, question)
    assert best_option(scores).letter == "B"  # without the name, a tie goes to A


def test_the_overview_hands_down_when_it_read_and_the_skim_looks_there_first(text_only) -> None:
    # Two look-alike MacroEvents, each spelling an option: without a hint the first wins.
    # The Super decision's instruction names the time it read the code at (not the code),
    # and the Skim plan then looks at the MacroEvent holding that time.
    supers = SUPERS.replace(
        "signs by the doors.", "signs by the doors.\n[Visual] 03:30-03:40: EXIT CODE 4417"
    )
    decided = _rule(
        "decision",
        text_only,
        level="super",
        agent_name="Overview Agent",
        memory_level="super",
        memories=supers,
        question=QUESTION,
        options=OPTIONS,
        upstream_instruction="",
        trajectory="",
    )
    instruction = decided["next_instruct"]
    assert "03:30-03:40" in instruction and "4417" not in instruction
    macros = (
        "macro_0001 [02:00-03:00] Exit hall: a sign reads EXIT CODE 1447.\n"
        "macro_0002 [03:00-04:00] Exit hall: a sign reads EXIT CODE 7144.\n"
        "macro_0003 [04:00-05:00] Pumps in a row."
    )

    def plan(upstream: str) -> dict:
        return _rule(
            "level_planning",
            text_only,
            level="macro",
            agent_name="Skim Agent",
            memory_level="macro",
            question=QUESTION,
            options=OPTIONS,
            upstream_instruction=upstream,
            global_summary="root [00:00-06:00] A plant tour.",
            memories=macros,
            trajectory="",
            limits={"max_observations": 2, "max_updates": 2, "max_calls": 4},
            max_frames=50,
        )

    assert plan("")["candidate_memory_ids"][0] == "macro_0001"
    hinted = plan(instruction)
    assert hinted["candidate_memory_ids"][0] == "macro_0002"
    [(start, end), *_] = hinted["time_ranges"]
    assert start <= 210 <= end


def test_of_two_lines_spelling_options_the_one_about_the_question_wins(embedder) -> None:
    # The lines of the demo sample's memory: the answer said in a long stored line, a
    # look-alike heard again by an observation (which weighs more); the question's own
    # words (pick, name, card) tip the balance to the line that is about the question.
    question = "Where did the speaker tell volunteers to pick up their name cards?"
    bodies = [
        "At the main office",
        "At the green tent next to the bridge",
        "At the yellow tent",
        "At the white information tent",
    ]
    units = [
        'Someone says: "Good morning everyone and thank you for helping out today Please pick '
        "up your name card at the green tent next to the bridge Keep the card with you all day "
        'so that visitors can find you"',
        "[05:17-05:20] Lunch for volunteers will be served in the yellow tent",
    ]
    observed = [False, True]
    texts = [question, *bodies, *units]
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    plain = score_options("ABCD", bodies, units, vectors, question, observed=observed)
    assert best_option(plain).letter == "C"
    words = ("speaker", "tell", "volunteers", "pick", "name", "cards")
    scored = score_options(
        "ABCD", bodies, units, vectors, question, observed=observed, question_words=words
    )
    assert best_option(scored).letter == "B"
