"""Grounding and free-form scoring over hand-made records, against figures worked out by hand.

Records are written as the runner writes them (``eval_support.record``), with the fields
grounding reads: the cited spans, the question's evidence spans, the reference answer and
the judge's verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import header, record, write_run

from videotapestry.eval.compare import compare_runs
from videotapestry.eval.grounding import grounding, score
from videotapestry.eval.metrics import variant_metrics
from videotapestry.eval.records import Judgement, ResultRecord
from videotapestry.eval.report import write_report
from videotapestry.eval.run_reader import parse_records


def _grounding_records(variant: str = "full") -> list[ResultRecord]:
    def r(qid, gold, prediction, evidence=(), cited=(), **fields) -> ResultRecord:
        return record(
            qid, gold, prediction, variant=variant, evidence_spans=list(evidence),
            cited_spans=list(cited), **fields,
        )  # fmt: skip

    return [
        # cited (110,130) vs evidence (100,120): 10 s shared of 30 s -> IoU 1/3; right.
        r("g1", "A", "A", [(100, 120)], [(110, 130)], categories=["ocr"]),
        # exactly the evidence: IoU 1; but the letter is wrong.
        r("g2", "B", "C", [(100, 120)], [(100, 120)], categories=["ocr", "speech"]),
        # cited nothing: a miss with IoU 0; right anyway.
        r("g3", "C", "C", [(0, 10), (50, 60)], [], categories=["speech"]),
        # failed: cites nothing, a miss, wrong.
        r("g4", "D", None, [(5, 15)], [], error="boom", error_type="ModelCallError"),
        # no evidence spans: not in grounding (but its answer counts for "cited nothing").
        r("g5", "A", "A", [], [(1, 2)]),
        # a cited moment inside the evidence: a hit of no length (IoU 0); right.
        r("g6", "A", "A", [(200, 240)], [(230, 230)], categories=["speech"]),
        # skipped: never run, never scored.
        r("g7", "B", None, [(0, 5)], [], status="skipped"),
    ]


def test_grounding_figures_equal_hand_computation() -> None:
    g = grounding(_grounding_records())
    assert g.questions == 5  # g1 g2 g3 g4 g6
    assert (g.hits, g.hit_rate) == (3, 3 / 5)  # g1 g2 g6
    assert g.miou == pytest.approx((1 / 3 + 1 + 0 + 0 + 0) / 5)  # 4/15
    assert g.recall(0.3) == 2 / 5  # g1 (1/3) and g2 (1)
    assert g.recall(0.5) == 1 / 5  # g2
    assert g.uncited == 2  # g3 and the failed g4; g6 cited a moment
    # Of the 3 hits, g1 and g6 are right; of the 5 scored, 2 are right and hit.
    assert g.accuracy_grounded.to_dict() == {"correct": 2, "total": 3, "accuracy": 2 / 3}
    assert g.right_and_grounded.to_dict() == {"correct": 2, "total": 5, "accuracy": 2 / 5}
    assert score(_grounding_records()[4]) is None  # no evidence spans


def test_grounding_by_category_and_uncited_answers() -> None:
    m = variant_metrics(_grounding_records())
    assert m.answers_uncited == 1  # of the answered g1 g2 g3 g5 g6, only g3 cited nothing
    by = m.grounding_by_category
    assert list(by) == ["ocr", "speech"]
    # ocr: g1 (IoU 1/3) and g2 (IoU 1): both hit, mIoU 2/3.
    assert (by["ocr"].questions, by["ocr"].hits) == (2, 2)
    assert by["ocr"].miou == pytest.approx(2 / 3)
    # speech: g2 (hit, 1), g3 (miss, 0), g6 (hit, 0): hit rate 2/3, mIoU 1/3.
    assert (by["speech"].questions, by["speech"].hit_rate) == (3, 2 / 3)
    assert by["speech"].miou == pytest.approx(1 / 3)


def _free_form_records() -> list[ResultRecord]:
    def judged(qid: str, correct: bool | None, **fields) -> ResultRecord:
        verdict = Judgement(judge="offline", correct=correct, score=float(bool(correct)))
        if correct is None:
            verdict = Judgement(judge="offline", error="ModelResponseError: unreadable")
        return record(
            qid, None, None, status="answered", reference_answer="4417",
            answer_text="The code is 4417.", judgement=verdict, **fields,
        )  # fmt: skip

    return [
        judged("f1", True, evidence_spans=[(10, 20)], cited_spans=[(12, 14)]),
        judged("f2", False),
        judged("f3", None),  # the judge failed: counted, not scored
        record("f4", None, None, reference_answer="green", error="x", error_type="Boom"),
    ]


def test_free_form_answers_are_scored_by_the_judge() -> None:
    m = variant_metrics(_free_form_records())
    # Scored: f1 (right), f2 (wrong), f4 (failed: wrong); f3 has no verdict.
    assert m.accuracy.to_dict() == {"correct": 1, "total": 3, "accuracy": 1 / 3}
    assert (m.counts.unscored, m.counts.unjudged) == (1, 1)
    assert m.judges == {"offline": 3}
    assert (m.grounding.questions, m.grounding.hits) == (1, 1)
    assert m.grounding.miou == pytest.approx(2 / 10)  # 2 s of the 10 s evidence


def test_records_written_before_grounding_still_load() -> None:
    old = {
        "question_id": "q1", "variant": "full", "video_id": "v", "status": "answered",
        "prediction": "A", "gold": "A", "correct": True, "categories": [], "usage": {"calls": 3},
    }  # fmt: skip
    read = parse_records((json.dumps(old) + "\n").encode())
    (loaded,) = read.records
    assert (loaded.answer_text, loaded.cited_spans, loaded.evidence_spans) == ("", [], [])
    assert loaded.judgement is None and loaded.reference_answer is None
    assert variant_metrics([loaded]).accuracy.correct == 1


def test_the_report_shows_grounding_beside_accuracy_and_names_the_judge(tmp_path: Path) -> None:
    records = _grounding_records() + [
        r.model_copy(update={"variant": "open"}) for r in _free_form_records()
    ]
    run = write_run(tmp_path / "run", records, header(variants=["full", "open"]))
    report = write_report(run)
    markdown = report.markdown
    assert "- full: 5 finished questions with evidence spans; 1 of 5 answers cited nothing" in (
        markdown
    )
    # Acc. over all 6 scored (g1 g3 g5 g6 right): 66.7 (4/6); then the figures above.
    row = "| full | 5 | 60.0 | 0.267 | 40.0 | 20.0 | 66.7 (4/6) | 66.7 (2/3) | 40.0 (2/5) | 2 |"
    assert row in markdown
    assert "| full | 100.0 / 0.67 (2) | 66.7 / 0.33 (3) |" in markdown  # ocr, speech
    assert "judged by: offline (approximate: key terms and embedding agreement" in markdown
    assert "open: 1 free-form answers have no verdict" in markdown
    data = json.loads((run / "report.json").read_text())
    full = data["variants"]["full"]["grounding"]
    assert (full["questions"], full["hits"], full["uncited"]) == (5, 3, 2)
    assert full["recall_at_0.5"] == 1 / 5
    assert data["variants"]["open"]["judges"] == {"offline": 3}


def test_a_report_without_evidence_says_grounding_is_not_scored(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("q1", "A", "A")], header())
    markdown = write_report(run).markdown
    assert "- full: 0 finished questions with evidence spans; 1 of 1 answers cited nothing" in (
        markdown
    )
    assert "No question has evidence spans: grounding is not scored." in markdown


def test_compare_pairs_grounding_and_tests_the_hits(tmp_path: Path) -> None:
    def r(qid: str, cited: list[tuple[float, float]]) -> ResultRecord:
        return record(qid, "A", "A", evidence_spans=[(0, 10)], cited_spans=cited)

    # A: q1 (0,10) IoU 1; q2 (20,30) miss; q3 nothing; q4 (0,5) IoU 0.5.
    a = [r("q1", [(0, 10)]), r("q2", [(20, 30)]), r("q3", []), r("q4", [(0, 5)])]
    # B: q1 (5,15) IoU 5/15; q2 (0,10) IoU 1; q3 (8,12) IoU 2/12; q4 nothing; q5 only in B.
    b = [r("q1", [(5, 15)]), r("q2", [(0, 10)]), r("q3", [(8, 12)]), r("q4", []), r("q5", [])]
    comparison = compare_runs(
        write_run(tmp_path / "a", a, header()), write_run(tmp_path / "b", b, header())
    )
    g = comparison.variants[0].grounding
    assert g is not None and g.paired == 4
    assert (g.hits_a, g.hits_b) == (2, 3)  # A: q1 q4; B: q1 q2 q3
    assert g.hit_difference_points == pytest.approx(25.0)
    assert g.miou_a == pytest.approx((1 + 0 + 0 + 0.5) / 4)
    assert g.miou_b == pytest.approx((1 / 3 + 1 + 1 / 6 + 0) / 4)
    assert g.miou_difference == pytest.approx((1.5 - 1.5) / 4)  # the sums are equal: 0
    assert (g.became_hit, g.lost_hit) == (["q2", "q3"], ["q4"])
    # McNemar on 3 discordant hits, 1 against 2: two-sided exact p = 1.0.
    assert (g.test.a_only, g.test.b_only, g.test.p_exact) == (1, 2, 1.0)
    text = comparison.render()
    assert "grounding (4 questions with evidence spans finished in both)" in text
    assert "hit rate A 50.0% (2), B 75.0% (3), B - A +25.0 points" in text
    assert "missed in A, hit in B (2): q2, q3" in text


def test_compare_says_who_judged_each_run(tmp_path: Path) -> None:
    def judged(judge: str) -> list[ResultRecord]:
        verdict = Judgement(judge=judge, correct=True, score=1.0)
        return [
            record("f1", None, None, status="answered", reference_answer="x", judgement=verdict)
        ]

    a = write_run(tmp_path / "a", judged("offline"), header())
    b = write_run(tmp_path / "b", judged("gpt-5.5"), header())
    comparison = compare_runs(a, b)
    assert comparison.variants[0].accuracy_a.to_dict()["correct"] == 1
    assert any("judged by offline in A and by gpt-5.5 in B" in note for note in comparison.notes)
