"""OCR word accuracy on the OCR test videos, spaces included (issue 39). Not a test.

Every text that a test video of the project schedules on screen is read back through the
builder's OCR path (``videotapestry.ocr.read_texts``: the region gate, rapidocr, the
confidence filter) from a frame decoded out of the written video, and compared with what was
drawn. The videos:

- ``sample``: the committed demo sample (``videotapestry/demo/data/sample.mp4``), one frame
  in the middle of each slide: its title, its lines, the footer and the slide number;
- ``schedule``: ``text_schedule`` of the builder-media test (``GATE 10``), 160x90;
- ``facts``: the fact videos' texts (``DOCK 14 CODE 5831``), 480x270;
- ``plant``: the offline model's plant tour (``EXIT CODE 4417``), 320x180.

The generated ones are written with ``make_text_schedule_video`` at the tests' sizes, each
text on screen for one second (what the frames show is what the tests' videos show; only the
timing is shorter).

Each drawn line is paired with the read text most like it. *Word accuracy* is 1 - word edit
distance / words drawn, where words are split at spaces, so ``Doorcode4417`` for ``Door code
4417`` is three words wrong and ``PLATF0RM`` one; *char accuracy* is 1 - character edit
distance / characters drawn, spaces counted; *exact* is the share of lines read exactly.

Issue 39, all 214 lines: word 61.4 %, char 93.8 % with the recognizer's text as it came
(``Doorcode4417``, ``EXITC0DE4417``); word 99.8 %, char 100.0 % with the spaces put back and
the confusions undone (``videotapestry/ocr/words.py``).

    python bench/bench_ocr_words.py [--limit N] [--errors 20] [--smoke]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from benchkit import smoke

from videotapestry.config import BuilderOcrSettings
from videotapestry.demo import sample_video_path
from videotapestry.demo.sample import sample_timeline
from videotapestry.demo.script import SampleParams
from videotapestry.ocr import RapidOcrEngine, read_texts
from videotapestry.testing.builder_media import (
    ScheduledText,
    make_text_schedule_video,
    text_schedule,
)
from videotapestry.testing.fact_videos import place_facts
from videotapestry.video import open_video

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--limit", "2", "--errors", "3")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^OCR word accuracy on \d+ lines \(\d+ words\) of 4 videos, rapidocr",
    r"^sample +\d+ lines +\d+ words +word +\S+ % +char +\S+ % +exact +\S+ %",
    r"^schedule +\d+ lines ",
    r"^facts +\d+ lines ",
    r"^plant +\d+ lines ",
    r"^all +\d+ lines +\d+ words +word +\S+ % +char +\S+ % +exact +\S+ %",
)
#: The signs of tests/test_offline_model.py's plant tour.
PLANT_SIGNS = ("WELCOME TO THE PLANT", "GATE 12 LOADING", "EXIT CODE 4417", "CONTROL ROOM")


@dataclass(frozen=True)
class Shown:
    """A frame of a test video and the lines drawn on it."""

    video: Path
    t: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    drawn: str
    read: str
    words: int
    word_errors: int
    chars: int
    char_errors: int


def edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two sequences (of characters or of words)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


def score(drawn: str, texts: Sequence[str]) -> Scored:
    """``drawn`` against the read text most like it (fewest character edits)."""
    read = min(texts, key=lambda t: edit_distance(drawn, t), default="")
    words = drawn.split()
    return Scored(
        drawn,
        read,
        len(words),
        min(len(words), edit_distance(words, read.split())),
        len(drawn),
        min(len(drawn), edit_distance(drawn, read)),
    )


def sample_frames(limit: int | None) -> list[Shown]:
    """The committed sample: each slide's texts in the middle of its time on screen."""
    timeline = sample_timeline(SampleParams())
    shown = []
    for slide in timeline.slides[:limit]:
        mark = f"{slide.number} / {len(timeline.slides)}"
        lines = (slide.title, *slide.lines, "Riverside Festival - volunteer briefing", mark)
        shown.append(Shown(sample_video_path(), (slide.start_s + slide.end_s) / 2, lines))
    return shown


def generated_frames(
    path: Path, texts: Sequence[str], size: tuple[int, int], *, frame_code: bool = False
) -> list[Shown]:
    """A video showing each text for one second, as the tests draw it."""
    schedule = [ScheduledText(text, float(k), float(k + 1)) for k, text in enumerate(texts)]
    make_text_schedule_video(
        path, schedule, float(len(texts)), fps=1.0, size=size, frame_code=frame_code
    )
    return [Shown(path, s.start_s + 0.5, (s.text,)) for s in schedule]


def read_frame(
    engine: RapidOcrEngine, image: np.ndarray, settings: BuilderOcrSettings
) -> list[str]:
    """What the builder's OCR keeps of one frame (a fresh gate, so the whole frame is read)."""
    spans = read_texts(engine, [(0.0, lambda: image)], settings, end_s=1.0)
    return [span.text for span in spans]


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="at most this many frames per video")
    parser.add_argument("--errors", type=int, default=20, help="misread lines printed")
    args = parser.parse_args()
    settings = BuilderOcrSettings(engine="rapidocr", threads=0)
    engine = RapidOcrEngine(settings)
    with tempfile.TemporaryDirectory(prefix="bench-ocr-words-") as folder:
        work = Path(folder)
        facts = [f.text for f in place_facts(1800.0, 24, seed=11)]
        videos = {
            "sample": sample_frames(args.limit),
            "schedule": generated_frames(
                work / "schedule.mp4",
                [s.text for s in text_schedule(1200.0)][: args.limit],
                (160, 90),
            ),
            "facts": generated_frames(work / "facts.mp4", facts[: args.limit], (480, 270)),
            "plant": generated_frames(work / "plant.mp4", PLANT_SIGNS[: args.limit], (320, 180)),
        }
        started = time.perf_counter()
        results: dict[str, list[Scored]] = {}
        for name, frames in videos.items():
            results[name] = []
            with open_video(frames[0].video) as reader:
                decoded = reader.frames_at([f.t for f in frames])
            for shown, frame in zip(frames, decoded, strict=True):
                texts = read_frame(engine, frame.image, settings)
                results[name] += [score(line, texts) for line in shown.lines]
        seconds = time.perf_counter() - started
    everything = [s for scored in results.values() for s in scored]
    print(
        f"OCR word accuracy on {len(everything)} lines ({sum(s.words for s in everything)} "
        f"words) of {len(results)} videos, {engine.version}, read in {seconds:.1f} s"
    )
    for name, scored in [*results.items(), ("all", everything)]:
        print(figure_line(name, scored))
    wrong = [s for s in everything if s.read != s.drawn]
    for s in wrong[: args.errors]:
        print(f"  drawn {s.drawn!r:44} read {s.read!r}")
    if len(wrong) > args.errors:
        print(f"  ... and {len(wrong) - args.errors} more lines not read exactly")


def figure_line(name: str, scored: Sequence[Scored]) -> str:
    words = sum(s.words for s in scored)
    chars = sum(s.chars for s in scored)
    word = 100 * (1 - sum(s.word_errors for s in scored) / max(1, words))
    char = 100 * (1 - sum(s.char_errors for s in scored) / max(1, chars))
    exact = 100 * sum(s.read == s.drawn for s in scored) / max(1, len(scored))
    return (
        f"{name:<9}{len(scored):4d} lines {words:5d} words  word {word:5.1f} %  "
        f"char {char:5.1f} %  exact {exact:5.1f} %"
    )


if __name__ == "__main__":
    main()
