"""Per-query cost of PACE-Mem at 1,000 clips / 10,000 records (goal: <= 20 ms). Not a test.

Synthetic unit vectors (384-d, like MiniLM) in clips of 1-19 records; about a fifth of the
records are near-copies of an earlier record in the same clip, so grouping has work to do.
Figures are medians over repeated queries, split into the query-independent packing step
(validation, normalization, near-duplicate grouping; shareable between queries over the same
candidates) and the per-query selection, and as a ratio to the cheapest possible baseline in
the same run: one matrix-vector product for the record scores plus a top-7 sort.

    python bench/bench_pace_mem_speed.py [--clips 1000] [--records 10000] [--repeats 30] [--smoke]

BLAS runs single-threaded here unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are set: the
products are small, and on a shared two-core machine a multi-threaded BLAS whose threads are
descheduled turns every call into a ~8 ms wait, which measures the neighbours, not the code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # must happen before numpy is imported

import numpy as np  # noqa: E402
from benchkit import smoke  # noqa: E402

from videotapestry.config import EvidenceConfig  # noqa: E402
from videotapestry.retrieval import Clip, EvidenceRecord, pack_clips, select_evidence  # noqa: E402

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--clips", "20", "--records", "200", "--repeats", "3")
SMOKE_FIGURES: tuple[str, ...] = (
    r"records \(\d+ folded as near-duplicates\)",
    r"^baseline: record scores \+ top-7 sort ",
    r"^pack \(validate, normalize, group\) ",
    r"^select on packed clips: Adaptive-k ",
    r"^PACE-Mem, memory packed once \(subset\+select\) ",
    r"^PACE-Mem from Clip objects \(pack\+select\) ",
    r"^goal <= 20 ms per query, packing on every query: ",
)


def make_clips(n_clips: int, n_records: int, dim: int, seed: int = 0) -> list[Clip]:
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(n_records - n_clips, np.ones(n_clips) / n_clips) + 1
    vectors = rng.normal(size=(n_records, dim)).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for c in range(n_clips):
        lo, hi = offsets[c], offsets[c + 1]
        for row in range(lo + 1, hi):
            if rng.random() < 0.2:
                source = rng.integers(lo, row)
                vectors[row] = vectors[source] + 0.05 * rng.normal(size=dim)
    clips = []
    for c in range(n_clips):
        lo, hi = int(offsets[c]), int(offsets[c + 1])
        records = tuple(
            EvidenceRecord(f"c{c}_r{row}", f"record {row}", c * 30.0 + 1, c * 30.0 + 2, row)
            for row in range(lo, hi)
        )
        clips.append(Clip(f"clip_{c:04d}", c * 30.0, c * 30.0 + 30, records, vectors[lo:hi]))
    return clips


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=1000)
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    clips = make_clips(args.clips, args.records, args.dim)
    rng = np.random.default_rng(1)
    queries = rng.normal(size=(args.repeats + 1, args.dim)).astype(np.float32)
    base = EvidenceConfig()
    packed = pack_clips(clips, duplicate_threshold=base.duplicate_threshold)
    grouped = args.records - int(packed.kept_counts.sum())
    print(
        f"{args.clips} clips, {args.records} records ({grouped} folded as near-duplicates), "
        f"dim {args.dim}; median of {args.repeats} queries"
    )

    matrix = np.concatenate([c.embeddings for c in clips])
    turn = iter(range(10**9))

    def baseline() -> None:
        scores = matrix @ queries[next(turn) % len(queries)]
        np.argpartition(-scores, 7)[:7]

    base_ms = median_ms(baseline, args.repeats)
    pack_ms = median_ms(
        lambda: pack_clips(clips, duplicate_threshold=base.duplicate_threshold), args.repeats
    )
    print(f"{'step':48s} {'ms':>8s} {'x baseline':>11s}")
    print(f"{'baseline: record scores + top-7 sort':48s} {base_ms:8.2f} {1.0:11.1f}")
    print(f"{'pack (validate, normalize, group)':48s} {pack_ms:8.2f} {pack_ms / base_ms:11.1f}")
    variants = {
        "PACE-Mem": base,
        "PACE-Mem (tokens)": base.model_copy(update={"length_unit": "tokens"}),
        "w/o pooling": base.model_copy(update={"pooling": False}),
        "w/o MMR": base.model_copy(update={"mmr": False}),
        "fixed top-7": base.model_copy(update={"method": "top_k"}),
        "Adaptive-k": base.model_copy(update={"method": "adaptive_k"}),
    }
    for name, config in variants.items():
        prepared = pack_clips(
            clips, duplicate_threshold=config.duplicate_threshold, length_unit=config.length_unit
        )
        ms = median_ms(
            lambda c=config, p=prepared: select_evidence(queries[next(turn) % len(queries)], p, c),
            args.repeats,
        )
        print(f"{'select on packed clips: ' + name:48s} {ms:8.2f} {ms / base_ms:11.1f}")
    memory = pack_clips(clips, duplicate_threshold=base.duplicate_threshold)
    ids = [clip.id for clip in clips]
    warm_ms = median_ms(
        lambda: select_evidence(queries[next(turn) % len(queries)], memory.subset(ids), base),
        args.repeats,
    )
    full_ms = median_ms(
        lambda: select_evidence(queries[next(turn) % len(queries)], clips, base), args.repeats
    )
    for label, ms in (
        ("PACE-Mem, memory packed once (subset+select)", warm_ms),
        ("PACE-Mem from Clip objects (pack+select)", full_ms),
    ):
        print(f"{label:48s} {ms:8.2f} {ms / base_ms:11.1f}")
    for name, ms in (("memory packed once", warm_ms), ("packing on every query", full_ms)):
        verdict = "meets" if ms <= 20 else "misses"
        print(f"goal <= 20 ms per query, {name}: {verdict} ({ms:.1f} ms)")


if __name__ == "__main__":
    main()
