"""Focus coverage: does every selected MacroEvent's evidence reach the Focus agent?

Not a test; prints figures (issue 9, item 7). Each synthetic query is a cross-branch question:
the facts that answer it live in 2-3 MacroEvents far apart in the video, and the Skim agent
also selected 1-3 distractor MacroEvents, as a real selection would. Three families:

* ``count_which`` / ``count_how_many``: a talent show or a cooking contest, one MacroEvent per
  contestant. "Which contestants play the piano?" / "How many chefs use saffron?": each
  relevant MacroEvent holds one fact (its contestant doing the target activity, in one or two
  clips, worded differently); distractor MacroEvents hold other contestants doing near-topic
  activities (the violin instead of the piano), some with a line that mentions the target
  without doing it ("says they took piano lessons as a child"). Every segment also has the
  contestant's introduction, the judges' reactions and stage fillers.
* ``actions``: the person-and-object facts of ``bench_pace_mem_quality`` (its generators are
  imported), with the facts spread over the relevant MacroEvents and the same near-topic
  distractors (the person with other objects, other people with the object).

Options are MCQ style, 4 or 5 of them: for "which" the right set of names and sets that swap
in, drop or add a contestant who appears in a distractor segment; for "how many" the numbers
1-5 (options that carry nothing, as in real count questions); for actions the right list of
actions and lists with one or two actions swapped for ones that happen near-topic in the
video. Half the queries carry an upstream instruction.

Compared: ``focus_scope`` joint (the earlier behaviour), joint_with_floor and per_macro, each
with the PACE-Mem query built with and without the options (``focus_query_text``). Metrics,
per query then averaged: distinct relevant facts covered by the chosen clips (count and
fraction), the fraction of selected MacroEvents represented (at least one clip), the fraction
of the relevant ones represented, and the total depth. The joint MMR order read at a fixed
depth equal to each row's mean depth is printed beside it, so a gain that is only extra depth
shows as such.

Queries come in disjoint seeded splits: "tune" chooses the default (most facts covered with a
mean depth within k_max; smaller depth on ties) and "report" is what is printed as the result.
Texts are embedded with the packaged all-MiniLM-L6-v2, cached under bench/.cache/.

    python bench/bench_focus_coverage.py [--queries 150] [--set key=value ...] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_pace_mem_quality import (
    ACTIONS,
    CLIP_S,
    CLOTHES,
    COLORS,
    FILLERS,
    NEAR_ACTIONS,
    OBJECTS,
    PEOPLE,
    PLACES,
    THINGS,
    add_set_option,
    at_depth,
    embed_all,
    settings_from,
)
from benchkit import smoke

from videotapestry.config import EvidenceConfig
from videotapestry.retrieval import (
    EvidenceRecord,
    PackedClips,
    TimeWindow,
    build_clips,
    focus_query_text,
    pack_clips,
    select_focus_evidence,
)

CACHE_NAME = "focus_coverage_minilm.npz"
#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--queries", "3")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^TUNE split \(chooses the default\): \d+ queries",
    r"^focus_scope \(\+ options in query\) +facts +recall +macros ",
    r"^joint +\d",
    r"^per_macro \+ options +\d",
    r"^recall by family: count_which ",
    r"^  per_macro \+ options +\d",
    r"^chosen on the tune split: ",
    r"^REPORT split \(held out\): \d+ queries",
    r"^\(total \S+ s\)$",
)
SCOPES = ("joint", "joint_with_floor", "per_macro")
FAMILIES = ("count_which", "count_how_many", "actions")


@dataclass(frozen=True)
class Activity:
    """One thing a contestant can do: how a question asks about it, and how memory says it."""

    asked: str  # "play the piano"
    wordings: tuple[str, ...]  # "{n} plays the piano on stage"
    mentions: tuple[str, ...]  # lines that name the activity without anyone doing it


@dataclass(frozen=True)
class Contest:
    role: str  # "contestants"
    activities: dict[str, Activity]
    intros: tuple[str, ...]
    reactions: tuple[str, ...]
    fillers: tuple[str, ...]


TALENT = Contest(
    role="contestants",
    activities={
        "piano": Activity(
            "play the piano",
            ("{n} plays the piano on stage", "{n} sits at the grand piano and performs a slow "
             "piece", "Close-up of {n}'s fingers moving over the piano keys"),
            ("{n} says they took piano lessons as a child", "A piano stands at the back of the "
             "stage"),
        ),
        "violin": Activity(
            "play the violin",
            ("{n} plays the violin on stage", "{n} draws the bow across the violin strings",
             "{n} performs a violin solo"),
            ("{n} tells the host their mother plays the violin",),
        ),
        "guitar": Activity(
            "play the guitar",
            ("{n} plays an acoustic guitar on stage", "{n} strums the guitar and taps a foot",
             "{n} performs a guitar solo"),
            ("{n} carries a guitar case backstage but does not open it",),
        ),
        "sing": Activity(
            "sing",
            ("{n} sings a ballad into the microphone", "{n} performs a song while the band "
             "plays", "{n} hits a high note while singing"),
            ("{n} says singing makes them nervous",),
        ),
        "magic": Activity(
            "perform a magic trick",
            ("{n} makes a card disappear in a magic trick", "{n} pulls a scarf out of an empty "
             "hat", "{n} performs a magic trick for the judges"),
            ("{n} says they are a fan of stage magicians",),
        ),
        "dance": Activity(
            "dance",
            ("{n} dances a fast tap routine", "{n} spins across the stage dancing",
             "{n} performs a dance to pop music"),
            ("{n} watches the dancers from the wings",),
        ),
        "juggle": Activity(
            "juggle",
            ("{n} juggles five balls at once", "{n} juggles flaming torches",
             "{n} keeps three clubs in the air"),
            ("{n} says they tried juggling once and gave up",),
        ),
    },
    intros=("The host introduces {n} to the audience", "{n} walks onto the stage and waves",
            "{n} tells the judges where they come from", "Text on screen: '{N}'"),
    reactions=("The judges praise {n}'s confidence", "{n} waits nervously for the verdict",
               "A judge gives {n} a standing ovation", "{n} bows to the audience"),
    fillers=("The judges applaud", "The audience cheers loudly", "A judge writes notes on a "
             "card", "The stage lights turn {c}", "The camera pans across the crowd",
             "Confetti falls from the ceiling", "The host stands beside the {c} curtain",
             "Backstage, crew members move equipment", "A judge presses the golden buzzer"),
)  # fmt: skip

COOKING = Contest(
    role="chefs",
    activities={
        "saffron": Activity(
            "use saffron",
            ("{n} sprinkles saffron into the rice", "{n} adds a pinch of saffron threads to "
             "the pot", "{n} soaks saffron in warm water for the sauce"),
            ("{n} says saffron is too expensive for this dish", "A jar of saffron sits on the "
             "shared pantry shelf"),
        ),
        "grill": Activity(
            "grill their dish",
            ("{n} grills the fish over high heat", "{n} puts the steak on the charcoal grill",
             "{n} turns the vegetables on the grill"),
            ("{n} walks past the grill station",),
        ),
        "flambe": Activity(
            "flambé their dessert",
            ("{n} sets the pan alight to flambé the bananas", "Flames rise as {n} flambés the "
             "dessert", "{n} pours brandy over the crepes and lights it"),
            ("{n} says flambéing is too risky under time pressure",),
        ),
        "pasta": Activity(
            "make fresh pasta",
            ("{n} rolls out fresh pasta dough", "{n} cuts the pasta sheets into ribbons",
             "{n} kneads flour and eggs into pasta dough"),
            ("{n} opens a packet of dried pasta",),
        ),
        "chocolate": Activity(
            "temper chocolate",
            ("{n} tempers dark chocolate on a marble slab", "{n} melts chocolate over a water "
             "bath", "{n} checks the temperature of the melted chocolate"),
            ("{n} tells the judges they dislike chocolate desserts",),
        ),
        "bread": Activity(
            "bake bread",
            ("{n} pulls a loaf of bread out of the oven", "{n} shapes the bread dough before "
             "baking", "{n} bakes a sourdough loaf"),
            ("{n} buys a baguette from the bakery stand",),
        ),
    },
    intros=("The host introduces chef {n}", "{n} ties an apron at the cooking station",
            "{n} explains the planned dish to the judges", "Text on screen: 'Chef {N}'"),
    reactions=("The judges taste {n}'s dish", "{n} plates the food carefully",
               "A judge compliments {n}'s presentation", "{n} wipes the counter and waits"),
    fillers=("Steam rises from a pot", "The clock on the wall shows ten minutes left",
             "The audience watches from the balcony", "A {c} towel hangs by the oven",
             "Pans clatter in the kitchen", "The camera zooms in on the timer",
             "The judges taste a spoonful of sauce", "The pantry shelves are full of jars"),
)  # fmt: skip

#: Third-person forms of the imported ACTIONS, for option texts.
VERBS = {"wash": "washes", "carry": "carries", "inspect": "inspects",
         "photograph": "photographs", "hide": "hides", "give": "gives away",
         "repair": "repairs", "paint": "paints", "buy": "buys", "drop": "drops",
         "pack": "packs", "measure": "measures"}  # fmt: skip
assert set(VERBS) == set(ACTIONS), "VERBS must cover bench_pace_mem_quality.ACTIONS"

INSTRUCTIONS = ("Check each selected segment for {topic}.",
                "Verify in these events who {topic_verb}.",
                "Look for evidence of {topic} and note who is involved.")  # fmt: skip


@dataclass
class Query:
    family: str
    question: str
    instruction: str | None
    options: list[str]
    facts: list[str]
    relevant_macros: list[str]
    macro_ids: list[str]
    records: list[EvidenceRecord] = field(default_factory=list)
    spans: list[TimeWindow] = field(default_factory=list)
    fact_of_record: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)


class Builder:
    """Lays out a query's selected MacroEvents far apart in time and fills their clips."""

    def __init__(self, rng: random.Random, query: Query) -> None:
        self.rng, self.query, self.clock = rng, query, 0.0

    def macro(self, macro_id: str, n_clips: int) -> list[float]:
        """A new MacroEvent span after a gap; returns its clips' start times."""
        self.clock += self.rng.uniform(300, 1500)
        start = self.clock
        self.clock += n_clips * CLIP_S
        self.query.spans.append(TimeWindow(macro_id, start, self.clock))
        return [start + CLIP_S * i for i in range(n_clips)]

    def add(self, macro_id: str, clip_start: float, text: str, fact: str | None = None) -> None:
        start = clip_start + self.rng.uniform(0, CLIP_S - 6)
        rid = f"r{len(self.query.records)}"
        self.query.texts.append(text)
        index = len(self.query.texts) - 1
        record = EvidenceRecord(rid, text, start, start + self.rng.uniform(1, 5), index, macro_id)
        self.query.records.append(record)
        if fact:
            self.query.fact_of_record[rid] = fact


def letters(options: list[str]) -> list[str]:
    return [f"{'ABCDE'[i]}. {text}" for i, text in enumerate(options)]


def name_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def make_contest_query(rng: random.Random, family: str) -> Query:
    contest = rng.choice([TALENT, COOKING])
    target = rng.choice(list(contest.activities))
    n_relevant, n_distract = rng.randint(2, 3), rng.randint(1, 3)
    names = rng.sample(PEOPLE, n_relevant + n_distract)
    relevant, distractors = names[:n_relevant], names[n_relevant:]
    activity = contest.activities[target]
    if family == "count_which":
        question = f"Which {contest.role} {activity.asked} during the show?"
        right = name_list(sorted(relevant))
        wrong = {name_list(sorted([*relevant[1:], distractors[0]])),
                 name_list(sorted([*relevant, distractors[-1]])),
                 name_list(sorted(relevant[:-1])),
                 name_list(sorted([relevant[0], *distractors]))}  # fmt: skip
        wrong.discard(right)
        choices = [right, *rng.sample(sorted(wrong), min(len(wrong), rng.randint(3, 4)))]
    else:
        question = f"How many {contest.role} {activity.asked} during the show?"
        choices = [str(k) for k in range(1, rng.choice([4, 5]) + 1)]
    rng.shuffle(choices)
    instruction = None
    if rng.random() < 0.5:
        instruction = rng.choice(INSTRUCTIONS).format(
            topic=f"{contest.role} who {activity.asked}", topic_verb=activity.asked
        )
    order = names[:]
    rng.shuffle(order)  # where the relevant segments fall among the selected ones
    macro_ids = [f"macro_{i:04d}" for i in range(len(order))]
    query = Query(family, question, instruction, letters(choices), [], [], macro_ids)
    build = Builder(rng, query)
    others = [a for a in contest.activities if a != target]
    for macro_id, name in zip(macro_ids, order, strict=True):
        starts = build.macro(macro_id, rng.randint(5, 10))

        def say(template: str, clip: float, fact: str | None = None) -> None:
            text = template.format(n=name, N=name.upper(), c=rng.choice(COLORS))  # noqa: B023
            build.add(macro_id, clip, text[0].upper() + text[1:], fact)  # noqa: B023

        say(rng.choice(contest.intros), starts[0])
        doing = target if name in relevant else rng.choice(others)
        wordings = contest.activities[doing].wordings
        fact = name if name in relevant else None
        copies = rng.choice([1, 1, 2])
        for clip, wording in zip(
            rng.sample(starts[1:], copies), rng.sample(wordings, copies), strict=True
        ):
            say(wording, clip, fact)
        if name in distractors and rng.random() < 0.5:
            say(rng.choice(activity.mentions), rng.choice(starts))
        say(rng.choice(contest.reactions), starts[-1])
        for clip in starts:
            for _ in range(rng.randint(2, 4)):
                say(rng.choice(contest.fillers), clip)
        if name in relevant:
            query.facts.append(name)
            query.relevant_macros.append(macro_id)
    return query


def make_actions_query(rng: random.Random) -> Query:
    person, obj = rng.choice(PEOPLE), rng.choice(OBJECTS)
    looks = f"the person in the {rng.choice(COLORS)} {rng.choice(CLOTHES)}"
    n_relevant, n_distract = rng.randint(2, 3), rng.randint(1, 3)
    facts = rng.sample(list(ACTIONS), rng.randint(n_relevant, 4))
    near = [a for a in ACTIONS if a not in facts]
    question = rng.choice([
        f"What does {person} do with the {obj} over the whole video?",
        f"List everything {person} does to the {obj} across the video.",
        f"Which of these does {person} do with the {obj}?",
    ])  # fmt: skip
    instruction = None
    if rng.random() < 0.5:
        instruction = rng.choice(INSTRUCTIONS).format(
            topic=f"what {person} does with the {obj}", topic_verb=f"handles the {obj}"
        )

    def action_list(actions: list[str]) -> str:
        return f"{person} {name_list([VERBS[a] for a in actions])} the {obj}"

    shown = rng.sample(near, 3)  # near-topic actions that do happen, to other objects
    wrong = {action_list([*facts[1:], shown[0]]), action_list([shown[1], *facts[:-1]]),
             action_list(facts[:-1] or [shown[2]]), action_list([*facts, shown[2]])}  # fmt: skip
    wrong.discard(action_list(facts))
    choices = [action_list(facts), *rng.sample(sorted(wrong), min(len(wrong), rng.randint(3, 4)))]
    rng.shuffle(choices)
    n_macros = n_relevant + n_distract
    macro_ids = [f"macro_{i:04d}" for i in range(n_macros)]
    relevant = sorted(rng.sample(macro_ids, n_relevant))
    query = Query("actions", question, instruction, letters(choices), list(facts), relevant,
                  macro_ids)  # fmt: skip
    build = Builder(rng, query)
    holders = relevant + [rng.choice(relevant) for _ in facts[len(relevant) :]]
    home = dict(zip(facts, rng.sample(holders, len(holders)), strict=True))
    for macro_id in macro_ids:
        starts = build.macro(macro_id, rng.randint(5, 10))
        for fact in (f for f in facts if home[f] == macro_id):
            copies = rng.choice([1, 1, 2])
            for clip, wording in zip(
                rng.sample(starts, copies), rng.sample(ACTIONS[fact], copies), strict=True
            ):
                text = wording.format(s=person if rng.random() < 0.6 else looks, o=obj)
                build.add(macro_id, clip, text[0].upper() + text[1:], fact)
        for clip in starts:
            for _ in range(rng.randint(2, 5)):
                place = rng.choice(PLACES)
                text = rng.choice(FILLERS).format(
                    p=place, P=place.title(), c=rng.choice(COLORS), t=rng.choice(THINGS)
                )
                build.add(macro_id, clip, text)
            if rng.random() < (0.35 if macro_id in relevant else 0.6):
                kind = rng.random()
                if kind < 0.4:  # the person, another object (often a wrong option's action)
                    action = rng.choice([*shown, *shown, *near])
                    text = rng.choice(ACTIONS[action]).format(
                        s=person, o=rng.choice([o for o in OBJECTS if o != obj])
                    )
                elif kind < 0.8:  # another person, the object
                    other = rng.choice([p for p in PEOPLE if p != person])
                    text = rng.choice(ACTIONS[rng.choice(near)]).format(s=other, o=obj)
                else:
                    text = rng.choice(NEAR_ACTIONS).format(s=person, p=rng.choice(PLACES))
                build.add(macro_id, clip, text[0].upper() + text[1:])
    return query


@dataclass
class Prepared:
    query: Query
    packed: PackedClips
    vectors: dict[bool, np.ndarray]  # by query_options


def build_split(seed: int, count: int, base: EvidenceConfig) -> list[Prepared]:
    """``count`` queries, the three families in equal turns, embedded and packed."""
    rng = random.Random(seed)
    queries = []
    for index in range(count):
        family = FAMILIES[index % len(FAMILIES)]
        queries.append(
            make_actions_query(rng) if family == "actions" else make_contest_query(rng, family)
        )
    query_texts = {
        (i, flag): focus_query_text(q.question, q.instruction, q.options, include_options=flag)
        for i, q in enumerate(queries)
        for flag in (False, True)
    }
    vectors = embed_all(
        [t for q in queries for t in q.texts] + list(query_texts.values()), cache_name=CACHE_NAME
    )
    prepared = []
    for index, query in enumerate(queries):
        matrix = np.stack([vectors[t] for t in query.texts])
        clips = build_clips(query.records, query.spans, bin_s=CLIP_S, embeddings=matrix)
        packed = pack_clips(
            clips, duplicate_threshold=base.duplicate_threshold, length_unit=base.length_unit
        )
        by_flag = {flag: vectors[query_texts[index, flag]] for flag in (False, True)}
        prepared.append(Prepared(query, packed, by_flag))
    return prepared


def evaluate(split: list[Prepared], config: EvidenceConfig) -> dict[str, np.ndarray]:
    """Per-query figures for one configuration (``query_options`` picks the query vector)."""
    rows: dict[str, list[float]] = {"facts": [], "recall": [], "macros": [], "relevant": [],
                                    "depth": []}  # fmt: skip
    for item in split:
        query = item.query
        focus = select_focus_evidence(
            item.vectors[config.query_options], item.packed, query.macro_ids, config
        )
        covered = {
            query.fact_of_record[r.id]
            for clip in focus.clips
            for r in clip.records
            if r.id in query.fact_of_record
        }
        represented = {m for m, evidence in focus.macros.items() if evidence.clips}
        rows["facts"].append(len(covered))
        rows["recall"].append(len(covered) / len(query.facts))
        rows["macros"].append(len(represented) / len(query.macro_ids))
        relevant = set(query.relevant_macros)
        rows["relevant"].append(len(represented & relevant) / len(relevant))
        rows["depth"].append(focus.depth)
    return {key: np.array(values, dtype=float) for key, values in rows.items()}


def joint_curve(split: list[Prepared], base: EvidenceConfig, options: bool) -> dict[int, float]:
    """Mean recall of the joint pick order (MMR, or relevance order under mmr=false, top_k and
    adaptive_k) cut at each fixed depth: the depth-matched yardstick."""
    method = "top_k" if base.method == "adaptive_k" else base.method
    curve = {}
    for k in range(1, 16):
        config = base.model_copy(
            update={"focus_scope": "joint", "depth_selection": False, "fixed_k": k,
                    "query_options": options, "method": method}
        )  # fmt: skip
        curve[k] = float(evaluate(split, config)["recall"].mean())
    return curve


def modes(base: EvidenceConfig) -> dict[str, EvidenceConfig]:
    return {
        f"{scope}{' + options' if flag else ''}": base.model_copy(
            update={"focus_scope": scope, "query_options": flag}
        )
        for flag in (False, True)
        for scope in SCOPES
    }


def report(title: str, split: list[Prepared], base: EvidenceConfig) -> dict[str, dict]:
    results = {name: evaluate(split, config) for name, config in modes(base).items()}
    curves = {flag: joint_curve(split, base, flag) for flag in (False, True)}
    families = np.array([item.query.family for item in split])
    reference = results["joint"]["recall"]
    n_facts = np.mean([len(item.query.facts) for item in split])
    n_macros = np.mean([len(item.query.macro_ids) for item in split])
    n_clips = np.mean([item.packed.size for item in split])
    print(
        f"\n{title}: {len(split)} queries; {n_facts:.2f} relevant facts in "
        f"{n_macros:.2f} selected MacroEvents and {n_clips:.1f} candidate clips per query"
    )
    print(f"{'focus_scope (+ options in query)':34s} {'facts':>6s} {'recall':>7s} "
          f"{'macros':>7s} {'rel.mac':>7s} {'depth':>6s} {'joint@depth':>11s} "
          f"{'recall - joint (SE)':>20s}")  # fmt: skip
    for name, row in results.items():
        flag = name.endswith("options")
        diff = row["recall"] - reference
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        matched = at_depth(curves[flag], float(row["depth"].mean()))
        print(
            f"{name:34s} {row['facts'].mean():6.2f} {row['recall'].mean():7.3f} "
            f"{row['macros'].mean():7.3f} {row['relevant'].mean():7.3f} "
            f"{row['depth'].mean():6.2f} {matched:11.3f} {diff.mean():+12.3f} ({se:.3f})"
        )
    print("recall by family: " + "  ".join(f"{f} ({np.sum(families == f)})" for f in FAMILIES))
    for name, row in results.items():
        cells = [
            f"{row['recall'][families == f].mean():.3f} @ {row['depth'][families == f].mean():.1f}"
            for f in FAMILIES
        ]
        print(f"  {name:32s} " + "   ".join(f"{c:>13s}" for c in cells))
    return results


def choose(results: dict[str, dict], k_max: int) -> str:
    """The tuned default: the most facts covered (recall) with mean depth within k_max, the
    smaller depth on ties (to 0.005 recall)."""
    eligible = [(n, r) for n, r in results.items() if r["depth"].mean() <= k_max]
    best = max(r["recall"].mean() for _, r in eligible)
    close = [(r["depth"].mean(), n) for n, r in eligible if r["recall"].mean() >= best - 0.005]
    return min(close)[1]


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=150, help="queries per split")
    add_set_option(parser, "mmr=false")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    base = settings_from(args.set)
    tune_split = build_split(seed=101, count=args.queries, base=base)
    report_split = build_split(seed=202, count=args.queries, base=base)
    tuned = report("TUNE split (chooses the default)", tune_split, base)
    winner = choose(tuned, base.k_max)
    shipped = EvidenceConfig()
    print(
        f"\nchosen on the tune split: {winner}  (shipped default: {shipped.focus_scope}"
        f"{' + options' if shipped.query_options else ''})"
    )
    report("REPORT split (held out)", report_split, base)
    print(f"\n(total {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
