"""Clip construction: builder clips or time bins inside MacroEvent spans, and record placement."""

from __future__ import annotations

import numpy as np
import pytest

from videotapestry.errors import RetrievalError
from videotapestry.retrieval import EvidenceRecord, TimeWindow, build_clips, time_bins

DIM = 8


def rec(rid: str, start: float, end: float | None = None, macro: str | None = None, row=None):
    vector = np.ones(DIM) if row is None else row
    return EvidenceRecord(rid, f"text of {rid}", start, end, vector, macro, "Event")


def placement(clips) -> dict[str, str]:
    return {record.id: clip.id for clip in clips for record in clip.records}


def test_time_bins_absorb_a_short_tail() -> None:
    def lengths(duration: float) -> list[float]:
        return [b.end_s - b.start_s for b in time_bins(TimeWindow("m", 100, 100 + duration), 30)]

    assert lengths(61) == [30, 31]
    assert lengths(75) == [30, 30, 15]
    assert lengths(10) == [10]
    assert lengths(0) == [0]
    bins = time_bins(TimeWindow("macro_0003", 100, 160), 30)
    assert [(b.id, b.start_s, b.end_s) for b in bins] == [
        ("macro_0003_bin00", 100, 130),
        ("macro_0003_bin01", 130, 160),
    ]


def test_interval_records_go_to_the_window_they_overlap_most() -> None:
    span = TimeWindow("m", 0, 90)
    clips = build_clips(
        [
            rec("mostly_second", 20, 50),  # 10 s in bin 0, 20 s in bin 1
            rec("even_split", 50, 70),  # 10 s each in bins 1 and 2 -> the earlier one
            rec("inside", 65, 80),
        ],
        [span],
    )
    assert placement(clips) == {
        "mostly_second": "m_bin01",
        "even_split": "m_bin01",
        "inside": "m_bin02",
    }


def test_point_records_use_half_open_windows_and_the_span_end_counts() -> None:
    clips = build_clips(
        [rec("start", 0.0), rec("boundary", 30.0), rec("end", 60.0), rec("zero_len", 45.0, 45.0)],
        [TimeWindow("m", 0, 60)],
    )
    assert placement(clips) == {
        "start": "m_bin00",
        "boundary": "m_bin01",
        "end": "m_bin01",
        "zero_len": "m_bin01",
    }


def test_records_outside_every_window_go_to_the_nearest_one() -> None:
    clips = build_clips(
        [rec("before", 5.0), rec("after", 200.0, 210.0), rec("gap", 130.0)],
        [TimeWindow("a", 10, 70), TimeWindow("b", 150, 180)],
    )
    assert placement(clips) == {"before": "a_bin00", "after": "b_bin00", "gap": "b_bin00"}


def test_macro_id_keeps_a_record_inside_its_own_macro_event() -> None:
    spans = [TimeWindow("m1", 0, 60), TimeWindow("m2", 30, 90)]  # overlapping MacroEvents
    clips = build_clips(
        [rec("of_m2", 40.0, 50.0, macro="m2"), rec("of_m1", 40.0, 50.0, macro="m1"),
         rec("no_macro", 40.0, 50.0), rec("unknown_macro", 40.0, 50.0, macro="m9")],
        spans,
    )  # fmt: skip
    where = placement(clips)
    assert where["of_m2"] == "m2_bin00"
    assert where["of_m1"] == "m1_bin01"
    assert where["no_macro"] == where["unknown_macro"] == "m1_bin01"  # earliest of the ties


def test_builder_clips_are_used_when_given_and_limited_to_the_spans() -> None:
    builder = [
        TimeWindow("clip_0", 0, 12),
        TimeWindow("clip_1", 12, 31),
        TimeWindow("clip_2", 31, 47),
        TimeWindow("clip_3", 47, 60),
    ]
    records = [rec("a", 2, 4), rec("b", 13, 30), rec("c", 35), rec("d", 50, 55)]
    clips = build_clips(records, [TimeWindow("m", 12, 40)], builder_clips=builder, bin_s=30)
    # clip_0 and clip_3 lie outside the span; their records go to the nearest kept clip.
    assert [c.id for c in clips] == ["clip_1", "clip_2"]
    assert placement(clips) == {"a": "clip_1", "b": "clip_1", "c": "clip_2", "d": "clip_2"}
    assert (clips[0].start_s, clips[0].end_s) == (12, 31)
    everything = build_clips(records, [], builder_clips=builder)
    assert [c.id for c in everything] == ["clip_0", "clip_1", "clip_2", "clip_3"]


def test_clips_are_chronological_and_rows_follow_their_records() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(6, DIM)).astype(np.float32)
    starts = [70, 5, 40, 3, 65, 35]
    kinds = ["Entity", "Event", "OCRText", "Event", "Entity", "Event"]
    records = [
        EvidenceRecord(f"r{i}", f"t{i}", start, None, i, "m", kind)
        for i, (start, kind) in enumerate(zip(starts, kinds, strict=True))
    ]
    clips = build_clips(records, [TimeWindow("m", 0, 90)], embeddings=matrix)
    assert [c.id for c in clips] == ["m_bin00", "m_bin01", "m_bin02"]
    assert [[r.id for r in c.records] for c in clips] == [["r3", "r1"], ["r5", "r2"], ["r4", "r0"]]
    for built in clips:
        rows = [int(r.id[1:]) for r in built.records]
        assert np.array_equal(built.embeddings, matrix[rows])
        assert built.macro_id == "m"


def test_empty_bins_are_dropped_and_no_records_means_no_clips() -> None:
    clips = build_clips([rec("only", 100.0)], [TimeWindow("m", 0, 150)])
    assert [c.id for c in clips] == ["m_bin03"]
    assert build_clips([], [TimeWindow("m", 0, 150)]) == []


def test_vectors_and_row_indices_can_be_mixed() -> None:
    matrix = np.eye(DIM, dtype=np.float32)
    clips = build_clips(
        [rec("by_row", 1.0, row=2), rec("by_vector", 2.0, row=np.full(DIM, 0.5))],
        [TimeWindow("m", 0, 30)],
        embeddings=matrix,
    )
    assert clips[0].embeddings.tolist() == [matrix[2].tolist(), [0.5] * DIM]


@pytest.mark.parametrize(
    ("records", "spans", "kwargs", "message"),
    [
        ([rec("r", 1.0, row=3)], [TimeWindow("m", 0, 30)], {},
         "record 'r' names embedding row 3 but no embeddings matrix"),
        ([rec("r", 1.0, row=9)], [TimeWindow("m", 0, 30)], {"embeddings": np.eye(4)},
         r"record 'r': embedding row 9 is outside the matrix \(4 rows\)"),
        ([rec("a", 1.0), rec("b", 2.0, row=np.ones(3))], [TimeWindow("m", 0, 30)], {},
         "record 'b' has a 3-dimensional embedding but 'a' has 8"),
        ([rec("r", 1.0, row=np.ones((2, DIM)))], [TimeWindow("m", 0, 30)], {},
         r"record 'r': embedding must be a 1-D vector or a row index, got shape \(2, 8\)"),
        ([rec("r", 5.0, 2.0)], [TimeWindow("m", 0, 30)], {},
         "record 'r': end_s 2.0 is before start_s 5.0"),
        ([rec("r", float("nan"))], [TimeWindow("m", 0, 30)], {},
         "record 'r': times must be finite"),
        ([rec("r", 1.0)], [TimeWindow("m", 30, 0)], {},
         "MacroEvent span 'm': end_s 0 is before start_s 30"),
        ([rec("r", 1.0)], [], {"builder_clips": [TimeWindow("k", 9, 3)]},
         "builder clip 'k': end_s 3 is before start_s 9"),
        ([rec("r", 1.0)], [], {}, "no MacroEvent spans and no builder clips"),
        ([rec("r", 1.0)], [TimeWindow("m", 0, 30)], {"bin_s": 0},
         "clip bin length must be positive"),
    ],
)  # fmt: skip
def test_bad_input_is_a_clear_error(records, spans, kwargs, message) -> None:
    with pytest.raises(RetrievalError, match=message):
        build_clips(records, spans, **kwargs)
