"""Memory builder rules as pure functions: clips, MacroEvent windows and lengths, SuperEvent
stages, entity unification, OCR spans, checkpoints and perception normalization."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_builders import boundaries, subgraphs
from memory_builders import entities as unification
from memory_builders.checkpoints import CheckpointStore, stage_key
from memory_builders.clip_images import select_frames
from memory_builders.clip_records import normalize_perception
from memory_builders.scan import KeptFrame
from memory_builders.segmentation import ClipSpan, plan_clips
from memory_builders.summary import (
    EarlierStage,
    StagePlan,
    fixed_stages,
    kept_tail,
    revision_due,
    stages_by_time,
    stages_from_reply,
)
from videotapestry.config import BuilderOcrSettings
from videotapestry.contracts.builder import (
    ClipPerception,
    MacroBoundaries,
    ProposedRelation,
    SuperStage,
)
from videotapestry.memory import EntityNode, Relation, TimeRange
from videotapestry.ocr import OcrHit, frames_to_read, read_texts, same_text, text_key

# --------------------------------------------------------------------------- clips


@settings(max_examples=300, deadline=None)
@given(
    duration=st.floats(1, 4000),
    cuts=st.lists(st.floats(0, 4000), max_size=60),
    min_s=st.floats(2, 40),
    factor=st.floats(2, 5),
)
def test_clips_tile_the_video_inside_the_bounds(duration, cuts, min_s, factor) -> None:
    max_s = min_s * factor
    clips = plan_clips(duration, cuts, min_s=min_s, max_s=max_s)
    assert clips[0].start_s == 0 and clips[-1].end_s == duration
    for a, b in itertools.pairwise(clips):
        assert a.end_s == b.start_s  # no gap, no overlap
    for clip in clips:
        assert clip.duration_s <= max_s + 0.002
        if len(clips) > 1:
            assert clip.duration_s >= min_s - 0.002
    assert [c.id for c in clips] == [f"clip_{k:04d}" for k in range(1, len(clips) + 1)]


def test_clips_follow_shot_cuts_when_the_bounds_allow() -> None:
    clips = plan_clips(100, [12, 30, 31, 55, 80], min_s=10, max_s=30)
    # 30 -> 31 is a 1 s shot: merged into its shorter neighbour; every other cut is kept.
    assert [(c.start_s, c.end_s) for c in clips] == [
        (0, 12),
        (12, 31),
        (31, 55),
        (55, 80),
        (80, 100),
    ]


def test_long_shots_are_split_evenly_and_a_short_video_is_one_clip() -> None:
    clips = plan_clips(100, [], min_s=10, max_s=30)
    assert [c.duration_s for c in clips] == [25, 25, 25, 25]
    assert [(c.start_s, c.end_s) for c in plan_clips(6.5, [3], min_s=10, max_s=30)] == [(0, 6.5)]


# --------------------------------------------------------------------------- MacroEvents


def spans(*bounds: float) -> list[ClipSpan]:
    return [
        ClipSpan(f"clip_{k:04d}", a, b) for k, (a, b) in enumerate(itertools.pairwise(bounds), 1)
    ]


def test_boundary_windows_overlap_and_own_disjoint_parts() -> None:
    clips = spans(*range(0, 1801, 20))  # 90 clips of 20 s
    windows = boundaries.boundary_windows(clips, 600, 120)
    assert windows[0].first == 0 and windows[-1].last == len(clips) - 1
    for a, b in itertools.pairwise(windows):
        assert b.first <= a.last  # consecutive windows overlap
        assert a.own_end == b.own_start  # and their own parts touch without overlap
    # Every clip start is owned by exactly one window.
    for clip in clips:
        owners = [w for w in windows if w.own_start <= clip.start_s < w.own_end]
        assert len(owners) == 1


def test_only_boundaries_inside_a_windows_own_part_are_kept() -> None:
    clips = spans(*range(0, 1201, 20))
    first, second = boundaries.boundary_windows(clips, 600, 120)[:2]
    proposal = [c.id for c in clips[first.first : first.last + 1]]
    kept = boundaries.kept_boundaries(first, clips, [*proposal, "clip_9999", "nonsense"])
    assert kept == {i for i in range(1, first.last + 1) if clips[i].start_s < first.own_end}
    assert all(clips[i].start_s < second.own_start for i in kept)


def test_lengths_are_enforced_by_merging_and_splitting() -> None:
    clips = spans(*range(0, 1001, 20))  # 50 clips
    sims = np.ones(50)
    sims[[5, 7, 30]] = [0.2, 0.5, 0.1]
    segments = boundaries.segments_from_boundaries(50, {5, 7})  # [0,5) [5,7) [7,50)
    out = boundaries.enforce_lengths(segments, clips, sims, min_s=60, max_s=600)
    lengths = [clips[s[-1]].end_s - clips[s[0]].start_s for s in out]
    assert all(60 <= x <= 600 for x in lengths)
    assert [i for s in out for i in s] == list(range(50))  # still a partition, in order
    # The short [5,7) joins the side it is more similar to (sim 0.5 at 7 > 0.2 at 5), and the
    # long rest is cut at its weakest link (clip 30).
    assert out[0] == list(range(5))
    assert out[1][0] == 5 and any(s[0] == 30 for s in out)


def test_change_points_fall_back_to_caption_dissimilarity() -> None:
    clips = spans(*range(0, 401, 20))
    sims = np.full(20, 0.9)
    sims[8] = 0.1
    [window] = boundaries.boundary_windows(clips, 600, 120)
    assert boundaries.change_points(window, sims, clips) == {8}


def test_model_relations_need_both_ends_and_a_known_type() -> None:
    existing = [Relation(source="a", target="b", type="SEMANTIC", label="PERFORMS")]
    proposed = [
        ProposedRelation(source="a", target="b", type="semantic", label="performs"),  # repeat
        ProposedRelation(source="b", target="c", type="causal", label="causes it"),
        ProposedRelation(source="a", target="zzz", type="CAUSAL"),
        ProposedRelation(source="a", target="a", type="CAUSAL"),
        ProposedRelation(source="a", target="c", type="FRIENDSHIP"),
    ]
    kept, dropped = subgraphs.validated_relations(proposed, {"a", "b", "c"}, existing)
    assert [(r.source, r.target, r.type, r.label) for r in kept] == [
        ("b", "c", "CAUSAL", "CAUSES_IT")
    ]
    assert dropped == 3


# --------------------------------------------------------------------------- SuperEvents


def test_stages_are_repaired_into_a_partition() -> None:
    ids = [f"macro_{k:04d}" for k in range(6)]
    reply = [
        SuperStage(first_macro_id="macro_0001", label="A"),  # does not start at the first
        SuperStage(first_macro_id="macro_0003", label="B"),
        SuperStage(first_macro_id="macro_0002", label="out of order"),
        SuperStage(first_macro_id="macro_0099", label="unknown"),
        SuperStage(first_macro_id="macro_0005", label="C"),
    ]
    plans = stages_from_reply(reply, ids, max_stages=2)
    assert [p.macros for p in plans] == [[0, 1, 2], [3, 4, 5]]
    assert [p.label for p in plans] == ["A", "B"]
    assert stages_from_reply([SuperStage(first_macro_id="x", label="?")], ids, max_stages=5) == []


def test_time_fallback_cuts_stages_on_macro_boundaries() -> None:
    starts = [0, 300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700]
    ends = [*starts[1:], 3000]
    plans = stages_by_time(starts, ends, target_s=900, max_stages=8)
    assert [p.macros for p in plans] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]


def macro_drafts(spans: list[tuple[float, float]]) -> list[subgraphs.MacroDraft]:
    return [
        subgraphs.MacroDraft(f"macro_{k:04d}", k, a, b, [], []) for k, (a, b) in enumerate(spans)
    ]


def earlier(*groups: list[tuple[int, float, float]]) -> list[EarlierStage]:
    return [
        EarlierStage(
            tuple((f"macro_{k:04d}", a, b) for k, a, b in group),
            StagePlan([], f"stage {n}", f"text {n}", [], f"to {n + 1}"),
        )
        for n, group in enumerate(groups)
    ]


def test_an_append_keeps_every_earlier_superevent_but_the_last() -> None:
    before = earlier([(0, 0, 60), (1, 60, 120)], [(2, 120, 180)], [(3, 180, 240)])
    now = macro_drafts([(0, 60), (60, 120), (120, 180), (180, 240), (240, 300)])
    fixed = fixed_stages(before, now)
    assert [(p.macros, p.label, p.transition) for p in fixed] == [
        ([0, 1], "stage 0", "to 1"),
        ([2], "stage 1", "to 2"),
    ]
    # between revisions the earlier last stage, its text unchanged, takes the new MacroEvent
    tail = kept_tail(before, fixed, len(now))
    assert tail is not None and (tail.macros, tail.label) == ([3, 4], "stage 2")


def test_a_regrouped_macroevent_unfixes_its_stage_and_every_later_one() -> None:
    before = earlier([(0, 0, 60)], [(1, 60, 120), (2, 120, 180)], [(3, 180, 240)])
    moved = macro_drafts([(0, 60), (60, 130), (130, 180), (180, 240)])  # macro_0001 ends later
    fixed = fixed_stages(before, moved)
    assert [p.macros for p in fixed] == [[0]]
    assert kept_tail(before, fixed, len(moved)) is None  # the tail must be planned again
    fewer = macro_drafts([(0, 60), (60, 120)])  # a stage's MacroEvents are not all there
    assert [p.macros for p in fixed_stages(before, fewer)] == [[0]]
    assert fixed_stages(before[:1], moved) == []  # one earlier stage: nothing is fixed
    assert fixed_stages([], moved) == [] and kept_tail([], [], 4) is None


def test_the_tail_is_revised_at_its_interval_and_always_at_the_end() -> None:
    assert revision_due(100, 160, 0, final=False)
    assert not revision_due(100, 160, 300, final=False)
    assert revision_due(280, 340, 300, final=False)
    assert revision_due(100, 160, 300, final=True)


# --------------------------------------------------------------------------- entities


def entity(node_id: str, name: str, kind: str, t: float) -> EntityNode:
    return EntityNode(
        id=node_id,
        parent_id="macro_0000",
        name=name,
        entity_type=kind,
        description=f"{name} the {kind}",
        grounding_time=t,
        time_range=TimeRange(start=t, end=t + 5),
    )


def test_unification_merges_spellings_and_asks_about_the_rest() -> None:
    nodes = [
        entity("s0_e1", "Maria", "person", 5),
        entity("s0_e2", "Maria", "person", 8),
        entity("s1_e1", "maria", "person", 50),
        entity("s2_e1", "The Maria", "person", 70),
        entity("s3_e1", "Chef Maria", "person", 90),
        entity("s4_e1", "Maria", "boat", 95),  # another type: never merged with the person
        entity("s5_e1", "Tom", "person", 99),
    ]
    groups = unification.name_groups(nodes)
    assert sorted(g.name for g in groups) == ["Chef Maria", "Maria", "Maria", "Tom"]
    vectors = np.eye(len(groups), dtype=np.float32)  # nobody is similar by embedding here
    merges, questions = unification.plan_merges(
        groups, vectors, merge_similarity=0.9, ask_similarity=0.75, max_questions=10
    )
    assert merges == []
    asked = {(groups[q.a].name, groups[q.b].name) for q in questions}
    assert asked == {("Maria", "Chef Maria")}  # word subset, same type
    [question] = questions
    result = unification.unify(groups, [(question.a, question.b)])
    person = next(g for g in result if "Chef Maria" in (g.canonical_name, *g.variants))
    # The most frequent surface form is canonical; the others are variants.
    assert person.canonical_name == "Maria" and set(person.variants) == {
        "maria",
        "The Maria",
        "Chef Maria",
    }
    assert person.canonical_type == "person"
    assert any(g.canonical_name == "Maria" and g.canonical_type == "boat" for g in result)


def test_similar_embeddings_merge_without_asking() -> None:
    groups = unification.name_groups(
        [entity("a", "red car", "vehicle", 1), entity("b", "crimson car", "vehicle", 2)]
    )
    vectors = np.array([[1.0, 0.0], [0.95, 0.312]], dtype=np.float32)
    merges, questions = unification.plan_merges(
        groups, vectors, merge_similarity=0.9, ask_similarity=0.75, max_questions=10
    )
    assert merges == [(0, 1)] and questions == []


# --------------------------------------------------------------------------- OCR


class ListOcr:
    """An OCR engine that reads what a list says is on screen at each frame number."""

    name = "list"

    def __init__(self, script: dict[int, list[str]]) -> None:
        self.script = script
        self.calls = 0

    def read(self, image: np.ndarray) -> list[OcrHit]:
        self.calls += 1
        return [OcrHit(text, 0.95) for text in self.script.get(int(image[0, 0, 0]), [])]


def still(value: int, *, mark: int = 0) -> np.ndarray:
    image = np.zeros((36, 64, 3), dtype=np.uint8)
    image[0, 0, 0] = value
    image[10:26, 10:54] = mark
    return image


def test_ocr_spans_follow_texts_and_skip_unchanged_frames() -> None:
    # Frames 0-3 show the same picture; 4-6 another; the engine is asked only on changes.
    script = {1: ["EXIT 12", "x"], 2: ["EXIT I2", "GATE 7"]}
    frames = [(float(t), lambda t=t: still(1 if t < 4 else 2, mark=0 if t < 4 else 255))
              for t in range(7)]  # fmt: skip
    engine = ListOcr(script)
    frame_gate = BuilderOcrSettings(gate="frame", change_threshold=2.0)
    spans = read_texts(engine, frames, frame_gate, end_s=7.0)
    assert engine.calls == 2
    found = {(text_key(s.text), s.start_s, s.end_s) for s in spans}
    # "EXIT I2" is read as the same text (I/1 confusion); "x" is too short to keep.
    assert found == {("exit12", 0.0, 7.0), ("gate7", 4.0, 7.0)}
    engine = ListOcr(script)
    read_texts(engine, frames, BuilderOcrSettings(gate="none"), end_s=7.0)
    assert engine.calls == 7
    engine = ListOcr(script)
    read_texts(engine, frames, BuilderOcrSettings(gate="frame", change_threshold=0), end_s=7.0)
    assert engine.calls == 7


def test_ocr_reads_one_frame_per_interval_on_a_video_wide_grid() -> None:
    times = [10.0, 11.0, 12.0, 13.0, 13.5, 14.0, 17.0]
    assert frames_to_read(times, 2.0) == [0, 2, 5, 6]  # slots 5, 6, 7 and 8 of 2 s
    assert frames_to_read(times, 0.5) == list(range(7))


def test_ocr_keys_tell_different_numbers_apart() -> None:
    assert same_text(text_key("STATI0N"), text_key("station"))
    assert not same_text(text_key("00:02"), text_key("00:03"))


# --------------------------------------------------------------------------- checkpoints


def test_checkpoints_are_reused_only_under_the_same_key(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "build")
    key = stage_key("perception", {"frames": 6, "layout": "grid"})
    assert key == stage_key("perception", {"layout": "grid", "frames": 6})  # key order free
    store.put("perception/clip_0001", key, {"caption": "x"})
    assert store.get("perception/clip_0001", key) == {"caption": "x"}
    assert store.get("perception/clip_0001", stage_key("perception", {"frames": 7})) is None
    store.path("perception/clip_0001").write_text('{"key": "', encoding="utf-8")  # torn write
    assert store.get("perception/clip_0001", key) is None
    assert not list((tmp_path / "build" / "perception").glob(".*.tmp"))


# --------------------------------------------------------------------------- perception


def test_perception_reply_is_normalized_into_the_clip() -> None:
    reply = ClipPerception.model_validate(
        {
            "caption": "  A chef cooks. ",
            "entities": [
                {"id": "e1", "name": "Chef Maria", "type": "person", "seen_at": "00:12"},
                {"id": 2, "name": "pan", "attributes": ["black", "iron"], "seen_at": 999},
                {"name": "", "type": "object"},
            ],
            "events": [
                {
                    "action": "fries eggs",
                    "subject_ids": ["Chef Maria"],
                    "object_ids": [2, "e9"],
                    "time_range": ["00:25", "00:11"],
                },
                {"action": "smiles", "time_range": "00:15"},
            ],
            "on_screen_text": ["OPEN", {"text": "MENU", "seen_at": "1:00"}],
        }
    )
    clip = ClipSpan("clip_0002", 10.0, 30.0)
    record = normalize_perception(reply, clip, [11.0, 15.0])
    assert record["caption"] == "A chef cooks."
    [maria, pan] = record["entities"]
    assert maria["seen_at"] == 12.0 and pan["seen_at"] == 30.0  # clamped into the clip
    assert pan["attributes"] == {"details": ["black", "iron"]}
    fries, smiles = record["events"]
    assert (fries["start"], fries["end"]) == (11.0, 25.0)  # reordered
    assert fries["subjects"] == ["e1"] and fries["objects"] == ["2"]  # by name and by id
    assert (smiles["start"], smiles["end"]) == (15.0, 15.0)
    assert [(t["text"], t["start"]) for t in record["texts"]] == [("OPEN", 11.0), ("MENU", 30.0)]
    json.dumps(record)  # checkpointable


def test_frames_are_spread_over_the_clip() -> None:
    frames = [KeptFrame(i, float(i), f"f{i}.jpg") for i in range(10, 30)]
    chosen = select_frames(frames, ClipSpan("c", 10, 30), 4)
    assert [f.timestamp_s for f in chosen] == [12.0, 17.0, 22.0, 27.0]
    assert select_frames(frames[:3], ClipSpan("c", 10, 30), 4) == frames[:3]


def test_boundary_reply_accepts_objects() -> None:
    reply = MacroBoundaries.model_validate({"boundaries": [{"clip_id": "clip_0003"}, 7]})
    assert reply.boundaries == ["clip_0003", "7"]


@pytest.mark.parametrize("bad", [{"caption": ""}, {"entities": []}, {"caption": "x", "events": 3}])
def test_unusable_perception_replies_are_rejected(bad: dict) -> None:
    with pytest.raises(ValueError):
        ClipPerception.model_validate(bad)
