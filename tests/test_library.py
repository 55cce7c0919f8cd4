"""The library index (SPEC §15): what a memory contributes, hybrid search across memories,
incremental and atomic updates, and the ``library`` command.

Six memories in the native format (generated, no video needed), each with its own fact
spoken at a known time in its stored transcript; real embeddings from the packaged MiniLM
and a real LanceDB index on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from videotapestry.asr import TranscriptLine
from videotapestry.asr.stored import TRANSCRIPT_FILE, TranscriptFile
from videotapestry.cli import main
from videotapestry.errors import LibraryError
from videotapestry.library import LibraryIndex, find_memories, memory_key, memory_moments
from videotapestry.memory import save_memory
from videotapestry.testing.memories import synthetic_memory

pytest.importorskip("lancedb")

ROOT = Path(__file__).resolve().parents[1]
MINILM = "packaged:all-MiniLM-L6-v2"

#: One fact per video: what is said, when (seconds), and words to find it by.
FACTS = [
    ("The spare key to the boat house hangs behind the red door.", 130.0, "boat house key"),
    ("Tickets for the night train cost forty two euros.", 410.0, "night train ticket price"),
    ("The lost dog answers to the name Pepper.", 260.0, "name of the lost dog"),
    ("Bring sunscreen because the roof terrace has no shade.", 520.0, "roof terrace shade"),
    ("The chess club meets every Thursday in room nine.", 75.0, "when does the chess club meet"),
    ("Our bakery sells rye bread only on Sundays.", 330.0, "rye bread bakery day"),
]


def write_memory(folder: Path, n: int, fact: str | None = None, at: float | None = None) -> Path:
    """A 10-minute memory titled apart, with ``fact`` spoken at ``at`` among filler lines."""
    memory = synthetic_memory(
        duration_s=600.0,
        supers=2,
        macros_per_super=3,
        seed=n,
        fingerprint=f"library-test-{n}",
        title=f"Recording number {n}",
    )
    save_memory(memory, folder)
    fact, at = (FACTS[n][0], FACTS[n][1]) if fact is None else (fact, at)
    lines = [TranscriptLine(float(t), float(t) + 3.0, "Let us move on.") for t in (20, 300)]
    lines.append(TranscriptLine(at, at + 4.0, fact))
    transcript = TranscriptFile(
        "whisper", "test", f"library-test-{n}", sorted(lines, key=lambda x: x.start_s)
    )
    (folder / TRANSCRIPT_FILE).write_text(json.dumps(transcript.to_json()), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def memories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memories")
    for n in range(len(FACTS)):
        write_memory(root / "course" / f"lecture_{n}", n)
    return root


def copy_of(memories: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memories"
    shutil.copytree(memories, target)
    return target


def test_a_memory_gives_its_levels_entities_screen_text_and_spoken_lines() -> None:
    memory = synthetic_memory(duration_s=600.0, supers=2, macros_per_super=3, seed=1)
    lines = [TranscriptLine(10.0, 12.5, "Hello there."), TranscriptLine(13.0, 14.0, "  ")]
    moments = memory_moments(memory, lines)
    levels = {m.level for m in moments}
    assert levels == {"video", "stage", "event", "action", "screen", "entity", "speech"}
    [speech] = [m for m in moments if m.level == "speech"]  # the blank line is left out
    assert (speech.start_s, speech.end_s, speech.text) == (10.0, 12.5, "Hello there.")
    stages = [m for m in moments if m.level == "stage"]
    assert len(stages) == 2 and stages[0].text.startswith("Stage 1 at the")
    assert sum(m.level == "screen" for m in moments) == 6 * 4
    # An entity is found at its best sighting, a point in time.
    entity = next(m for m in moments if m.level == "entity")
    assert entity.start_s == entity.end_s


def test_memories_are_found_under_roots_and_a_memory_is_a_root_itself(
    memories: Path, tmp_path: Path
) -> None:
    found = find_memories([memories])
    assert [p.name for p in found] == [f"lecture_{n}" for n in range(6)]
    assert find_memories([found[2]]) == [found[2]]
    with pytest.raises(LibraryError, match="does not exist"):
        find_memories([tmp_path / "nowhere"])


@pytest.fixture(scope="module")
def library(memories: Path, embedder, tmp_path_factory: pytest.TempPathFactory) -> LibraryIndex:
    index = LibraryIndex(tmp_path_factory.mktemp("lib") / "lib", embedder)
    report = index.update([memories])
    assert len(report.added) == 6 and not report.failed
    return index


@pytest.mark.parametrize("n", range(len(FACTS)))
@pytest.mark.slow
def test_a_facts_words_find_its_video_and_moment_first(library: LibraryIndex, n: int) -> None:
    fact, at, query = FACTS[n]
    [best, *_] = library.search(query, top_k=5)
    assert best.title == f"Recording number {n}", (query, best)
    assert best.start_s <= at + 4.0 and best.end_s >= at, best
    assert best.level == "speech" and best.text == fact


@pytest.mark.slow
def test_search_refuses_an_empty_query_and_lists_the_videos(library: LibraryIndex) -> None:
    with pytest.raises(LibraryError, match="needs some words"):
        library.search("   ")
    videos = library.videos()
    assert [v.title for v in videos] == [f"Recording number {n}" for n in range(6)]
    assert all(v.duration_s == 600.0 and v.video is None for v in videos)  # no build report


@pytest.mark.slow
def test_updates_touch_only_what_changed(memories: Path, embedder, tmp_path: Path) -> None:
    root = copy_of(memories, tmp_path)
    index = LibraryIndex(tmp_path / "lib", embedder)
    first = index.update([root])
    total = index.count()
    assert first.rows_written == total > 0

    again = index.update([root])
    assert (again.unchanged, again.rows_written, again.added, again.updated) == (6, 0, [], [])

    # Lecture 3 is rebuilt with another fact: only its rows are written again.
    changed = root / "course" / "lecture_3"
    shutil.rmtree(changed)
    write_memory(changed, 3, "The quiz moved to the blue auditorium.", 200.0)
    key = memory_key(changed)
    before = index.count(key)
    rebuilt = index.update([root])
    assert rebuilt.updated == [str(changed.resolve())] and rebuilt.unchanged == 5
    assert rebuilt.rows_written == index.count(key) == before
    assert index.count() == total
    [best, *_] = index.search("where is the quiz", top_k=3)
    assert best.title == "Recording number 3" and "blue auditorium" in best.text
    assert not [h for h in index.search("roof terrace shade", 10) if "roof terrace" in h.text
                and h.title == "Recording number 3"]  # fmt: skip

    # A deleted memory disappears from the results and the list.
    shutil.rmtree(root / "course" / "lecture_1")
    removed = index.update([root])
    assert len(removed.removed) == 1 and removed.rows_written == 0
    assert "Recording number 1" not in {v.title for v in index.videos()}
    assert all(h.title != "Recording number 1" for h in index.search("night train ticket", 10))


@pytest.mark.slow
def test_a_broken_memory_is_reported_and_the_others_are_indexed(
    memories: Path, embedder, tmp_path: Path
) -> None:
    root = copy_of(memories, tmp_path)
    (root / "course" / "lecture_4" / "memory.json").write_text("{ not json", encoding="utf-8")
    index = LibraryIndex(tmp_path / "lib", embedder)
    report = index.update([root])
    assert len(report.added) == 5
    [(memory, why)] = report.failed
    assert memory.endswith("lecture_4") and why


@pytest.mark.slow
def test_a_library_killed_mid_index_stays_readable_and_a_rerun_completes_it(
    memories: Path, embedder, tmp_path: Path
) -> None:
    root = copy_of(memories, tmp_path)
    lib = tmp_path / "lib"
    command = [
        sys.executable, "-m", "videotapestry.cli", "library", "index", str(root),
        "--library", str(lib), "--quiet", "-o", f"embedding.model={MINILM}",
        "-o", "embedding.query_prompt_name=null",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    index = LibraryIndex(lib, embedder)
    while time.monotonic() < deadline and process.poll() is None:
        if (lib / "videos.lance").is_dir() and 1 <= len(LibraryIndex(lib, embedder).videos()) < 6:
            break
        time.sleep(0.05)
    assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    index = LibraryIndex(lib, embedder)
    indexed = index.videos()
    assert 1 <= len(indexed) < 6
    assert index.search("boat house key", 3) or indexed  # readable after the kill
    rerun = index.update([root])
    assert len(rerun.added) + rerun.unchanged == 6 and not rerun.failed
    assert len(index.videos()) == 6
    # Every memory once: the rows in the index are exactly each memory's moments.
    assert index.count() == sum(index.count(v.key) for v in index.videos())
    fresh = LibraryIndex(tmp_path / "fresh", embedder)
    fresh.update([root])
    assert index.count() == fresh.count()


@pytest.mark.slow
def test_the_library_command_indexes_searches_and_lists(
    memories: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(tmp_path / "lib")
    config = ["-o", f"embedding.model={MINILM}", "-o", "embedding.query_prompt_name=null"]
    assert main(["library", "index", str(memories), "--library", lib, "--quiet", *config]) == 0
    out = capsys.readouterr().out
    assert "6 added, 0 updated, 0 removed, 0 unchanged" in out
    assert main(["library", "search", "name of the lost dog", "--library", lib, *config]) == 0
    out = capsys.readouterr().out
    assert out.startswith(" 1. Recording number 2 — [04:20-04:24] (speech)"), out
    assert "Pepper" in out.splitlines()[1]
    code = main(
        ["library", "search", "rye bread", "--library", lib, "--json", "--top", "2", *config]
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(rows) == 2 and rows[0]["title"] == "Recording number 5"
    assert main(["library", "ls", "--library", lib, *config]) == 0
    listed = capsys.readouterr().out
    assert listed.count("10.0 min") == 6 and "Recording number 0" in listed
    assert main(["library", "search", " ", "--library", lib, *config]) == 2
    assert "needs some words" in capsys.readouterr().err
