"""What a run's records add up to: accuracy, outcome counts and per-question usage.

Scoring rules, chosen so a headline number cannot flatter a run:

- A question is *scored* when it finished (answered or failed) and has a gold letter, or
  is free-form with a reference answer the judge ruled on (``scoring``). Skipped questions
  were never run (the run stopped); they are counted, not scored, and a rerun asks them.
  Questions without a gold letter (EgoSchema outside its public subset) or a verdict are
  counted as unscored.
- The headline accuracy is over every scored question, and a failed question counts as
  wrong: a method that errors on the hard questions must not score higher for it.
- A guessed letter (``fallback``) is scored as given, like any benchmark would score it;
  ``accuracy_no_fallback`` counts guesses as wrong instead, and ``accuracy_clean`` is over
  the subset answered with the method intact (no guess, no degradation). That subset is
  self-selected, so it is shown next to the headline, never instead of it. A warning (a
  made-up citation) is no loss of the method: a warned answer can be clean, and is counted
  apart (``warned``).
- Correctness is recomputed from ``prediction`` and ``gold`` rather than trusted from the
  record, so an edited or older record cannot disagree with its own letters.
- Grounding (``grounding``) is reported beside accuracy for the questions with evidence
  spans, with the count of answers that cited nothing.

Every function here is pure over records; reading the files is ``results.py``'s job.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from videotapestry.eval.grounding import Grounding, grounding, grounding_by
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.run_reader import latest
from videotapestry.eval.scoring import (
    Accuracy,
    is_correct,
    is_degraded,
    is_guess,
    is_scored,
    is_unjudged,
)


@dataclass(frozen=True)
class Counts:
    """Outcomes of a variant's questions (latest record of each)."""

    questions: int = 0
    answered: int = 0
    failed: int = 0
    skipped: int = 0
    #: Finished, but without a gold letter (or a judge's verdict) to score against.
    unscored: int = 0
    #: Of the unscored: free-form answers with a reference the judge gave no verdict on.
    unjudged: int = 0
    #: Answered with a guessed letter. ``fallback + degraded + clean == answered``.
    fallback: int = 0
    #: Answered with the model's own letter, but the method lost something on the way.
    degraded: int = 0
    #: Answered, no guess and no degradation.
    clean: int = 0
    #: Answered with a warning (whatever else): a cited id that named nothing.
    warned: int = 0
    degradation_kinds: dict[str, int] = field(default_factory=dict)
    warning_kinds: dict[str, int] = field(default_factory=dict)
    error_types: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "answered": self.answered,
            "failed": self.failed,
            "skipped": self.skipped,
            "unscored": self.unscored,
            "unjudged": self.unjudged,
            "fallback": self.fallback,
            "degraded": self.degraded,
            "clean": self.clean,
            "warned": self.warned,
            "degradation_kinds": dict(self.degradation_kinds),
            "warning_kinds": dict(self.warning_kinds),
            "error_types": dict(self.error_types),
        }


@dataclass(frozen=True)
class Spread:
    """Mean and percentiles (linear interpolation between ranks, numpy's default)."""

    n: int = 0
    mean: float | None = None
    p50: float | None = None
    p95: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "p50": self.p50, "p95": self.p95}


def unpriced_text(questions: int) -> str:
    """What a cost column shows for questions whose cost is unknown: never a dollar figure."""
    return f"unpriced ({questions} question{'s' * (questions != 1)})"


@dataclass(frozen=True)
class UsageStats:
    """Per-question means over finished questions (a failed question spent calls too).

    ``cost_usd_mean`` and ``cost_usd_total`` are None when any question's cost is unknown
    (some call's model has no price): a partial sum would read as the whole bill.
    """

    questions: int = 0
    calls: float | None = None
    cached_calls: int = 0
    failed_calls: int = 0
    images: float | None = None
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    #: Means per question: prompt tokens the provider served from its cache, reasoning
    #: tokens, and seconds spent waiting on the model.
    cached_prompt_tokens: float | None = None
    reasoning_tokens: float | None = None
    model_s: float | None = None
    cost_usd_mean: float | None = None
    cost_usd_total: float | None = None
    unpriced_questions: int = 0
    latency_s: Spread = field(default_factory=Spread)
    #: Mean composite-memory tokens over answered questions that had a memory (None for
    #: Direct, which has none).
    memory_tokens: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "images": self.images,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "model_s": self.model_s,
            "cost_usd_mean": self.cost_usd_mean,
            "cost_usd_total": self.cost_usd_total,
            "unpriced_questions": self.unpriced_questions,
            "latency_s": self.latency_s.to_dict(),
            "memory_tokens": self.memory_tokens,
        }


@dataclass(frozen=True)
class VariantMetrics:
    variant: str
    counts: Counts
    accuracy: Accuracy
    accuracy_answered: Accuracy
    accuracy_no_fallback: Accuracy
    accuracy_clean: Accuracy
    by_category: dict[str, Accuracy]
    by_duration: dict[str, Accuracy]
    usage: UsageStats
    grounding: Grounding = field(default_factory=Grounding)
    grounding_by_category: dict[str, Grounding] = field(default_factory=dict)
    #: Answered questions (with or without evidence spans) whose answer cited nothing.
    answers_uncited: int = 0
    #: Who judged the free-form answers: judge name -> answers it judged (``offline`` is
    #: the approximate rule judge).
    judges: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "counts": self.counts.to_dict(),
            "accuracy": self.accuracy.to_dict(),
            "accuracy_answered": self.accuracy_answered.to_dict(),
            "accuracy_no_fallback": self.accuracy_no_fallback.to_dict(),
            "accuracy_clean": self.accuracy_clean.to_dict(),
            "by_category": {k: v.to_dict() for k, v in self.by_category.items()},
            "by_duration": {k: v.to_dict() for k, v in self.by_duration.items()},
            "usage": self.usage.to_dict(),
            "grounding": self.grounding.to_dict(),
            "grounding_by_category": {
                k: v.to_dict() for k, v in self.grounding_by_category.items()
            },
            "answers_uncited": self.answers_uncited,
            "judges": dict(self.judges),
        }


# ----------------------------------------------------------------------------- scoring


def accuracy(
    records: Iterable[ResultRecord],
    *,
    include: Callable[[ResultRecord], bool] = is_scored,
    correct: Callable[[ResultRecord], bool] = is_correct,
) -> Accuracy:
    chosen = [r for r in records if include(r)]
    return Accuracy(correct=sum(1 for r in chosen if correct(r)), total=len(chosen))


def accuracy_by(
    records: Iterable[ResultRecord], groups: Callable[[ResultRecord], Iterable[str]]
) -> dict[str, Accuracy]:
    """Accuracy per group; a record counts in every group it belongs to. Sorted by name."""
    tally: dict[str, list[int]] = {}
    for record in records:
        if not is_scored(record):
            continue
        for group in dict.fromkeys(groups(record)):  # a category listed twice counts once
            right_total = tally.setdefault(group, [0, 0])
            right_total[0] += int(is_correct(record))
            right_total[1] += 1
    return {g: Accuracy(correct=c, total=t) for g, (c, t) in sorted(tally.items())}


def by_category(records: Iterable[ResultRecord]) -> dict[str, Accuracy]:
    return accuracy_by(records, lambda r: r.categories)


def by_duration(records: Iterable[ResultRecord]) -> dict[str, Accuracy]:
    return accuracy_by(records, lambda r: [] if r.duration_group is None else [r.duration_group])


def counts(records: Iterable[ResultRecord]) -> Counts:
    records = list(records)
    answered = [r for r in records if r.status == "answered"]
    kinds = Counter(kind for r in answered for kind in dict.fromkeys(r.degraded))
    warnings = Counter(kind for r in answered for kind in dict.fromkeys(r.warnings))
    errors = Counter(r.error_type or "unknown" for r in records if r.status == "failed")
    return Counts(
        questions=len(records),
        answered=len(answered),
        failed=sum(1 for r in records if r.status == "failed"),
        skipped=sum(1 for r in records if r.status == "skipped"),
        unscored=sum(1 for r in records if r.finished and not is_scored(r)),
        unjudged=sum(1 for r in records if is_unjudged(r)),
        fallback=sum(1 for r in answered if is_guess(r)),
        degraded=sum(1 for r in answered if not is_guess(r) and is_degraded(r)),
        clean=sum(1 for r in answered if not is_guess(r) and not r.degraded),
        warned=sum(1 for r in answered if r.warnings),
        degradation_kinds=dict(sorted(kinds.items())),
        warning_kinds=dict(sorted(warnings.items())),
        error_types=dict(sorted(errors.items())),
    )


# ------------------------------------------------------------------------------ usage


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), interpolating linearly between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values: Sequence[float]) -> Spread:
    if not values:
        return Spread()
    return Spread(
        n=len(values),
        mean=sum(values) / len(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def usage(records: Iterable[ResultRecord]) -> UsageStats:
    finished = [r for r in records if r.finished]
    if not finished:
        return UsageStats()
    costs = [r.usage.cost_usd for r in finished]
    unpriced = sum(1 for c in costs if c is None)
    known = [c for c in costs if c is not None]
    memories = [r.memory_tokens for r in finished if r.status == "answered" and r.memory_tokens]
    return UsageStats(
        questions=len(finished),
        calls=_mean([r.usage.calls for r in finished]),
        cached_calls=sum(r.usage.cached_calls for r in finished),
        failed_calls=sum(r.usage.failed_calls for r in finished),
        images=_mean([r.usage.images for r in finished]),
        prompt_tokens=_mean([r.usage.prompt_tokens for r in finished]),
        completion_tokens=_mean([r.usage.completion_tokens for r in finished]),
        cached_prompt_tokens=_mean([r.usage.cached_prompt_tokens for r in finished]),
        reasoning_tokens=_mean([r.usage.reasoning_tokens for r in finished]),
        model_s=_mean([r.usage.latency_s for r in finished]),
        cost_usd_mean=None if unpriced else _mean(known),
        cost_usd_total=None if unpriced else sum(known),
        unpriced_questions=unpriced,
        latency_s=spread([r.elapsed_s for r in finished]),
        memory_tokens=_mean(memories),
    )


# --------------------------------------------------------------------------- variants


def variant_metrics(records: Iterable[ResultRecord]) -> VariantMetrics:
    """Everything for one variant's records (the latest per question is taken here)."""
    chosen = list(latest(records).values())
    variants = {r.variant for r in chosen}
    if len(variants) > 1:
        raise ValueError(f"records of several variants: {sorted(variants)}")
    return VariantMetrics(
        variant=chosen[0].variant if chosen else "",
        counts=counts(chosen),
        accuracy=accuracy(chosen),
        accuracy_answered=accuracy(chosen, include=lambda r: is_scored(r) and not _failed(r)),
        accuracy_no_fallback=accuracy(chosen, correct=lambda r: is_correct(r) and not is_guess(r)),
        accuracy_clean=accuracy(
            chosen, include=lambda r: is_scored(r) and not _failed(r) and not _lossy(r)
        ),
        by_category=by_category(chosen),
        by_duration=by_duration(chosen),
        usage=usage(chosen),
        grounding=grounding(chosen),
        grounding_by_category=grounding_by(chosen, lambda r: r.categories),
        answers_uncited=sum(1 for r in chosen if r.status == "answered" and not r.cited_spans),
        judges=dict(
            sorted(Counter(r.judgement.judge for r in chosen if r.judgement is not None).items())
        ),
    )


def metrics_by_variant(
    records: Iterable[ResultRecord], order: Sequence[str] = ()
) -> dict[str, VariantMetrics]:
    """Per-variant metrics, in ``order`` first (run.json's variants), then as first seen."""
    grouped: dict[str, list[ResultRecord]] = {v: [] for v in order}
    for record in latest(records).values():
        grouped.setdefault(record.variant, []).append(record)
    return {v: variant_metrics(rs) for v, rs in grouped.items() if rs}


def _failed(record: ResultRecord) -> bool:
    return record.status == "failed"


def _lossy(record: ResultRecord) -> bool:
    return is_guess(record) or bool(record.degraded)
