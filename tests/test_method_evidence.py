"""Issue 23 item 2: an observation that found nothing is no evidence.

An ASR call over windows without speech, or one whose reply quotes no line (the paper's tool
returns an empty ``asr_evidence`` "when there is no reliable evidence"), must not link
SuperEvents, protect them, or appear as a source or an evidence field. Real HTTP to the fake
server, real subtitles, frames and grids over the sample memory and the 20-minute video.
"""

from __future__ import annotations

import json
from pathlib import Path

from method_support import ask, make_vt
from test_method_fidelity import fail_at_super, srt

from videotapestry.testing.scripted import ScriptedModel, calls_by, section

#: The ASR planner asks about [16:00-18:00]; the tool normalizes it to [12:00-20:00].
LATE_SPEECH = {"observation_instruction": "What is said about plating?",
               "time_ranges": [[960, 1080]]}  # fmt: skip


def run(server, embedder, video: Path, subtitles: Path, script: ScriptedModel, *overrides: str):
    script.overrides["asr_planning"] = LATE_SPEECH
    server.on(None, script)
    return ask(
        make_vt(server, embedder, "asr.source=subtitles", *overrides),
        video,
        subtitle_path=subtitles,
    )


def test_windows_without_speech_link_and_protect_nothing(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    subtitles = srt(tmp_path, (100, 103, "Welcome to the kitchen."))  # nothing after 01:43
    script = ScriptedModel(visual_observation=fail_at_super)
    result = run(server, embedder, video, subtitles, script)
    overview = result.levels[0]
    [speech] = [o for o in overview.observations if o.kind == "asr"]
    assert speech.transcript_lines == 0 and not speech.found
    assert speech.result  # what the tool found is kept for the trace
    # Its windows overlap super_02 and super_03, but an empty transcript links nothing.
    assert overview.evidence_ids == [] and overview.protected_ids == []
    assert overview.refined == overview.static
    assert "super_update" not in calls_by(server.requests)
    assert "No speech" not in result.memory_text
    kept = [e for e in result.trace.events if e.name == "super_scaffold_kept"]
    assert kept and "found nothing" in json.dumps(kept[0].model_dump(mode="json"))


def test_a_reply_quoting_no_line_links_nothing_but_one_quoting_a_line_does(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    subtitles = srt(tmp_path, (1000, 1003, "Time to plate."))
    silent = ScriptedModel(
        visual_observation=fail_at_super,
        asr_observation={"observation_result": "Nothing bears on it.", "asr_evidence": ""},
    )
    nothing = run(server, embedder, video, subtitles, silent).levels[0]
    assert nothing.evidence_ids == [] and nothing.protected_ids == []
    server.reset()
    quoting = ScriptedModel(
        visual_observation=fail_at_super,
        asr_observation={
            "observation_result": "They plate.",
            "asr_evidence": "16:40 Time to plate.",
        },
    )
    found = run(server, embedder, video, subtitles, quoting).levels[0]
    # The windows ([12:00-20:00]) overlap super_02 and super_03; the quoted line is in super_03.
    assert found.evidence_ids == ["super_02", "super_03"]
    assert found.protected_ids == ["super_01", "super_02", "super_03"]
    assert "[Evidence]\n[16:40-16:43] Time to plate." in found.refined["super_03"]


def test_a_source_that_found_nothing_is_omitted_from_the_update_and_the_memory(
    server, embedder, video: Path, tmp_path: Path
) -> None:
    subtitles = srt(tmp_path, (100, 103, "Welcome to the kitchen."))
    result = run(server, embedder, video, subtitles, ScriptedModel())
    overview = result.levels[0]
    # The visual window ([05:20-15:20]) found something and overlaps every SuperEvent.
    assert overview.evidence_ids == ["super_01", "super_02", "super_03"]
    [update] = [r for r in server.requests if r.prompt == "super_update"]
    requests = json.loads(section(update.text, "update_requests:"))
    assert all(item["source_refs"] in (["V1"], []) for item in requests)
    assert "A1" not in section(update.text, "observation_sources:", "update_requests:")
    assert not any("[Transcript]" in text for text in overview.refined.values())
    server.reset()
    flat = run(server, embedder, video, subtitles, ScriptedModel(), "variant=append_only")
    assert "Evidence log" in flat.memory_text and "No speech" not in flat.memory_text
