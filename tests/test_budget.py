"""Budgets (SPEC §17): a question's caps and a run's, and the anytime answer at a cap.

The checks are pure functions tested on hand-made figures; the session's refusal is shown
over real HTTP to the fake server (the refused call never reaches it, the answer does);
the anytime answer runs the offline model on the sample end to end through ``ask``.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from conftest import fake_config
from method_support import run_cli_output

from videotapestry.config import BudgetConfig
from videotapestry.contracts.method import FinalAnswer
from videotapestry.eval.records import RecordUsage, ResultRecord
from videotapestry.eval.run_budget import RunBudget, run_budget_reason, run_spent
from videotapestry.llm import ModelService, UsageSummary
from videotapestry.llm.budget import BudgetReached, Spent, budget_reason
from videotapestry.prompts import PromptRegistry
from videotapestry.testing import FakeOpenAIServer, FakeReply


def spent(calls: int = 0, tokens: int = 0, usd: float = 0.0, in_flight: int = 0, s: float = 0.0):
    return Spent(
        UsageSummary(calls=calls, prompt_tokens=tokens, cost_usd=usd), in_flight, elapsed_s=s
    )


def test_no_budget_never_stops() -> None:
    assert budget_reason(BudgetConfig(), spent(10_000, 10**9, 1e6, 5, 1e6)) is None


def test_max_calls_keeps_the_last_call_for_the_answer_and_counts_calls_in_flight() -> None:
    budget = BudgetConfig(max_calls=6)
    assert budget_reason(budget, spent(calls=4)) is None  # the 5th refines, the 6th answers
    assert "5 calls made" in (budget_reason(budget, spent(calls=5)) or "")
    assert budget_reason(budget, spent(calls=3, in_flight=2)) is not None
    assert budget_reason(BudgetConfig(max_calls=1), spent()) is not None  # answer only


@pytest.mark.parametrize(
    ("budget", "under", "over"),
    [
        (BudgetConfig(max_prompt_tokens=1000), spent(tokens=999), spent(tokens=1000)),
        (BudgetConfig(max_usd=0.01), spent(usd=0.0099), spent(usd=0.01)),
        (BudgetConfig(max_seconds=30), spent(s=29.9), spent(s=30.0)),
    ],
)
def test_tokens_dollars_and_seconds_stop_once_finished_calls_reach_them(
    budget: BudgetConfig, under: Spent, over: Spent
) -> None:
    assert budget_reason(budget, under) is None
    assert budget_reason(budget, over) is not None


def record(qid: str, calls: int, usd: float | None) -> ResultRecord:
    return ResultRecord(
        question_id=qid,
        video_id="v",
        variant="full",
        status="answered",
        usage=RecordUsage(calls=calls, cost_usd=usd),
    )


def test_a_run_spends_over_its_latest_records_and_names_what_it_cannot_price() -> None:
    records = [record("q0", 16, 0.02), record("q1", 16, 0.03), record("q2", 16, None)]
    total = run_spent(records)
    assert (total.calls, total.unpriced) == (48, 1) and total.usd == pytest.approx(0.05)
    assert run_budget_reason(RunBudget(max_usd=0.06), total) is None
    assert "$0.05" in (run_budget_reason(RunBudget(max_usd=0.05), total) or "")
    assert "48 made" in (run_budget_reason(RunBudget(max_calls=40), total) or "")
    assert run_budget_reason(RunBudget(), total) is None


def test_the_session_refuses_a_refining_call_past_the_budget_and_still_answers(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    reply = {"reasoning": "The memory says blue.", "answer": "B"}
    fake_server.on(None, lambda _: FakeReply.json(reply))
    service = ModelService(fake_config(fake_server, tmp_path, "budget.max_calls=2"))
    prompt = PromptRegistry().render(
        "final_answer",
        question="What colour is the car?",
        options=["A. Red", "B. Blue"],
        handoff_trace="",
        memory="super_01 [00:00-01:00] A blue car.",
    )

    async def go() -> tuple[str | None, FinalAnswer]:
        session = service.session()
        await session.complete_json("decision", prompt, FinalAnswer)  # 1 + 1 kept: allowed
        refused = None
        try:
            await session.complete_json("decision", prompt, FinalAnswer)
        except BudgetReached as exc:
            refused = exc.reason
        answer = await session.complete_json("answer", prompt, FinalAnswer)
        await service.aclose()
        return refused, answer

    refused, answer = asyncio.run(go())
    assert refused is not None and "budget.max_calls=2" in refused
    assert answer.answer == "B"
    assert [r.role for r in fake_server.requests] == ["decision", "answer"]


@pytest.mark.slow
def test_max_calls_on_the_offline_demo_question_gives_an_anytime_answer(
    demo_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``budget.max_calls=6`` on the sample's door-code question: six calls at most, an
    answer, the degradation naming the levels that never ran, and exit 3."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    memory = demo_memory_dir(video, demo_cache)
    question = "What is the door code for Gate B, the delivery gate?"
    options = ["A. 1875", "B. 2650", "C. 4417", "D. 9021"]
    args = ["ask", str(video), "--memory", str(memory), "--question", question]
    args += [a for o in options for a in ("--option", o)]
    args += ["--profile", "offline", "--quiet", "--trace", str(demo_cache / "t.json")]
    code, out, err = run_cli_output(capsys, *args, "--max-calls", "6", "--json")
    assert code == 3, err
    result = json.loads(out)
    assert result["usage"]["calls"] <= 6
    assert re.fullmatch("[ABCD]", result["answer"])
    [lost] = [d for d in result["degraded"] if d["kind"] == "budget_reached"]
    assert "not run: the Macro level (Skim agent), the Subgraph level" in lost["what"]
    assert "budget.max_calls=6" in lost["why"] and "budget_reached" in err
    # The same question without a budget runs the method: more calls, no such degradation.
    code, out, _ = run_cli_output(capsys, *args, "--json")
    full = json.loads(out)
    assert full["usage"]["calls"] > 6
    assert not [d for d in full["degraded"] if d["kind"] == "budget_reached"]
