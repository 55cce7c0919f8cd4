"""Quickstart: build the sample video's memory, then answer one of its questions.

Runs with no key and no download: the ``offline`` profile's model reads the text in frames
and in speech (OCR, Whisper tiny.en, MiniLM embeddings). It is not a vision-language model;
swap ``profile="offline"`` for ``"openai"`` or ``"local"`` to use a real one.

    python examples/quickstart.py [--memory DIR] [--question N]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from videotapestry.api import VideoTapestry
from videotapestry.demo import sample_questions, sample_video_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", help="memory directory (default: a temporary one)")
    parser.add_argument("--question", type=int, default=1, help="which shipped question (1-4)")
    args = parser.parse_args()

    video = sample_video_path()
    question = sample_questions()["questions"][args.question - 1]
    with tempfile.TemporaryDirectory() as scratch:
        memory = Path(args.memory or Path(scratch) / "memory")
        vt = VideoTapestry(profile="offline")
        build = vt.build_memory(video, memory, progress=True)
        print(f"memory: {memory} ({build.report.status}, {build.report.clips} clips)")

        result = vt.answer(video, memory, question["question"], question["options"])
        print(question["question"])
        print(f"answer: {result.answer} (expected {question['answer']})")
        print(f"levels: {' -> '.join(result.levels_visited)}")
        print(f"reasoning: {result.reasoning}")
        for degradation in result.degraded:
            print(f"degraded: {degradation.render()}")
        print(result.handoff_trace)


if __name__ == "__main__":
    main()
