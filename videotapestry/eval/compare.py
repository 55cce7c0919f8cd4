"""Two runs side by side: did a prompt swap or a new backbone change the answers?

Accuracy of two runs on different question sets says little, so the comparison is on
paired questions only (same variant and question id, scored in both), and the test is
McNemar's, which looks only at the questions the runs disagree on. The p-value reported
is the exact one (a two-sided binomial test of the discordant pairs against 1/2), valid
for the small disagreement counts of a 200-question ablation; the chi-square with
continuity correction is shown beside it because papers often quote it. Grounding is
paired the same way, on the questions with evidence spans finished in both runs: the hit
rates with McNemar's test on the questions one run hits and the other misses, and the mIoU
with the mean of the paired IoU differences. Then what made the runs differ, from their
``run.json``: configuration keys, prompts whose hash changed, the model of each role, and
who judged the free-form answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.grounding import GroundingScore, score
from videotapestry.eval.metrics import UsageStats, unpriced_text, usage
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_reader import RunInfo, latest, read_run_info_if_present, require_records
from videotapestry.eval.run_writer import flatten
from videotapestry.eval.scoring import Accuracy, is_correct, is_scored


class CompareError(VideoTapestryError):
    """Two runs cannot be compared as asked (a variant neither run has)."""


#: Marks a key present in one run only.
ABSENT = "(absent)"


@dataclass(frozen=True)
class McNemar:
    """Discordant pairs and their test. ``a_only``: right in A only; ``b_only``: in B only."""

    a_only: int
    b_only: int
    p_exact: float
    chi2: float | None
    p_chi2: float | None

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only

    def to_dict(self) -> dict[str, Any]:
        return {
            "right_only_in_a": self.a_only,
            "right_only_in_b": self.b_only,
            "discordant": self.discordant,
            "p_exact": self.p_exact,
            "chi2_continuity": self.chi2,
            "p_chi2_continuity": self.p_chi2,
        }


def mcnemar(a_only: int, b_only: int) -> McNemar:
    """McNemar's test on the discordant counts (p = 1 when the runs never disagree)."""
    from scipy.stats import binomtest, chi2

    n = a_only + b_only
    if n == 0:
        return McNemar(a_only, b_only, p_exact=1.0, chi2=None, p_chi2=None)
    exact = float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue)
    statistic = (abs(a_only - b_only) - 1) ** 2 / n
    return McNemar(
        a_only,
        b_only,
        p_exact=min(1.0, exact),
        chi2=statistic,
        p_chi2=float(chi2.sf(statistic, df=1)),
    )


@dataclass(frozen=True)
class GroundingComparison:
    """Paired grounding: questions with evidence spans, finished in both runs."""

    paired: int
    hits_a: int
    hits_b: int
    iou_sum_a: float
    iou_sum_b: float
    #: McNemar's test on the hits (``a_only``: hit in A only).
    test: McNemar
    #: Missed in A, hit in B; and hit in A, missed in B.
    became_hit: list[str]
    lost_hit: list[str]

    @property
    def hit_difference_points(self) -> float | None:
        """B minus A, in percentage points of hit rate."""
        return 100.0 * (self.hits_b - self.hits_a) / self.paired if self.paired else None

    @property
    def miou_a(self) -> float | None:
        return self.iou_sum_a / self.paired if self.paired else None

    @property
    def miou_b(self) -> float | None:
        return self.iou_sum_b / self.paired if self.paired else None

    @property
    def miou_difference(self) -> float | None:
        """The mean paired IoU difference, B minus A."""
        return (self.iou_sum_b - self.iou_sum_a) / self.paired if self.paired else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "paired": self.paired,
            "hits_a": self.hits_a,
            "hits_b": self.hits_b,
            "hit_difference_points": self.hit_difference_points,
            "miou_a": self.miou_a,
            "miou_b": self.miou_b,
            "miou_difference": self.miou_difference,
            "mcnemar_hits": self.test.to_dict(),
            "became_hit": list(self.became_hit),
            "lost_hit": list(self.lost_hit),
        }


@dataclass(frozen=True)
class VariantComparison:
    variant: str
    accuracy_a: Accuracy
    accuracy_b: Accuracy
    both_right: int
    both_wrong: int
    test: McNemar
    #: Wrong (or failed) in A, right in B.
    became_right: list[str]
    #: Right in A, wrong (or failed) in B.
    became_wrong: list[str]
    #: Scored in one run only (absent, skipped or without gold in the other).
    only_in_a: list[str]
    only_in_b: list[str]
    #: Paired questions whose gold letter differs between the runs (other annotations?).
    gold_differs: list[str]
    grounding: GroundingComparison | None = None
    #: What the paired questions cost in each run, so a gain is read beside its price.
    usage_a: UsageStats = field(default_factory=UsageStats)
    usage_b: UsageStats = field(default_factory=UsageStats)

    @property
    def paired(self) -> int:
        return self.accuracy_a.total

    @property
    def difference_points(self) -> float | None:
        """B minus A, in percentage points."""
        a, b = self.accuracy_a.percent, self.accuracy_b.percent
        return None if a is None or b is None else b - a

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "paired": self.paired,
            "accuracy_a": self.accuracy_a.to_dict(),
            "accuracy_b": self.accuracy_b.to_dict(),
            "difference_points": self.difference_points,
            "both_right": self.both_right,
            "both_wrong": self.both_wrong,
            "mcnemar": self.test.to_dict(),
            "became_right": list(self.became_right),
            "became_wrong": list(self.became_wrong),
            "only_in_a": list(self.only_in_a),
            "only_in_b": list(self.only_in_b),
            "gold_differs": list(self.gold_differs),
            "grounding": None if self.grounding is None else self.grounding.to_dict(),
            "usage_a": self.usage_a.to_dict(),
            "usage_b": self.usage_b.to_dict(),
        }


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "a": self.a, "b": self.b}


@dataclass
class Comparison:
    run_a: Path
    run_b: Path
    variants: list[VariantComparison]
    header: list[Difference] = field(default_factory=list)
    config: list[Difference] = field(default_factory=list)
    prompts: list[Difference] = field(default_factory=list)
    models_a: dict[str, str] = field(default_factory=dict)
    models_b: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: False when a run.json was missing, so the differences below are unknown, not none.
    described: bool = False

    @property
    def models(self) -> list[Difference]:
        """Roles whose model differs."""
        return _differences(self.models_a, self.models_b)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_a": str(self.run_a),
            "run_b": str(self.run_b),
            "test": "McNemar exact (two-sided binomial on discordant pairs)",
            "variants": [v.to_dict() for v in self.variants],
            "header": [d.to_dict() for d in self.header],
            "config": [d.to_dict() for d in self.config],
            "prompts": [d.to_dict() for d in self.prompts],
            "models": [d.to_dict() for d in self.models],
            "models_a": dict(self.models_a),
            "models_b": dict(self.models_b),
            "described": self.described,
            "notes": list(self.notes),
        }

    def render(self) -> str:
        return render_comparison(self)


# --------------------------------------------------------------------------- pairing


def compare_records(
    records_a: list[ResultRecord], records_b: list[ResultRecord], variant: str
) -> VariantComparison:
    """The paired comparison of one variant (latest record per question in each run)."""
    a = {r.question_id: r for r in latest(records_a).values() if r.variant == variant}
    b = {r.question_id: r for r in latest(records_b).values() if r.variant == variant}
    scored_a = {q for q, r in a.items() if is_scored(r)}
    scored_b = {q for q, r in b.items() if is_scored(r)}
    paired = [q for q in a if q in scored_a and q in scored_b]
    right_a = {q for q in paired if is_correct(a[q])}
    right_b = {q for q in paired if is_correct(b[q])}
    became_right = [q for q in paired if q in right_b and q not in right_a]
    became_wrong = [q for q in paired if q in right_a and q not in right_b]
    return VariantComparison(
        variant=variant,
        accuracy_a=Accuracy(correct=len(right_a), total=len(paired)),
        accuracy_b=Accuracy(correct=len(right_b), total=len(paired)),
        both_right=len(right_a & right_b),
        both_wrong=sum(1 for q in paired if q not in right_a and q not in right_b),
        test=mcnemar(len(became_wrong), len(became_right)),
        became_right=became_right,
        became_wrong=became_wrong,
        only_in_a=[q for q in a if q in scored_a and q not in scored_b],
        only_in_b=[q for q in b if q in scored_b and q not in scored_a],
        gold_differs=[
            q
            for q in paired
            if (a[q].gold, a[q].reference_answer) != (b[q].gold, b[q].reference_answer)
        ],
        grounding=compare_grounding(a, b),
        usage_a=usage(a[q] for q in paired),
        usage_b=usage(b[q] for q in paired),
    )


def compare_grounding(
    a: Mapping[str, ResultRecord], b: Mapping[str, ResultRecord]
) -> GroundingComparison | None:
    """Paired grounding of one variant's records (by question id); None when no question
    with evidence spans finished in both runs."""
    pairs: list[tuple[str, GroundingScore, GroundingScore]] = []
    for qid, record in a.items():
        other = b.get(qid)
        x, y = score(record), None if other is None else score(other)
        if x is not None and y is not None:
            pairs.append((qid, x, y))
    if not pairs:
        return None
    became = [q for q, x, y in pairs if y.hit and not x.hit]
    lost = [q for q, x, y in pairs if x.hit and not y.hit]
    return GroundingComparison(
        paired=len(pairs),
        hits_a=sum(x.hit for _, x, _ in pairs),
        hits_b=sum(y.hit for _, _, y in pairs),
        iou_sum_a=sum(x.iou for _, x, _ in pairs),
        iou_sum_b=sum(y.iou for _, _, y in pairs),
        test=mcnemar(len(lost), len(became)),
        became_hit=became,
        lost_hit=lost,
    )


def compare_runs(run_a: str | Path, run_b: str | Path, *, variant: str | None = None) -> Comparison:
    """Compare two run directories, every variant either holds or only ``variant``."""
    read_a, read_b = require_records(run_a), require_records(run_b)
    info_a, info_b = read_run_info_if_present(run_a), read_run_info_if_present(run_b)
    seen_a = list(dict.fromkeys(r.variant for r in read_a.records))
    seen_b = list(dict.fromkeys(r.variant for r in read_b.records))
    if variant is not None:
        if variant not in seen_a and variant not in seen_b:
            raise CompareError(
                f"variant {variant!r} is in neither run ({run_a}: {', '.join(seen_a)}; "
                f"{run_b}: {', '.join(seen_b)})"
            )
        variants = [variant]
    else:
        variants = list(dict.fromkeys([*seen_a, *seen_b]))
    notes = []
    for name, read in ((run_a, read_a), (run_b, read_b)):
        if read.torn_lines:
            notes.append(f"{name}: the torn last line of results.jsonl was skipped")
        if read.invalid_lines:
            lines = ", ".join(str(n) for n in read.invalid_lines)
            notes.append(f"{name}: invalid results.jsonl lines {lines} were skipped")
    for name, info in ((run_a, info_a), (run_b, info_b)):
        if info is None:
            notes.append(f"{name} has no run.json: its configuration cannot be compared")
    notes += _judge_notes(read_a.records, read_b.records)
    comparison = Comparison(
        run_a=Path(run_a),
        run_b=Path(run_b),
        variants=[compare_records(read_a.records, read_b.records, v) for v in variants],
        notes=notes,
    )
    if info_a is not None and info_b is not None:
        _describe_differences(comparison, info_a, info_b)
    return comparison


def _judge_notes(a: list[ResultRecord], b: list[ResultRecord]) -> list[str]:
    """Who judged each run's free-form answers, when any was judged: accuracies judged by
    two judges are not measured by one rule (``offline`` is the approximate rule judge)."""
    judges_a = sorted({r.judgement.judge for r in a if r.judgement is not None})
    judges_b = sorted({r.judgement.judge for r in b if r.judgement is not None})
    if not judges_a and not judges_b:
        return []
    if judges_a == judges_b:
        return [f"free-form answers judged by {', '.join(judges_a)} in both runs"]
    return [
        f"free-form answers were judged by {', '.join(judges_a) or 'no judge'} in A and by "
        f"{', '.join(judges_b) or 'no judge'} in B: their accuracies are not one measure"
    ]


# ----------------------------------------------------------------------- differences


def _differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    keys = sorted(set(a) | set(b))
    return [
        Difference(key, a.get(key, ABSENT), b.get(key, ABSENT))
        for key in keys
        if key not in a or key not in b or a[key] != b[key]
    ]


def _describe_differences(comparison: Comparison, a: RunInfo, b: RunInfo) -> None:
    header_a = {"benchmark": a.benchmark, "annotations": a.annotations, "variants": a.variants}
    header_b = {"benchmark": b.benchmark, "annotations": b.annotations, "variants": b.variants}
    comparison.described = True
    comparison.header = _differences(header_a, header_b)
    comparison.config = _differences(flatten(a.config), flatten(b.config))
    comparison.prompts = _differences(a.prompt_hashes, b.prompt_hashes)
    comparison.models_a = dict(a.models)
    comparison.models_b = dict(b.models)
    if a.config_hash and a.config_hash == b.config_hash and comparison.config:
        comparison.notes.append("the config hashes are equal although some keys differ")


# ---------------------------------------------------------------------------- text


def render_comparison(comparison: Comparison) -> str:
    out = [
        f"A: {comparison.run_a}",
        f"B: {comparison.run_b}",
        "Paired: same variant and question id, finished with a gold letter in both runs; "
        "a failed question counts as wrong.",
    ]
    for v in comparison.variants:
        out += ["", *_variant_lines(v)]
    out += ["", "What differs between the runs:"]
    if not comparison.described:
        out.append("  not known: a run.json is missing")
    else:
        out += [f"  {d.key}: {_value(d.a)} -> {_value(d.b)}" for d in comparison.header]
        if comparison.config:
            out.append(f"  config ({len(comparison.config)} keys):")
            out += [f"    {d.key}: {_value(d.a)} -> {_value(d.b)}" for d in comparison.config]
        else:
            out.append("  config: identical")
        if comparison.prompts:
            out.append(f"  prompts whose hash differs ({len(comparison.prompts)}):")
            out += [f"    {d.key}: {_value(d.a)} -> {_value(d.b)}" for d in comparison.prompts]
        else:
            out.append("  prompts: same hashes")
        roles = sorted(set(comparison.models_a) | set(comparison.models_b))
        out.append("  models per role:" if roles else "  models: not recorded")
        for role in roles:
            ma = comparison.models_a.get(role, ABSENT)
            mb = comparison.models_b.get(role, ABSENT)
            out.append(f"    {role}: {ma}" + ("" if ma == mb else f" -> {mb}"))
    if comparison.notes:
        out += ["", "Notes:", *(f"  {note}" for note in comparison.notes)]
    return "\n".join(out) + "\n"


def _variant_lines(v: VariantComparison) -> list[str]:
    unpaired = f"{len(v.only_in_a)} scored only in A, {len(v.only_in_b)} only in B"
    lines = [f"variant {v.variant}: {v.paired} paired questions ({unpaired})"]
    if v.paired == 0:
        lines.append("  nothing to compare: no question is scored in both runs")
        return lines
    diff = v.difference_points
    lines.append(
        f"  accuracy A {_pct(v.accuracy_a)}, B {_pct(v.accuracy_b)}, B - A {diff:+.1f} points"
    )
    lines.append(f"  cost per question A {_cost(v.usage_a)}; B {_cost(v.usage_b)}")
    t = v.test
    lines.append(
        f"  both right {v.both_right}, both wrong {v.both_wrong}, right only in A {t.a_only}, "
        f"right only in B {t.b_only}"
    )
    lines.append(
        f"  McNemar exact p = {t.p_exact:.4g} (two-sided binomial on {t.discordant} "
        "discordant pairs; the p-value reported)"
    )
    if t.chi2 is not None and t.p_chi2 is not None:
        lines.append(
            f"  chi-square with continuity correction: {t.chi2:.3f}, p = {t.p_chi2:.4g} "
            "(for reference; unreliable under about 25 discordant pairs)"
        )
    lines.append(f"  wrong in A, right in B ({len(v.became_right)}): {_ids(v.became_right)}")
    lines.append(f"  right in A, wrong in B ({len(v.became_wrong)}): {_ids(v.became_wrong)}")
    if v.only_in_a:
        lines.append(f"  scored only in A: {_ids(v.only_in_a)}")
    if v.only_in_b:
        lines.append(f"  scored only in B: {_ids(v.only_in_b)}")
    if v.gold_differs:
        lines.append(
            f"  warning: the gold letter differs for {len(v.gold_differs)} paired questions "
            f"(different annotations?): {_ids(v.gold_differs)}"
        )
    if v.grounding is not None:
        lines += _grounding_lines(v.grounding)
    return lines


def _grounding_lines(g: GroundingComparison) -> list[str]:
    t = g.test
    return [
        f"  grounding ({g.paired} questions with evidence spans finished in both): hit rate "
        f"A {100 * g.hits_a / g.paired:.1f}% ({g.hits_a}), B {100 * g.hits_b / g.paired:.1f}% "
        f"({g.hits_b}), B - A {g.hit_difference_points:+.1f} points; mIoU A {g.miou_a:.3f}, "
        f"B {g.miou_b:.3f}, mean paired difference B - A {g.miou_difference:+.3f}",
        f"  hit only in A {t.a_only}, only in B {t.b_only}: McNemar exact p = {t.p_exact:.4g}",
        f"  missed in A, hit in B ({len(g.became_hit)}): {_ids(g.became_hit)}",
        f"  hit in A, missed in B ({len(g.lost_hit)}): {_ids(g.lost_hit)}",
    ]


def _cost(u: UsageStats) -> str:
    """Mean dollars, calls and prompt tokens per question; unpriced is named, never $0."""
    if u.questions == 0:
        return "no finished question"
    dollars = (
        unpriced_text(u.unpriced_questions)
        if u.unpriced_questions
        else f"${u.cost_usd_mean or 0.0:.4f}"
    )
    return f"{dollars}, {u.calls or 0:.1f} calls, {u.prompt_tokens or 0:,.0f} prompt tokens"


def _pct(acc: Accuracy) -> str:
    return "–" if acc.percent is None else f"{acc.percent:.1f}% ({acc.correct}/{acc.total})"


def _ids(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "none"


def _value(value: Any) -> str:
    return value if value == ABSENT else json.dumps(value, ensure_ascii=False)
