"""How much of an hour the Overview agent protects (issue 23 item 2; not a test, prints figures).

The 60-minute synthetic memory of bench_method.py (12 SuperEvents of 5 minutes), a 60-minute
1 fps video (generated once into bench/.cache/; ``--minutes`` changes both lengths), the
scripted model on the fake server, and two transcripts:

- ``silent``: speech only in the first three minutes, while the ASR planner asks about
  [40:00-41:40]; its windows hold no speech;
- ``spoken``: a line every 8 s all hour (bench_method.py's subtitles), so the ASR tool quotes.

For each question it prints the protected share (protected SuperEvents / all) and the share
of SuperEvents linked to evidence. Run it with another checkout's code to compare:

    PYTHONPATH=/path/to/other/checkout python bench/bench_protected_share.py [--minutes 60]
        [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from bench_method import OPTIONS, QUESTIONS, method_memory, method_subtitles, method_supers
from benchkit import cache_dir, smoke

from videotapestry.api import VideoTapestry
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted import ScriptedModel

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^silent +protected share \S+ +evidence-linked \S+ +\(\d+ questions, \d+ SuperEvents\)",
    r"^spoken +protected share \S+ +evidence-linked \S+ +\(\d+ questions, \d+ SuperEvents\)",
)


def late_asr(minutes: float = 60) -> dict:
    """The ASR planner's reply: a window two thirds into the video, 100 s of an hour long
    ([40:00-41:40] of an hour)."""
    start = round(minutes * 40)
    return {
        "observation_instruction": "What is said here?",
        "time_ranges": [[start, round(start + minutes * 100 / 60)]],
    }


def hour_inputs(minutes: float = 60) -> tuple[Path, Path, Path]:
    memory_dir = method_memory(minutes)
    name = "hour" if minutes == 60 else f"{minutes:g}min"
    video = cache_dir("method", f"{name}_1fps_160x90.mp4")
    if not video.exists():
        make_test_video(video, minutes * 60, fps=1, size=(160, 90), scene_s=60)
    silent = cache_dir("method", "first_minutes.srt")
    if not silent.exists():
        silent.write_text(
            "1\n00:00:10,000 --> 00:00:13,000\nWelcome, today we cook.\n\n"
            "2\n00:02:30,000 --> 00:02:33,000\nThe oven is warming up.\n",
            encoding="utf-8",
        )
    return memory_dir, video, silent


async def shares(
    memory: Path, video: Path, subtitles: Path, embedder, minutes: float = 60
) -> list[tuple[float, float]]:
    figures = []
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel(asr_planning=late_asr(minutes)))
        vt = VideoTapestry(
            overrides=[
                f"models.default.base_url={server.base_url}",
                "models.default.harness_headers=true",  # the scripted model replies by prompt
                "cache.enabled=false",
                "asr.source=subtitles",
            ],
            embedder=embedder,
        )
        try:
            for question in QUESTIONS:
                result = await vt.aanswer(video, memory, question, OPTIONS, subtitle_path=subtitles)
                overview = result.levels[0]
                total = len(overview.candidate_ids)
                figures.append(
                    (len(overview.protected_ids) / total, len(overview.evidence_ids) / total)
                )
        finally:
            await vt.aclose()
    return figures


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--minutes", type=float, default=60.0, help="the video's and the memory's length"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    memory, video, silent = hour_inputs(args.minutes)
    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )
    for name, subtitles in (("silent", silent), ("spoken", method_subtitles(args.minutes))):
        figures = asyncio.run(shares(memory, video, subtitles, embedder, args.minutes))
        protected = sum(p for p, _ in figures) / len(figures)
        linked = sum(e for _, e in figures) / len(figures)
        print(
            f"{name:7s} protected share {protected:.0%}  evidence-linked {linked:.0%}  "
            f"({len(figures)} questions, {method_supers(args.minutes)} SuperEvents)"
        )


if __name__ == "__main__":
    main()
