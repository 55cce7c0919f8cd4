"""The demo sample: a committed 18-minute video with questions whose answers it contains.

``videotapestry/demo/data/sample.mp4`` and ``questions.json`` ship with the package, so the
demo, the examples and end-to-end tests have a long video with on-screen text and speech
without downloading anything. ``videotapestry.demo.sample`` regenerates them (``python -m
videotapestry.demo.sample --help``); ``script`` holds the content and the answer rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"


def sample_video_path() -> Path:
    """The committed sample video."""
    return DATA_DIR / "sample.mp4"


def sample_questions() -> dict[str, Any]:
    """The committed ``questions.json``: parameters, questions with answers, timeline."""
    return json.loads((DATA_DIR / "questions.json").read_text(encoding="utf-8"))


__all__ = ["DATA_DIR", "sample_questions", "sample_video_path"]
