"""The scoring rules of eval/metrics.py on small record sets computed by hand."""

from __future__ import annotations

import json

import pytest
from eval_support import record

from videotapestry.eval.metrics import (
    by_category,
    counts,
    percentile,
    spread,
    usage,
    variant_metrics,
)
from videotapestry.eval.run_reader import parse_records


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([5.0], 95, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),  # position 1.5: halfway between 2 and 3
        ([4.0, 1.0, 3.0, 2.0], 95, 3.85),  # position 2.85: 3 + 0.85 * (4 - 3)
        ([10.0, 20.0], 0, 10.0),
        ([10.0, 20.0], 100, 20.0),
    ],
)
def test_percentile_interpolates_between_ranks(values, q, expected) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_and_spread_of_nothing_are_unknown() -> None:
    assert percentile([], 50) is None
    assert spread([]).mean is None and spread([]).n == 0


def test_a_failed_question_is_wrong_and_a_skipped_one_is_not_scored() -> None:
    metrics = variant_metrics(
        [
            record("q1", "A", "A"),
            record("q2", "B", None, error="timeout", error_type="ModelTimeoutError"),
            record("q3", "C", None, status="skipped"),
            record("q4", None, "D"),  # no gold: finished but unscored
        ]
    )
    assert (metrics.accuracy.correct, metrics.accuracy.total) == (1, 2)
    assert (metrics.accuracy_answered.correct, metrics.accuracy_answered.total) == (1, 1)
    c = metrics.counts
    assert (c.questions, c.answered, c.failed, c.skipped, c.unscored) == (4, 2, 1, 1, 1)
    assert c.error_types == {"ModelTimeoutError": 1}


def test_correctness_comes_from_the_letters_not_the_stored_flag() -> None:
    tampered = record("q1", "A", "B").model_copy(update={"correct": True})
    assert variant_metrics([tampered]).accuracy.correct == 0


def test_guessed_degraded_and_clean_partition_the_answered_questions() -> None:
    records = [
        record("q1", "A", "A", fallback=True, degraded=["answer_fallback"]),
        # A guess noted only among the degradations still counts as a guess, once.
        record("q2", "B", "B", degraded=["answer_fallback", "asr_lost"]),
        record("q3", "C", "C", degraded=["visual_lost", "visual_lost", "call_fallback"]),
        record("q4", "D", "A"),
    ]
    c = counts(records)
    assert (c.fallback, c.degraded, c.clean) == (2, 1, 1)
    assert c.fallback + c.degraded + c.clean == c.answered
    assert c.degradation_kinds == {
        "answer_fallback": 2,
        "asr_lost": 1,
        "call_fallback": 1,
        "visual_lost": 1,
    }
    metrics = variant_metrics(records)
    assert (metrics.accuracy.correct, metrics.accuracy.total) == (3, 4)
    assert metrics.accuracy_no_fallback.correct == 1  # q1, q2 were right by guessing
    assert (metrics.accuracy_clean.correct, metrics.accuracy_clean.total) == (0, 1)


def test_a_record_saved_when_a_made_up_citation_degraded_the_run_reads_it_as_a_warning() -> None:
    older = b"\n".join(
        json.dumps(
            {"question_id": q, "variant": "full", "video_id": "v", "status": "answered",
             "prediction": "A", "gold": "A", "degraded": degraded}
        ).encode()
        for q, degraded in (("q1", ["citation_invalid"]), ("q2", ["asr_lost", "citation_invalid"]))
    )  # fmt: skip
    q1, q2 = parse_records(older).records
    assert (q1.degraded, q1.warnings) == ([], ["citation_invalid"])
    assert (q2.degraded, q2.warnings) == (["asr_lost"], ["citation_invalid"])
    c = counts([q1, q2])
    assert (c.degraded, c.clean, c.warned) == (1, 1, 2)
    assert c.degradation_kinds == {"asr_lost": 1}
    metrics = variant_metrics([q1, q2])
    assert (metrics.accuracy_clean.correct, metrics.accuracy_clean.total) == (1, 1)


def test_a_question_counts_once_in_each_category_it_carries() -> None:
    groups = by_category(
        [
            record("q1", "A", "A", categories=("temporal", "counting", "temporal")),
            record("q2", "A", "B", categories=("counting",)),
            record("q3", "A", None, categories=("ocr",)),
        ]
    )
    assert {k: (v.correct, v.total) for k, v in groups.items()} == {
        "counting": (1, 2),
        "ocr": (0, 1),
        "temporal": (1, 1),
    }
    assert list(groups) == ["counting", "ocr", "temporal"]


def test_one_unpriced_question_makes_the_cost_unknown() -> None:
    priced = {"calls": 2, "cost_usd": 0.5}
    stats = usage(
        [
            record("q1", "A", "A", usage=priced),
            record("q2", "A", "A", usage={"calls": 4, "cost_usd": None}),
        ]
    )
    assert stats.calls == 3.0
    assert stats.cost_usd_mean is None and stats.cost_usd_total is None
    assert stats.unpriced_questions == 1
    assert usage([record("q1", "A", "A", usage=priced)]).cost_usd_total == 0.5


def test_the_last_record_of_a_question_is_the_one_scored() -> None:
    metrics = variant_metrics([record("q1", "A", None), record("q1", "A", "A")])
    assert (metrics.accuracy.correct, metrics.accuracy.total) == (1, 1)
    assert metrics.counts.failed == 0


def test_records_of_two_variants_are_refused_by_variant_metrics() -> None:
    with pytest.raises(ValueError, match="several variants"):
        variant_metrics([record("q1", "A", "A"), record("q1", "A", "A", variant="wo_asr")])
