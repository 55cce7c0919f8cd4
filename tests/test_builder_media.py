"""The builder on media with known truth: a 20-minute video whose scene text follows a
schedule (real OCR with rapidocr), and the committed speech fixture (real Whisper), whose
stored transcript the question-time ASR tool then reads instead of running Whisper again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from memory_builders.builder import MemoryBuilder
from memory_builders.progress import BuildProgress
from videotapestry.api import VideoTapestry
from videotapestry.asr.stored import StoredTranscript
from videotapestry.config import load_config
from videotapestry.memory import EntityNode, OCRTextNode
from videotapestry.ocr import same_text, text_key
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.builder_media import make_text_schedule_video, text_schedule
from videotapestry.testing.media import make_scenes
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, offline_build_overrides
from videotapestry.video import fingerprint, probe

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "sk-test-builder-media-0123456789abcdef"


@pytest.fixture(scope="module", autouse=True)
def api_key() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.delenv("OPENAI_BASE_URL", raising=False)
        yield


@pytest.mark.long_video
def test_ocr_nodes_cover_the_scheduled_scene_texts(tmp_path: Path, embedder) -> None:
    duration = 1200.0
    schedule = text_schedule(duration)
    assert len(schedule) >= 60
    video, colours = make_text_schedule_video(
        tmp_path / "signs.mp4", schedule, duration, fps=1.0, size=(160, 90), frame_code=False
    )
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(1.0, colours))
        config = load_config(
            overrides=offline_build_overrides(
                server.base_url,
                "cache.enabled=false",
                "builder.ocr.engine=rapidocr",
                "builder.ocr.gate=regions",  # the gate that reads least; recall must hold
            )
        )
        result = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False)).build(
            video, tmp_path / "memory"
        )
    memory = result.memory
    ocr_nodes = [
        n
        for n in memory.nodes(["OCRText"])
        if isinstance(n, OCRTextNode) and n.ocr_type == "scene_text"
    ]
    found = []
    for item in schedule:
        key = text_key(item.text)
        starts = [n.time_range.start for n in ocr_nodes if same_text(text_key(n.text), key)]
        if any(abs(start - item.start_s) <= 2.0 for start in starts):
            found.append(item)
    # Every scheduled text (71 of 71) is found within 2 s of its start.
    assert len(found) == len(schedule), [s.text for s in schedule if s not in found]
    for node in ocr_nodes:  # every OCRText node lies inside its MacroEvent
        macro = memory.parent(node.id)
        assert macro.time_range.start <= node.time_range.start <= node.time_range.end
        assert node.time_range.end <= macro.time_range.end
    # One kept frame per 2 s is looked at, and a still frame is read only when it changed;
    # the region gate recognizes about one box per text shown (a box is read again when the
    # background colour changes under it), never one per frame looked at.
    timings = result.report.timings
    print({k: v for k, v in timings.items() if k.startswith("ocr_")})
    assert timings["ocr_frames"] == 600 and timings["ocr_frames_read"] < 300
    assert timings["ocr_boxes_recognized"] < 2 * len(schedule)


def test_speech_is_transcribed_once_and_read_back_at_question_time(
    tmp_path: Path, embedder
) -> None:
    video = FIXTURES / "speech.mp4"
    truth = json.loads((FIXTURES / "speech.json").read_text())
    scenes = make_scenes(probe(video).duration_s, 5.0)
    memory_dir = tmp_path / "memory"
    with FakeOpenAIServer() as server:
        builder_model = ScriptedBuilderModel(5.0, scenes)
        question_model = ScriptedModel()
        server.on(
            None,
            lambda r: (
                builder_model if (r.prompt or "").startswith("builder_") else question_model
            )(r),
        )
        overrides = offline_build_overrides(
            server.base_url,
            "cache.enabled=false",
            "builder.ocr.engine=none",
            f"asr.cache_dir={tmp_path / 'asr'}",
        )
        config = load_config(overrides=overrides)
        result = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False)).build(
            video, memory_dir
        )
        # The transcript went into the perception prompts: the clips say what was said.
        speech_events = [n for n in result.memory.nodes(["Event"]) if n.event_type == "speech"]
        assert len(speech_events) >= len(truth["sentences"]) - 1
        stored = json.loads((memory_dir / "transcript.json").read_text())
        assert stored["source"] == "whisper" and stored["video_fingerprint"] == fingerprint(video)
        lines = stored["lines"]
        for sentence in truth["sentences"]:
            best = max(lines, key=lambda line: _similar(line[2], sentence["text"]))
            assert _similar(best[2], sentence["text"]) > 0.8
            assert abs(best[0] - sentence["start_s"]) < 1.0
        # At question time Whisper cannot even load (no such model directory): the ASR tool
        # must read the stored lines, with their timestamps.
        vt = VideoTapestry(
            overrides=[*overrides, f"asr.whisper_model={tmp_path / 'no-such-model'}"],
            embedder=embedder,
        )
        answer = asyncio.run(
            _ask(vt, video, memory_dir, "Where is the dog sleeping?", ["A. Kitchen", "B. Garden"])
        )
        asr_requests = [r for r in server.requests if r.prompt == "asr_observation"]
    assert answer.answer_source == "answer"
    assert "macro_0000" in answer.memory_text or "super_01" in answer.memory_text
    assert asr_requests
    heard = asr_requests[0].text
    assert "A small dog is sleeping under the kitchen table." in heard
    first = lines[0]
    assert f"{first[2]}" in heard
    source = StoredTranscript.for_memory(memory_dir, expected_fingerprint=fingerprint(video))
    assert source is not None and len(source.transcribe(video, [(0, 10)])) >= 1
    assert any(isinstance(n, EntityNode) for n in result.memory.nodes(["Entity"]))


async def _ask(vt: VideoTapestry, video: Path, memory: Path, question: str, options: list[str]):
    try:
        return await vt.aanswer(video, memory, question, options)
    finally:
        await vt.aclose()


def _similar(a: str, b: str) -> float:
    clean = lambda text: " ".join(text.lower().replace(".", "").replace(",", "").split())  # noqa: E731
    return SequenceMatcher(None, clean(a), clean(b)).ratio()


def test_subtitles_given_to_the_build_are_its_transcript(tmp_path: Path, embedder) -> None:
    video = FIXTURES / "speech.mp4"
    truth = json.loads((FIXTURES / "speech.json").read_text())
    srt = tmp_path / "speech.srt"
    srt.write_text(
        "\n".join(
            f"{k}\n{_srt_time(s['start_s'])} --> {_srt_time(s['end_s'])}\n{s['text']}\n"
            for k, s in enumerate(truth["sentences"], start=1)
        )
    )
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(5.0, make_scenes(36.0, 5.0)))
        config = load_config(
            overrides=offline_build_overrides(
                server.base_url,
                "cache.enabled=false",
                "builder.ocr.engine=none",
                "asr.whisper_model=/no/such/model",  # Whisper must not be needed
            )
        )
        result = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False)).build(
            video, tmp_path / "memory", subtitles=srt
        )
        prompts = [r.text for r in server.requests if r.prompt == "builder_clip"]
    stored = json.loads((tmp_path / "memory" / "transcript.json").read_text())
    assert stored["source"] == "subtitles"
    assert [line[2] for line in stored["lines"]] == [s["text"] for s in truth["sentences"]]
    assert [line[0] for line in stored["lines"]] == pytest.approx(
        [s["start_s"] for s in truth["sentences"]], abs=0.001
    )
    assert any(truth["sentences"][0]["text"] in text for text in prompts)
    assert result.report.degradations == []


def _srt_time(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"
