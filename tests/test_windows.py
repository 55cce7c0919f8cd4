"""SPEC §5 window rules: bounds, minimum spans, the window cap, short videos, invalid plans."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from videotapestry.video.windows import (
    TimeWindow,
    as_window,
    asr_windows,
    merge_overlapping,
    observation_windows,
    visual_window,
)

EPS = 1e-6
MIN, MAX, CAP = 600.0, 1200.0, 3

# Anything a model might put in a time range: good numbers, junk, NaN, reversed, far outside.
numbers = st.floats(min_value=-5000, max_value=20000, allow_nan=False, allow_infinity=False)
junk = st.one_of(
    st.just(float("nan")), st.just(float("inf")), st.none(), st.text(max_size=3), st.booleans()
)
raw_ranges = st.one_of(
    st.tuples(numbers, numbers),
    st.lists(st.one_of(numbers, junk), min_size=0, max_size=3),
    st.fixed_dictionaries({"start": st.one_of(numbers, junk), "end": st.one_of(numbers, junk)}),
)
plans = st.one_of(st.none(), st.lists(raw_ranges, max_size=6))
durations = st.floats(min_value=0.5, max_value=10000, allow_nan=False)


def inside(window: TimeWindow, duration: float) -> bool:
    return -EPS <= window.start_s <= window.end_s <= duration + EPS


# --------------------------------------------------------------------------- visual window


def test_visual_window_merges_planned_ranges_into_their_hull() -> None:
    window = visual_window([(1000, 1300), (1900, 2100)], 3600, min_span_s=MIN)
    assert window == TimeWindow(1000, 2100)


def test_visual_window_widens_around_the_centre() -> None:
    assert visual_window([(1000, 1100)], 3600, min_span_s=MIN) == TimeWindow(750, 1350)


def test_visual_window_shifts_to_stay_inside_the_video() -> None:
    assert visual_window([(10, 20)], 3600, min_span_s=MIN) == TimeWindow(0, 600)
    assert visual_window([(3590, 3600)], 3600, min_span_s=MIN) == TimeWindow(3000, 3600)


def test_visual_window_falls_back_to_the_whole_video() -> None:
    for planned in (None, [], [(500, 100)], [(float("nan"), 5)], [(4000, 5000)], ["x"]):
        assert visual_window(planned, 3600, min_span_s=MIN) == TimeWindow(0, 3600), planned


def test_visual_window_of_a_short_video_is_the_whole_video() -> None:
    assert visual_window([(100, 120)], 300, min_span_s=MIN) == TimeWindow(0, 300)


def test_visual_window_ignores_invalid_ranges_next_to_valid_ones() -> None:
    planned = [(2000, 2700), (900, 100), ("a", 5), {"start": 2500, "end": 2900}]
    assert visual_window(planned, 3600, min_span_s=MIN) == TimeWindow(2000, 2900)


def test_visual_window_rejects_a_non_positive_duration() -> None:
    with pytest.raises(ValueError, match="duration"):
        visual_window([(0, 10)], 0, min_span_s=MIN)


@settings(max_examples=300, deadline=None)
@given(plans, durations, st.floats(min_value=0, max_value=3000))
def test_visual_window_properties(planned, duration, min_span) -> None:
    window = visual_window(planned, duration, min_span_s=min_span)
    assert inside(window, duration)
    assert window.duration_s >= min(min_span, duration) - EPS
    clipped = [w.clip(duration) for w in map(as_window, planned or []) if w is not None]
    clipped = [w for w in clipped if w is not None]
    if clipped:  # the window covers everything validly planned
        assert window.start_s <= min(w.start_s for w in clipped) + EPS
        assert window.end_s >= max(w.end_s for w in clipped) - EPS
    else:
        assert window == TimeWindow(0.0, duration)


# --------------------------------------------------------------------------- ASR windows


def asr(planned, duration, fallback=None):
    return asr_windows(planned, duration, fallback, max_windows=CAP, min_span_s=MIN, max_span_s=MAX)


def test_asr_windows_are_widened_and_shrunk_around_their_centres() -> None:
    got = asr([(1000, 1100), (2000, 3600)], 7200)
    assert got == [TimeWindow(750, 1350), TimeWindow(2200, 3400)]


def test_asr_windows_are_capped_at_three_in_plan_order() -> None:
    planned = [(0, 600), (1000, 1600), (2000, 2600), (3000, 3600), (4000, 4600)]
    assert asr(planned, 7200) == [
        TimeWindow(0, 600),
        TimeWindow(1000, 1600),
        TimeWindow(2000, 2600),
    ]


def test_asr_windows_skip_invalid_ranges_before_counting() -> None:
    planned = [(5, 1), (None, 3), (9000, 9100), (100, 200)]
    assert asr(planned, 7200) == [TimeWindow(0, 600)]


def test_asr_window_of_a_video_shorter_than_the_minimum_is_the_whole_video() -> None:
    assert asr([(10, 20), (100, 200)], 450) == [TimeWindow(0, 450)]


def test_asr_falls_back_to_the_visual_window() -> None:
    assert asr([], 3600, TimeWindow(1000, 1600)) == [TimeWindow(1000, 1600)]
    # A one-hour visual window is covered by three windows of the maximum span.
    assert asr(None, 3600, TimeWindow(0, 3600)) == [
        TimeWindow(0, 1200),
        TimeWindow(1200, 2400),
        TimeWindow(2400, 3600),
    ]
    # Too long to cover: its centre part.
    assert asr(None, 7200, TimeWindow(0, 7200)) == [
        TimeWindow(1800, 3000),
        TimeWindow(3000, 4200),
        TimeWindow(4200, 5400),
    ]
    # A short visual window is widened like any other.
    assert asr(None, 3600, TimeWindow(100, 200)) == [TimeWindow(0, 600)]
    # No usable fallback either: the whole video, covered.
    assert asr(None, 1000, None) == [TimeWindow(0, 1000)]


def test_asr_windows_reject_inconsistent_limits() -> None:
    with pytest.raises(ValueError):
        asr_windows([], 3600, None, max_windows=0, min_span_s=MIN, max_span_s=MAX)
    with pytest.raises(ValueError):
        asr_windows([], 3600, None, max_windows=3, min_span_s=900, max_span_s=600)


@settings(max_examples=300, deadline=None)
@given(
    plans,
    durations,
    st.one_of(st.none(), st.tuples(numbers, numbers).map(lambda t: TimeWindow(*sorted(t)))),
    st.integers(min_value=1, max_value=5),
    st.floats(min_value=1, max_value=1000),
    st.floats(min_value=1, max_value=3),
)
def test_asr_window_properties(planned, duration, fallback, cap, min_span, ratio) -> None:
    max_span = min_span * ratio
    got = asr_windows(
        planned, duration, fallback, max_windows=cap, min_span_s=min_span, max_span_s=max_span
    )
    assert 1 <= len(got) <= cap
    assert got == sorted(got)
    for window in got:
        assert inside(window, duration)
        if duration < min_span:
            assert window == TimeWindow(0.0, duration)
        else:
            assert min_span - EPS <= window.duration_s <= max_span + EPS


# --------------------------------------------------------------------------- Skim/Focus


def test_observation_windows_intersect_plans_with_candidates() -> None:
    got = observation_windows([(50, 130), (300, 320)], [(0, 100), (120, 200), (290, 400)])
    assert got == [TimeWindow(50, 100), TimeWindow(120, 130), TimeWindow(300, 320)]


def test_observation_windows_fall_back_to_the_candidates() -> None:
    candidates = [(120, 200), (0, 100), (90, 110)]
    expected = [TimeWindow(0, 110), TimeWindow(120, 200)]
    for planned in (None, [], [(500, 600)], [(80, 10)], [(100, 100.0 + math.nan)]):
        assert observation_windows(planned, candidates) == expected, planned


def test_observation_windows_keep_planned_moments_but_not_touching_edges() -> None:
    assert observation_windows([(50, 50)], [(0, 100)]) == [TimeWindow(50, 50)]
    # Touching at 100 only: nothing observed there, so the candidates are used.
    assert observation_windows([(100, 150)], [(0, 100)]) == [TimeWindow(0, 100)]


def test_observation_windows_clip_to_the_video() -> None:
    assert observation_windows([(50, 500)], [(0, 400)], duration_s=300) == [TimeWindow(50, 300)]
    assert observation_windows(None, [(-20, 50), (900, 950)], duration_s=300) == [TimeWindow(0, 50)]


def test_no_valid_candidate_means_no_window() -> None:
    assert observation_windows([(0, 10)], [(10, 5), "junk"]) == []


@settings(max_examples=300, deadline=None)
@given(plans, st.lists(raw_ranges, max_size=5))
def test_observation_window_properties(planned, candidates) -> None:
    got = observation_windows(planned, candidates)
    valid_candidates = [w for w in map(as_window, candidates) if w is not None]
    valid_candidates = [w.clip(math.inf) for w in valid_candidates]
    valid_candidates = [w for w in valid_candidates if w is not None]
    assert got == merge_overlapping(got)  # sorted and disjoint
    for window in got:  # never outside the candidate intervals
        assert any(
            c.start_s - EPS <= window.start_s and window.end_s <= c.end_s + EPS
            for c in merge_overlapping(valid_candidates)
        )
    assert bool(got) == bool(valid_candidates)


def test_as_window_reads_the_shapes_a_plan_takes() -> None:
    assert as_window([1, 2]) == TimeWindow(1, 2)
    assert as_window({"start_s": 1, "end_s": "2.5"}) == TimeWindow(1, 2.5)
    assert as_window(TimeWindow(3, 4)) == TimeWindow(3, 4)
    for bad in ("12", [1, 2, 3], [2, 1], {"start": 1}, [1, float("inf")], None, 5):
        assert as_window(bad) is None, bad
