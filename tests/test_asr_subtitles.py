"""Subtitle files as a transcript source: SRT, WebVTT, LongVideoBench JSON, offsets, windows."""

from __future__ import annotations

import codecs
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from videotapestry.asr import SubtitleSource, TranscriptLine, TranscriptSource
from videotapestry.asr.subtitles import parse_clock
from videotapestry.errors import SubtitleError
from videotapestry.testing.media import make_test_video
from videotapestry.video import TimeWindow, probe

SRT = (
    "\ufeff1\r\n00:00:01,600 --> 00:00:04,200\r\n<i>The oven</i> is set\r\nto 220 degrees.\r\n\r\n"
    "2\r\n00:10:05,000 --> 00:10:07,500\r\nTom picks up the card.\r\n\r\n"
    "3\r\n01:00:00,000 --> 01:00:02,000\r\n{\\an8}One hour in.\r\n"
)
VTT = """WEBVTT

NOTE made by hand

intro
00:01.600 --> 00:04.200 align:start position:10%
The oven <b>is set</b>

10:05.000 --> 10:07.500
Tom picks up the card.

01:00:00.000 --> 01:00:02.000
One hour in.
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_srt_lines_in_video_time(tmp_path: Path) -> None:
    source = SubtitleSource(write(tmp_path, "v.srt", SRT))
    assert source.lines() == [
        TranscriptLine(1.6, 4.2, "The oven is set to 220 degrees."),
        TranscriptLine(605.0, 607.5, "Tom picks up the card."),
        TranscriptLine(3600.0, 3602.0, "One hour in."),
    ]
    assert isinstance(source, TranscriptSource)


def test_webvtt_matches_srt(tmp_path: Path) -> None:
    lines = SubtitleSource(write(tmp_path, "v.vtt", VTT)).lines()
    assert [(line.start_s, line.end_s) for line in lines] == [
        (1.6, 4.2),
        (605.0, 607.5),
        (3600.0, 3602.0),
    ]
    assert lines[0].text == "The oven is set"


def test_only_lines_overlapping_the_windows_are_returned(tmp_path: Path) -> None:
    source = SubtitleSource(write(tmp_path, "v.srt", SRT))
    info = probe(make_test_video(tmp_path / "v.mp4", 1.0, fps=5).path)
    info = replace(info, duration_s=4000.0)  # pretend the video is long
    got = source.transcribe(info, [TimeWindow(600, 1200), TimeWindow(3601, 3700)])
    assert [line.text for line in got] == ["Tom picks up the card.", "One hour in."]
    # A line that straddles a window edge is kept whole.
    assert source.transcribe(info, [(3.0, 300.0)]) == [source.lines()[0]]
    assert source.transcribe(info, [(10.0, 20.0)]) == []


@pytest.mark.long_video
def test_longvideobench_json_with_both_entry_forms_and_the_offset(tmp_path: Path) -> None:
    entries = [
        {"timestamp": [95.0, 99.5], "text": "before the clip starts"},
        {"timestamp": [100.5, 104.0], "text": "first words"},
        {"start": "00:02:10.250", "end": "00:02:12.000", "line": "a clock-style entry"},
        {"timestamp": [170.0, None], "text": "runs to the end"},
    ]
    path = write(tmp_path, "lvb.json", json.dumps(entries))
    video = make_test_video(tmp_path / "clip.mp4", 80.0, fps=2)
    source = SubtitleSource(path, offset_s=100.0)
    got = source.transcribe(video.path, [TimeWindow(0, 80)])
    assert got == [
        TranscriptLine(0.5, 4.0, "first words"),
        TranscriptLine(30.25, 32.0, "a clock-style entry"),
        TranscriptLine(70.0, 80.0, "runs to the end"),  # null end: the end of the video
    ]
    # Without a video the open end cannot be known: a zero-length line at its start.
    assert source.lines()[-1] == TranscriptLine(70.0, 70.0, "runs to the end")


def test_malformed_entries_are_skipped_and_counted(tmp_path: Path) -> None:
    entries = [
        {"timestamp": [1.0, 2.0], "text": "good"},
        {"timestamp": [5.0, 3.0], "text": "ends before it starts"},
        {"start": "not a time", "line": "bad clock"},
        "not an entry",
    ]
    source = SubtitleSource(write(tmp_path, "s.json", json.dumps(entries)))
    assert source.lines() == [TranscriptLine(1.0, 2.0, "good")]
    assert source.skipped == 3


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("dict.json", '{"a": 1}', "JSON list"),
        ("junk.json", '[{"x": 1}, 5]', "no usable lvb_json cue"),
        ("empty.srt", "", "is empty"),
        ("blank.vtt", "\n  \n", "is empty"),
        ("none.json", "[]", "no usable lvb_json cue"),
        ("prose.srt", "just some words, no cue", "no usable srt cue"),
    ],
)
def test_unreadable_subtitle_files_name_the_file(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(SubtitleError, match=words) as caught:
        SubtitleSource(path).lines()
    assert str(path) in str(caught.value)


def test_missing_subtitle_file(tmp_path: Path) -> None:
    with pytest.raises(SubtitleError, match="does not exist") as caught:
        SubtitleSource(tmp_path / "gone.srt").lines()
    assert "gone.srt" in str(caught.value)


def test_format_is_sniffed(tmp_path: Path) -> None:
    sniffed = SubtitleSource(write(tmp_path, "noext", VTT))
    assert sniffed.format == "vtt" and len(sniffed.lines()) == 3


def test_find_by_video_id(tmp_path: Path) -> None:
    write(tmp_path, "abc123.srt", SRT)
    found = SubtitleSource.find(tmp_path, "abc123", offset_s=1.0)
    assert found is not None and found.offset_s == 1.0 and found.lines()[0].start_s == 0.6
    assert SubtitleSource.find(tmp_path, "other") is None


def test_parse_clock() -> None:
    assert parse_clock("01:02:03.500") == 3723.5
    assert parse_clock("02:03,25") == 123.25
    assert parse_clock(7) == 7.0
    for bad in ("1:2:3:4", "abc", float("nan"), True):
        with pytest.raises(ValueError):
            parse_clock(bad)


def test_encodings_are_detected_never_replaced(tmp_path: Path) -> None:
    """A byte-order mark wins, then strict UTF-8, then the declared fallback; bytes nothing
    decodes are an error naming the file, never replacement characters."""
    accented = SRT.lstrip("\ufeff").replace("The oven", "Crème brûlée")
    cases = {
        "bom8.srt": (codecs.BOM_UTF8 + accented.encode(), "utf-8 (BOM)"),
        "bom16le.srt": (codecs.BOM_UTF16_LE + accented.encode("utf-16-le"), "utf-16-le (BOM)"),
        "bom16be.srt": (codecs.BOM_UTF16_BE + accented.encode("utf-16-be"), "utf-16-be (BOM)"),
        "plain.srt": (accented.encode(), "utf-8"),
    }
    for name, (data, how) in cases.items():
        (tmp_path / name).write_bytes(data)
        source = SubtitleSource(tmp_path / name)
        assert source.lines()[0].text.startswith("Crème brûlée"), name
        assert source.encoding == how
    (tmp_path / "latin.srt").write_bytes(accented.encode("cp1252"))
    (tmp_path / "utf16.srt").write_bytes(accented.encode("utf-16-le"))  # no mark
    (tmp_path / "garbage.srt").write_bytes(bytes(range(128, 256)) * 40)
    for name in ("latin.srt", "utf16.srt", "garbage.srt"):
        with pytest.raises(SubtitleError, match="cannot be read as UTF-8") as caught:
            SubtitleSource(tmp_path / name).lines()
        assert name in str(caught.value) and "subtitle_fallback_encoding" in str(caught.value)
    latin = SubtitleSource(tmp_path / "latin.srt", fallback_encoding="cp1252")
    assert latin.lines()[0].text.startswith("Crème brûlée")
    assert latin.encoding == "cp1252 (fallback)"
    utf16 = SubtitleSource(tmp_path / "utf16.srt", fallback_encoding="utf-16-le")
    assert utf16.lines()[0].text.startswith("Crème") and utf16.encoding == "utf-16-le (fallback)"
    with pytest.raises(SubtitleError, match="no usable srt cue") as caught:
        SubtitleSource(tmp_path / "garbage.srt", fallback_encoding="latin-1").lines()
    assert "garbage.srt" in str(caught.value)


def test_fallback_encoding_is_a_checked_config_key() -> None:
    from videotapestry.config import load_config
    from videotapestry.errors import ConfigError

    assert load_config().asr.subtitle_fallback_encoding is None  # undeclared: an error
    config = load_config(overrides=["asr.subtitle_fallback_encoding=cp1252"])
    assert config.asr.subtitle_fallback_encoding == "cp1252"
    with pytest.raises(ConfigError, match="unknown text encoding"):
        load_config(overrides=["asr.subtitle_fallback_encoding=klingon-8"])


def test_offset_must_be_finite(tmp_path: Path) -> None:
    for offset in (math.nan, math.inf, -math.inf):
        with pytest.raises(SubtitleError, match="finite"):
            SubtitleSource(write(tmp_path, "v.srt", SRT), offset_s=offset)
