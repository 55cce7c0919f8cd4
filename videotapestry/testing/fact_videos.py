"""Long generated videos with brief on-screen facts at random times, and questions on them.

Each fact (``DOCK 14 CODE 5831``) is on screen for a few seconds only, so a method that
looks at a fixed budget of uniform frames (the Direct baseline's 50) sees few of them, and
finding one needs localization: the memory's text nodes and the agents' windows. The wrong
options of every question are codes of *other* facts in the same video, so a reader that
merely saw some codes is not rewarded for it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from videotapestry.testing.builder_media import WORDS, ScheduledText, make_text_schedule_video


@dataclass(frozen=True)
class Fact:
    label: str  # "DOCK 14"
    code: str  # "5831"
    start_s: float
    end_s: float

    @property
    def text(self) -> str:
        return f"{self.label} CODE {self.code}"


@dataclass(frozen=True)
class FactQuestion:
    id: str
    question: str
    options: list[str]
    answer: str
    fact: Fact


@dataclass(frozen=True)
class FactVideo:
    path: Path
    duration_s: float
    facts: list[Fact]
    questions: list[FactQuestion]


def place_facts(
    duration_s: float, count: int, *, seed: int, shown_s: float = 8.0, margin_s: float = 20.0
) -> list[Fact]:
    """``count`` facts at random, non-overlapping times, each with a distinct label and code."""
    rng = random.Random(seed)
    slot = (duration_s - 2 * margin_s) / count
    if slot < shown_s + 4:
        raise ValueError(f"{count} facts of {shown_s} s do not fit in {duration_s} s")
    codes = rng.sample(range(1000, 10000), count)
    numbers = rng.sample(range(2, 99), count)
    facts = []
    for k in range(count):
        start = round(margin_s + k * slot + rng.uniform(0, slot - shown_s - 2))
        label = f"{WORDS[k % len(WORDS)]} {numbers[k]}"
        facts.append(Fact(label, str(codes[k]), float(start), float(start + shown_s)))
    return facts


def fact_questions(facts: list[Fact], *, seed: int, choices: int = 4) -> list[FactQuestion]:
    rng = random.Random(seed + 1)
    questions = []
    for number, fact in enumerate(facts, start=1):
        others = rng.sample([f.code for f in facts if f is not fact], choices - 1)
        codes = [fact.code, *others]
        rng.shuffle(codes)
        letters = "ABCDEFGH"[:choices]
        questions.append(
            FactQuestion(
                id=f"fact_{number:02d}",
                question=f"Which code was shown on screen for {fact.label.title()}?",
                options=[f"{letter}. {code}" for letter, code in zip(letters, codes, strict=True)],
                answer=letters[codes.index(fact.code)],
                fact=fact,
            )
        )
    return questions


def make_fact_video(
    path: str | Path,
    *,
    duration_s: float = 1800.0,
    count: int = 24,
    seed: int = 11,
    size: tuple[int, int] = (480, 270),
    fps: float = 1.0,
) -> FactVideo:
    """Write the video (coloured scenes, one fact at a time) and its questions."""
    facts = place_facts(duration_s, count, seed=seed)
    schedule = [ScheduledText(f.text, f.start_s, f.end_s) for f in facts]
    video, _ = make_text_schedule_video(
        path, schedule, duration_s, fps=fps, size=size, colour_s=90.0, frame_code=False
    )
    return FactVideo(video, duration_s, facts, fact_questions(facts, seed=seed))
