"""Span sets: every figure below is worked out by hand in the comment beside it."""

from __future__ import annotations

import math

import pytest

from videotapestry.time_spans import checked, intersection, iou, overlaps, total_length, union


def test_union_merges_overlapping_and_touching_spans_and_sorts_them() -> None:
    # (30,40) stands alone; (0,10)+(5,12) overlap -> (0,12); (12,15) touches it -> (0,15).
    assert union([(30, 40), (5, 12), (0, 10), (12, 15)]) == [(0.0, 15.0), (30.0, 40.0)]
    # A moment inside a span disappears into it; one outside stays a moment.
    assert union([(0, 10), (4, 4), (20, 20)]) == [(0.0, 10.0), (20.0, 20.0)]
    assert union([]) == []


def test_total_length_counts_each_second_once() -> None:
    # (0,10) and (5,15) cover 0..15: 15 s, not 10 + 10; plus (20,22): 2 s; a moment: 0 s.
    assert total_length([(0, 10), (5, 15), (20, 22), (30, 30)]) == 17.0
    assert total_length([]) == 0.0


def test_intersection_of_two_sets_is_taken_on_their_unions() -> None:
    a = [(0, 10), (5, 20), (40, 50)]  # union: (0,20), (40,50)
    b = [(15, 45), (60, 70)]
    # (0,20)∩(15,45) = (15,20); (40,50)∩(15,45) = (40,45); (60,70) meets nothing.
    assert intersection(a, b) == [(15.0, 20.0), (40.0, 45.0)]
    assert intersection(b, a) == intersection(a, b)
    # Touching sets share the one moment 10 s.
    assert intersection([(0, 10)], [(10, 20)]) == [(10.0, 10.0)]
    assert intersection([(0, 10)], []) == []


def test_iou_by_hand() -> None:
    # Cited (10,30), evidence (20,40): intersection 10 s, union 10..40 = 30 s -> 1/3.
    assert iou([(10, 30)], [(20, 40)]) == pytest.approx(1 / 3)
    # Cited twice over the same place counts once: (10,30)+(15,25) is still (10,30).
    assert iou([(10, 30), (15, 25)], [(20, 40)]) == pytest.approx(1 / 3)
    # Two evidence spans (0,10), (20,30) against cited (5,25): intersection (5,10)+(20,25)
    # = 10 s; union (0,30) = 30 s -> 1/3.
    assert iou([(5, 25)], [(0, 10), (20, 30)]) == pytest.approx(1 / 3)
    # Cited (0,10) inside evidence (0,40): 10 / 40.
    assert iou([(0, 10)], [(0, 40)]) == pytest.approx(0.25)
    assert iou([(3, 9)], [(3, 9)]) == 1.0
    assert iou([(0, 10)], [(20, 30)]) == 0.0


def test_moments_hit_but_have_no_length() -> None:
    # A frame cited at 25 s lies inside the evidence (20,30): an overlap, but 0 s of it.
    assert overlaps([(25, 25)], [(20, 30)])
    assert iou([(25, 25)], [(20, 30)]) == 0.0
    # Nothing cited, or only moments on both sides: nothing to measure, IoU 0 (never 1).
    assert iou([], []) == 0.0
    assert iou([(5, 5)], [(5, 5)]) == 0.0
    assert not overlaps([], [(0, 10)])
    assert not overlaps([(0, 9.5)], [(10, 20)])
    assert overlaps([(0, 10)], [(10, 20)])  # closed spans: they share 10 s


@pytest.mark.parametrize(
    ("start", "end", "problem"),
    [
        (10, 5, "end before it starts"),
        (-1, 5, "before 0 s"),
        (0, math.inf, "finite"),
        (math.nan, 1, "finite"),
    ],
)
def test_a_span_that_is_not_one_is_refused(start: float, end: float, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        checked(start, end)
    with pytest.raises(ValueError, match=problem):
        union([(0, 1), (start, end)])
