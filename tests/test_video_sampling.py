"""Where uniform samples fall (pure planning), with and without keyframe snapping."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from videotapestry.video.sampling import (
    allocate_frames,
    keyframes_before,
    plan_uniform_indices,
    sample_centers,
)
from videotapestry.video.windows import TimeWindow


def test_centres_of_equal_slots() -> None:
    assert sample_centers(10.0, 20.0, 4) == [11.25, 13.75, 16.25, 18.75]
    assert sample_centers(0.0, 1.0, 0) == []


def test_snapping_prefers_a_nearby_keyframe_and_keeps_exact_centres_otherwise() -> None:
    # 25 fps, 100 s, keyframes every 10 s; ten 10 s slots with centres at 5, 15, ... s.
    keyframes = np.arange(0, 2500, 250)
    exact = plan_uniform_indices(0, 100, 10, fps=25, frame_count=2500)
    assert exact == [125 + 250 * k for k in range(10)]
    # Centres sit 5 s from the nearest keyframe: a 0.25 band (2.5 s) reaches none ...
    assert (
        plan_uniform_indices(
            0,
            100,
            10,
            fps=25,
            frame_count=2500,
            keyframe_before=keyframes_before(keyframes),
            keyframe_snap=0.25,
        )
        == exact
    )
    # ... a 0.5 band (5 s) reaches them; a keyframe on a slot border goes to the later slot.
    assert plan_uniform_indices(
        0,
        100,
        10,
        fps=25,
        frame_count=2500,
        keyframe_before=keyframes_before(keyframes),
        keyframe_snap=0.5,
    ) == [250 * k for k in range(10)]
    shifted = keyframes + 100  # keyframes at 4 s, 14 s, ...: one second from each centre
    assert (
        plan_uniform_indices(
            0,
            100,
            10,
            fps=25,
            frame_count=2500,
            keyframe_before=keyframes_before(shifted),
            keyframe_snap=0.25,
        )
        == shifted.tolist()
    )


def test_a_window_with_fewer_frames_than_samples_gives_each_frame_once() -> None:
    assert plan_uniform_indices(2.0, 2.2, 30, fps=25, frame_count=100) == [50, 51, 52, 53, 54]


@settings(max_examples=400, deadline=None)
@given(
    fps=st.sampled_from([1.0, 5.0, 24.0, 25.0, 30000 / 1001, 60.0]),
    frame_count=st.integers(min_value=1, max_value=200_000),
    start_fraction=st.floats(min_value=0, max_value=1),
    length_fraction=st.floats(min_value=0, max_value=1),
    count=st.integers(min_value=1, max_value=150),
    gop=st.integers(min_value=1, max_value=600),
    snap=st.floats(min_value=0, max_value=0.5),
)
def test_plan_properties(fps, frame_count, start_fraction, length_fraction, count, gop, snap):
    duration = frame_count / fps
    start = start_fraction * duration
    end = start + length_fraction * (duration - start)
    keyframes = np.arange(0, frame_count, gop)
    indices = plan_uniform_indices(
        start,
        end,
        count,
        fps=fps,
        frame_count=frame_count,
        keyframe_before=keyframes_before(keyframes),
        keyframe_snap=snap,
    )
    assert indices == sorted(set(indices))
    assert 1 <= len(indices) <= count
    assert all(0 <= i < frame_count for i in indices)
    width = (end - start) / count
    for index in indices:  # inside the window (the frame on screen at its start counts)
        assert start - 1 / fps - 1e-9 <= index / fps <= end + 1e-9
    if width * fps >= 2.5:  # every slot holds its own frames: exactly one sample per slot
        assert len(indices) == count
        for k, index in enumerate(indices):
            center = start + (k + 0.5) * width
            on_keyframe = index % gop == 0 and abs(index / fps - center) <= snap * width + 1e-9
            assert on_keyframe or index == math.floor(center * fps + 1e-6)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=5000), min_size=1, max_size=8),
    st.integers(min_value=0, max_value=120),
)
def test_allocation_properties(durations, count) -> None:
    windows = [TimeWindow(0.0, d) for d in durations]
    counts = allocate_frames(windows, count)
    assert len(counts) == len(windows)
    assert sum(counts) == count
    assert all(c >= 0 for c in counts)
    if count >= len(windows):
        assert all(c >= 1 for c in counts)


def test_allocation_follows_durations() -> None:
    windows = [TimeWindow(0, 10), TimeWindow(20, 50), TimeWindow(60, 61)]
    assert allocate_frames(windows, 40) == [10, 29, 1]
    assert allocate_frames(windows, 2) == [1, 1, 0]
    assert allocate_frames([], 10) == []


@given(st.integers(min_value=1, max_value=50))
def test_zero_length_windows_share_evenly(count) -> None:
    assume(count >= 2)
    counts = allocate_frames([TimeWindow(5, 5), TimeWindow(9, 9)], count)
    assert abs(counts[0] - counts[1]) <= 1


def test_reuse_takes_the_kept_frame_nearest_the_centre_within_its_band() -> None:
    # 25 fps, 100 s, ten 10 s slots with centres at frames 125, 375, ...; kept frames near
    # some centres. A 0.25 band is 2.5 s = 62.5 frames either side.
    kept = {100, 140, 300, 600, 1000}

    def kept_near(low: int, high: int, center: float) -> int | None:
        inside = [i for i in kept if low <= i <= high]
        return min(inside, key=lambda i: (abs(i - center), i)) if inside else None

    plan = plan_uniform_indices(
        0, 100, 10, fps=25, frame_count=2500, kept_near=kept_near, frame_reuse=0.25
    )
    # 140 is nearer 125 than 100; 300 is 75 frames from 375 (outside); 600 is 25 from 625;
    # 1000 is exactly 1000 - 875 = 125 away (outside).
    assert plan == [140, 375, 600, 875, *(125 + 250 * k for k in range(4, 10))]
    # A kept frame comes before a keyframe in the band; 0 reuses nothing.
    snapped = plan_uniform_indices(
        0,
        100,
        10,
        fps=25,
        frame_count=2500,
        keyframe_before=keyframes_before(np.arange(0, 2500, 250) + 120),
        keyframe_snap=0.25,
        kept_near=kept_near,
        frame_reuse=0.25,
    )
    assert snapped[:3] == [140, 370, 600]
    exact = plan_uniform_indices(0, 100, 10, fps=25, frame_count=2500)
    assert plan_uniform_indices(0, 100, 10, fps=25, frame_count=2500, kept_near=kept_near) == exact


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 40),
    reuse=st.floats(0.01, 0.5),
    kept=st.sets(st.integers(0, 2499), max_size=200),
)
def test_reused_samples_stay_in_their_slots_and_distinct(
    count: int, reuse: float, kept: set[int]
) -> None:
    ordered = sorted(kept)

    def kept_near(low: int, high: int, center: float) -> int | None:
        inside = [i for i in ordered if low <= i <= high]
        return min(inside, key=lambda i: (abs(i - center), i)) if inside else None

    plan = plan_uniform_indices(
        0, 100, count, fps=25, frame_count=2500, kept_near=kept_near, frame_reuse=reuse
    )
    width = 100 / count
    exact = plan_uniform_indices(0, 100, count, fps=25, frame_count=2500)
    assume(len(exact) == count)
    assert len(plan) == count and plan == sorted(set(plan))
    for k, index in enumerate(plan):
        center = (k + 0.5) * width
        if index != exact[k]:
            assert index in kept
            assert center - reuse * width - 1e-6 <= index / 25 < center + reuse * width


def test_the_cache_finds_kept_frames_by_position_and_forgets_evicted_ones() -> None:
    from videotapestry.video import Frame, FrameCache

    image = np.zeros((2, 2, 3), dtype=np.uint8)
    cache = FrameCache(max_bytes=3 * image.nbytes)
    for index in (10, 20, 30):
        cache.put(("fp", None, index), Frame(index / 25, index, image))
    assert cache.nearest(("fp", None), 0, 100, 24.0) == 20
    assert cache.nearest(("fp", None), 0, 100, 15.0) == 10  # a tie goes to the earlier one
    assert cache.nearest(("fp", None), 11, 19, 15.0) is None
    assert cache.nearest(("fp", 160), 0, 100, 20.0) is None  # another decoded size
    assert cache.nearest(("other", None), 0, 100, 20.0) is None
    cache.put(("fp", None, 40), Frame(40 / 25, 40, image))  # evicts 10
    assert cache.stats.evicted == 1 and len(cache) == 3
    assert cache.nearest(("fp", None), 0, 15, 10.0) is None
    assert cache.nearest(("fp", None), 0, 100, 0.0) == 20
