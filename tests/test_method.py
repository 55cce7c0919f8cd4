"""The VideoTapestry method end to end: the shared sample memory, a generated video of the same
length, the real openai client over HTTP to the fake server, and real frames, grids,
embeddings and PACE-Mem. The model is scripted (tests/method_support.py)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from pathlib import Path

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, ask, make_vt

from videotapestry.agents.options import contains_option_steering
from videotapestry.api import QuestionItem
from videotapestry.graph import sqlite_checkpointer
from videotapestry.memory import import_memdreamer, save_memory
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.testing.media import make_test_video
from videotapestry.testing.memories import synthetic_memory
from videotapestry.testing.scripted import (
    STEERING,
    ScriptedModel,
    answer_request,
    calls_by,
)
from videotapestry.timecode import format_range
from videotapestry.video import fingerprint


def test_non_global_question_descends_to_focus_and_respects_budgets(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), video)
    assert result.answer == "B" and result.answer_source == "answer"
    assert result.levels_visited == ["super", "macro", "subgraph"]
    assert result.handoff_trace.splitlines() == [
        "Overview Agent -> next level: Find the oven setting.",
        "Skim Agent -> next level: Found: oven; still need to verify: temperature",
        "Focus Agent: STOP",
    ]
    for level in ("super", "macro", "subgraph"):
        prompts = calls_by(server.requests, level=level)
        observations = sum(p in ("visual_observation", "asr_observation") for p in prompts)
        updates = sum(p in ("super_update", "level_update") for p in prompts)
        assert observations <= 2 and updates <= 2 and observations + updates <= 4, prompts
    assert calls_by(server.requests, level="subgraph").count("decision") == 1  # then forced STOP
    overview, skim, focus = result.levels
    # One continuous visual window, widened to 600 s around the planned [600, 640].
    [(start, end)] = overview.observations[0].windows
    assert end - start == pytest.approx(600) and start <= 600 and end >= 640
    assert len(overview.observations[0].frame_times) == 120
    assert len(overview.observations[0].images) == 20
    # Skim looks at the planned range intersected with its candidates' intervals.
    assert skim.candidate_ids == ["macro_0002", "macro_0003"]
    assert skim.observations[0].windows == [(610.0, 640.0)]
    assert len(skim.observations[0].frame_times) <= 50
    for outcome in result.levels:
        for obs in outcome.observations:
            for t in obs.frame_times:
                assert any(s - 0.5 <= t <= e for s, e in obs.windows), (outcome.level, t)
    # Focus saw PACE-Mem's evidence, chronological, with the oven display among it.
    assert focus.candidate_ids == ["macro_0002"]
    assert focus.evidence_selection["selected_ids"]
    assert "slot2_o1" in focus.static["macro_0002"]


def test_global_question_may_stop_at_super(server: FakeOpenAIServer, embedder, video: Path) -> None:
    stop = {
        "selected_child_memory_ids": [],
        "stop_descending": True,
        "next_instruct": None,
        "reason": "The stages answer it.",
        "template_type": "main_idea",
    }
    server.on(None, ScriptedModel(decision=stop))
    result = ask(make_vt(server, embedder), video, question="What is the main idea of the video?")
    assert result.levels_visited == ["super"]
    assert result.handoff_trace == "Overview Agent: STOP"
    assert "macro_" not in result.memory_text


def test_non_global_stop_is_overridden(server: FakeOpenAIServer, embedder, video: Path) -> None:
    stop = {"selected_child_memory_ids": [], "stop_descending": True, "next_instruct": None}
    server.on(None, ScriptedModel(decision=stop))
    result = ask(make_vt(server, embedder), video)
    assert result.levels_visited == ["super", "macro", "subgraph"]
    assert any("not global" in note for note in result.levels[0].notes)


@pytest.mark.long_video  # writes and reads a one-hour video
def test_protected_set_keeps_text_and_the_rest_is_compressed(
    server: FakeOpenAIServer, embedder, tmp_path: Path
) -> None:
    memory = synthetic_memory(duration_s=3600, supers=8, macros_per_super=2, fingerprint=None)
    memory_dir = tmp_path / "memory"
    save_memory(memory, memory_dir)
    long_video = tmp_path / "long.mp4"
    make_test_video(long_video, 3600, fps=1, size=(160, 90), scene_s=60)
    script = ScriptedModel()
    script.super_choice = ["super_04"]
    script.macro_choice = ["macro_0006"]
    # super_04 spans 1350-1800 s; the 600 s window around [1440, 1500] overlaps 03 and 04.
    script.overrides["overview_planning"] = {
        "observation_instruction": "Look at the stage.",
        "candidate_memory_ids": ["super_04"],
        "time_ranges": [[1440, 1500]],
    }
    server.on(None, script)
    result = ask(make_vt(server, embedder), long_video, memory=memory_dir)
    overview = result.levels[0]
    assert overview.evidence_ids == ["super_03", "super_04"]
    assert overview.protected_ids == ["super_02", "super_03", "super_04", "super_05"]
    for super_id in overview.candidate_ids:
        text = overview.refined[super_id]
        if super_id in overview.protected_ids:
            assert text.startswith(overview.static[super_id])
            has_visual = super_id in overview.evidence_ids
            assert ("[Visual] Display reads 220°C." in text) == has_visual
        else:
            assert text == f"Summary of {super_id}."
    assert not contains_option_steering("\n".join(overview.refined.values()))


def test_transcript_lines_are_verbatim_and_assigned_by_time(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    srt = tmp_path / "cooking.srt"
    srt.write_text(
        "1\n00:10:12,000 --> 00:10:15,000\nNow the oven goes to two hundred twenty.\n\n"
        "2\n00:15:30,000 --> 00:15:33,000\nThe oven smell fills the room.\n\n"
        "3\n00:16:00,000 --> 00:16:02,000\nLet us plate it.\n",
        encoding="utf-8",
    )

    def asr(request):
        return {
            "observation_result": "The chef names a temperature.",
            "asr_evidence": "[10:12-10:15] Now the oven goes to two hundred twenty.\n"
            "[15:30-15:33] The oven smell fills the room.\n"
            "[11:00-11:02] The oven is at 250 degrees.",  # not in the transcript
        }

    script = ScriptedModel(asr_observation=asr)
    script.overrides["asr_planning"] = {
        "observation_instruction": "What temperature is said?",
        "time_ranges": [[600, 1000]],
    }
    server.on(None, script)
    vt = make_vt(server, embedder, "asr.source=subtitles")
    result = ask(vt, video, subtitle_path=srt)
    [asr_request] = [r for r in server.requests if r.prompt == "asr_observation"]
    assert QUESTION not in asr_request.text and "220°C" not in asr_request.text
    overview = result.levels[0]
    assert (
        "[Evidence]\n" + format_range(612, 615) + " Now the oven goes to two hundred twenty."
        in (overview.refined["super_02"])
    )
    assert "The oven smell fills the room." in overview.refined["super_03"]
    assert "250 degrees" not in result.memory_text
    [speech] = [o for o in overview.observations if o.kind == "asr"]
    assert speech.windows == [(500.0, 1100.0)]  # 400 s widened to 600 s around its centre


@pytest.mark.parametrize(
    ("override", "expect_note"),
    [
        (
            {"decision": {"selected_child_memory_ids": ["super_99"], "next_instruct": "x"}},
            "super_99",
        ),
        ({"decision": {"selected_child_memory_ids": [], "next_instruct": "x"}}, "fallback"),
        ({"decision": FakeReply.text("not json at all")}, "decision call"),
        ({"overview_planning": FakeReply.server_error(500)}, "overview_planning call"),
        ({"super_update": FakeReply.malformed()}, "super_update call"),
    ],
    ids=["invalid-id", "empty-selection", "garbage-json", "server-500", "malformed-update"],
)
def test_failures_take_their_fallback_and_the_question_is_answered(
    server: FakeOpenAIServer, embedder, video: Path, override: dict, expect_note: str
) -> None:
    server.on(None, ScriptedModel(**override))
    result = ask(make_vt(server, embedder), video)
    assert result.answer == "B"
    overview = result.levels[0]
    assert any(expect_note in note for note in overview.notes), overview.notes
    assert result.levels_visited == ["super", "macro", "subgraph"]
    if "super_update" in override:
        assert overview.refined["super_02"].startswith(overview.static["super_02"])
    # A failed call is a degradation of the run; a repaired decision is the method's own rule.
    failed_call = expect_note.endswith(" call")
    assert {d.what for d in result.degraded if d.kind == "call_fallback"} == (
        {expect_note} if failed_call else set()
    )


def test_answer_fallback_when_the_model_fails(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel(final_answer=FakeReply.server_error(500)))
    result = ask(make_vt(server, embedder), video)
    assert result.answer == "A" and result.answer_source == "fallback"
    assert any(e.name == "answer_fallback" for e in result.trace.events)


def test_option_steering_never_reaches_the_answer_agent(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), video)
    sent = answer_request(server.requests).text
    memory_part = sent.split("Video memory:", 1)[1]
    assert not contains_option_steering(memory_part)
    assert STEERING not in result.memory_text
    assert "220°C" in memory_part  # the facts around the steering phrase survive


def test_stored_memory_is_byte_identical_after_a_run(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    memory_dir = tmp_path / "native"
    save_memory(import_memdreamer(SAMPLE), memory_dir)

    def digest() -> dict[str, str]:
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(memory_dir.rglob("*"))
        }

    before = digest()
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), video, memory=memory_dir)
    assert result.levels[0].refined != result.levels[0].static  # something was refined
    assert digest() == before


@pytest.mark.parametrize(
    ("variant", "absent", "present"),
    [
        ("wo_asr", {"asr_planning", "asr_observation"}, {"visual_observation"}),
        ("wo_visual", {"visual_observation"}, {"super_update", "level_update"}),
        (
            "static_memory",
            {
                "visual_observation",
                "super_update",
                "level_update",
                "overview_planning",
                "level_planning",
            },
            {"decision"},
        ),
        ("append_only", {"super_update", "level_update"}, {"visual_observation"}),
    ],
)
def test_variants_change_the_calls_made(
    server: FakeOpenAIServer,
    embedder,
    video: Path,
    tmp_path: Path,
    variant: str,
    absent: set,
    present: set,
) -> None:
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:10:12,000 --> 00:10:15,000\nThe oven is on.\n", encoding="utf-8")
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, f"variant={variant}", "asr.source=subtitles")
    result = ask(vt, video, subtitle_path=srt)
    made = set(calls_by(server.requests))
    assert not made & absent, made
    assert present <= made, made
    assert result.answer == "B" and result.variant == variant
    if variant == "append_only":
        assert "Evidence log" in result.memory_text
        assert result.levels[0].refined == result.levels[0].static
    if variant == "static_memory":
        assert result.levels_visited == ["super", "macro", "subgraph"]
        assert all(o.refined == o.static for o in result.levels)


def test_full_variant_makes_asr_calls_when_speech_is_available(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:10:12,000 --> 00:10:15,000\nThe oven is on.\n", encoding="utf-8")
    server.on(None, ScriptedModel())
    ask(make_vt(server, embedder, "asr.source=subtitles"), video, subtitle_path=srt)
    assert {"asr_planning", "asr_observation"} <= set(calls_by(server.requests))


def test_direct_sends_exactly_fifty_uniform_frames(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder, "variant=direct"), video)
    [request] = server.requests
    assert request.prompt == "direct_answer" and len(request.images) == 50
    assert result.answer == "B" and result.levels_visited == []
    times = [t for image in result.images for t in image.timestamps]
    gaps = {round(b - a) for a, b in itertools.pairwise(times)}
    assert gaps == {24}  # 1200 s / 50, uniform


def test_the_direct_roles_own_image_limit_sets_its_frame_count(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    # The local profile: as many frames as the paper's Qwen gateway took (396), in one call,
    # although the method's observation calls keep images.max_per_call (50).
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, "profile=local", "variant=direct")
    assert vt.config.images.max_per_call == 50
    result = ask(vt, video)
    [request] = server.requests
    assert request.prompt == "direct_answer" and len(request.images) == 396
    assert request.body["chat_template_kwargs"] == {"enable_thinking": True}
    assert len(result.images) == 396


def test_the_local_profile_thinks_only_to_plan_decide_and_answer(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:10:12,000 --> 00:10:15,000\nThe oven is on.\n", encoding="utf-8")
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, "profile=local", "asr.source=subtitles")
    ask(vt, video, subtitle_path=srt)
    thinking: dict[str, set[bool]] = {}
    for r in server.requests:
        thinking.setdefault(r.role, set()).add(r.body["chat_template_kwargs"]["enable_thinking"])
    thinks = ("overview", "skim", "focus", "decision", "answer")
    tools = ("observation", "asr_observation", "update")
    assert thinking == {role: {role in thinks} for role in (*thinks, *tools)}


def test_memory_variants_change_what_the_answer_agent_sees(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    super_only = ask(make_vt(server, embedder, "variant=refined_super_only"), video)
    assert "super_02" in super_only.memory_text and "macro_0002" not in super_only.memory_text
    paths_only = ask(make_vt(server, embedder, "variant=refined_paths_only"), video)
    assert "SuperEvents:" not in paths_only.memory_text
    assert "Refined macro_0002" in paths_only.memory_text
    single = ask(make_vt(server, embedder, "variant=single_agent"), video)
    assert {o.agent for o in single.levels} == {"Controller Agent"}


def test_no_video_runs_without_observation(server: FakeOpenAIServer, embedder) -> None:
    server.on(None, ScriptedModel())
    result = ask(make_vt(server, embedder), None)
    assert result.observation_disabled
    assert "visual_observation" not in calls_by(server.requests)
    assert any(e.name == "observation_disabled" for e in result.trace.events)
    assert result.answer == "B"


def test_graph_streams_node_updates(server: FakeOpenAIServer, embedder, video: Path) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)

    async def run() -> list[str]:
        from videotapestry.agents.state import QuestionInput

        ctx = vt._context(video, SAMPLE, QuestionInput(question=QUESTION, options=OPTIONS),
                          no_video=False, progress=None)  # fmt: skip
        graph = vt.build_graph()
        nodes, custom = [], []
        async for mode, chunk in graph.astream(
            {"question": QuestionInput(question=QUESTION, options=OPTIONS)},
            context=ctx,
            stream_mode=["updates", "custom"],
        ):
            if mode == "updates":
                nodes += list(chunk)
            else:
                custom.append(chunk)
        ctx.close_video()
        await vt.aclose()
        assert {"level": "super", "step": "plan", "agent": "Overview Agent"} in custom
        return nodes

    nodes = asyncio.run(run())
    assert nodes[:4] == ["overview", "skim", "focus", "assemble"]
    # The Focus decision (it can only stop) is made in the same step as the answer.
    assert sorted(nodes[4:]) == ["answer", "focus_decide"]


def test_the_focus_decision_is_in_flight_with_the_answer_and_changes_nothing_it_reads(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    import threading

    scripted = ScriptedModel()
    answer_asked = threading.Event()

    def final_answer(request):
        answer_asked.set()
        return scripted._final_answer(request)

    def decision(request):
        if request.headers.get("x-videotapestry-level") == "subgraph":
            # Replies only once the Answer agent has asked: were the two calls made one
            # after the other, this would wait out its timeout with the event unset.
            assert answer_asked.wait(timeout=60)
        return scripted._decision(request)

    server.on(None, ScriptedModel(final_answer=final_answer, decision=decision))
    result = ask(make_vt(server, embedder), video)
    assert answer_asked.is_set()
    assert result.answer == "B" and not result.degraded
    assert result.levels_visited == ["super", "macro", "subgraph"]
    focus = result.levels[2]
    assert focus.stop and focus.selected_ids == [] and focus.reason == "The oven is here."
    assert "stop forced at the Subgraph level" in focus.notes
    assert result.handoff_trace.splitlines()[-1] == "Focus Agent: STOP"


def test_a_completed_level_outcome_replaces_its_undecided_self_in_place() -> None:
    from videotapestry.agents.state import LevelOutcome, merge_levels

    def outcome(level: str, reason: str = "") -> LevelOutcome:
        return LevelOutcome(level=level, agent="a", candidate_ids=[], reason=reason)  # type: ignore[arg-type]

    levels = merge_levels([], [outcome("super"), outcome("macro")])
    levels = merge_levels(levels, [outcome("subgraph")])
    levels = merge_levels(levels, [outcome("subgraph", "decided")])
    assert [(o.level, o.reason) for o in levels] == [
        ("super", ""), ("macro", ""), ("subgraph", "decided")
    ]  # fmt: skip


def test_resumed_run_does_not_repeat_finished_levels(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    db = tmp_path / "checkpoints.sqlite"

    async def first() -> None:
        from videotapestry.agents.state import QuestionInput

        item = QuestionInput(question=QUESTION, options=OPTIONS)
        ctx = vt._context(video, SAMPLE, item, no_video=False, progress=None)
        async with sqlite_checkpointer(db) as saver:
            graph = vt.build_graph(checkpointer=saver, interrupt_before=["focus"])
            await graph.ainvoke({"question": item}, {"configurable": {"thread_id": "q1"}},
                                context=ctx)  # fmt: skip
        ctx.close_video()
        await vt.aclose()

    asyncio.run(first())
    before = calls_by(server.requests)
    assert "final_answer" not in before and "level_update" in before

    async def resume():
        async with sqlite_checkpointer(db) as saver:
            return await vt.aanswer(
                video, SAMPLE, QUESTION, OPTIONS, checkpointer=saver, thread_id="q1"
            )

    result = asyncio.run(resume())
    resumed = server.requests[len(before) :]
    # Only the Focus level and the answer run again: nothing of Overview or Skim repeats.
    assert {r.headers.get("x-videotapestry-level") for r in resumed} == {"subgraph", ""}
    made = calls_by(resumed)
    assert made[:3] == ["level_planning", "visual_observation", "level_update"]
    assert sorted(made[3:]) == ["decision", "final_answer"]  # made together
    assert result.levels_visited == ["super", "macro", "subgraph"] and result.answer == "B"


def test_abatch_answers_every_question_in_order(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    items = [
        QuestionItem(video, SAMPLE, QUESTION, OPTIONS, question_id="q1"),
        QuestionItem(
            video, SAMPLE, "What is the main idea of the video?", OPTIONS, question_id="q2"
        ),
    ]

    async def run():
        try:
            return await vt.abatch(items, concurrency=2, keep_images=True)
        finally:
            await vt.aclose()

    results = asyncio.run(run())
    assert [r.question_id for r in results] == ["q1", "q2"]
    assert all(r.answer == "B" for r in results)
    # Every image a model call carried is kept on the result (20 grids + Skim + Focus frames).
    assert results[0].usage.images == len(results[0].images) > 20

    async def lean():
        try:
            return await vt.abatch(items[:1])  # the default: no JPEGs held by the results
        finally:
            await vt.aclose()

    [kept_nothing] = asyncio.run(lean())
    assert kept_nothing.images == [] and kept_nothing.usage.images > 20
    html = results[0]._repr_html_()
    assert "Overview Agent" in html and "data:image/jpeg;base64," in html


def test_cli_ask_prints_one_json_object(
    server: FakeOpenAIServer, video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from videotapestry.cli import main

    server.on(None, ScriptedModel())
    trace = tmp_path / "trace.json"
    args = [
        "ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION,
        *[x for option in OPTIONS for x in ("--option", option)],
        "-o", f"models.default.base_url={server.base_url}",
        "-o", "models.default.harness_headers=true",
        "-o", "cache.enabled=false",
        "-o", "embedding.model=packaged:all-MiniLM-L6-v2",
        "-o", "embedding.query_prompt_name=null",
        "--json", "--trace", str(trace),
    ]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["answer"] == "B"
    assert report["levels_visited"] == ["super", "macro", "subgraph"]
    assert report["usage"]["calls"] == len(server.requests)
    assert report["trace_path"] == str(trace)
    saved = json.loads(trace.read_text())
    assert saved["result"]["answer"] == "B" and saved["events"] and saved["levels"]
    assert "[super] plan" in captured.err  # the progress display


def test_cli_ask_reports_a_missing_video_clearly(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from videotapestry.cli import main

    code = main(
        ["ask", str(tmp_path / "absent.mp4"), "--memory", str(SAMPLE), "--question", "Q?",
         "--option", "A. a", "--option", "B. b", "-o", f"models.default.base_url={server.base_url}"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "absent.mp4" in err and "Traceback" not in err


def test_imported_memory_records_its_video_and_refuses_another(
    server: FakeOpenAIServer, embedder, video: Path, tmp_path: Path
) -> None:
    from videotapestry.cli import main
    from videotapestry.errors import FingerprintMismatchError

    dest = tmp_path / "cooking"
    assert main(["import-memdreamer", str(SAMPLE), str(dest), "--video", str(video)]) == 0
    other = tmp_path / "other.mp4"
    make_test_video(other, 20, fps=2, size=(160, 90))
    server.on(None, ScriptedModel())
    with pytest.raises(FingerprintMismatchError):
        ask(make_vt(server, embedder), other, memory=dest)
    assert ask(make_vt(server, embedder), video, memory=dest).answer == "B"


def test_pace_mem_switches_change_the_focus_evidence(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    full = ask(make_vt(server, embedder), video).levels[2].evidence_selection
    top1 = ask(
        make_vt(
            server,
            embedder,
            "evidence.method=top_k",
            "evidence.fixed_k=1",
            "evidence.focus_scope=joint",
        ),
        video,
    ).levels[2]
    assert full["method"] == "pace_mem" and len(full["selected_ids"]) > 1
    assert full["scope"] == "joint_with_floor"
    joint = top1.evidence_selection["joint"]
    assert top1.evidence_selection["method"] == "top_k"
    assert len(top1.evidence_selection["selected_ids"]) == 1
    chosen = joint["clip_ids"].index(top1.evidence_selection["selected_ids"][0])
    # The Focus agent is shown exactly the records of the one chosen clip.
    shown = top1.static["macro_0002"].split("Relations:")[0].count("\n- ")
    assert shown == joint["record_counts"][chosen]
    assert "slot2_o1" in top1.static["macro_0002"]  # the oven display's clip


def test_whisper_transcribes_the_asr_windows_for_a_video_with_speech(
    server: FakeOpenAIServer, embedder, tmp_path: Path
) -> None:
    speech = Path(__file__).parent / "fixtures" / "speech.mp4"
    server.on(None, ScriptedModel())
    vt = make_vt(
        server,
        embedder,
        "asr.whisper_model=packaged:tiny.en",
        "asr.compute_type=int8",
        "asr.beam_size=1",
        f"asr.cache_dir={tmp_path / 'asr'}",
    )
    # The sample memory covers 20 minutes; stamped with the 36 s speech video's fingerprint
    # it is accepted for it (unstamped, its length would refuse the pairing).
    memory = tmp_path / "stamped"
    save_memory(import_memdreamer(SAMPLE, video_fingerprint=fingerprint(speech)), memory)
    result = ask(vt, speech, memory)
    [request] = [r for r in server.requests if r.prompt == "asr_observation"]
    assert "train" in request.text.lower() and "harbor" in request.text.lower()
    assert QUESTION not in request.text
    [speech_obs] = [o for o in result.levels[0].observations if o.kind == "asr"]
    assert speech_obs.transcript_lines >= 5
    assert speech_obs.windows == [(0.0, 36.0)]  # shorter than 600 s: the whole video


def test_a_refused_key_stops_the_question_instead_of_guessing(
    server: FakeOpenAIServer, embedder, video: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from videotapestry.cli import main
    from videotapestry.errors import ModelAuthError

    server.on(None, lambda _: FakeReply(content="invalid key", status=401))
    with pytest.raises(ModelAuthError, match="OPENAI_API_KEY"):
        ask(make_vt(server, embedder), video)
    assert len(server.requests) == 1  # the first call, not one refused call per step
    code = main(
        ["ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION,
         "--option", "A. a", "--option", "B. b",
         "-o", f"models.default.base_url={server.base_url}",
         "-o", "models.default.harness_headers=true",
         "-o", "embedding.model=packaged:all-MiniLM-L6-v2",
         "-o", "embedding.query_prompt_name=null"]
    )  # fmt: skip
    assert code == 2 and "refused" in capsys.readouterr().err
