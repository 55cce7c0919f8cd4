"""The committed demo sample (videotapestry/demo/data): its video decodes, its on-screen text
and speech say what questions.json claims at the times it claims, and the generator, run
again with other parameters and without espeak-ng, writes a video whose answers moved with
it. The OCR and ASR checks use the project's real engines (rapidocr, packaged tiny.en).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from videotapestry.asr import TranscriptCache, WhisperTranscriber
from videotapestry.asr.audio import decode_audio_window
from videotapestry.config import BuilderOcrSettings, load_config
from videotapestry.demo import DATA_DIR, sample_questions, sample_video_path
from videotapestry.demo.sample import generate, main, render_questions
from videotapestry.demo.script import (
    KEY_SLIDE_S,
    STRETCHES,
    SampleParams,
    distractor_codes,
    layout,
    make_questions,
)
from videotapestry.demo.speech import SPEECH_DIR, load_speech
from videotapestry.errors import SampleVideoError
from videotapestry.ocr import RapidOcrEngine, text_key
from videotapestry.video import TimeWindow, open_video, probe

#: The shipped sample is 18 minutes long.
pytestmark = pytest.mark.long_video

COMMITTED = sample_questions()
#: Parameters of the regenerated sample: another code, the key slide ~8 minutes later.
OTHER = SampleParams(code="8023", code_at_s=700)


def question(record: dict, question_id: str) -> dict:
    [found] = [q for q in record["questions"] if q["id"] == question_id]
    return found


def answer_text(q: dict) -> str:
    [option] = [o for o in q["options"] if o.startswith(q["answer"] + ". ")]
    return option.split(". ", 1)[1]


def span(q: dict, kind: str) -> dict:
    return next(s for s in q["evidence_spans"] if s["kind"] == kind)


@pytest.fixture(scope="module")
def speech():
    return load_speech()


@pytest.fixture(scope="module")
def ocr() -> RapidOcrEngine:
    pytest.importorskip("rapidocr_onnxruntime")
    return RapidOcrEngine(BuilderOcrSettings(threads=0))


def screen_text(path: Path, t: float, ocr: RapidOcrEngine) -> str:
    """Every text OCR reads in the frame on screen at ``t``, normalized by ``text_key``."""
    with open_video(path) as reader:
        [frame] = reader.frames_at([t])
    return "|".join(text_key(hit.text) for hit in ocr.read(frame.image))


# --------------------------------------------------------------------------- committed files


def test_committed_video_decodes_with_the_project_reader() -> None:
    path = sample_video_path()
    info = probe(path)
    assert info.duration_s == pytest.approx(COMMITTED["duration_s"], abs=1.0)
    assert 15 * 60 <= info.duration_s <= 20 * 60
    assert info.fps == pytest.approx(COMMITTED["fps"])
    assert (info.width, info.height) == tuple(COMMITTED["size"])
    assert info.has_audio
    assert path.stat().st_size <= 10 * 1024 * 1024
    with open_video(path) as reader:
        frames = reader.frames_at([0.0, 600.5, info.duration_s - 0.5])
    assert [f.timestamp_s for f in frames] == [0.0, 600.0, info.duration_s - 1]
    assert all(f.image.shape == (360, 640, 3) for f in frames)


def test_default_parameters_reproduce_the_committed_questions(speech) -> None:
    committed = (DATA_DIR / "questions.json").read_text(encoding="utf-8")
    assert render_questions(SampleParams(), speech) == committed
    assert COMMITTED["parameters"] == SampleParams().to_json()


def test_the_questions_cover_screen_speech_and_both() -> None:
    kinds = [q["evidence"] for q in COMMITTED["questions"]]
    assert 3 <= len(kinds) <= 5
    assert {"screen", "speech", "both"} <= set(kinds)
    for q in COMMITTED["questions"]:
        assert q["answer"] in [o[0] for o in q["options"]]
        declared = {s["kind"] for s in q["evidence_spans"]}
        assert declared == ({"screen", "speech"} if q["evidence"] == "both" else {q["evidence"]})


def test_speech_only_and_screen_only_facts_stay_in_their_channel() -> None:
    slides = " ".join(
        " ".join([s["title"], *s["lines"]]) for s in COMMITTED["timeline"]["slides"]
    ).lower()
    said = " ".join(s["text"] for s in COMMITTED["timeline"]["speech"]).lower()
    name_cards = question(COMMITTED, "name_cards")
    for word in ("green", "bridge", "name card"):
        assert word in said and word not in slides, word
    code = answer_text(question(COMMITTED, "gate_b_code"))
    assert code in slides
    assert not re.search(r"\d", said) and "code" not in said
    # Distractors are not invented: each occurs somewhere in the video.
    for option in question(COMMITTED, "gate_b_code")["options"]:
        assert option.split(". ", 1)[1] in slides
    for place in ("yellow tent", "white", "main office"):
        assert place in said or place in slides
    assert answer_text(name_cards) == "At the green tent next to the bridge"
    titles = {s["title"] for s in COMMITTED["timeline"]["slides"]}
    fireworks = question(COMMITTED, "fireworks_slide")
    assert {o.split(". ", 1)[1] for o in fireworks["options"]} <= titles
    # the slide that lists the fireworks is offered, and is wrong
    assert any(o.endswith(". Programme: evening") for o in fireworks["options"])
    assert answer_text(fireworks) != "Programme: evening"


def test_ocr_reads_the_key_texts_at_their_times(ocr) -> None:
    path = sample_video_path()
    gate_b = span(question(COMMITTED, "gate_b_code"), "screen")
    code = answer_text(question(COMMITTED, "gate_b_code"))
    middle = (gate_b["start_s"] + gate_b["end_s"]) / 2
    seen = screen_text(path, middle, ocr)
    assert "gatebdeliveries" in seen and f"doorcode{code}" in seen
    # one second before the key slide, another slide with another code is on screen
    before = screen_text(path, gate_b["start_s"] - 1, ocr)
    assert "gateb" not in before and code not in before
    fireworks = question(COMMITTED, "fireworks_slide")
    heard = span(fireworks, "speech")
    assert text_key(answer_text(fireworks)) in screen_text(path, heard["start_s"], ocr)


def test_audio_is_silent_outside_the_speech_stretches() -> None:
    speech = COMMITTED["timeline"]["speech"]
    quiet_from = speech[3]["end_s"] + 2  # after the first stretch, before the next
    quiet_to = next(s["start_s"] for s in speech if s["start_s"] > quiet_from) - 2
    assert quiet_to - quiet_from > 60
    samples, _ = decode_audio_window(sample_video_path(), quiet_from, quiet_to)
    assert len(samples) > 0 and float(np.abs(samples).max()) < 0.01
    loud, _ = decode_audio_window(sample_video_path(), speech[1]["start_s"], speech[1]["end_s"])
    assert float(np.abs(loud).max()) > 0.2


def test_whisper_hears_the_speech_only_fact(tmp_path: Path) -> None:
    q = question(COMMITTED, "name_cards")
    heard = span(q, "speech")
    stretch = [s for s in COMMITTED["timeline"]["speech"] if s["stretch"] == "welcome"]
    window = TimeWindow(stretch[0]["start_s"] - 3, stretch[-1]["end_s"] + 3)
    config = load_config(profile="offline", overrides=[f"asr.cache_dir={tmp_path}"]).asr
    lines = WhisperTranscriber(config, TranscriptCache(config.resolved_cache_dir())).transcribe(
        sample_video_path(), [window]
    )
    words = [re.sub(r"[^a-z ]", "", line.text.lower()) for line in lines]
    [hit] = [i for i, text in enumerate(words) if "green tent next to the bridge" in text]
    assert "name card" in words[hit]
    assert abs(lines[hit].start_s - heard["start_s"]) <= 1.0


# --------------------------------------------------------------------------- regeneration


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The sample with OTHER parameters, generated while espeak-ng cannot be run."""

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"the generator ran a program: {args}")

    out = tmp_path_factory.mktemp("sample")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "run", no_subprocess)
        patch.setattr(shutil, "which", lambda name, *a, **k: None)
        result = generate(out, OTHER)
    assert result.seconds < 30
    return result.video, json.loads(result.questions.read_text(encoding="utf-8"))


def test_regenerated_sample_shows_the_new_code_at_the_new_time(regenerated, ocr) -> None:
    path, record = regenerated
    assert probe(path).duration_s == pytest.approx(OTHER.duration_s, abs=1.0)
    q = question(record, "gate_b_code")
    shown = span(q, "screen")
    assert (shown["start_s"], shown["end_s"]) == (OTHER.code_at_s, OTHER.code_at_s + KEY_SLIDE_S)
    assert answer_text(q) == "8023" != answer_text(question(COMMITTED, "gate_b_code"))
    assert "doorcode8023" in screen_text(path, OTHER.code_at_s + 1, ocr)
    old = span(question(COMMITTED, "gate_b_code"), "screen")
    assert "gateb" not in screen_text(path, old["start_s"] + 1, ocr)


def test_regenerated_sample_changes_the_order_answer(regenerated) -> None:
    _path, record = regenerated
    before, after = question(COMMITTED, "after_gate_b"), question(record, "after_gate_b")
    assert answer_text(before) == "Where volunteers will have lunch"
    assert answer_text(after) == "Where to return flashlights"
    heard = span(after, "speech")
    assert heard["start_s"] > OTHER.code_at_s + KEY_SLIDE_S
    assert "flashlight" in heard["text"]


# --------------------------------------------------------------------------- layout rules


@pytest.mark.parametrize("code_at_s", [90, 212, 480, 700, 960])
def test_layout_puts_the_key_slide_at_its_time_and_speech_inside_its_slide(
    code_at_s: int, speech
) -> None:
    timeline = layout(SampleParams(code_at_s=code_at_s), speech.timings())
    edges = [(s.start_s, s.end_s) for s in timeline.slides]
    assert edges[0][0] == 0 and edges[-1][1] == timeline.duration_s
    assert all(a[1] == b[0] for a, b in itertools.pairwise(edges))
    key = timeline.slide("gate_b")
    assert (key.start_s, key.end_s) == (code_at_s, code_at_s + KEY_SLIDE_S)
    for stretch in STRETCHES:
        said = [s for s in timeline.sentences if s.stretch == stretch.id]
        slide = timeline.slide_at(said[0].start_s)
        assert slide.start_s < said[0].start_s and said[-1].end_s < slide.end_s
        assert all(a.end_s < b.start_s for a, b in itertools.pairwise(said))
    # the order question names the stretch nearest the key slide on the side it asks about
    order = {q.id: q for q in make_questions(timeline)}["after_gate_b"]
    [heard] = [e for e in order.evidence_spans if e.kind == "speech"]
    starts = [timeline.stretch_span(s.id)[0] for s in STRETCHES]
    if order.question.startswith("After"):
        assert heard.start_s == min(
            timeline.sentence(s.key_sentence).start_s
            for s, start in zip(STRETCHES, starts, strict=True)
            if start >= key.end_s
        )
    else:
        assert heard.end_s < key.start_s and all(start < key.start_s for start in starts)


def test_the_code_changes_one_slide_and_one_answer(speech) -> None:
    first = layout(SampleParams(), speech.timings())
    second = layout(dataclasses.replace(SampleParams(), code="5190"), speech.timings())
    changed = [a.key for a, b in zip(first.slides, second.slides, strict=True) if a != b]
    assert changed == ["gate_b", "wifi"]  # the key code and its digit-swapped twin
    assert second.slide("wifi").lines[-1] == "Password 5109"
    answers = [q.answer_text() for q in make_questions(second)]
    assert (
        answers[0] == "5190" and answers[1:] == [q.answer_text() for q in make_questions(first)][1:]
    )


def test_distractor_codes_are_distinct_near_twins_and_unrelated_codes() -> None:
    for code in ("4417", "1000", "9899", "1234"):
        codes = distractor_codes(code, seed=3)
        assert len({codes.key, codes.gate_a, codes.gate_c, codes.wifi}) == 4
        assert sorted(codes.wifi) == sorted(code)
    assert distractor_codes("4417", 0).gate_a == distractor_codes("5190", 0).gate_a


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"code": "44a7"}, "four digits"),
        ({"code": "777"}, "four digits"),
        ({"code": "1111"}, "repeats one digit"),
        ({"code_at_s": 10}, "would last"),
        ({"code_at_s": 1050}, "past the end"),
        ({"duration_s": 300}, "would last"),
        ({"seed": 1.5}, "whole number"),
    ],
)
def test_parameters_the_layout_cannot_honour_are_refused(params, message, speech) -> None:
    with pytest.raises(SampleVideoError, match=message):
        layout(SampleParams(**params), speech.timings())


def test_speech_assets_from_other_sentences_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "speech"
    shutil.copytree(SPEECH_DIR, copy)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    manifest["clips"][1]["text"] = "Please pick up your name card at the red tent."
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(SampleVideoError, match=r"welcome_2.*--resynthesize"):
        load_speech(copy)
    with pytest.raises(SampleVideoError, match="no speech manifest"):
        load_speech(tmp_path / "nowhere")


def test_cli_writes_questions_and_reports_bad_parameters(tmp_path: Path, capsys) -> None:
    assert main(["--out", str(tmp_path), "--questions-only", "--code", "6061"]) == 0
    record = json.loads((tmp_path / "questions.json").read_text(encoding="utf-8"))
    assert answer_text(question(record, "gate_b_code")) == "6061"
    assert not (tmp_path / "sample.mp4").exists()
    assert main(["--out", str(tmp_path), "--code-at", "5"]) == 2
    assert "code_at_s=5" in capsys.readouterr().err
