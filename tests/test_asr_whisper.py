"""Whisper (packaged tiny.en, int8) on the committed speech fixture: words, times, cache.

The fixture (tests/fixtures/speech.mp4, made by make_speech_fixture.py) holds six
espeak-ng sentences at known times; speech.json is the truth.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jiwer
import numpy as np
import pytest

from videotapestry.asr import (
    SubtitleSource,
    TranscriptCache,
    TranscriptLine,
    WhisperTranscriber,
    format_transcript,
    make_transcript_source,
)
from videotapestry.asr.audio import SAMPLE_RATE, decode_audio_window
from videotapestry.asr.whisper import TimedWord, resolve_whisper_model, split_at_pauses
from videotapestry.config import AsrConfig, load_config
from videotapestry.errors import ConfigError, TranscriptionError
from videotapestry.testing.media import make_test_video
from videotapestry.video import TimeWindow, probe

FIXTURES = Path(__file__).parent / "fixtures"
VIDEO = FIXTURES / "speech.mp4"
TRUTH = json.loads((FIXTURES / "speech.json").read_text(encoding="utf-8"))
SENTENCES = TRUTH["sentences"]


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]+", " ", text.lower()).split()


def offline_asr(tmp_path: Path) -> AsrConfig:
    config = load_config(profile="offline", overrides=[f"asr.cache_dir={tmp_path / 'asr'}"])
    return config.asr


@pytest.fixture(scope="module")
def transcriber(tmp_path_factory: pytest.TempPathFactory) -> WhisperTranscriber:
    config = offline_asr(tmp_path_factory.mktemp("cache"))
    return WhisperTranscriber(config, TranscriptCache(config.resolved_cache_dir()))


@pytest.fixture(scope="module")
def full_transcript(transcriber: WhisperTranscriber) -> list[TranscriptLine]:
    return transcriber.transcribe(VIDEO, [TimeWindow(0, TRUTH["duration_s"])])


def test_transcript_has_the_words_and_sentence_starts(full_transcript) -> None:
    spoken = [w for line in full_transcript for w in words(line.text)]
    truth = [w for sentence in SENTENCES for w in words(sentence["text"])]
    assert jiwer.wer(" ".join(truth), " ".join(spoken)) <= 0.10
    starts = [line.start_s for line in full_transcript]
    for sentence in SENTENCES:
        assert min(abs(s - sentence["start_s"]) for s in starts) <= 1.0, sentence
    assert starts == sorted(starts)
    assert all(0 <= line.start_s <= line.end_s <= TRUTH["duration_s"] for line in full_transcript)


def test_transcript_formats_as_timestamped_lines(full_transcript) -> None:
    text = format_transcript(full_transcript)
    lines = text.splitlines()
    assert len(lines) == len(full_transcript)
    for line, source in zip(lines, full_transcript, strict=True):
        match = re.fullmatch(r"\[(\d\d):(\d\d)-(\d\d):(\d\d)\] (.+)", line)
        assert match, line
        m1, s1, m2, s2, said = match.groups()
        assert (int(m1) * 60 + int(s1), int(m2) * 60 + int(s2)) == (
            int(source.start_s),
            int(source.end_s),
        )
        assert said == source.text
    assert "the red train" in lines[0].lower()


def test_a_window_gives_only_its_speech_in_video_time(tmp_path: Path, transcriber) -> None:
    before = transcriber.stats.audio_seconds
    lines = transcriber.transcribe(probe(VIDEO), [(11.0, 22.0)])
    assert transcriber.stats.audio_seconds - before == pytest.approx(11.0, abs=0.1)
    spoken = [w for line in lines for w in words(line.text)]
    inside = [s for s in SENTENCES if 11.0 <= s["start_s"] < 22.0]
    truth = [w for s in inside for w in words(s["text"])]
    assert jiwer.wer(" ".join(truth), " ".join(spoken)) <= 0.15
    assert {"train", "dog", "yellow", "boats", "boat"}.isdisjoint(spoken)
    for sentence in inside:
        assert min(abs(line.start_s - sentence["start_s"]) for line in lines) <= 1.0


def test_overlapping_windows_are_transcribed_once(transcriber) -> None:
    lines = transcriber.transcribe(VIDEO, [(0.0, 8.0), (5.0, 16.5), (40.0, 50.0)])
    spoken = [w for line in lines for w in words(line.text)]
    assert spoken.count("window") == 1 and spoken.count("train") == 1
    assert lines == sorted(lines, key=lambda line: line.start_s)


def test_second_call_is_a_cache_hit_without_loading_the_model(tmp_path: Path) -> None:
    config = offline_asr(tmp_path)
    first = WhisperTranscriber(config, TranscriptCache(config.resolved_cache_dir()))
    lines = first.transcribe(VIDEO, [(5.0, 10.0)])
    assert first.stats.cache_misses == 1 and first.stats.cache_hits == 0 and lines
    assert first.transcribe(VIDEO, [(5.0, 10.0)]) == lines
    assert first.stats.cache_hits == 1
    again = WhisperTranscriber(config, TranscriptCache(config.resolved_cache_dir()))
    assert again.transcribe(VIDEO, [(5.0, 10.0)]) == lines
    assert again.stats.cache_hits == 1 and not again.model_loaded
    # Other settings are another entry: a different beam size must not reuse it.
    other = WhisperTranscriber(
        config.model_copy(update={"beam_size": config.beam_size + 1}),
        TranscriptCache(config.resolved_cache_dir()),
    )
    other.transcribe(VIDEO, [(5.0, 10.0)])
    assert other.stats.cache_misses == 1


def test_a_damaged_cache_entry_is_a_miss(tmp_path: Path, transcriber) -> None:
    cache = TranscriptCache(tmp_path)
    info = probe(VIDEO)
    window = TimeWindow(0, 5)
    path = cache.put(info.fingerprint, window, "m", [TranscriptLine(1.0, 2.0, "hi")])
    assert cache.get(info.fingerprint, window, "m") == [TranscriptLine(1.0, 2.0, "hi")]
    path.write_text("{not json", encoding="utf-8")
    assert cache.get(info.fingerprint, window, "m") is None


def test_silent_and_audio_less_videos_give_an_empty_transcript(tmp_path: Path) -> None:
    config = offline_asr(tmp_path)
    transcriber = WhisperTranscriber(config, None)
    no_audio = make_test_video(tmp_path / "mute.mp4", 3.0, fps=5)
    assert transcriber.transcribe(no_audio.path, [(0, 3)]) == []
    assert not transcriber.model_loaded  # nothing to listen to: the model never loads
    silent = make_test_video(
        tmp_path / "silent.mp4", 4.0, fps=5, audio=np.zeros(4 * SAMPLE_RATE, np.float32)
    )
    assert transcriber.transcribe(silent.path, [(0, 4)]) == []


def test_window_audio_is_decoded_from_the_right_place() -> None:
    sentence = SENTENCES[2]
    start = sentence["start_s"] - 1.0
    audio, offset = decode_audio_window(VIDEO, start, start + 3.0)
    assert offset == pytest.approx(start)
    assert len(audio) == pytest.approx(3.0 * SAMPLE_RATE, abs=2)
    onset = np.flatnonzero(np.abs(audio) > 0.02)[0] / SAMPLE_RATE + offset
    assert onset == pytest.approx(sentence["start_s"], abs=0.05)
    assert np.abs(audio[: int(0.9 * SAMPLE_RATE)]).max() < 0.02  # silence before it


def test_pauses_between_words_split_lines() -> None:
    spoken = [
        TimedWord(0.0, 0.4, " one"),
        TimedWord(0.5, 0.9, " two"),
        TimedWord(3.0, 3.5, " three"),
    ]
    assert [len(run) for run in split_at_pauses(spoken, 1.0)] == [2, 1]
    assert [len(run) for run in split_at_pauses(spoken, 0.0)] == [3]


def test_model_errors_name_the_model(tmp_path: Path) -> None:
    missing = AsrConfig(whisper_model=str(tmp_path / "no-model"))
    with pytest.raises(TranscriptionError, match="no-model"):
        WhisperTranscriber(missing)._load()
    with pytest.raises(TranscriptionError, match="unknown packaged Whisper model"):
        resolve_whisper_model("packaged:large-v9")
    assert Path(resolve_whisper_model("packaged:tiny.en"), "model.bin").is_file()


def test_transcript_source_follows_the_config(tmp_path: Path) -> None:
    config = offline_asr(tmp_path)
    source = make_transcript_source(config)
    assert isinstance(source, WhisperTranscriber)
    assert source.cache is not None and source.cache.directory == tmp_path / "asr"
    subtitles = config.model_copy(update={"source": "subtitles"})
    with pytest.raises(ConfigError, match="subtitle file"):
        make_transcript_source(subtitles)
    srt = tmp_path / "v.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n", encoding="utf-8")
    assert isinstance(make_transcript_source(subtitles, subtitle_path=srt), SubtitleSource)
