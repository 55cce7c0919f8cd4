"""Library index figures (SPEC §15) on a synthetic library of hour-long memories (no video).

Each memory is ``synthetic_memory`` at the density of a MemDreamer build (per hour: 6
SuperEvents, 120 MacroEvents of 30 s, 2,520 Entity / Event / OCRText nodes), saved in the
native format with deterministic stand-in node vectors (seeded random unit vectors labelled
as the packaged MiniLM's, ``with_fake_embeddings``), so the library reuses them as it reuses a
real build's. The library index is built incrementally: the first size, then memories added up
to the next, and so on (``--hours 10,100,1000``). Reports, per size:

* build: memories and moments per second, what the time went to (reading memories, making
  the vectors, writing rows, the full-text index, IVF-PQ training, ``optimize``), and the
  index's size on disk per video-hour;
* search: warm p50/p95 of ``LibraryIndex.search`` over ``--queries`` varied queries (after
  a few warm-up queries), the real MiniLM embedding the query each time (goal: p95 <= 50 ms
  at 1,000 video-hours);
* how many top hits share a word with their query (the vectors carry no meaning here, so only
  the keyword side of the hybrid search can find anything).

The moments with no node vector of their own (the root, the SuperEvents, the MacroEvents: 127
per hour) are embedded by the library; by default with a stand-in (``--text-vectors fake``:
hashed random vectors, same model name), because the real MiniLM on this machine would add
more time than everything else; the run prints its measured MiniLM rate and what embedding
them for real would add. ``--text-vectors real`` embeds them with MiniLM.

Then a library question (``--call-delay``, default 1 s per model call): generated videos (48 s,
signs on screen and one spoken line each; ``--answer-videos`` of them say where the chess club
meets, one does not), their memories built with the offline profile and indexed; the same
question asked on one candidate alone (its critical path) and across the library (the method
on each candidate video, concurrently, then the final Answer agent), every call answered by
the scripted model on the fake OpenAI-compatible server after ``--call-delay`` seconds (a
model service's latency, with no model computing on this machine). Reports calls, tokens and
wall of each, and the ratio of the library question's wall to the one video's (goal: <= 1.2x,
the videos running concurrently and the final answer adding one call).

    python bench/bench_library.py [--hours 10,100,1000] [--queries 50] [--budget-min 25]
                                  [--text-vectors fake|real] [--fresh] [--smoke]
                                  [--answer-videos 3] [--call-delay 1.0] [--no-answer]

Generated memories are cached under bench/.cache/library/ (``--fresh`` regenerates them);
the index is rebuilt from nothing on every run. A size whose build is projected (from the
rate so far) to overrun ``--budget-min`` is skipped and its figures extrapolated, so labelled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from benchkit import cache_dir, smoke

import videotapestry.library.index as library_index
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.library import LibraryIndex
from videotapestry.memory import save_memory
from videotapestry.testing.memories import (
    ACTIONS,
    CAST,
    OBJECTS,
    PLACES,
    SIGNS,
    synthetic_memory,
    with_fake_embeddings,
)

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--hours", "2,4", "--queries", "5", "--warmup", "2", "--call-delay", "0.2")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^library: memories of [\d.]+ video-hours?, \d+ moments each",
    r"^build +\d+ video-hours \(\+\d+ memories\): [\d.]+ s, [\d.]+ memories/s, \d+ moments/s",
    r"^  profile: reading [\d.]+ s, moments [\d.]+ s, vectors [\d.]+ s, writing [\d.]+ s",
    r"^  on disk: [\d.]+ MB per video-hour",
    r"^search +\d+ video-hours warm: p50 +[\d.]+ ms, p95 +[\d.]+ ms",
    r"^  of which index .*: p50 [\d.]+ ms, p95 [\d.]+ ms; query embedding .*p95 [\d.]+ ms",
    r"^  keyword check: \d+/\d+ top hits share a word with the query",
    r"^MiniLM on this machine: \d+ texts/s",
    r"^library answer: \d+ candidate videos of \d+ indexed, each model call delayed [\d.]+ s",
    r"^  one video alone: \d+ calls, \d+ tokens, [\d.]+ s wall",
    r"^  library question: \d+ calls \(.*\), \d+ tokens, [\d.]+ s wall; [\d.]+x one video's",
)

MINILM = "packaged:all-MiniLM-L6-v2"
DIMENSION = 384
#: Per video-hour, at the density of a MemDreamer build (30-s MacroEvents).
SUPERS_PER_HOUR, MACROS_PER_SUPER = 6, 20
STOPWORDS = {"the", "a", "at", "of", "who", "what", "where", "when", "is", "and", "while", "to"}


class StandInTextEmbedder:
    """The library's embedder: queries by the real MiniLM, moment texts (the ones without a
    stored node vector) by hashed random unit vectors under the same model name."""

    def __init__(self, real: SentenceTransformerEmbedder, fake_texts: bool) -> None:
        self.real = real
        self.fake_texts = fake_texts
        self.texts = 0
        #: Seconds spent embedding queries (to tell the index's part of a search from it).
        self.query_s = 0.0

    @property
    def model_name(self) -> str:
        return self.real.model_name

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if query:
            start = time.perf_counter()
            try:
                return self.real.embed(texts, query=True)
            finally:
                self.query_s += time.perf_counter() - start
        if not self.fake_texts:
            self.texts += len(texts)
            return self.real.embed(texts)
        self.texts += len(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            vector = np.random.default_rng(seed).standard_normal(DIMENSION)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIMENSION)


class Profile:
    """Seconds per phase of ``LibraryIndex.update``, gathered by wrapping its steps."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start

        return timed

    def reset(self) -> None:
        self.seconds.clear()


class TimedTable:
    """A LanceDB table whose index building and ``optimize`` are timed."""

    def __init__(self, table: Any, profile: Profile) -> None:
        self._table = table
        self._profile = profile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def create_index(self, column: str, *args: Any, **kwargs: Any) -> Any:
        phase = "FTS" if column == "text" else "IVF-PQ"
        return self._profile.wrap(phase, self._table.create_index)(column, *args, **kwargs)

    def optimize(self, *args: Any, **kwargs: Any) -> Any:
        return self._profile.wrap("optimize", self._table.optimize)(*args, **kwargs)


class ProfiledIndex(LibraryIndex):
    """``LibraryIndex`` with its update's phases timed (the index itself is unchanged)."""

    def __init__(self, path: Path, embedder: Any, profile: Profile) -> None:
        super().__init__(path, embedder)
        self.profile = profile

    def _index_memory(self, *args: Any, **kwargs: Any) -> int:
        return self.profile.wrap("index_memory", super()._index_memory)(*args, **kwargs)

    def _vectors(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.profile.wrap("vectors", super()._vectors)(*args, **kwargs)

    def _record_video(self, *args: Any, **kwargs: Any) -> None:
        return self.profile.wrap("videos", super()._record_video)(*args, **kwargs)

    def _refresh_indices(self, table: Any) -> None:
        return self.profile.wrap("refresh", super()._refresh_indices)(
            TimedTable(table, self.profile)
        )


def memory_store(hours_each: float) -> Path:
    return cache_dir("library", f"memories_{hours_each:g}h")


def make_memory(store: Path, number: int, hours_each: float) -> Path:
    """The cached memory ``number`` (generated and saved when missing)."""
    folder = store / f"video_{number:05d}"
    if (folder / "manifest.json").is_file():
        return folder
    memory = synthetic_memory(
        duration_s=3600.0 * hours_each,
        supers=max(1, round(SUPERS_PER_HOUR * hours_each)),
        macros_per_super=MACROS_PER_SUPER,
        seed=number,
        fingerprint=f"library-bench-{number}",
        title=f"Recording {number}: {PLACES[number % len(PLACES)]} story",
    )
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    save_memory(with_fake_embeddings(memory, MINILM, dimension=DIMENSION, seed=number), partial)
    partial.rename(folder)
    return folder


def shelve(shelf: Path, store: Path, count: int, hours_each: float) -> float:
    """Put memories 0..count-1 on the shelf (the library's root) as links to the cached ones;
    returns the seconds spent generating missing memories."""
    start = time.perf_counter()
    shelf.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        link = shelf / f"video_{number:05d}"
        if not link.exists():
            link.symlink_to(make_memory(store, number, hours_each).resolve())
    return time.perf_counter() - start


def disk_bytes(path: Path) -> int:
    total = 0
    for current, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(current) / name).stat().st_size
    return total


def queries(count: int, seed: int) -> list[str]:
    """Varied queries in the memories' words: people, things, places, signs, actions."""
    rng = random.Random(seed)
    people = [c for c, _ in CAST] + [v for _, vs in CAST for v in vs]
    things = [o for o, _ in OBJECTS]
    forms = [
        lambda: f"{rng.choice(people)} {rng.choice(ACTIONS)} the {rng.choice(things)}",
        lambda: f"who {rng.choice(ACTIONS)} the {rng.choice(things)} at the {rng.choice(PLACES)}",
        lambda: f"sign saying {rng.choice(SIGNS)}",
        lambda: f"{rng.choice(things)} in the {rng.choice(PLACES)}",
        lambda: f"when does {rng.choice(people)} appear",
        lambda: f"final score {rng.randint(0, 5)}-{rng.randint(0, 5)}",
    ]
    return [rng.choice(forms)() for _ in range(count)]


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def measure_search(
    index: LibraryIndex, embedder: StandInTextEmbedder, hours: int, args: Any
) -> tuple[float, float]:
    """Warm p50/p95 of whole searches, split into the query's embedding and the rest (the
    index: LanceDB's hybrid search, fusion, the videos table)."""
    for query in queries(args.warmup, seed=10_000 + hours):
        index.search(query, top_k=10)
    asked = queries(args.queries, seed=hours)
    latencies, embeds, sharing, sharing10 = [], [], 0, 0
    for query in asked:
        embedded = embedder.query_s
        start = time.perf_counter()
        hits = index.search(query, top_k=10)
        latencies.append((time.perf_counter() - start) * 1000)
        embeds.append((embedder.query_s - embedded) * 1000)
        sharing += bool(hits and words(hits[0].text) & words(query))
        sharing10 += any(words(hit.text) & words(query) for hit in hits)
    rest = [total - embed for total, embed in zip(latencies, embeds, strict=True)]
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    goal = "met" if p95 <= 50 else "not met"
    print(
        f"search {hours:>5} video-hours warm: p50 {p50:6.1f} ms, p95 {p95:6.1f} ms over "
        f"{len(asked)} queries; goal p95 <= 50 ms: {goal}",
        flush=True,
    )
    print(
        f"  of which index (LanceDB hybrid + fusion + videos): p50 {percentile(rest, 50):.1f} ms, "
        f"p95 {percentile(rest, 95):.1f} ms; query embedding (MiniLM): p50 "
        f"{percentile(embeds, 50):.1f} ms, p95 {percentile(embeds, 95):.1f} ms"
    )
    print(
        f"  keyword check: {sharing}/{len(asked)} top hits share a word with the query, "
        f"{sharing10}/{len(asked)} have one in their top 10 (the stand-in vectors match nothing, "
        "so the vector half of each fused list is noise)"
    )
    return p50, p95


def profile_line(profile: Profile) -> str:
    s = profile.seconds
    inner = s["vectors"] + s["reading"] + s["moments"]
    writing = max(0.0, s["index_memory"] - inner)
    return (
        f"  profile: reading {s['reading']:.1f} s, moments {s['moments']:.1f} s, "
        f"vectors {s['vectors']:.1f} s, writing {writing:.1f} s, "
        f"videos table {s['videos']:.1f} s, FTS {s['FTS']:.1f} s, IVF-PQ {s['IVF-PQ']:.1f} s, "
        f"optimize {s['optimize']:.1f} s"
    )


def progress_printer(start: float, count: int) -> Callable[[str, int, int], None]:
    """Prints how far an update got every 10% (a slow build still says where it is)."""
    step = max(1, count // 10)

    def progress(_memory: str, done: int, total: int) -> None:
        if done % step == 0 and done < total:
            print(
                f"  ... {done}/{total} memories at {time.perf_counter() - start:.0f} s "
                f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
                flush=True,
            )

    return progress


def minilm_rate(embedder: SentenceTransformerEmbedder) -> float:
    texts = [
        f"At the {PLACES[i % len(PLACES)]}, {CAST[i % len(CAST)][0]} {ACTIONS[i % len(ACTIONS)]}"
        f" the {OBJECTS[i % len(OBJECTS)][0]} while someone watches ({i})."
        for i in range(128)
    ]
    embedder.embed(texts[:8])
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


#: The library question's videos: name, the four signs (12 s each), which is the fact, and
#: the line said during it. The chess club's room is in all but the last.
ANSWER_QUESTION = "Which room does the chess club meet in?"
ANSWER_VIDEOS = (
    ("chess", ("CHESS CLUB", "NEW MEMBERS", "CHESS CLUB MEETS IN ROOM 9", "GOODBYE"), 2,
     "The chess club meets in room nine."),
    ("school", ("SCHOOL FAIR", "CHESS CLUB ROOM 9", "LUNCH AT NOON", "SEE YOU"), 1,
     "Chess players gather in room nine."),
    ("townhall", ("TOWN HALL", "OPEN DAY", "BAND PRACTICE", "CHESS CLUB IN ROOM 9"), 3,
     "On Fridays the chess club plays in room nine."),
    ("chorus", ("CHORUS NIGHT", "SOPRANOS LEFT", "CHESS CLUB MOVED TO ROOM 9", "ENCORE"), 2,
     "Our neighbours the chess club now meet in room nine."),
    ("bakery", ("BAKERY VISIT", "OVEN ROOM", "RYE BREAD ON SUNDAYS", "THANK YOU"), 2,
     "Rye bread is baked only on Sundays."),
)  # fmt: skip


def write_answer_videos(folder: Path, count: int) -> list[tuple[Path, Path]]:
    """``count`` videos that say where the chess club meets and one that does not (video,
    subtitles), written when missing."""
    from videotapestry.testing.builder_media import ScheduledText, make_text_schedule_video

    chosen = [*ANSWER_VIDEOS[: min(count, len(ANSWER_VIDEOS) - 1)], ANSWER_VIDEOS[-1]]
    written = []
    for name, signs, fact, said in chosen:
        video, subtitles = folder / f"{name}.mp4", folder / f"{name}.srt"
        if not video.is_file():
            schedule = [ScheduledText(t, 12.0 * k, 12.0 * (k + 1)) for k, t in enumerate(signs)]
            make_text_schedule_video(
                video, schedule, 48.0, fps=1, size=(320, 180), colour_s=24, frame_code=False
            )
            start = 12 * fact + 2
            subtitles.write_text(
                f"1\n00:00:{start:02d},000 --> 00:00:{start + 5:02d},000\n{said}\n",
                encoding="utf-8",
            )
        written.append((video, subtitles))
    return written


def measure_library_answer(args: Any, embedder: SentenceTransformerEmbedder) -> None:
    """The same question on one candidate video alone and across the library, every model
    call answered by the scripted model after ``args.call_delay`` seconds (the fake
    OpenAI-compatible server's latency), the process warm (both asked once at no delay
    first: memories loaded, frames decoded)."""
    from videotapestry.api import VideoTapestry
    from videotapestry.testing import FakeOpenAIServer
    from videotapestry.testing.fact_bench import OfflineModels, offline_facade
    from videotapestry.testing.scripted import ScriptedModel

    work = cache_dir("library", "answer")
    videos = write_answer_videos(work / "videos", args.answer_videos)
    models = OfflineModels.load(embedder)
    for video, subtitles in videos:
        memory = work / "memories" / video.stem
        offline_facade("cache.enabled=false", models=models).build_memory(video, memory, subtitles)
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    shutil.rmtree(work / "lib", ignore_errors=True)
    with FakeOpenAIServer() as server:
        vt = VideoTapestry(
            overrides=[
                f"models.default.base_url={server.base_url}",
                "models.default.harness_headers=true",
                "cache.enabled=false",
            ],
            embedder=embedder,
        )
        library = vt.library(work / "lib", max_videos=args.answer_videos)
        library.update([work / "memories"])

        async def run() -> tuple[Any, float, Any, float]:
            try:
                server.on(None, ScriptedModel())
                warm = await library.aanswer(ANSWER_QUESTION)
                first = warm.candidates[0]
                await vt.aanswer(first.video, first.memory, ANSWER_QUESTION)
                server.latency_s = args.call_delay
                started = time.perf_counter()
                alone = await vt.aanswer(first.video, first.memory, ANSWER_QUESTION)
                alone_s = time.perf_counter() - started
                started = time.perf_counter()
                result = await library.aanswer(ANSWER_QUESTION)
                return alone, alone_s, result, time.perf_counter() - started
            finally:
                await vt.aclose()

        alone, alone_s, result, library_s = asyncio.run(run())

    def tokens(usage: Any) -> int:
        return int(usage.prompt_tokens + usage.completion_tokens)

    first = result.candidates[0]
    ratio = library_s / alone_s
    per_video = " + ".join(str(r.usage.calls) for r in result.runs)
    final = result.usage.calls - sum(r.usage.calls for r in result.runs)
    print(
        f"library answer: {len(result.candidates)} candidate videos of {len(videos)} indexed, "
        f"each model call delayed {args.call_delay:g} s (scripted model on the fake server; "
        f"memories built by the offline model); question: {ANSWER_QUESTION!r}",
        flush=True,
    )
    print(
        f"  one video alone: {alone.usage.calls} calls, {tokens(alone.usage)} tokens, "
        f"{alone_s:.1f} s wall ({first.title}; model {alone.usage.latency_s:.1f} s summed)"
    )
    goal = "met" if ratio <= 1.2 else "not met"
    print(
        f"  library question: {result.usage.calls} calls ({per_video} for the videos + "
        f"{final} final), {tokens(result.usage)} tokens, {library_s:.1f} s wall; "
        f"{ratio:.2f}x one video's (goal <= 1.2x: {goal}); cites "
        f"{', '.join(result.answered_from) or 'no video'}"
    )


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", default="10,100,1000", help="library sizes, video-hours")
    parser.add_argument("--hours-each", type=float, default=1.0, help="video-hours per memory")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-min", type=float, default=25.0, help="build time budget")
    parser.add_argument("--text-vectors", choices=("fake", "real"), default="fake")
    parser.add_argument("--fresh", action="store_true", help="regenerate the cached memories")
    parser.add_argument(
        "--search-only", action="store_true", help="only search the index the last run left"
    )
    parser.add_argument("--answer-videos", type=int, default=3, help="candidate videos")
    parser.add_argument("--call-delay", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--no-answer", action="store_true", help="skip the library question")
    args = parser.parse_args()
    sizes = sorted({int(h) for h in args.hours.split(",")})

    store = memory_store(args.hours_each)
    work = cache_dir("library", "run")
    shelf, library = work / "shelf", work / "index"
    real = SentenceTransformerEmbedder(EmbeddingConfig(model=MINILM, query_prompt_name=None))
    embedder = StandInTextEmbedder(real, fake_texts=args.text_vectors == "fake")
    if args.search_only:
        index = LibraryIndex(library, embedder)
        hours = round(len(index.videos()) * args.hours_each)
        print(f"library: the last run's index, {hours} video-hours, {index.count()} rows")
        measure_search(index, embedder, hours, args)
        return
    if args.fresh:
        shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    real.embed(["warm up"], query=True)
    load_s = time.perf_counter() - start
    profile = Profile()
    index = ProfiledIndex(library, embedder, profile)
    library_index.open_memory = profile.wrap("reading", library_index.open_memory)
    library_index.memory_moments = profile.wrap("moments", library_index.memory_moments)

    make_memory(store, 0, args.hours_each)
    first = library_index.memory_moments(library_index.open_memory(store / "video_00000"), [])
    stored = sum(1 for m in first if m.level in ("action", "screen", "entity"))
    print(
        f"library: memories of {args.hours_each:g} video-hours, {len(first)} moments each "
        f"({stored} with stored stand-in node vectors, {len(first) - stored} text-only embedded "
        f"by the library: {'hashed stand-in vectors' if embedder.fake_texts else 'MiniLM'}); "
        f"queries embedded by MiniLM (loaded in {load_s:.1f} s); ANN from "
        f"{library_index.ANN_FROM_ROWS} rows",
        flush=True,
    )
    profile.reset()

    budget_s = args.budget_min * 60
    built_s, built_memories, built_hours = 0.0, 0, 0
    for hours in sizes:
        count = max(1, round(hours / args.hours_each))
        added = count - built_memories
        if built_memories:
            projected = built_s / built_memories * count
            if projected > budget_s:
                rate = built_memories / built_s
                print(
                    f"build {hours:>5} video-hours skipped: projected {projected / 60:.0f} min in "
                    f"all at the rate so far (budget {args.budget_min:g} min). EXTRAPOLATED: "
                    f"{count / rate / 60:.0f} min to build, {count * len(first) / 1e6:.2f} M rows",
                    flush=True,
                )
                break
        generated = shelve(shelf, store, count, args.hours_each)
        profile.reset()
        texts_before = embedder.texts
        start = time.perf_counter()
        report = index.update([shelf], progress=progress_printer(start, count))
        seconds = time.perf_counter() - start
        built_s += seconds
        built_memories, built_hours = count, hours
        if report.failed:
            raise SystemExit(f"not indexed: {report.failed[:3]}")
        size = disk_bytes(library)
        print(
            f"build {hours:>5} video-hours (+{added} memories): {seconds:.1f} s, "
            f"{added / seconds:.2f} memories/s, {report.rows_written / seconds:.0f} moments/s; "
            f"{index.count()} rows in all ({embedder.texts - texts_before} texts embedded by the "
            f"library; generating the memories took {generated:.1f} s, not counted)",
            flush=True,
        )
        print(profile_line(profile), flush=True)
        indices = ", ".join(sorted(i.name for i in index._table("moments").list_indices()))
        print(
            f"  on disk: {size / 1e6 / hours:.1f} MB per video-hour ({size / 1e9:.2f} GB in all, "
            f"old versions included); indices: {indices}",
            flush=True,
        )
        measure_search(index, embedder, hours, args)

    rate = minilm_rate(real)
    per_memory = len(first) - stored
    print(
        f"MiniLM on this machine: {rate:.0f} texts/s; embedding the {per_memory} text-only "
        f"moments of each memory for real would add {per_memory / rate:.1f} s per memory "
        f"(EXTRAPOLATED: {per_memory / rate * built_memories / 60:.1f} min for the "
        f"{built_hours} video-hours built)"
    )
    if not args.no_answer:
        measure_library_answer(args, real)


if __name__ == "__main__":
    main()
