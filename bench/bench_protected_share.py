"""How much of an hour the Overview agent protects (issue 23 item 2; not a test, prints figures).

The 60-minute synthetic memory of bench_method.py (12 SuperEvents of 5 minutes), a 60-minute
1 fps video (generated once into bench/.cache/), the scripted model on the fake server, and
two transcripts:

- ``silent``: speech only in the first three minutes, while the ASR planner asks about
  [40:00-41:40]; its windows hold no speech;
- ``spoken``: a line every 8 s all hour (bench_method.py's subtitles), so the ASR tool quotes.

For each question it prints the protected share (protected SuperEvents / all) and the share
of SuperEvents linked to evidence. Run it with another checkout's code to compare:

    PYTHONPATH=/path/to/other/checkout python bench/bench_protected_share.py
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bench_method import CACHE, OPTIONS, QUESTIONS, hour_subtitles

from videotapestry.api import VideoTapestry
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.memory import save_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.memories import synthetic_memory
from videotapestry.testing.scripted import ScriptedModel

LATE_ASR = {"observation_instruction": "What is said here?", "time_ranges": [[2400, 2500]]}


def hour_inputs() -> tuple[Path, Path, Path]:
    CACHE.mkdir(parents=True, exist_ok=True)
    memory_dir = CACHE / "memory_60min"
    if not (memory_dir / "manifest.json").exists():
        memory = synthetic_memory(duration_s=3600, supers=12, macros_per_super=10, fingerprint=None)
        save_memory(memory, memory_dir)
    video = CACHE / "hour_1fps_160x90.mp4"
    if not video.exists():
        make_test_video(video, 3600, fps=1, size=(160, 90), scene_s=60)
    silent = CACHE / "first_minutes.srt"
    if not silent.exists():
        silent.write_text(
            "1\n00:00:10,000 --> 00:00:13,000\nWelcome, today we cook.\n\n"
            "2\n00:02:30,000 --> 00:02:33,000\nThe oven is warming up.\n",
            encoding="utf-8",
        )
    return memory_dir, video, silent


async def shares(memory: Path, video: Path, subtitles: Path, embedder) -> list[tuple[float, float]]:
    figures = []
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel(asr_planning=LATE_ASR))
        vt = VideoTapestry(
            overrides=[
                f"models.default.base_url={server.base_url}",
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
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    memory, video, silent = hour_inputs()
    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )
    for name, subtitles in (("silent", silent), ("spoken", hour_subtitles(CACHE / "hour.srt"))):
        figures = asyncio.run(shares(memory, video, subtitles, embedder))
        protected = sum(p for p, _ in figures) / len(figures)
        linked = sum(e for _, e in figures) / len(figures)
        print(
            f"{name:7s} protected share {protected:.0%}  evidence-linked {linked:.0%}  "
            f"({len(figures)} questions, 12 SuperEvents)"
        )


if __name__ == "__main__":
    main()
