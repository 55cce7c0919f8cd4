"""Eval runs whose answers show which memory was read: the fixtures shared by the local
runner's tests and the Ray executor's.

Each test video's memory carries its own title and every question asks for the title, so
the scripted Answer agent (it picks the option the composite memory mentions most) answers
right only when the run read that question's memory.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from method_support import cli_args

from videotapestry.embeddings import Embedder
from videotapestry.memory import ensure_embeddings, save_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.memories import synthetic_memory
from videotapestry.video import fingerprint

TITLES = ["The lighthouse keeper", "A bakery at dawn", "Harbour of lanterns", "The glass orchard"]
OPTIONS = [f"{letter}. {title}" for letter, title in zip("ABCD", TITLES, strict=True)]


def question_text(n: int) -> str:
    return f"Which title does this video carry (question {n})?"


def title_data(root: Path, embedder: Embedder, *, duration_s: int, supers: int) -> Path:
    """``root`` with four videos (one file, four names) and embedded memories titled apart."""
    videos = root / "videos"
    make_test_video(videos / "v0.mp4", duration_s, fps=2, size=(160, 90), scene_s=30)
    for n in range(1, len(TITLES)):
        (videos / f"v{n}.mp4").symlink_to(videos / "v0.mp4")
    print_ = fingerprint(videos / "v0.mp4")
    for n, title in enumerate(TITLES):
        memory = synthetic_memory(
            duration_s=duration_s,
            supers=supers,
            macros_per_super=2,
            seed=n,
            fingerprint=print_,
            title=title,
        )
        save_memory(ensure_embeddings(memory, embedder), root / "memories" / f"v{n}")
    return root


def annotations(path: Path, count: int, *, videos: int = 4) -> Path:
    """``count`` questions cycling over the videos; the gold answer is the video's title."""
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            video = n % videos
            row = {
                "id": f"q{n}",
                "video": f"v{video}.mp4",
                "question": question_text(n),
                "options": OPTIONS,
                "answer": "ABCD"[video],
                "categories": ["title", f"video {video}"],
            }
            handle.write(json.dumps(row) + "\n")
    return path


def eval_args(
    data: Path, questions: Path, run: Path, server: FakeOpenAIServer, *extra: str
) -> list[str]:
    return [
        "eval", "--benchmark", "jsonl", "--annotations", str(questions),
        "--videos", str(data / "videos"), "--memories", str(data / "memories"),
        "--out", str(run), "--quiet", *cli_args(server), *extra,
    ]  # fmt: skip


def asked_questions(server: FakeOpenAIServer, count: int) -> Counter:
    """Requests per question (every prompt that carries the question's text)."""
    texts = {f"q{n}": question_text(n) for n in range(count)}
    return Counter(qid for r in server.requests for qid, text in texts.items() if text in r.text)
