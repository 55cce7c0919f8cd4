"""Quickstart: build the sample video's memory, then answer one of its questions.

Runs with no key and no download: the ``offline`` profile's model reads the text in frames
and in speech (OCR, Whisper tiny.en, MiniLM embeddings). It is not a vision-language model;
swap ``profile="offline"`` for ``"openai"`` or ``"local"`` to use a real one. The memory and
the model replies go where ``videotapestry demo`` keeps them, so either builds it once for both
and a repeated question is answered from the cache.

    python examples/quickstart.py [--cache-dir DIR] [--question N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from videotapestry.api import VideoTapestry
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_cache_dir, demo_memory_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", help=f"memory and replies (default {demo_cache_dir()})")
    parser.add_argument("--question", type=int, default=2, help="which shipped question (1-4)")
    args = parser.parse_args()

    video = sample_video_path()
    question = sample_questions()["questions"][args.question - 1]
    cache = Path(args.cache_dir) if args.cache_dir else demo_cache_dir()
    memory = demo_memory_dir(video, cache)
    replies = ["cache.enabled=true", f"cache.path={cache / 'responses.sqlite'}"]
    vt = VideoTapestry(profile="offline", overrides=replies)
    build = vt.build_memory(video, memory, progress=True)
    print(f"memory: {memory} ({build.report.status}, {build.report.clips} clips)")

    result = vt.answer(video, memory, question["question"], question["options"])
    print(question["question"])
    print(f"answer: {result.answer} (expected {question['answer']})")
    print(f"levels: {' -> '.join(result.levels_visited)}")
    print(f"reasoning: {result.reasoning}")
    for degradation in result.degraded:
        print(f"degraded: {degradation.render()}")
    print(f"model calls: {result.usage.calls} ({result.usage.cached_calls} from the cache)")
    print(result.handoff_trace)


if __name__ == "__main__":
    main()
