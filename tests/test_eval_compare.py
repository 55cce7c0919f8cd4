"""``compare`` on two hand-made runs: pairing, flips, McNemar's p by hand, what differs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from eval_support import header, record, write_run

from videotapestry.cli import main
from videotapestry.eval.compare import compare_runs, flatten, mcnemar


def exact_mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar: twice the smaller binomial tail of Bin(b + c, 1/2), capped."""
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("b", "c"), [(1, 6), (0, 5), (3, 3), (2, 9), (10, 4), (0, 1)])
def test_mcnemar_exact_p_matches_the_binomial_formula(b: int, c: int) -> None:
    assert mcnemar(b, c).p_exact == pytest.approx(exact_mcnemar(b, c), rel=1e-12)


def test_mcnemar_chi_square_uses_the_continuity_correction() -> None:
    test = mcnemar(1, 6)
    assert test.chi2 == pytest.approx((abs(1 - 6) - 1) ** 2 / 7)
    # With one degree of freedom the chi-square tail is erfc(sqrt(x / 2)).
    assert test.p_chi2 == pytest.approx(math.erfc(math.sqrt(test.chi2 / 2)))
    none = mcnemar(0, 0)
    assert (none.p_exact, none.chi2, none.p_chi2) == (1.0, None, None)


# Per question: (gold, A's letter, B's letter); None = failed, "skip" = never run.
QUESTIONS = {
    "q01": ("A", "A", "A"),  # both right x4
    "q02": ("B", "B", "B"),
    "q03": ("C", "C", "C"),
    "q04": ("D", "D", "D"),
    "q05": ("A", "B", "C"),  # both wrong
    "q06": ("B", "B", None),  # right in A, failed in B: a flip to wrong
    "q07": ("C", "A", "C"),  # wrong in A, right in B x6
    "q08": ("D", None, "D"),  # failed in A counts as wrong
    "q09": ("A", "B", "A"),
    "q10": ("B", "C", "B"),
    "q11": ("C", "D", "C"),
    "q12": ("D", "A", "D"),
    "q13": ("A", "A", "skip"),  # scored in A only
    "q14": ("B", "skip", "B"),  # scored in B only
}


def _records(side: int, variant: str = "full"):
    out = []
    for qid, row in QUESTIONS.items():
        gold, letter = row[0], row[side]
        status = "skipped" if letter == "skip" else None
        prediction = None if letter == "skip" else letter
        out.append(record(qid, gold, prediction, variant=variant, status=status))
    return out


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    config_a = {
        "variant": "full",
        "agents": {"overview": {"max_frames": 32}, "skim": {"max_frames": 16}},
        "models": {"default": {"model": "gpt-a", "temperature": 0.0}},
        "asr": {"source": "whisper"},
        "pace_mem": {"k": [2, 8]},
    }
    config_b = {
        "variant": "full",
        "agents": {"overview": {"max_frames": 48}, "skim": {"max_frames": 16}},
        "models": {"default": {"model": "gpt-b", "temperature": 0.0}},
        "pace_mem": {"k": [2, 10]},
        "cache": {"enabled": True},
    }
    a = write_run(
        tmp_path / "a",
        _records(1),
        header(
            config=config_a,
            config_hash="aaaa",
            prompt_hashes={"final_answer": "11", "overview_plan": "22", "skim_plan": "33"},
            models={"answer": "gpt-a", "overview": "gpt-a", "observe": "vlm-1"},
        ),
    )
    b = write_run(
        tmp_path / "b",
        # B also ran wo_asr, and rewrote q05 (an earlier line that is replaced).
        [record("q05", "A", "A"), *_records(2), *_records(2, "wo_asr")],
        header(
            variants=["full", "wo_asr"],
            config=config_b,
            config_hash="bbbb",
            prompt_hashes={"final_answer": "99", "overview_plan": "22"},
            models={"answer": "gpt-b", "overview": "gpt-a", "observe": "vlm-1"},
        ),
    )
    return a, b


def test_compare_pairs_questions_and_finds_the_flips(runs: tuple[Path, Path]) -> None:
    comparison = compare_runs(*runs, variant="full")
    [full] = comparison.variants

    assert full.paired == 12
    assert full.only_in_a == ["q13"] and full.only_in_b == ["q14"]
    assert (full.accuracy_a.correct, full.accuracy_b.correct) == (5, 10)
    assert full.difference_points == pytest.approx(100 * (10 - 5) / 12)
    assert (full.both_right, full.both_wrong) == (4, 1)
    assert full.became_wrong == ["q06"]
    assert full.became_right == ["q07", "q08", "q09", "q10", "q11", "q12"]
    assert (full.test.a_only, full.test.b_only) == (1, 6)
    # Seven discordant pairs, one of them for A: p = 2 * (C(7,0) + C(7,1)) / 2**7 = 0.125.
    assert full.test.p_exact == pytest.approx(2 * (1 + 7) / 2**7)
    assert full.test.p_exact == pytest.approx(exact_mcnemar(1, 6))


def test_compare_lists_config_prompt_and_model_differences(runs: tuple[Path, Path]) -> None:
    comparison = compare_runs(*runs)

    config = {d.key: (d.a, d.b) for d in comparison.config}
    assert config == {
        "agents.overview.max_frames": (32, 48),
        "asr.source": ("whisper", "(absent)"),
        "cache.enabled": ("(absent)", True),
        "models.default.model": ("gpt-a", "gpt-b"),
        "pace_mem.k": ([2, 8], [2, 10]),
    }
    assert {d.key: (d.a, d.b) for d in comparison.prompts} == {
        "final_answer": ("11", "99"),
        "skim_plan": ("33", "(absent)"),
    }
    assert [(d.key, d.a, d.b) for d in comparison.models] == [("answer", "gpt-a", "gpt-b")]
    assert {d.key: (d.a, d.b) for d in comparison.header} == {
        "variants": (["full"], ["full", "wo_asr"])
    }
    # Without --variant every variant is compared; wo_asr exists in B only.
    assert [v.variant for v in comparison.variants] == ["full", "wo_asr"]
    assert comparison.variants[1].paired == 0
    assert comparison.variants[1].only_in_b[:2] == ["q01", "q02"]


def test_flatten_makes_dotted_keys_and_keeps_lists_whole() -> None:
    assert flatten({"a": {"b": {"c": 1}, "d": [1, {"e": 2}]}, "f": {}}) == {
        "a.b.c": 1,
        "a.d": [1, {"e": 2}],
        "f": {},
    }


def test_compare_text_shows_the_test_the_flips_and_the_differences(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(runs[0]), str(runs[1]), "--variant", "full"]) == 0
    text = capsys.readouterr().out

    assert "variant full: 12 paired questions (1 scored only in A, 1 only in B)" in text
    assert "accuracy A 41.7% (5/12), B 83.3% (10/12), B - A +41.7 points" in text
    assert "McNemar exact p = 0.125 (two-sided binomial on 7 discordant pairs" in text
    assert "wrong in A, right in B (6): q07, q08, q09, q10, q11, q12" in text
    assert "right in A, wrong in B (1): q06" in text
    assert "agents.overview.max_frames: 32 -> 48" in text
    assert 'final_answer: "11" -> "99"' in text
    assert "cache.enabled: (absent) -> true" in text
    assert "    answer: gpt-a -> gpt-b" in text
    assert "    overview: gpt-a\n" in text


def test_compare_json_is_one_object(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *map(str, runs), "--variant", "full", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [full] = data["variants"]
    assert full["mcnemar"]["p_exact"] == pytest.approx(0.125)
    assert full["became_wrong"] == ["q06"]
    assert data["models"] == [{"key": "answer", "a": "gpt-a", "b": "gpt-b"}]


def test_gold_letters_that_differ_between_runs_are_warned_about(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", [record("q1", "A", "A")])
    b = write_run(tmp_path / "b", [record("q1", "B", "A")])
    comparison = compare_runs(a, b)
    assert comparison.variants[0].gold_differs == ["q1"]
    assert not comparison.described
    text = comparison.render()
    assert "gold letter differs for 1 paired questions" in text
    assert "not known: a run.json is missing" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{a}", "{tmp}/absent"], "does not exist"),
        (["{a}", "{tmp}"], "no results in"),
        (["{a}", "{b}", "--variant", "direct"], "variant 'direct' is in neither run"),
    ],
)
def test_compare_cli_errors_exit_2(
    runs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    values = {"a": runs[0], "b": runs[1], "tmp": tmp_path}
    assert main(["compare", *(arg.format(**values) for arg in args)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("videotapestry: error: ") and message in err


def test_compare_shows_what_each_run_cost_per_question_beside_its_accuracy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gain is read beside its price: B is right more often and costs more; an unpriced
    run says so instead of $0."""
    cheap = {"calls": 6, "prompt_tokens": 4000, "cost_usd": 0.005}
    dear = {"calls": 16, "prompt_tokens": 20000, "cost_usd": 0.02}
    a = write_run(
        tmp_path / "a",
        [record("q1", "A", "B", usage=cheap), record("q2", "B", "B", usage=cheap)],
        header(),
    )
    b = write_run(
        tmp_path / "b",
        [record("q1", "A", "A", usage=dear), record("q2", "B", "B", usage=dear)],
        header(),
    )
    [full] = compare_runs(a, b).variants
    assert full.usage_a.cost_usd_mean == pytest.approx(0.005)
    assert full.usage_b.calls == pytest.approx(16)
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert (
        "cost per question A $0.0050, 6.0 calls, 4,000 prompt tokens; "
        "B $0.0200, 16.0 calls, 20,000 prompt tokens"
    ) in text
    unpriced = {**dear, "cost_usd": None}
    c = write_run(
        tmp_path / "c",
        [record("q1", "A", "A", usage=unpriced), record("q2", "B", "B", usage=unpriced)],
        header(),
    )
    assert main(["compare", str(a), str(c)]) == 0
    assert "B unpriced (2 questions), 16.0 calls" in capsys.readouterr().out
