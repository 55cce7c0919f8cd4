"""Memory figures on a synthetic 2-hour video (not a test; prints figures).

A deterministic memory the size of a 2-hour MemDreamer build: 12 SuperEvents, 240 MacroEvents
(30 s each) and 21 subgraph nodes per MacroEvent (5,040 Entity / Event / OCRText nodes) with
a recurring cast, unified names and typed relations. Reports:

* storage: native save/load and MemDreamer export/import, each against a plain ``json.load``
  of the same bytes in the same run (the cost of validation and indexing);
* embedding all nodes with the offline MiniLM (texts per second, unique texts);
* p50/p95 latency of every locator over 50 queries each, and semantic search split into the
  query embedding and the matrix-vector search (goal: search <= 10 ms per query).

    python bench/bench_memory.py [--queries 50] [--fresh] [--hours 2] [--smoke]

Generated inputs are cached under bench/.cache/ (``--fresh`` rebuilds them). ``--hours``
scales the memory (MacroEvents per SuperEvent), for a quick run.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from collections.abc import Callable

import numpy as np
from benchkit import cache_dir, smoke

from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.memory import (
    MemoryLocator,
    ensure_embeddings,
    export_memdreamer,
    import_memdreamer,
    load_memory,
    save_memory,
)
from videotapestry.testing.memories import ACTIONS, CAST, OBJECTS, PLACES, SIGNS, synthetic_memory

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--hours", "0.1", "--queries", "4")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^synthetic memory: \d+ SuperEvents, \d+ MacroEvents, \d+ subgraph nodes",
    r"^storage \(median of 5\):",
    r"^  native save +\S+ ms",
    r"^  native load +\S+ ms .* plain json\.loads",
    r"^  MemDreamer export +\S+ ms +\(\d+ episode files\)",
    r"^  MemDreamer import +\S+ ms",
    r"^embeddings \(offline MiniLM, model load ",
    r"unique texts embedded in .* texts/s\)",
    r"^  load \+ reuse stored vectors ",
    r"^locators \(\d+ queries each; index built in ",
    r"^  entity search +p50 ",
    r"^  OCR-text search +p50 ",
    r"^  text phrase search +p50 ",
    r"^    baseline: model\.encode\(query\) +p50 ",
    r"^  semantic search \(embed \+ search\) +p50 ",
    r"^  semantic search \(search only\) +p50 ",
    r"^    baseline: raw matrix @ vector +p50 ",
    r"^  search by time +p50 ",
    r"^  multi-anchor locate \(2-3 anchors\) +p50 ",
    r"^semantic search: .* ms per query once embedded",
)


def timed(fn: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """Median seconds over ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def latency(name: str, queries: list, run: Callable[[object], object]) -> float:
    samples = []
    for query in queries:
        start = time.perf_counter()
        run(query)
        samples.append((time.perf_counter() - start) * 1000)
    p50, p95 = np.percentile(samples, [50, 95])
    print(f"  {name:<34} p50 {p50:8.3f} ms   p95 {p95:8.3f} ms")
    return float(p50)


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached inputs")
    parser.add_argument(
        "--hours", type=float, default=2.0, help="the memory's length (2: 20 MacroEvents each)"
    )
    args = parser.parse_args()
    rng = random.Random(1)
    cache = cache_dir("memory")
    hours = f"{args.hours:g}h"
    native, memdreamer = cache / f"native_{hours}", cache / f"memdreamer_{hours}"
    if args.fresh and cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)

    duration_s = args.hours * 3600
    macros_per_super = max(1, round(20 * args.hours / 2))
    build_s, memory = timed(
        lambda: synthetic_memory(duration_s=duration_s, macros_per_super=macros_per_super)
    )
    counts = memory.counts()
    print(
        f"synthetic memory: {counts['SuperEvent']} SuperEvents, {counts['MacroEvent']} "
        f"MacroEvents, {counts['Entity'] + counts['Event'] + counts['OCRText']} subgraph nodes, "
        f"{counts['relations']} relations (built in {build_s:.2f} s)"
    )

    print("storage (median of 5):")
    save_s, _ = timed(lambda: save_memory(memory, native), 5)
    raw = (native / "memory.json").read_bytes()
    parse_s, _ = timed(lambda: json.loads(raw), 5)
    load_s, loaded = timed(lambda: load_memory(native), 5)
    assert loaded == memory
    print(
        f"  native save            {save_s * 1000:8.1f} ms  ({len(raw) / 1e6:.1f} MB memory.json)"
    )
    print(
        f"  native load            {load_s * 1000:8.1f} ms  = {load_s / parse_s:5.1f}x plain "
        f"json.loads ({parse_s * 1000:.1f} ms)"
    )
    if memdreamer.exists():
        shutil.rmtree(memdreamer)
    export_s, _ = timed(lambda: export_memdreamer(memory, memdreamer))
    import_s, imported = timed(lambda: import_memdreamer(memdreamer, outside_keyframes=True), 3)
    assert imported == memory
    episodes = counts["MacroEvent"]
    print(f"  MemDreamer export      {export_s * 1000:8.1f} ms  ({episodes} episode files)")
    print(f"  MemDreamer import      {import_s * 1000:8.1f} ms")

    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )
    model_s, _ = timed(lambda: embedder.embed(["warm up"]))
    embed_s, embedded = timed(lambda: ensure_embeddings(memory, embedder))
    assert embedded.embeddings is not None
    texts = len(embedded.embeddings)
    from videotapestry.memory.embedding_index import embeddable_nodes, embedding_text

    unique = len({embedding_text(n) for n in embeddable_nodes(memory)})
    print(f"embeddings (offline MiniLM, model load {model_s:.1f} s):")
    print(
        f"  {texts} nodes, {unique} unique texts embedded in {embed_s:.1f} s "
        f"({unique / embed_s:.0f} texts/s)"
    )
    save_memory(embedded, native)
    reuse_s, _ = timed(lambda: ensure_embeddings(load_memory(native), embedder), 3)
    print(f"  load + reuse stored vectors {reuse_s * 1000:.1f} ms (no model call)")

    index_s, locator = timed(lambda: MemoryLocator(embedded, embedder))
    print(f"locators ({args.queries} queries each; index built in {index_s * 1000:.0f} ms):")
    n = args.queries
    names = [rng.choice([c, *v]) for c, v in CAST for _ in range(5)][:n]
    rng.shuffle(names)
    latency("entity search", names, lambda q: locator.find_entities(q))
    signs = [rng.choice([*SIGNS, "SCORE 3-1", "12:30", "EXIT 9"]) for _ in range(n)]
    latency("OCR-text search", signs, lambda q: locator.find_ocr_text(q))
    phrases = [rng.choice([*(o for o, _ in OBJECTS), *PLACES]) for _ in range(n)]
    latency("text phrase search", phrases, lambda q: locator.find_text(q))
    questions = [
        f"when does {rng.choice(CAST)[0]} {rng.choice(ACTIONS)} the {rng.choice(OBJECTS)[0]}"
        for _ in range(n)
    ]
    embedder.embed(questions[:3], query=True)  # warm-up: the first calls pay for setup
    latency("  baseline: model.encode(query)", questions, lambda q: embedder.embed([q], query=True))
    full = latency(
        "semantic search (embed + search)",
        questions,
        lambda q: locator.semantic_search(q, limit=10),
    )
    vectors = embedder.embed(questions, query=True)
    search = latency(
        "semantic search (search only)", list(vectors), lambda v: locator.search_vector(v, limit=10)
    )
    matrix = embedded.embeddings.vectors
    raw_ms = latency("  baseline: raw matrix @ vector", list(vectors), lambda v: matrix @ v)
    starts = (rng.uniform(0, duration_s - 200) for _ in range(n))
    spans = [(t, t + rng.choice([5, 30, 120])) for t in starts]
    latency("search by time", spans, lambda s: locator.at_time(*s))
    anchor_sets = [
        [rng.choice(CAST)[0].split()[-1], rng.choice(OBJECTS)[0]] for _ in range(n // 2)
    ] + [[rng.choice(CAST)[1][0], rng.choice(SIGNS), rng.choice(PLACES)] for _ in range(n // 2)]
    latency("multi-anchor locate (2-3 anchors)", anchor_sets, lambda a: locator.locate(a))
    print(
        f"semantic search: {search:.2f} ms per query once embedded (goal <= 10 ms; "
        f"{search / raw_ms:.1f}x the raw matrix product), {full:.2f} ms including the query "
        "embedding"
    )


if __name__ == "__main__":
    main()
