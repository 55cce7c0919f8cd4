"""Issue 9 end to end: the method stays the paper's, and every degraded run says so.

Real HTTP to the fake server, real frames, grids, embeddings and PACE-Mem, the sample memory
and a generated 20-minute video. The scripted model answers with the option the composite
memory mentions most, so an answer shows what reached the memory.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, ask, cli_args, make_vt

from videotapestry.agents.options import contains_option_steering
from videotapestry.api import QuestionItem
from videotapestry.errors import ModelAuthError, ModelRequestError, QuestionError
from videotapestry.result import QuestionFailure, Result
from videotapestry.testing import FakeReply
from videotapestry.testing.scripted import (
    ScriptedModel,
    answer_request,
    calls_by,
    ids_in,
    section,
)

SPEECH = Path(__file__).parent / "fixtures" / "speech.mp4"


def srt(tmp_path: Path, *cues: tuple[float, float, str]) -> Path:
    def stamp(t: float) -> str:
        return f"{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{int(t % 60):02d},000"

    path = tmp_path / "subs.srt"
    path.write_text(
        "\n".join(f"{i}\n{stamp(s)} --> {stamp(e)}\n{text}\n" for i, (s, e, text) in
                  enumerate(cues, 1)),
        encoding="utf-8",
    )  # fmt: skip
    return path


# --------------------------------------------------------------------------- memory drives it


def test_what_was_observed_decides_the_answer(server, embedder, video: Path) -> None:
    server.on(None, ScriptedModel(display="250°C"))
    observed = ask(make_vt(server, embedder), video)
    assert observed.answer == "C" and not observed.degraded
    assert "250°C" in section(answer_request(server.requests).text, "Video memory:")
    server.reset()
    server.on(None, ScriptedModel(display="250°C"))
    static = ask(make_vt(server, embedder, "variant=static_memory"), video)
    # Without observation the stored OCR node "220°C" is all the memory says.
    assert static.answer == "B"


# --------------------------------------------------------------------------- item 1


def test_refined_variants_reuse_one_exploration_with_one_answer_call_each(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    full = ask(vt, video)
    explored = len(server.requests)
    trace = full.save_trace(tmp_path / "full.json")

    async def reanswer(source, variant):
        try:
            return await vt.areanswer(source, variant)
        finally:
            await vt.aclose()

    super_only = asyncio.run(reanswer(full, "refined_super_only"))
    assert calls_by(server.requests[explored:]) == ["final_answer"]
    paths_only = asyncio.run(reanswer(trace, "refined_paths_only"))  # from the saved trace
    assert calls_by(server.requests[explored + 1 :]) == ["final_answer"]
    assert super_only.usage.calls == paths_only.usage.calls == 1
    assert super_only.levels == full.levels == paths_only.levels  # the same exploration
    assert super_only.reassembled_from == paths_only.reassembled_from == full.run_id
    assert "macro_0002" not in super_only.memory_text and "SuperEvents:" in super_only.memory_text
    assert "SuperEvents:" not in paths_only.memory_text and "macro_0002" in paths_only.memory_text
    # The full memory is the union of the two: reassembling "full" gives it back.
    again = asyncio.run(reanswer(full, "full"))
    assert again.memory_text == full.memory_text


def test_ask_with_a_refined_variant_then_reanswer_from_the_cli(
    server, video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from videotapestry.cli import main

    server.on(None, ScriptedModel())
    trace = tmp_path / "q.json"
    args = ["ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION,
            *[x for o in OPTIONS for x in ("--option", o)], "--trace", str(trace), "--json",
            *cli_args(server)]  # fmt: skip
    assert main(args) == 0
    explored = len(server.requests)
    capsys.readouterr()
    code = main(["reanswer", str(trace), "--variant", "refined_super_only", "--variant",
                 "refined_paths_only", "--json", *cli_args(server)])  # fmt: skip
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["variant"] for line in lines] == ["refined_super_only", "refined_paths_only"]
    assert calls_by(server.requests[explored:]) == ["final_answer", "final_answer"]
    assert (tmp_path / "q.refined_super_only.json").is_file()


# --------------------------------------------------------------------------- item 2


def test_steering_in_instructions_and_logged_observations_never_reaches_the_answer(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    def decision(request):
        level = request.headers.get("x-videotapestry-level")
        ids = [i for i in ("super_02", "macro_0002") if i in request.text]
        return {
            "selected_child_memory_ids": ids[:1] if level != "subgraph" else [],
            "stop_descending": level == "subgraph",
            "next_instruct": "The dial aligns with B. Check the oven display.",
            "reason": "x",
        }

    def visual(request):
        return {
            "observation_result": "The display reads 220°C. This points to (C). It is "
            "matching option B.",
            "uncertainty": "",
        }

    server.on(None, ScriptedModel(decision=decision, visual_observation=visual))
    subtitles = srt(tmp_path, (612, 615, "The answer is B, says the host."))
    vt = make_vt(server, embedder, "variant=append_only", "asr.source=subtitles")
    result = ask(vt, video, subtitle_path=subtitles)
    sent = answer_request(server.requests).text
    model_written = sent.split("Search trace:", 1)[1]
    for line in model_written.splitlines():
        if "says the host" not in line:  # verbatim speech is a fact, not a model's opinion
            assert not contains_option_steering(line), line
    assert "Check the oven display." in model_written  # the rest of the instruction stays
    assert "The display reads 220°C." in model_written
    assert "Evidence log" in result.memory_text


# --------------------------------------------------------------------------- issue 23, item 1


def _quiz_memory(tmp_path: Path) -> Path:
    """The sample memory with a stored OCR node a quiz show would have: it names an option."""
    copy = tmp_path / "quiz_memory"
    shutil.copytree(SAMPLE, copy)
    episode = copy / "phase2" / "episode_002" / "step5_subgraph.json"
    episode.write_text(
        episode.read_text(encoding="utf-8").replace('"220°C"', '"OPTION B: 220°C"'),
        encoding="utf-8",
    )
    return copy


@pytest.mark.parametrize("variant", ["static_memory", "append_only"])
def test_stored_nodes_reach_the_answer_unfiltered_and_agent_text_filtered(
    server, embedder, video: Path, tmp_path: Path, variant: str
) -> None:
    def visual(request):
        return {
            "observation_result": "The host says the correct answer is 220°C. So C.",
            "uncertainty": "",
        }

    server.on(None, ScriptedModel(visual_observation=visual))
    ask(make_vt(server, embedder, f"variant={variant}"), video, memory=_quiz_memory(tmp_path))
    memory_part = section(answer_request(server.requests).text, "Video memory:")
    assert "OPTION B: 220°C" in memory_part  # what the video shows is never rewritten
    if variant == "append_only":  # the logged observation: the report stays, the verdict goes
        assert "The host says the correct answer is 220°C." in memory_part
        assert "So C." not in memory_part


# --------------------------------------------------------------------------- issue 23, item 6


def test_the_rewrite_never_reads_the_planners_thought(server, embedder, video: Path) -> None:
    thought = "My private reasoning: the answer hinges on the oven."
    scripted = ScriptedModel()

    def planning(request):
        return {**scripted._level_planning(request), "thought": thought}

    scripted.overrides["level_planning"] = planning
    server.on(None, scripted)
    ask(make_vt(server, embedder), video)
    updates = [r for r in server.requests if r.prompt == "level_update"]
    assert {r.headers.get("x-videotapestry-level") for r in updates} == {"macro", "subgraph"}
    for request in updates:
        # What the paper's Update step reads: q, o, the upstream instruction, old texts, O.
        assert thought not in request.text and "update_instruction" not in request.text
        assert "Instruction from the level above: (none)" not in request.text
        assert "Memories to rewrite:" in request.text and "Look at the oven" not in request.text


# --------------------------------------------------------------------------- issue 23, item 7


def test_the_composite_holds_the_selected_macro_events_when_configured(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    full = ask(make_vt(server, embedder, "agents.composite_macros=selected"), video)
    [macro] = [level for level in full.levels if level.level == "macro"]
    assert macro.selected_ids == ["macro_0002"] and len(macro.candidate_ids) > 1
    assert ids_in(full.memory_text) == ["macro_0002"]
    wide = make_vt(server, embedder, "agents.composite_macros=candidates")

    async def reanswer():
        try:
            return await wide.areanswer(full, "full")
        finally:
            await wide.aclose()

    every = asyncio.run(reanswer())  # the same exploration, every candidate shown
    assert ids_in(every.memory_text) == macro.candidate_ids
    assert every.memory_tokens > full.memory_tokens


# --------------------------------------------------------------------------- item 3


def test_a_repeated_line_attaches_only_where_its_timestamp_says(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    subtitles = srt(
        tmp_path,
        (300, 302, "Yeah."),  # super_01
        (700, 702, "Yeah."),  # super_02, where the quote says
        (1000, 1002, "Yeah."),  # super_03
    )

    def asr(request):
        return {"observation_result": "Someone agrees.", "asr_evidence": "11:40 yeah"}

    script = ScriptedModel(asr_observation=asr)
    script.overrides["asr_planning"] = {
        "observation_instruction": "Who agrees?",
        "time_ranges": [[0, 1200]],
    }
    server.on(None, script)
    result = ask(make_vt(server, embedder, "asr.source=subtitles"), video, subtitle_path=subtitles)
    overview = result.levels[0]
    [speech] = [o for o in overview.observations if o.kind == "asr"]
    assert speech.evidence_lines == [(700.0, 702.0, "Yeah.")]
    assert "[11:40-11:42] Yeah." in overview.refined["super_02"]
    assert "Yeah." not in overview.refined["super_01"]
    # The transcript window overlaps every SuperEvent: all of them are linked by time.
    assert overview.evidence_ids == ["super_01", "super_02", "super_03"]


@pytest.mark.parametrize("fragments", [True, False])
def test_a_quote_joining_two_subtitle_lines_is_evidence_unless_whole_lines_are_required(
    server, embedder, video: Path, tmp_path: Path, fragments: bool
) -> None:
    said = [(700, 704, "Set the oven to two hundred"), (704, 707, "and twenty degrees now.")]
    subtitles = srt(tmp_path, *said)
    quote = "[11:41] the oven to two hundred and twenty degrees"
    script = ScriptedModel(
        asr_observation={"observation_result": "The oven setting.", "asr_evidence": quote}
    )
    script.overrides["asr_planning"] = {"observation_instruction": "?", "time_ranges": [[600, 800]]}
    server.on(None, script)
    vt = make_vt(server, embedder, "asr.source=subtitles", f"asr.quote_fragments={fragments}")
    result = ask(vt, video, subtitle_path=subtitles)
    [speech] = [o for o in result.levels[0].observations if o.kind == "asr"]
    if fragments:
        assert speech.evidence_lines == [(700.0, 704.0, said[0][2]), (704.0, 707.0, said[1][2])]
        assert speech.unmatched_evidence == []
    else:
        assert speech.evidence_lines == [] and speech.unmatched_evidence == [quote]


def test_asr_windows_link_supers_by_overlap_without_quoted_lines(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    subtitles = srt(tmp_path, (1000, 1003, "Time to plate."))
    script = ScriptedModel(
        # A quote in words the transcript does not hold: the reply found evidence, but no line
        # to place, so the windows alone say where it belongs. (An empty quote is no evidence:
        # tests/test_method_evidence.py.)
        asr_observation={
            "observation_result": "They talk about plating.",
            "asr_evidence": "16:40 We are plating the bird now.",
        },
        visual_observation=fail_at_super,
    )
    script.overrides["asr_planning"] = {
        "observation_instruction": "?",
        "time_ranges": [[960, 1080]],
    }
    server.on(None, script)
    result = ask(make_vt(server, embedder, "asr.source=subtitles"), video, subtitle_path=subtitles)
    overview = result.levels[0]
    # The 600 s window around [960, 1080] is [720, 1200]: super_02 and super_03.
    assert overview.evidence_ids == ["super_02", "super_03"]
    assert any(d.kind == "visual_lost" for d in result.degraded)


# --------------------------------------------------------------------------- item 4


def fail_at_super(request):
    """The Overview agent's look fails (HTTP 500); the other levels' looks succeed."""
    if request.headers.get("x-videotapestry-level") == "super":
        return FakeReply.server_error(500)
    return ScriptedModel()._visual_observation(request)


def test_nothing_linked_keeps_the_original_super_texts(server, embedder, video: Path) -> None:
    server.on(None, ScriptedModel(visual_observation=fail_at_super))
    result = ask(make_vt(server, embedder), video)  # no audio in the video: no ASR either
    overview = result.levels[0]
    assert overview.evidence_ids == [] and overview.protected_ids == []
    assert overview.refined == overview.static  # nothing compressed
    assert "super_update" not in calls_by(server.requests)
    assert any(e.name == "super_scaffold_kept" for e in result.trace.events)
    assert [d.kind for d in result.degraded] == ["visual_lost"]


def test_no_video_keeps_the_static_scaffold(server, embedder) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), None)
    assert result.levels[0].refined == result.levels[0].static
    assert result.observation_disabled and not result.degraded  # the caller chose it


# --------------------------------------------------------------------------- item 5


def test_one_bad_super_entry_keeps_its_text_and_the_others_apply(
    server, embedder, video: Path
) -> None:
    def update(request):
        return {
            "updated_memories": {
                "super_01": {"visual_observation": "no relevance flag"},  # invalid entry
                "super_02": {"is_relevant": True, "visual_observation": "Display reads 220°C."},
                "super_03": {"is_relevant": True, "visual_observation": "Plates on a table."},
            }
        }

    server.on(None, ScriptedModel(super_update=update))
    result = ask(make_vt(server, embedder), video)
    overview = result.levels[0]
    assert overview.refined["super_01"] == overview.static["super_01"]
    assert "[Visual] Display reads 220°C." in overview.refined["super_02"]
    assert "[Visual] Plates on a table." in overview.refined["super_03"]
    [rejected] = [d for d in result.degraded if d.kind == "update_rejected"]
    assert "super_01" in rejected.what and "is_relevant" in rejected.why


# --------------------------------------------------------------------------- item 6


def test_only_requested_nodes_are_rewritten_and_irrelevant_ones_are_tiny(
    server, embedder, video: Path
) -> None:
    def plan(request):
        level = request.headers.get("x-videotapestry-level")
        ids = ["macro_0003"] if level == "macro" else []
        return {"observation_needed": True, "observation_instruction": "Look.",
                "time_ranges": [[610, 640]], "update_memory_ids": ids}  # fmt: skip

    def update(request):
        return {
            "updated_memories": {
                "macro_0002": {"updated_text": "Not requested: must be ignored."},
                "macro_0003": {
                    "updated_text": "Resting the bird on a board.",
                    "is_relevant": False,
                },
            }
        }

    server.on(None, ScriptedModel(level_planning=plan, level_update=update))
    result = ask(make_vt(server, embedder), video)
    skim, focus = result.levels[1], result.levels[2]
    assert skim.refined["macro_0002"] == skim.static["macro_0002"]
    assert skim.refined["macro_0003"] == "Resting"  # at most 10 characters
    assert any("not requested were ignored" in note for note in skim.notes)
    # The Focus plan requested nothing: no update call at that level.
    assert "level_update" not in calls_by(server.requests, level="subgraph")
    assert focus.refined == focus.static


# --------------------------------------------------------------------------- item 7


def test_every_selected_macro_event_is_shown_at_focus(server, embedder, video: Path) -> None:
    script = ScriptedModel()
    script.macro_choice = ["macro_0002", "macro_0003"]
    server.on(None, script)
    result = ask(make_vt(server, embedder, "evidence.method=top_k", "evidence.fixed_k=1"), video)
    focus = result.levels[2]
    assert focus.candidate_ids == ["macro_0002", "macro_0003"]
    for macro_id in focus.candidate_ids:
        assert "(none selected)" not in focus.static[macro_id]
    statuses = {m: v["status"] for m, v in focus.evidence_selection["macros"].items()}
    assert set(statuses.values()) <= {"selected", "floor"}


# --------------------------------------------------------------------------- item 8


def test_single_agent_is_one_controller_over_the_whole_hierarchy(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder, "variant=single_agent"), video)
    made = calls_by(server.requests)
    assert {"overview_planning", "level_planning", "decision"}.isdisjoint(made)
    assert made.count("controller") <= 8  # the three agents' planning + decision calls
    tools = [p for p in made if p in ("visual_observation", "asr_observation", "level_update")]
    assert len(tools) <= 12
    first = next(r for r in server.requests if r.prompt == "controller").text
    for node in ("super_01", "super_03", "macro_0000", "macro_0005"):  # every level at once
        assert node in first
    assert {o.agent for o in result.levels} == {"Controller Agent"}
    assert result.levels_visited == ["super", "macro", "subgraph"]
    assert "Refined macro_0002" in result.memory_text and result.answer == "B"
    frames = [o for o in result.levels[0].observations if o.level == "macro"]
    assert frames and all(610 <= t <= 640 for t in frames[0].frame_times)


# --------------------------------------------------------------------------- item 10


def test_the_overview_agent_returns_the_anchors(server, embedder, video: Path) -> None:
    server.on(None, ScriptedModel())
    planned = ask(make_vt(server, embedder), video).levels[0]
    assert planned.plan["anchors"] == ["oven", "temperature"]
    assert planned.plan["anchor_source"] == "overview agent"
    assert "tool=multi_locator_compressed" in planned.plan["locator"]
    assert planned.calls.tool_calls <= 4
    server.reset()
    server.on(None, ScriptedModel(locator_anchors=FakeReply.server_error(500)))
    fallback = ask(make_vt(server, embedder), video)
    assert fallback.levels[0].plan["anchor_source"] == "question text"
    assert fallback.levels[0].plan["anchors"]  # from the question's words
    assert [d.what for d in fallback.degraded] == ["locator_anchors call"]


# --------------------------------------------------------------------------- item 13


def test_many_options_are_answered(server, embedder, video: Path) -> None:
    nine = [f"{letter}. {140 + 10 * i}°C" for i, letter in enumerate("ABCDEFGHI")]
    assert nine[8] == "I. 220°C"
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), video, options=nine)
    assert result.answer == "I" and result.answer_source == "answer"
    plain = [f"gas mark {n}" for n in range(26)]  # 26 options, no letters
    plain[22] = "220°C"
    answered = ask(make_vt(server, embedder), video, options=plain)
    assert answered.answer == "W" and answered.options[22] == "W. 220°C"


@pytest.mark.parametrize(
    ("question", "options", "problem"),
    [
        ("", OPTIONS, "question is empty"),
        (QUESTION, ["A. only one"], "at least 2 options"),
        (QUESTION, ["A. x", "A. y"], "both have the letter A"),
        (QUESTION, [f"option {i}" for i in range(27)], "at most 26"),
    ],
)
def test_malformed_questions_fail_before_any_call(
    server, embedder, video: Path, question, options, problem
) -> None:
    server.on(None, ScriptedModel())
    with pytest.raises(QuestionError, match=problem):
        ask(make_vt(server, embedder), video, question=question, options=options)
    assert server.requests == []


# --------------------------------------------------------------------------- items 15-18


def test_whisper_that_cannot_load_is_a_loud_degradation(
    server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from videotapestry.cli import main

    server.on(None, ScriptedModel())
    # The sample memory covers 20 minutes; stamped with the 36 s speech video's fingerprint
    # it is accepted for it (unstamped, its length would refuse the pairing).
    memory = tmp_path / "stamped"
    assert main(["import-memdreamer", str(SAMPLE), str(memory), "--video", str(SPEECH)]) == 0
    args = ["ask", str(SPEECH), "--memory", str(memory), "--question", QUESTION,
            *[x for o in OPTIONS for x in ("--option", o)], "--trace", str(tmp_path / "t.json"),
            *cli_args(server, "-o", f"asr.whisper_model={tmp_path / 'no-such-model'}")]  # fmt: skip
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "degraded: super: asr observation A1 (asr_lost): transcription failed" in err, err
    assert "no-such-model" in err and "--allow-degraded" in err
    assert main([*args, "--allow-degraded"]) == 0
    saved = json.loads((tmp_path / "t.json").read_text())
    kinds = [d["kind"] for d in saved["result"]["degraded"]]
    # The 20-minute memory on a 36 s video: its later nodes are past the end, said too.
    assert "asr_lost" in kinds and "memory_past_video_end" in kinds, kinds


def test_missing_subtitles_are_a_degradation_not_a_silent_switch(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder, "asr.source=subtitles"), video)
    [lost] = result.degraded
    assert lost.kind == "asr_lost" and "no subtitle file" in lost.why
    assert "asr_planning" not in calls_by(server.requests)


@pytest.mark.parametrize(
    ("made_by", "source", "substituted"),
    [
        ("whisper", "subtitles", True),
        ("subtitles", "subtitles", False),
        ("whisper", "whisper", False),
        ("subtitles", "whisper", False),  # built with a benchmark's subtitles: a warning
    ],
)
def test_a_stored_transcript_standing_in_for_subtitles_is_recorded(
    server, embedder, video: Path, tmp_path: Path, made_by: str, source: str, substituted: bool
) -> None:
    import shutil

    from videotapestry.asr import TRANSCRIPT_FILE, TranscriptFile, TranscriptLine

    memory = tmp_path / "memory"
    shutil.copytree(SAMPLE, memory)
    stored = TranscriptFile(made_by, "tiny.en", None, [TranscriptLine(5.0, 9.0, "Preheat it.")])
    (memory / TRANSCRIPT_FILE).write_text(json.dumps(stored.to_json()), encoding="utf-8")
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder, f"asr.source={source}"), video, memory=memory)
    kinds = [d.kind for d in result.degraded]
    assert kinds == (["asr_substituted"] if substituted else [])
    if substituted:
        why = result.degraded[0].why
        assert "no subtitle file" in why and TRANSCRIPT_FILE in why and "whisper" in why
    # Subtitles chosen when the memory was built lose nothing, but a comparison with the
    # paper's "w/o subtitles" column must know: a warning, under asr.source whisper only.
    warned = [w for w in result.warnings if w.kind == "transcript_from_subtitles"]
    assert len(warned) == (made_by == "subtitles" and source == "whisper")
    if warned:
        assert "read from subtitles" in warned[0].why and TRANSCRIPT_FILE in warned[0].why


def test_undecodable_frames_and_timeouts_are_recorded(
    server, embedder, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import videotapestry.agents.tools as tools
    from videotapestry.errors import NoDecodableFramesError

    real = tools.render_frames
    calls = {"n": 0}

    def flaky(decoders, job):
        calls["n"] += 1
        if calls["n"] == 2:  # the Skim level's frames
            raise NoDecodableFramesError("frame 1234 cannot be decoded", path=str(video))
        return real(decoders, job)

    monkeypatch.setattr(tools, "render_frames", flaky)

    def slow_focus_look(request):
        if request.headers.get("x-videotapestry-level") == "subgraph":
            return FakeReply.stall(3)
        return ScriptedModel()._visual_observation(request)

    server.on(None, ScriptedModel(visual_observation=slow_focus_look))
    result = ask(make_vt(server, embedder, "models.default.timeout_s=0.5"), video)
    kinds = [(d.level, d.kind) for d in result.degraded]
    assert ("macro", "visual_lost") in kinds and ("subgraph", "visual_lost") in kinds
    macro_loss = next(d for d in result.degraded if d.level == "macro")
    assert "frame 1234" in macro_loss.why
    assert "timed out" in next(d for d in result.degraded if d.level == "subgraph").why


def test_a_fallback_answer_is_a_degradation(server, embedder, video: Path) -> None:
    server.on(None, ScriptedModel(final_answer={"reasoning": "?", "answer": "no idea"}))
    result = ask(make_vt(server, embedder), video)
    assert result.answer_source == "fallback"
    assert [d.kind for d in result.degraded] == ["answer_fallback"]


def test_a_404_model_stops_the_question_after_one_call(server, embedder, video: Path) -> None:
    server.on(None, lambda _: FakeReply(content="The model `gpt-nope` does not exist", status=404))
    with pytest.raises(ModelRequestError) as caught:
        ask(make_vt(server, embedder, "models.default.model=gpt-nope"), video)
    assert len(server.requests) == 1
    message = str(caught.value)
    assert message.startswith("overview call to ") and "(model gpt-nope)" in message
    assert "does not exist" in message and "configuration" in message


def test_a_context_length_400_takes_the_fallback(server, embedder, video: Path) -> None:
    too_long = FakeReply(content="This model's maximum context length is 8192 tokens", status=400)
    server.on(None, ScriptedModel(super_update=too_long))
    result = ask(make_vt(server, embedder), video)
    assert [d.what for d in result.degraded] == ["super_update call"]


def test_batch_keeps_every_result_and_stops_on_a_repeating_error(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    items = [
        QuestionItem(video, SAMPLE, QUESTION, OPTIONS, question_id="good"),
        QuestionItem(video, SAMPLE, QUESTION, ["A. one option"], question_id="bad"),
    ]

    async def batch(questions, **kwargs):
        try:
            return await vt.abatch(questions, **kwargs)
        finally:
            await vt.aclose()

    outcomes = asyncio.run(batch(items))
    assert isinstance(outcomes[0], Result) and outcomes[0].answer == "B"
    assert isinstance(outcomes[1], QuestionFailure) and "at least 2" in outcomes[1].error
    assert outcomes.stopped is None
    server.reset()
    server.on(None, lambda _: FakeReply(content="model not found", status=404))
    many = [QuestionItem(video, SAMPLE, QUESTION, OPTIONS, question_id=f"q{i}") for i in range(4)]
    stopped = asyncio.run(batch(many, concurrency=1))
    assert len(server.requests) == 1 and "model not found" in stopped.stopped
    assert stopped[0].fatal and all(f.skipped for f in stopped[1:])


def test_the_api_key_is_checked_before_any_model_loads(
    server, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NeverLoaded:
        model_name = "never"

        def embed(self, texts, *, query=False):
            raise AssertionError("the embedder was loaded before the key was checked")

    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelAuthError, match="OPENAI_API_KEY"):
        ask(make_vt(server, NeverLoaded()), video)
    assert server.requests == []


def test_waits_and_retries_are_shown(server, embedder, video: Path) -> None:
    events: list[dict] = []
    attempts = {"n": 0}

    def planning(request):
        attempts["n"] += 1
        if attempts["n"] == 1:
            return FakeReply.rate_limited(retry_after=0.1)
        return FakeReply(content=json.dumps({"observation_instruction": "x"}), delay_s=0.6)

    server.on(None, ScriptedModel(overview_planning=planning))
    vt = make_vt(server, embedder, "models.default.max_retries=2", "models.wait_report_s=0.2")
    ask(vt, video, progress=events.append)
    retry = next(e for e in events if e["step"] == "retry")
    assert retry["role"] == "overview" and retry["attempt"] == 2
    assert retry["last_problem"] == "HTTP 429"
    waiting = [e for e in events if e["step"] == "waiting" and e["role"] == "overview"]
    assert waiting and waiting[-1]["waited_s"] >= 0.4


# --------------------------------------------------------------------------- item 21


def test_reruns_keep_both_traces_and_unpriced_cost_is_unknown(
    server, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from videotapestry.cli import main

    monkeypatch.chdir(tmp_path)
    server.on(None, ScriptedModel())
    options = [x for o in OPTIONS for x in ("--option", o)]
    args = ["ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION, *options,
            "--quiet", *cli_args(server)]  # fmt: skip
    assert main(args) == 0 and main(args) == 0
    assert len(list((tmp_path / "videotapestry-traces").glob("*.json"))) == 2
    out = capsys.readouterr().out
    assert re.search(r"tokens [\d,]+ in / [\d,]+ out, model [\d.]+ s, unpriced \(\d+ calls\)", out)
    assert "$" not in out  # an unpriced model's cost is never shown as dollars


def test_check_endpoint_prints_the_url_it_really_used(
    server, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from videotapestry.cli import main

    server.on(None, ScriptedModel(final_answer={"reasoning": "blue car", "answer": "B"}))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    args = ["check-endpoint", "--json", "-o", "cache.enabled=false"]
    assert main([*args, "-o", "models.default.harness_headers=true"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["base_url"].rstrip("/") == server.base_url.rstrip("/")
