"""The builder on media with known truth: a 20-minute video whose scene text follows a
schedule (real OCR with rapidocr), and the committed speech fixture (real Whisper), whose
stored transcript the question-time ASR tool then reads instead of running Whisper again."""

from __future__ import annotations

import asyncio
import json
import re
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
#: Every test and module fixture here builds with a key set (conftest's, unset after).
pytestmark = pytest.mark.usefixtures("module_api_key")


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


def _build_speech_with_subtitles(tmp_path: Path, embedder, *overrides: str):
    """The speech fixture built by the scripted model with its sentences as subtitles (so
    Whisper is never needed): the build's result and the clip prompts it sent."""
    truth = json.loads((FIXTURES / "speech.json").read_text())
    srt = _write_srt(truth, tmp_path / "speech.srt")
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(5.0, make_scenes(36.0, 5.0)))
        config = load_config(
            overrides=offline_build_overrides(
                server.base_url,
                "cache.enabled=false",
                "builder.ocr.engine=none",
                "asr.whisper_model=/no/such/model",  # Whisper must not be needed
                *overrides,
            )
        )
        result = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False)).build(
            FIXTURES / "speech.mp4", tmp_path / "memory", subtitles=srt
        )
        prompts = [r.text for r in server.requests if r.prompt == "builder_clip"]
    return result, prompts


def test_subtitles_given_to_the_build_are_its_transcript(tmp_path: Path, embedder) -> None:
    truth = json.loads((FIXTURES / "speech.json").read_text())
    result, prompts = _build_speech_with_subtitles(tmp_path, embedder)
    stored = json.loads((tmp_path / "memory" / "transcript.json").read_text())
    assert stored["source"] == "subtitles"
    assert [line[2] for line in stored["lines"]] == [s["text"] for s in truth["sentences"]]
    assert [line[0] for line in stored["lines"]] == pytest.approx(
        [s["start_s"] for s in truth["sentences"]], abs=0.001
    )
    assert any(truth["sentences"][0]["text"] in text for text in prompts)
    assert result.report.degradations == []


#: Words of the fixture's sentences that no frame shows (the scene signs read "SCENE k
#: KITCHEN", "STATION", "MUSEUM" ..., and the scripted model names their colours).
SPOKEN_ONLY = ("train", "sunrise", "dog", "sleeping", "window", "holidays", "painted", "boats")


@pytest.mark.parametrize("in_perception", [True, False], ids=["transcript", "no-transcript"])
def test_speech_reaches_the_nodes_only_when_the_clip_calls_carry_it(
    tmp_path: Path, embedder, in_perception: bool
) -> None:
    """builder.perception.transcript=false builds the paper's kind of memory: no perception
    call is sent a word of the speech, so no caption, entity or event can hold a fact that
    is only spoken, while the transcript is still stored for the ASR tool."""
    truth = json.loads((FIXTURES / "speech.json").read_text())
    flag = f"builder.perception.transcript={str(in_perception).lower()}"
    result, sent_prompts = _build_speech_with_subtitles(tmp_path, embedder, flag)
    prompts = [text.lower() for text in sent_prompts]
    assert len(prompts) == len(result.memory.clips) > 1 and result.report.degradations == []
    sentences = [s["text"].lower().rstrip(".") for s in truth["sentences"]]
    words = [sentence.split() for sentence in sentences]
    runs = {" ".join(w[i : i + 3]) for w in words for i in range(len(w) - 2)}
    sent = {run for run in runs if any(run in prompt for prompt in prompts)}
    nodes = (tmp_path / "memory" / "memory.json").read_text(encoding="utf-8").lower()
    spoken = [word for word in SPOKEN_ONLY if re.search(rf"\b{word}\b", nodes)]
    if in_perception:
        assert all(any(s in prompt for prompt in prompts) for s in sentences)
        assert len(spoken) >= 3, spoken  # the control: spoken facts do reach the nodes
    else:
        assert sent == set()
        assert not any("speech during the clip" in prompt for prompt in prompts)
        assert spoken == []
        assert not [n for n in result.memory.nodes(["Event"]) if n.event_type == "speech"]
    # Either way the ASR tool's transcript is stored, and the manifest says where speech is.
    stored = json.loads((tmp_path / "memory" / "transcript.json").read_text())
    assert [line[2] for line in stored["lines"]] == [s["text"] for s in truth["sentences"]]
    manifest = result.memory.manifest
    assert manifest is not None
    assert manifest.build["transcript"]["in_perception"] is in_perception
    assert manifest.config["builder"]["perception"]["transcript"] is in_perception


@pytest.mark.slow  # two offline builds with OCR, 4-6 s each
@pytest.mark.parametrize("in_perception", [True, False], ids=["transcript", "no-transcript"])
def test_the_offline_model_takes_speech_only_from_the_clip_calls(
    tmp_path: Path, embedder, in_perception: bool
) -> None:
    """The same switch under the offline model's own rules, which turn each line of speech it
    is sent into an event and spoken names into entities."""
    truth = json.loads((FIXTURES / "speech.json").read_text())
    srt = _write_srt(truth, tmp_path / "speech.srt")
    config = load_config(
        profile="offline",
        overrides=[
            "asr.whisper_model=/no/such/model",
            f"builder.perception.transcript={str(in_perception).lower()}",
        ],
    )
    result = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False)).build(
        FIXTURES / "speech.mp4", tmp_path / "memory", subtitles=srt
    )
    assert result.report.status == "complete" and result.report.degradations == []
    nodes = (tmp_path / "memory" / "memory.json").read_text(encoding="utf-8").lower()
    spoken = [word for word in SPOKEN_ONLY if re.search(rf"\b{word}\b", nodes)]
    speech_events = [n for n in result.memory.nodes(["Event"]) if n.event_type == "speech"]
    if in_perception:
        assert len(spoken) >= 3 and speech_events, spoken
    else:
        assert spoken == [] and speech_events == []
    assert (tmp_path / "memory" / "transcript.json").is_file()


def _write_srt(truth: dict, path: Path) -> Path:
    path.write_text(
        "\n".join(
            f"{k}\n{_srt_time(s['start_s'])} --> {_srt_time(s['end_s'])}\n{s['text']}\n"
            for k, s in enumerate(truth["sentences"], start=1)
        )
    )
    return path


def _srt_time(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"
