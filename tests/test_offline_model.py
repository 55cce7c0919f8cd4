"""The offline model end to end: a real build and real questions with ``--profile offline``.

A generated video shows one line of scene text at a time (an exit code among other signs)
and comes with subtitles, so the build has speech to store and the question-time ASR tool
has a transcript to read. Everything is real: decoding, PySceneDetect, rapidocr, MiniLM,
PACE-Mem, the agents and every prompt; the only model is the offline one, recorded on its
way through the model service. Its answers must come from the video (change the code on
screen and the answer changes), be schema-valid for every prompt, make no network access
and be byte-identical across runs.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from videotapestry.api import VideoTapestry
from videotapestry.config import load_config
from videotapestry.contracts.builder import BUILDER_SCHEMAS
from videotapestry.contracts.method import OUTPUT_SCHEMAS
from videotapestry.llm.client import default_client_factories
from videotapestry.llm.service import ModelService
from videotapestry.offline import OfflineClientFactory
from videotapestry.offline.perception import Perception
from videotapestry.testing.builder_media import ScheduledText, make_text_schedule_video

QUESTION = "What is the exit code shown on the sign?"
OPTIONS = ["A. 1447", "B. 4417", "C. 7144", "D. 4471"]
DURATION_S = 120.0
SIGNS = ("WELCOME TO THE PLANT", "GATE 12 LOADING", "EXIT CODE {code}", "CONTROL ROOM")
CUES = (
    (3, 7, "Welcome to the plant tour, my name is Maria."),
    (33, 37, "Trucks load at gate twelve."),
    (63, 68, "Remember the exit code on the sign by the door."),
    (93, 97, "Ask Guide Maria about the control room."),
)
BUILD_OVERRIDES = (
    "cache.enabled=false",
    "builder.macro.min_s=30",
    "builder.entities.ask_similarity=0.5",  # so the merge prompt is asked about a pair
)

#: The plant tour is two minutes long.
FIXTURE_NEEDS = {"plant": "long_video"}


def make_plant(directory: Path, code: str) -> tuple[Path, Path]:
    """A 2-minute tour: a new sign every 30 s, the exit code from 01:00 to 01:30."""
    schedule = [
        ScheduledText(text.format(code=code), 30.0 * k, 30.0 * (k + 1))
        for k, text in enumerate(SIGNS)
    ]
    video, _ = make_text_schedule_video(
        directory / "plant.mp4",
        schedule,
        DURATION_S,
        fps=1,
        size=(320, 180),
        colour_s=40,
        frame_code=False,
    )

    def stamp(t: float) -> str:
        return f"00:{int(t // 60):02d}:{int(t % 60):02d},000"

    subtitles = directory / "plant.srt"
    subtitles.write_text(
        "\n".join(
            f"{i}\n{stamp(s)} --> {stamp(e)}\n{text}\n" for i, (s, e, text) in enumerate(CUES, 1)
        ),
        encoding="utf-8",
    )
    return video, subtitles


@dataclass
class Recorder:
    """Wraps the offline factory: every request's prompt name, level and reply text."""

    factory: OfflineClientFactory
    calls: list[tuple[str, str | None, str]] = field(default_factory=list)

    def __call__(self, settings):
        client = self.factory(settings)
        calls = self.calls

        class Recording:
            endpoint = client.endpoint

            async def complete(self, request):
                response = await client.complete(request)
                calls.append((request.prompt_name or "", request.level, response.text))
                return response

            async def aclose(self):
                await client.aclose()

        return Recording()


def offline_vt(*overrides: str, embedder=None, perception: Perception | None = None):
    """A facade on the offline profile whose model calls are recorded."""
    config = load_config(profile="offline", overrides=list(overrides))
    recorder = Recorder(OfflineClientFactory(perception))
    service = ModelService(
        config, client_factories={**default_client_factories(), "offline": recorder}
    )
    return VideoTapestry(config, service=service, embedder=embedder), recorder


def ask(vt: VideoTapestry, video: Path, memory: Path, options=OPTIONS):
    async def run():
        try:
            return await vt.aanswer(video, memory, QUESTION, options)
        finally:
            await vt.aclose()

    return asyncio.run(run())


@dataclass
class Built:
    video: Path
    memory: Path
    report: object
    calls: dict[str, list]  # "build", "full", "single_agent", "direct" -> recorded calls
    results: dict[str, object]


@pytest.fixture(scope="module")
def plant(tmp_path_factory: pytest.TempPathFactory, embedder) -> Built:
    """The 4417 tour, built, then asked with the full method, the single agent and Direct."""
    root = tmp_path_factory.mktemp("plant")
    video, subtitles = make_plant(root, "4417")
    perception = Perception(embedder=embedder)
    vt, recorder = offline_vt(*BUILD_OVERRIDES, embedder=embedder, perception=perception)
    result = vt.build_memory(video, root / "memory", subtitles)
    calls = {"build": list(recorder.calls)}
    results = {}
    for variant in ("full", "single_agent", "direct"):
        vt, recorder = offline_vt(
            "cache.enabled=false", f"variant={variant}", embedder=embedder, perception=perception
        )
        results[variant] = ask(vt, video, root / "memory")
        calls[variant] = list(recorder.calls)
    return Built(video, root / "memory", result.report, calls, results)


def test_every_prompt_gets_a_schema_valid_reply_and_nothing_falls_back(plant: Built) -> None:
    report = plant.report
    assert not report.failures and not report.degradations
    schemas = {**OUTPUT_SCHEMAS, **BUILDER_SCHEMAS}
    asked = set()
    for calls in plant.calls.values():
        for name, _level, text in calls:
            schemas[name].model_validate_json(text)
            asked.add(name)
    assert asked == set(schemas), f"prompts never asked: {sorted(set(schemas) - asked)}"
    for variant, result in plant.results.items():
        assert result.degraded == [], (variant, [d.render() for d in result.degraded])
        assert result.answer_source == "answer"
        assert not [e for e in result.trace.events if e.kind == "note" and e.name == "repair_retry"]
        assert result.usage.cost_usd == 0.0 and result.usage.cost_known
        assert result.usage.prompt_tokens > 0 and result.usage.failed_calls == 0
    full = [name for name, _level, _text in plant.calls["full"]]
    assert full[0] == "locator_anchors" and full[-1] == "final_answer"
    assert {"asr_planning", "asr_observation", "super_update", "level_update"} <= set(full)
    assert "controller" in {n for n, _l, _t in plant.calls["single_agent"]}
    assert [n for n, _l, _t in plant.calls["direct"]] == ["direct_answer"]


def test_the_answer_is_read_off_the_video(plant: Built, tmp_path: Path, embedder) -> None:
    for result in plant.results.values():
        assert result.answer == "B", result.reasoning
        assert "4417" in result.reasoning
    full = plant.results["full"]
    assert "4417" in full.memory_text
    # What the Overview saw at 01:00-01:29 is the code, with the cell times of the grid.
    overview = full.levels[0].observations[0]
    assert any("4417" in line and line.startswith("01:") for line in overview.result.splitlines())
    # The transcript tool quoted the line about the code, verbatim and at its time.
    [speech] = [o for o in full.levels[0].observations if o.kind == "asr"]
    assert (63.0, 68.0, "Remember the exit code on the sign by the door.") in speech.evidence_lines

    video, subtitles = make_plant(tmp_path, "7144")
    vt, _ = offline_vt(
        *BUILD_OVERRIDES, embedder=embedder, perception=Perception(embedder=embedder)
    )
    vt.build_memory(video, tmp_path / "memory", subtitles)
    vt, _ = offline_vt("cache.enabled=false", embedder=embedder)
    again = ask(vt, video, tmp_path / "memory")
    assert again.answer == "C" and "7144" in again.reasoning and not again.degraded


@pytest.fixture(scope="module")
def guarded(plant: Built) -> Iterator[tuple[object, list, list]]:
    """The full-method question again, in a fresh facade (its own MiniLM, OCR engine and
    models loaded from the packages) with every socket connection and name lookup refused."""
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args[1] if len(args) > 1 else args)
        raise OSError("network access is blocked in this test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", lambda self, address: refuse(self, address))
        patch.setattr(socket.socket, "connect_ex", lambda self, address: refuse(self, address))
        patch.setattr(socket, "getaddrinfo", lambda *a, **k: refuse(None, a[0] if a else k))
        patch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(OSError):  # the guard itself works
            socket.create_connection(("example.com", 80), timeout=1)
        assert len(attempts) == 1
        attempts.clear()
        vt, recorder = offline_vt("cache.enabled=false")
        result = ask(vt, plant.video, plant.memory)
    yield result, recorder.calls, attempts


def test_no_network_is_used(guarded) -> None:
    result, calls, attempts = guarded
    assert attempts == []
    assert result.answer == "B" and not result.degraded
    assert calls


def test_the_same_question_gets_byte_identical_replies(plant: Built, guarded) -> None:
    _result, calls, _attempts = guarded
    assert calls == plant.calls["full"]  # fresh models, same prompts, same bytes
    first = [e.output for e in plant.results["full"].trace.events if e.kind == "model_call"]
    again = [e.output for e in guarded[0].trace.events if e.kind == "model_call"]
    assert first == again


#: The prompts whose question comes after what repeats across the questions of a video.
QUESTION_LAST = (
    "overview_planning",
    "level_planning",
    "level_update",
    "decision",
    "asr_planning",
    "controller",
    "direct_answer",
)


def question_first_templates(directory: Path) -> Path:
    """The shipped templates with the question moved back to the head of the user text (the
    order before prompts put what repeats across questions first, SPEC §17)."""
    from videotapestry.resources import prompts_dir

    directory.mkdir()
    include = '{% include "_question.jinja" %}\n'
    for template in prompts_dir().glob("*.jinja"):
        text = template.read_text(encoding="utf-8")
        head, marker, user = text.partition("{% block user %}\n")
        if marker and include in user and not user.startswith(include):
            user = include + "\n" + user.replace("\n" + include, "\n", 1)
        (directory / template.name).write_text(head + marker + user, encoding="utf-8")
    return directory


def test_putting_the_question_last_changes_no_offline_reply(
    plant: Built, tmp_path: Path, embedder
) -> None:
    """The offline model reads the question, memories and trajectory wherever the prompt
    puts them: with the question first again, every reply of every variant is the same."""
    overrides = question_first_templates(tmp_path / "prompts")
    from videotapestry.prompts import PromptRegistry

    shipped, moved = PromptRegistry(), PromptRegistry(overrides)
    for name in QUESTION_LAST:
        assert moved.source(name) != shipped.source(name), name
    perception = Perception(embedder=embedder)
    for variant in ("full", "single_agent", "direct"):
        vt, recorder = offline_vt(
            "cache.enabled=false",
            f"variant={variant}",
            f"prompts.override_dir={overrides}",
            embedder=embedder,
            perception=perception,
        )
        ask(vt, plant.video, plant.memory)
        assert recorder.calls == plant.calls[variant], variant
