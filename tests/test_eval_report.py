"""RUN/report.md, report.json and the plot from a hand-made run, against numbers by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from eval_support import header, record, write_run

from videotapestry.cli import main
from videotapestry.eval.report import write_report


def _usage(calls, images, prompt, completion, cost):
    return {
        "calls": calls,
        "images": images,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_usd": cost,
    }


def _full_records():
    return [
        # q2 failed on a first attempt; the later answered line replaces it.
        record("q2", "B", None, categories=("temporal", "counting"), duration="long"),
        # A made-up citation: a warning, and q1 still counts as clean.
        record(
            "q1", "A", "A", categories=("temporal",), duration="long",
            usage=_usage(10, 20, 1000, 100, 0.01), elapsed_s=2.0, memory_tokens=4000,
            warnings=["citation_invalid"],
        ),
        record(
            "q2", "B", "C", categories=("temporal", "counting"), duration="long",
            usage=_usage(12, 24, 1200, 120, 0.02), elapsed_s=4.0, memory_tokens=5000,
        ),
        record(
            "q3", "C", None, categories=("counting",), duration="short",
            error="no memory for video-q3", error_type="MemoryFormatError",
            usage=_usage(3, 0, 300, 0, 0.005), elapsed_s=10.0,
        ),
        record(
            "q4", "D", "D", categories=("reasoning",), duration="short",
            fallback=True, degraded=["answer_fallback"],
            usage=_usage(11, 22, 1100, 110, 0.01), elapsed_s=6.0, memory_tokens=3000,
        ),
        record(
            "q5", "A", "A", categories=("reasoning",), duration="short", degraded=["asr_lost"],
            usage=_usage(9, 18, 900, 90, 0.02), elapsed_s=8.0, memory_tokens=4000,
        ),
        record("q6", "B", None, status="skipped", categories=("temporal",), duration="long"),
        record(
            "q7", None, "B", categories=("temporal",), duration="long",
            usage=_usage(8, 16, 800, 80, 0.015), elapsed_s=12.0, memory_tokens=2000,
        ),
    ]  # fmt: skip


def _wo_asr_records():
    # Right: q1 q2 q3 q5; q4 wrong.
    rows = [("q1", "A", "A"), ("q2", "B", "B"), ("q3", "C", "C"), ("q4", "D", "A")]
    rows.append(("q5", "A", "A"))
    out = []
    for i, (qid, gold, prediction) in enumerate(rows):
        cost = None if qid == "q3" else 0.01
        out.append(
            record(
                qid, gold, prediction, variant="wo_asr", categories=("temporal",),
                duration="long", usage=_usage(5, 10, 500, 50, cost), elapsed_s=float(i + 1),
                memory_tokens=1000,
            )
        )  # fmt: skip
    return out


@pytest.fixture
def run(tmp_path: Path) -> Path:
    records = _full_records() + _wo_asr_records()
    info = header(variants=["full", "wo_asr"], models={"answer": "gpt-a", "overview": "gpt-a"})
    torn = record("q8", "A", "A").to_json_line().encode()[:40]
    return write_run(tmp_path / "run", records, info, tail=torn)


def test_report_numbers_equal_those_computed_by_hand(run: Path) -> None:
    report = write_report(run)
    data = json.loads((run / "report.json").read_text())

    assert data["records"] == {"read": 13, "torn_lines": 1, "invalid_lines": []}
    full = data["variants"]["full"]
    # Scored: q1 q2 q3 q4 q5 (q6 skipped, q7 has no gold); right: q1, q4 (a guess), q5.
    assert full["accuracy"] == {"correct": 3, "total": 5, "accuracy": 3 / 5}
    assert full["accuracy_answered"]["accuracy"] == 3 / 4  # q3 failed, left out
    assert full["accuracy_no_fallback"]["accuracy"] == 2 / 5  # the q4 guess counts wrong
    assert full["accuracy_clean"]["accuracy"] == 1 / 2  # q1, q2 have nothing lost
    assert full["counts"] == {
        "questions": 7,
        "answered": 5,
        "failed": 1,
        "skipped": 1,
        "unscored": 1,
        "unjudged": 0,
        "fallback": 1,
        "degraded": 1,
        "clean": 3,
        "warned": 1,
        "degradation_kinds": {"answer_fallback": 1, "asr_lost": 1},
        "warning_kinds": {"citation_invalid": 1},
        "error_types": {"MemoryFormatError": 1},
    }
    categories = {k: (v["correct"], v["total"]) for k, v in full["by_category"].items()}
    assert categories == {"counting": (0, 2), "reasoning": (2, 2), "temporal": (1, 2)}
    durations = {k: (v["correct"], v["total"]) for k, v in full["by_duration"].items()}
    assert durations == {"long": (1, 2), "short": (2, 3)}

    # Usage over the six finished questions q1 q2 q3 q4 q5 q7.
    use = full["usage"]
    assert use["questions"] == 6
    assert use["calls"] == pytest.approx((10 + 12 + 3 + 11 + 9 + 8) / 6)
    assert use["images"] == pytest.approx((20 + 24 + 0 + 22 + 18 + 16) / 6)
    assert use["prompt_tokens"] == pytest.approx((1000 + 1200 + 300 + 1100 + 900 + 800) / 6)
    assert use["completion_tokens"] == pytest.approx((100 + 120 + 0 + 110 + 90 + 80) / 6)
    assert use["cost_usd_total"] == pytest.approx(0.01 + 0.02 + 0.005 + 0.01 + 0.02 + 0.015)
    assert use["cost_usd_mean"] == pytest.approx(0.08 / 6)
    # Wall times sorted: 2 4 6 8 10 12. p50 at rank 2.5 -> 7; p95 at rank 4.75 -> 11.5.
    assert use["latency_s"] == {"n": 6, "mean": 7.0, "p50": 7.0, "p95": pytest.approx(11.5)}
    # Composite memory of the answered questions: q1 q2 q4 q5 q7.
    assert use["memory_tokens"] == (4000 + 5000 + 3000 + 4000 + 2000) / 5

    wo_asr = data["variants"]["wo_asr"]
    assert wo_asr["accuracy"]["accuracy"] == 4 / 5
    assert wo_asr["usage"]["cost_usd_total"] is None  # q3 has an unpriced call
    assert wo_asr["usage"]["unpriced_questions"] == 1
    assert report.variants["wo_asr"].usage.latency_s.p95 == pytest.approx(4 + 0.8 * 1)


def test_report_markdown_has_the_ablation_table_and_the_torn_line(run: Path) -> None:
    markdown = write_report(run).markdown

    assert (run / "report.md").read_text() == markdown
    assert "| Variant | Visual | ASR | Update | M-A | Super | Paths | Tokens | Acc. |" in markdown
    assert "| full | Y | Y | Y | Y | Y | Y | 3,600 | 60.0 | – | 5 |" in markdown
    assert "| wo_asr | Y | N | Y | Y | Y | Y | 1,000 | 80.0 | +20.0 | 5 |" in markdown
    assert "| Variant | Overall | counting | reasoning | temporal |" in markdown
    assert "| full | 60.0 (3/5) | 0.0 (0/2) | 100.0 (2/2) | 50.0 (1/2) |" in markdown
    assert "| wo_asr | 80.0 (4/5) | – | – | 80.0 (4/5) |" in markdown
    assert "| full | 60.0 (3/5) | 50.0 (1/2) | 66.7 (2/3) |" in markdown  # long, short
    assert "unpriced (1 question)" in markdown
    # questions, calls, images, prompt, cached prompt, completion, model s, cost, latencies
    usage_row = (
        "| full | 6 | 8.8 | 16.7 | 883 | 0 | 83 | 0.0 | 0.0133 | 7.00 | 7.00 | 11.50 | 3,600 |"
    )
    assert usage_row in markdown
    assert "torn" in markdown and "1 torn last line skipped" in markdown
    assert "failures by error: MemoryFormatError 1" in markdown
    # Outcomes: guessed q4, degraded q5, clean q1 q2 q7; q1 warned, and still clean.
    assert "| Guessed | Degraded | Clean | Warned |" in markdown
    assert "| full | 7 | 5 | 1 | 1 | 1 | 1 | 1 | 3 | 1 | 60.0 (3/5) |" in markdown
    assert "| wo_asr | 5 | 5 | 0 | 0 | 0 | 0 | 0 | 5 | 0 | 80.0 (4/5) |" in markdown
    assert "- full: warnings (answered questions) by kind: citation_invalid 1" in markdown
    assert "![accuracy by category](accuracy_by_category.png)" in markdown


def test_the_plot_is_a_png_beside_the_report(run: Path) -> None:
    pytest.importorskip("matplotlib")
    report = write_report(run)
    assert report.plot == run / "accuracy_by_category.png"
    assert report.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((run / "report.json").read_text())["plot"] == "accuracy_by_category.png"


def test_without_matplotlib_the_report_says_why_there_is_no_plot(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    report = write_report(run)

    assert report.plot is None
    assert not (run / "accuracy_by_category.png").exists()
    assert "No plot: matplotlib is not installed" in report.markdown
    assert "videotapestry[plot]" in report.markdown
    assert json.loads((run / "report.json").read_text())["plot"] is None


def test_a_run_without_run_json_still_reports(tmp_path: Path) -> None:
    run = write_run(tmp_path / "bare", [record("q1", "A", "A"), record("q2", "A", "B")])
    report = write_report(run)
    assert report.variants["full"].accuracy.value == 0.5
    assert "run.json is missing" in report.markdown


def _cli(*argv: str) -> int:
    return main(list(argv))


def test_eval_report_cli_writes_and_prints_the_report(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli("eval-report", str(run)) == 0
    printed = capsys.readouterr().out
    assert printed == (run / "report.md").read_text()
    assert _cli("eval-report", str(run), "--json") == 0
    assert json.loads(capsys.readouterr().out)["variants"]["full"]["accuracy"]["total"] == 5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "absent", "does not exist"),
        (lambda p: p, "no results in"),
        (lambda p: write_run(p / "empty", []), "no results in"),
    ],
)
def test_eval_report_cli_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, message: str
) -> None:
    assert _cli("eval-report", str(make(tmp_path))) == 2
    err = capsys.readouterr().err
    assert err.startswith("videotapestry: error: ") and message in err
    assert "Traceback" not in err


def test_eval_report_cli_rejects_a_malformed_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", [record("q1", "A", "A")])
    (run / "run.json").write_text("{not json")
    assert _cli("eval-report", str(run)) == 2
    assert "run.json is not JSON" in capsys.readouterr().err
