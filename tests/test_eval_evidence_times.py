"""Evidence times made spans of the video, never silently (issue 38, item 6d).

Every odd LVBench ``time_reference`` form is read or counted as unreadable; a span given
end first is put in order and counted in every loader alike; a span past the video's end
is clipped (or dropped when it starts after the end) and counted; the run's report shows
each count, and grounding is scored against the clipped spans.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_support import record, write_run

from videotapestry.eval import EvalQuestion
from videotapestry.eval.datasets import load_benchmark
from videotapestry.eval.datasets.common import clock_spans
from videotapestry.eval.grounding import evidence_tally, grounding
from videotapestry.eval.questions import EvidenceNotes, clip_spans
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.report import build_report, render_markdown, write_report

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
CGBENCH = FIXTURES / "cgbench" / "cgbench_mini.json"
LVBENCH = FIXTURES / "lvbench" / "video_info.meta.jsonl"


def lvbench_with(tmp_path: Path, *references: Any) -> list[EvalQuestion]:
    """The fixture's first video (118.25 minutes) with its questions' time references
    replaced (one question per reference)."""
    video = json.loads(LVBENCH.read_text(encoding="utf-8").splitlines()[0])
    template = video["qa"][0]
    video["qa"] = [
        {**template, "uid": index, "time_reference": reference}
        for index, reference in enumerate(references, start=1)
    ]
    (tmp_path / "video_info.meta.jsonl").write_text(json.dumps(video) + "\n", encoding="utf-8")
    return load_benchmark("lvbench", tmp_path)


def cgbench_with(tmp_path: Path, clue_intervals: Any, duration: Any = 2712.4) -> EvalQuestion:
    rows = json.loads(CGBENCH.read_text(encoding="utf-8"))
    rows[0].update(clue_intervals=clue_intervals, duration=duration)
    path = tmp_path / "cgbench.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return load_benchmark("cgbench", path)[0]


@pytest.mark.parametrize(
    ("reference", "spans"),
    [
        ("01:05-01:12", [(65.0, 72.0)]),  # MM:SS-MM:SS
        ("01:02:05-01:02:40", [(3725.0, 3760.0)]),  # HH:MM:SS-HH:MM:SS
        ("1:00:00-1:00:30", [(3600.0, 3630.0)]),
        ("00:15 - 00:19", [(15.0, 19.0)]),  # spaces around the dash
        ("00:15 \u2013 00:19", [(15.0, 19.0)]),  # en dash
        ("00:15\u201400:19", [(15.0, 19.0)]),  # em dash
        ("00:15 to 00:19", [(15.0, 19.0)]),
        ("00:15 ~ 00:19", [(15.0, 19.0)]),
        ("01:23", [(83.0, 84.0)]),  # a single time: the second it names
        ("00:15-00:19, 03:00-03:10", [(15.0, 19.0), (180.0, 190.0)]),
        ("00:15-00:19; 03:00-03:10", [(15.0, 19.0), (180.0, 190.0)]),
        ("30-60", [(30.0, 60.0)]),  # plain seconds
        ("30s-60s", [(30.0, 60.0)]),
        ("30 s - 60 s", [(30.0, 60.0)]),
        ("12.5-20.25", [(12.5, 20.25)]),  # decimals
        ("12:30.5-12:40", [(750.5, 760.0)]),
        ("[00:30, 01:00]", [(30.0, 60.0)]),  # brackets: the comma inside is the separator
        ("[[00:30, 01:00], [02:00, 02:10]]", [(30.0, 60.0), (120.0, 130.0)]),
        ("(30, 60)", [(30.0, 60.0)]),
        ("['00:30-01:00']", [(30.0, 60.0)]),
    ],
)
def test_every_time_reference_form_is_read(
    tmp_path: Path, reference: str, spans: list[tuple[float, float]]
) -> None:
    (question,) = lvbench_with(tmp_path, reference)
    assert question.evidence_spans == spans
    assert question.evidence_notes == EvidenceNotes()
    assert question.extra["time_reference"] == reference  # kept as written


def test_an_unreadable_time_reference_is_kept_and_noted(tmp_path: Path) -> None:
    unreadable, absent = lvbench_with(tmp_path, "around the middle", None)
    assert unreadable.evidence_spans == []
    assert unreadable.evidence_notes.unreadable == "around the middle"
    assert unreadable.extra["time_reference"] == "around the middle"
    assert absent.evidence_notes == EvidenceNotes()  # no reference is no evidence, not a note
    assert clock_spans("01:75-02:00") is None


def test_a_reversed_span_is_ordered_and_counted_in_lvbench_and_cgbench(tmp_path: Path) -> None:
    (lv,) = lvbench_with(tmp_path, "05:00-04:00")
    assert lv.evidence_spans == [(240.0, 300.0)]
    assert lv.evidence_notes.reversed == 1
    cg = cgbench_with(tmp_path, [[618.0, 612.5], [1204.0, 1210.5]])
    assert cg.evidence_spans == [(612.5, 618.0), (1204.0, 1210.5)]
    assert cg.evidence_notes.reversed == 1


def test_a_clue_interval_past_the_video_is_clipped_or_dropped_and_counted(
    tmp_path: Path,
) -> None:
    cg = cgbench_with(tmp_path, [[100, 200], [2700, 2800], [2900, 3000]], duration=2712.4)
    assert cg.evidence_spans == [(100.0, 200.0), (2700.0, 2712.4)]
    assert (cg.evidence_notes.clipped, cg.evidence_notes.past_end) == (1, 1)
    # LVBench: past duration_minutes (118.25 min = 7095 s).
    (lv,) = lvbench_with(tmp_path, "118:05-119:30")
    assert lv.evidence_spans == [(7085.0, 7095.0)]
    assert lv.evidence_notes.clipped == 1


def test_the_probed_duration_clips_the_record_further() -> None:
    question = EvalQuestion(
        id="q",
        benchmark="jsonl",
        video_id="v",
        video="v.mp4",
        question="?",
        evidence_spans=[(10, 20), (50, 70), (90, 95)],
    )
    rec = ResultRecord.for_question(question, "full", video_duration_s=60.0, status="answered")
    assert rec.evidence_spans == [(10.0, 20.0), (50.0, 60.0)]
    assert (rec.evidence_notes.clipped, rec.evidence_notes.past_end) == (1, 1)
    assert clip_spans([(60.0, 60.0)], 60.0) == ([(60.0, 60.0)], 0, 0)  # the end's moment
    assert clip_spans([(1.0, 99.0)], None) == ([(1.0, 99.0)], 0, 0)


def test_the_report_counts_what_was_done_to_the_evidence(tmp_path: Path) -> None:
    clipped = EvidenceNotes(clipped=1, past_end=1)
    records = [
        record(
            "1", "A", "A", evidence_spans=[(0, 10)], cited_spans=[(0, 10)], evidence_notes=clipped
        ),
        # the same question under another variant: counted once
        record("1", "A", "A", variant="no_asr", evidence_spans=[(0, 10)], evidence_notes=clipped),
        record("2", "A", "B", evidence_notes=EvidenceNotes(unreadable="soon")),
        record("3", "A", "A", evidence_spans=[(5, 9)], evidence_notes=EvidenceNotes(reversed=2)),
    ]
    tally = evidence_tally(records)
    assert (tally.reversed, tally.clipped, tally.past_end, tally.unreadable) == (2, 1, 1, ("2",))
    run = write_run(tmp_path / "run", records)
    report = write_report(run)
    markdown = render_markdown(build_report(run))
    assert "- time_reference unreadable: 1 questions (ids 2)" in markdown
    assert "- spans clipped at the video's end: 1" in markdown
    assert "- spans dropped past the video's end: 1" in markdown
    assert "- reversed spans ordered: 2" in markdown
    saved = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert saved["evidence"] == {
        "reversed_spans_ordered": 2,
        "spans_clipped": 1,
        "spans_dropped_past_end": 1,
        "unreadable_time_references": 1,
        "unreadable_question_ids": ["2"],
    }
    assert report.evidence == tally
    # Grounding is scored on the (clipped) spans the records carry.
    assert grounding(r for r in records if r.variant == "full").questions == 2


def test_eval_says_on_the_terminal_what_was_done_to_the_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from videotapestry.commands.evaluate import _summary
    from videotapestry.eval.runner import RunOutcome

    records = [
        record("1", "A", "A", evidence_spans=[(0, 10)], evidence_notes=EvidenceNotes(clipped=1)),
        record("2", "A", "B", evidence_notes=EvidenceNotes(unreadable="soon")),
    ]
    outcome = RunOutcome({(r.variant, r.question_id): r for r in records}, ("full",))
    _summary(outcome, tmp_path, allow_degraded=True)
    assert (
        "evidence times fitted to the videos: 0 reversed span(s) ordered, 1 clipped at a "
        "video's end, 0 dropped past it, 1 time reference(s) unreadable"
    ) in capsys.readouterr().out


def test_a_report_with_nothing_done_to_the_evidence_says_nothing(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("1", "A", "A", evidence_spans=[(0, 10)])])
    assert "time_reference unreadable" not in render_markdown(build_report(run))
