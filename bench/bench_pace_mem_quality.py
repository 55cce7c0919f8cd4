"""Selection quality of PACE-Mem, its ablations and the baselines on a synthetic retrieval set.

Not a test; prints figures. Each synthetic query comes with its own candidate clips (the leaf
evidence under some selected MacroEvents): a person does several distinct things to one
object ("facts"), and the question asks what the person does with it. Every fact shows up
in one to three clips, each time worded differently (recurring scenes are what make memories
redundant); the other clips hold filler descriptions, on-screen text and near-topic
distractors (the same person with other objects, other people with the same object). Some
clips also repeat a record almost verbatim (a caption and an event node saying the same).
Texts are embedded with the packaged all-MiniLM-L6-v2, cached under bench/.cache/.

Metrics per variant, averaged over queries: distinct relevant facts covered by the chosen
clips (count and fraction of the query's facts), depth (clips returned), facts per clip and
the share of chosen clips that hold no new fact (off-topic or a repeat).

Two redundancy regimes are generated: "paraphrase" (each sighting of a fact worded
differently) and "recurring" (one wording repeated with a small change, as a builder
describing an ongoing scene in consecutive clips). Besides the variant table, each report
prints facts covered at every fixed depth k for relevance order (top-k) and MMR order, and
reads the top-k curve at each adaptive method's mean depth: a depth-matched comparison.

Queries come in disjoint seeded splits: "tune" (for choosing settings, never reported as the
result) and "report". ``--tune`` runs a grid over PACE-Mem's constants on the tune splits
(the most facts with a mean depth within the fixed top-7 budget) and reports the winner on the
report splits. The shipped defaults (pooling_temperature 0.2, k_max 10) came from that
procedure; ``--set k_max=12 --set pooling_temperature=0.1`` reruns the earlier defaults.

    python bench/bench_pace_mem_quality.py [--queries 120] [--tune] [--set key=value ...]
        [--smoke]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import os
import random
import sys
import time
from dataclasses import dataclass

import numpy as np
from benchkit import cache_dir, smoke

from videotapestry.config import EmbeddingConfig, EvidenceConfig, parse_override
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.retrieval import EvidenceRecord, TimeWindow, build_clips, select_evidence

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--queries", "2", "--tune")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^REPORT split, paraphrase redundancy, default settings: \d+ queries",
    r"^REPORT split, recurring redundancy, default settings: \d+ queries",
    r"^variant +facts +recall +depth +facts/clip +no-new ",
    r"^PACE-Mem +\d",
    r"^Adaptive-k \+\d+ buffer +\d",
    r"^facts at a fixed depth k +\(k: top-k / MMR-k\): ",
    r"^  PACE-Mem at mean depth .* top-k at that depth ",
    r"^  Adaptive-k \(buffer interpolated\) at PACE-Mem's depth ",
    r"^tuned on the tune splits \(most facts with mean depth <= ",
    r"^REPORT split, recurring redundancy, settings tuned on the tune splits: ",
    r"^\(total \S+ s\)$",
)
MODEL = "packaged:all-MiniLM-L6-v2"
CLIP_S = 30.0

PEOPLE = [
    "Maria", "Tom", "Aisha", "Kenji", "Lucas", "Priya", "Oliver", "Sofia", "Diego", "Hannah",
    "Omar", "Elena", "Marcus", "Yuki", "Grace", "Ivan", "Fatima", "Leo", "Chloe", "Samuel",
]  # fmt: skip
OBJECTS = [
    "tomatoes", "guitar", "bicycle", "laptop", "suitcase", "flower pot", "basketball",
    "wooden chair", "camera", "fishing rod", "birthday cake", "paint brush", "red umbrella",
    "toolbox", "chess board", "kettle", "backpack", "puppy", "ladder", "map",
]  # fmt: skip
# Each action has three wordings; a fact is one (action) and its copies use different wordings.
ACTIONS = {
    "wash": ["{s} washes the {o} in the sink", "{s} rinses the {o} under running water",
             "{s} cleans the {o} with a wet sponge"],
    "carry": ["{s} carries the {o} across the room", "{s} walks to the door holding the {o}",
              "{s} picks up the {o} and takes it outside"],
    "inspect": ["{s} examines the {o} closely", "{s} looks carefully at every side of the {o}",
                "{s} holds the {o} up to the light to inspect it"],
    "photograph": ["{s} takes a photo of the {o}", "{s} photographs the {o} with a phone",
                   "{s} snaps a picture of the {o}"],
    "hide": ["{s} hides the {o} under the bed", "{s} tucks the {o} away behind the sofa",
             "{s} conceals the {o} in a closet"],
    "give": ["{s} hands the {o} to a neighbour", "{s} gives the {o} to an old man",
             "{s} passes the {o} to a friend at the door"],
    "repair": ["{s} fixes the {o} with a screwdriver", "{s} repairs the broken {o}",
               "{s} mends the {o} using tape and glue"],
    "paint": ["{s} paints the {o} bright yellow", "{s} covers the {o} with yellow paint",
              "{s} brushes yellow paint onto the {o}"],
    "buy": ["{s} pays for the {o} at the shop counter", "{s} buys the {o} from a street vendor",
            "{s} purchases the {o} with cash"],
    "drop": ["{s} accidentally drops the {o} on the floor", "the {o} slips from {s}'s hands",
             "{s} loses grip and the {o} falls down"],
    "pack": ["{s} puts the {o} into a cardboard box", "{s} packs the {o} in a box",
             "{s} places the {o} inside a shipping box"],
    "measure": ["{s} measures the {o} with a tape measure", "{s} checks the size of the {o}",
                "{s} uses a ruler to measure the {o}"],
}  # fmt: skip
QUESTIONS = [
    "What does {s} do with the {o}?",
    "List everything {s} does to the {o} in the video.",
    "How does {s} handle the {o}?",
]
PLACES = ["kitchen", "garage", "living room", "park", "street market", "office", "garden",
          "train station", "beach", "workshop", "classroom", "parking lot"]  # fmt: skip
THINGS = ["lamp", "clock", "bookshelf", "window", "car", "bench", "tree", "poster", "fridge",
          "sofa", "table", "bus", "fence", "mirror", "television"]  # fmt: skip
COLORS = ["red", "blue", "green", "white", "black", "grey", "orange", "brown"]
CLOTHES = ["jacket", "apron", "hoodie", "cap", "dress", "coat", "sweater", "shirt"]
FILLERS = [
    "The camera shows the {p} from a wide angle",
    "A {c} {t} stands in the {p}",
    "Sunlight falls through the {p} windows",
    "The {p} is crowded with people",
    "A close-up of a {c} {t}",
    "Background music plays while the scene changes to the {p}",
    "Text on screen: '{P} - open daily'",
    "A dog runs past the {t} in the {p}",
    "The scene cuts to a view of the {p} at dusk",
    "Someone in a {c} jacket walks past the {t}",
]
NEAR_ACTIONS = ["{s} talks on the phone in the {p}", "{s} sits down on a bench in the {p}",
                "{s} laughs with friends in the {p}", "{s} drinks a cup of coffee"]  # fmt: skip


@dataclass
class Query:
    text: str
    facts: list[str]
    records: list[EvidenceRecord]  # embedding = index into the text table
    spans: list[TimeWindow]
    fact_of_record: dict[str, str]


RECURRING_TAILS = ["", " again", ", seen from another angle", " as the camera zooms in",
                   ", filmed from behind"]  # fmt: skip


def make_query(rng: random.Random, redundancy: str) -> tuple[Query, list[str]]:
    """One question and its candidate clips; returns the query and all texts to embed.

    ``redundancy`` says how the repeated sightings of a fact are worded: "paraphrase" uses a
    different wording each time, "recurring" repeats one wording with a small change (a
    builder describing the same ongoing scene in consecutive clips).
    """
    person, obj = rng.choice(PEOPLE), rng.choice(OBJECTS)
    # Memories often describe a person instead of naming them.
    looks = f"the person in the {rng.choice(COLORS)} {rng.choice(CLOTHES)}"
    facts = rng.sample(list(ACTIONS), rng.randint(2, 6))
    n_clips = rng.randint(24, 48)
    texts: list[str] = []
    records: list[EvidenceRecord] = []
    fact_of_record: dict[str, str] = {}

    def add(clip: int, text: str, fact: str | None = None) -> None:
        start = clip * CLIP_S + rng.uniform(0, CLIP_S - 6)
        rid = f"r{len(records)}"
        texts.append(text)
        records.append(EvidenceRecord(rid, text, start, start + rng.uniform(1, 5), len(texts) - 1))
        if fact:
            fact_of_record[rid] = fact

    def filler() -> str:
        place = rng.choice(PLACES)
        return rng.choice(FILLERS).format(
            p=place, P=place.title(), c=rng.choice(COLORS), t=rng.choice(THINGS)
        )

    for fact in facts:
        copies = rng.choice([1, 1, 2, 2, 3])
        if redundancy == "paraphrase":
            wordings = rng.sample(ACTIONS[fact], copies)
            sentences = [
                w.format(s=person if rng.random() < 0.6 else looks, o=obj) for w in wordings
            ]
        else:
            base = rng.choice(ACTIONS[fact]).format(
                s=person if rng.random() < 0.6 else looks, o=obj
            )
            sentences = [base + tail for tail in rng.sample(RECURRING_TAILS, copies)]
        for clip, sentence in zip(rng.sample(range(n_clips), copies), sentences, strict=True):
            add(clip, sentence[0].upper() + sentence[1:], fact)
            if rng.random() < 0.3:  # a caption line that repeats the event node
                add(clip, f"In this scene, {sentence}", fact)
    for clip in range(n_clips):
        for _ in range(rng.randint(2, 6)):
            add(clip, filler())
        if rng.random() < 0.35:  # near-topic distractors
            kind = rng.random()
            other_obj = rng.choice([o for o in OBJECTS if o != obj])
            other_person = rng.choice([p for p in PEOPLE if p != person])
            action = rng.choice(list(ACTIONS.values()))
            if kind < 0.4:
                who = person if rng.random() < 0.6 else looks
                text = rng.choice(action).format(s=who, o=other_obj)
            elif kind < 0.8:
                text = rng.choice(action).format(s=other_person, o=obj)
            else:
                text = rng.choice(NEAR_ACTIONS).format(s=person, p=rng.choice(PLACES))
            add(clip, text[0].upper() + text[1:])
    # Two or three MacroEvents cover the clips.
    cuts = sorted(rng.sample(range(1, n_clips), rng.randint(1, 2)))
    edges = [0, *cuts, n_clips]
    spans = [
        TimeWindow(f"macro_{i:04d}", edges[i] * CLIP_S, edges[i + 1] * CLIP_S)
        for i in range(len(edges) - 1)
    ]
    question = rng.choice(QUESTIONS).format(s=person, o=obj)
    return Query(question, facts, records, spans, fact_of_record), [*texts, question]


@functools.cache
def minilm() -> SentenceTransformerEmbedder:
    """The packaged MiniLM, loaded once per run however many splits embed new texts."""
    return SentenceTransformerEmbedder(EmbeddingConfig(model=MODEL, query_prompt_name=None))


def embed_all(
    texts: list[str], cache_name: str = "pace_mem_quality_minilm.npz"
) -> dict[str, np.ndarray]:
    """Vectors for every distinct text, cached across runs by text hash (one file per bench)."""
    path = cache_dir(cache_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    known: dict[str, np.ndarray] = {}
    if path.exists():
        data = np.load(path)
        known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    key = {t: hashlib.sha1(t.encode()).hexdigest() for t in set(texts)}
    missing = sorted(t for t in key if key[t] not in known)
    if missing:
        started = time.perf_counter()
        vectors = minilm().embed(missing)
        known.update(zip((key[t] for t in missing), vectors, strict=True))
        keys = sorted(known)
        np.savez(path, keys=np.array(keys), vectors=np.stack([known[k] for k in keys]))
        print(
            f"embedded {len(missing)} new texts in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return {t: known[key[t]] for t in key}


def build_split(seed: int, count: int, redundancy: str) -> list[tuple[Query, np.ndarray, list]]:
    rng = random.Random(seed)
    made = [make_query(rng, redundancy) for _ in range(count)]
    vectors = embed_all([t for _, texts in made for t in texts])
    out = []
    for query, texts in made:
        matrix = np.stack([vectors[t] for t in texts[:-1]])
        clips = build_clips(query.records, query.spans, bin_s=CLIP_S, embeddings=matrix)
        out.append((query, vectors[texts[-1]], clips))
    return out


def evaluate(split, config: EvidenceConfig) -> dict[str, float]:
    covered, depth, wasted, fractions = [], [], [], []
    for query, qvec, clips in split:
        result = select_evidence(qvec, clips, config)
        seen: set[str] = set()
        useless = 0
        chosen = dict(zip(result.selected.tolist(), result.clips, strict=True))
        for clip in (chosen[int(i)] for i in result.order[: result.k_star]):  # in pick order
            new = {query.fact_of_record[r.id] for r in clip.records if r.id in query.fact_of_record}
            useless += not (new - seen)
            seen |= new
        covered.append(len(seen))
        fractions.append(len(seen) / len(query.facts))
        depth.append(result.k_star)
        wasted.append(useless / max(1, result.k_star))
    return {
        "facts": float(np.mean(covered)),
        "recall": float(np.mean(fractions)),
        "depth": float(np.mean(depth)),
        "per_clip": float(np.sum(covered) / max(1, np.sum(depth))),
        "wasted": float(np.mean(wasted)),
        "per_query": np.array(covered, dtype=float),
    }


def variants(base: EvidenceConfig) -> dict[str, EvidenceConfig]:
    def make(**changes) -> EvidenceConfig:
        return base.model_copy(update=changes)

    return {
        "PACE-Mem": make(),
        "fixed top-7": make(method="top_k", fixed_k=7),
        "relevance+depth (w/o MMR)": make(mmr=False),
        "MMR fixed-7 (w/o depth)": make(depth_selection=False, fixed_k=7),
        "w/o pooling": make(pooling=False),
        "Adaptive-k": make(method="adaptive_k"),
    }


def fixed_depth_curve(split, base: EvidenceConfig, mmr: bool) -> dict[int, float]:
    """Facts covered at each fixed depth, by relevance order or by MMR order."""
    curve = {}
    for k in range(1, 15):
        update = {"fixed_k": k, "method": "pace_mem" if mmr else "top_k"}
        update |= {"depth_selection": False} if mmr else {}
        curve[k] = evaluate(split, base.model_copy(update=update))["facts"]
    return curve


def at_depth(curve: dict[int, float], depth: float) -> float:
    """Linear interpolation of a fixed-depth curve at a (mean) depth."""
    ks = sorted(curve)
    return float(np.interp(depth, ks, [curve[k] for k in ks]))


def report(title: str, split, base: EvidenceConfig) -> dict[str, dict[str, float]]:
    rows = {name: evaluate(split, config) for name, config in variants(base).items()}
    # Adaptive-k with buffers around PACE-Mem's mean depth, for a depth-matched comparison.
    pace_depth = rows["PACE-Mem"]["depth"]
    buffered: dict[float, float] = {rows["Adaptive-k"]["depth"]: rows["Adaptive-k"]["facts"]}
    for buffer in range(1, 13):
        adaptive = base.model_copy(update={"method": "adaptive_k", "adaptive_buffer": buffer})
        row = evaluate(split, adaptive)
        buffered[row["depth"]] = row["facts"]
        if row["depth"] >= pace_depth - 1e-9 or buffer == 12:
            rows[f"Adaptive-k +{buffer} buffer"] = row
            break
    n_facts = np.mean([len(q.facts) for q, _, _ in split])
    print(f"\n{title}: {len(split)} queries, {n_facts:.2f} facts per query on average")
    print(f"{'variant':30s} {'facts':>6s} {'recall':>7s} {'depth':>6s} {'facts/clip':>10s} "
          f"{'no-new':>7s} {'facts - top-7 (paired SE)':>26s}")  # fmt: skip
    reference = rows["fixed top-7"]["per_query"]
    for name, row in rows.items():
        diff = row["per_query"] - reference
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        print(
            f"{name:30s} {row['facts']:6.2f} {row['recall']:7.3f} {row['depth']:6.2f} "
            f"{row['per_clip']:10.3f} {row['wasted']:7.3f} {diff.mean():+15.2f} ({se:.2f})"
        )
    top = fixed_depth_curve(split, base, mmr=False)
    mmr = fixed_depth_curve(split, base, mmr=True)
    print("facts at a fixed depth k  (k: top-k / MMR-k): " + "  ".join(
        f"{k}: {top[k]:.2f}/{mmr[k]:.2f}" for k in range(3, 13)
    ))  # fmt: skip
    for name in ("PACE-Mem", "relevance+depth (w/o MMR)", "Adaptive-k"):
        row = rows[name]
        print(
            f"  {name} at mean depth {row['depth']:.2f}: {row['facts']:.2f} facts; top-k at that "
            f"depth {at_depth(top, row['depth']):.2f}, MMR-k {at_depth(mmr, row['depth']):.2f}"
        )
    depths = sorted(buffered)
    matched = float(np.interp(pace_depth, depths, [buffered[d] for d in depths]))
    print(f"  Adaptive-k (buffer interpolated) at PACE-Mem's depth {pace_depth:.2f}: {matched:.2f}")
    return rows


def tune(splits, base: EvidenceConfig, depth_budget: float) -> EvidenceConfig:
    """Grid over PACE-Mem's constants on the tune splits: the most facts covered with a mean
    depth within ``depth_budget`` (the fixed top-7 budget), smaller depth on ties."""
    best, best_key = base, (-np.inf, 0.0)
    grid = itertools.product([0.6, 0.7, 0.8], [0.1, 0.2, 0.3], [2, 3], [8, 9, 10, 12])
    for lam, temperature, k_min, k_max in grid:
        if k_max < k_min:
            continue
        config = base.model_copy(
            update={"mmr_lambda": lam, "pooling_temperature": temperature, "k_min": k_min,
                    "k_max": k_max}
        )  # fmt: skip
        rows = [evaluate(split, config) for split in splits]
        facts = float(np.mean([r["facts"] for r in rows]))
        depth = float(np.mean([r["depth"] for r in rows]))
        if depth <= depth_budget and (facts, -depth) > best_key:
            best, best_key = config, (facts, -depth)
    print(
        f"\ntuned on the tune splits (most facts with mean depth <= {depth_budget}): "
        f"mmr_lambda={best.mmr_lambda} pooling_temperature={best.pooling_temperature} "
        f"k_min={best.k_min} k_max={best.k_max} -> {best_key[0]:.2f} facts at depth "
        f"{-best_key[1]:.2f}"
    )
    return best


def add_set_option(parser: argparse.ArgumentParser, example: str) -> None:
    """The ``--set key=value`` option of the PACE-Mem benches (this one, bench_focus_coverage)."""
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help=f"change a EvidenceConfig setting for the whole run (e.g. --set {example})",
    )  # fmt: skip


def settings_from(items: list[str]) -> EvidenceConfig:
    """The EvidenceConfig defaults changed by ``--set`` items, said aloud when there are any."""
    changes = dict(parse_override(f"x.{item}") for item in items)
    if changes:
        print(f"settings changed for this run: {items}")
    return EvidenceConfig(**{key[2:]: value for key, value in changes.items()})


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=120, help="queries per split")
    parser.add_argument("--tune", action="store_true", help="grid-search on the tune splits")
    add_set_option(parser, "k_max=12")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    regimes = ("paraphrase", "recurring")
    tune_splits = {r: build_split(seed=1 + 10 * i, count=args.queries, redundancy=r)
                   for i, r in enumerate(regimes)}  # fmt: skip
    report_splits = {r: build_split(seed=2 + 10 * i, count=args.queries, redundancy=r)
                     for i, r in enumerate(regimes)}  # fmt: skip
    defaults = settings_from(args.set)
    label = "settings changed by --set" if args.set else "default settings"
    for regime in regimes:
        report(f"REPORT split, {regime} redundancy, {label}", report_splits[regime], defaults)
    if args.tune:
        tuned = tune(list(tune_splits.values()), defaults, depth_budget=7.0)
        for regime in regimes:
            report(f"REPORT split, {regime} redundancy, settings tuned on the tune splits",
                   report_splits[regime], tuned)  # fmt: skip
    print(f"\n(total {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
