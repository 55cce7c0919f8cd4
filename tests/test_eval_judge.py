"""The eval runner's side of grounding and open-ended scoring, with a stand-in for the method.

The runner's real answerer (``LocalAnswerer``) asks a stand-in ``VideoTapestry`` whose
``aanswer`` returns scripted results with citations, so these tests check what the runner
does with an answer (which options it asks with, the cited spans and the judge's verdict
it records) without running the method. The judge is the offline profile's, called through
a real model service.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from videotapestry.agents.state import Citation, EvidenceRef
from videotapestry.cli import main
from videotapestry.config import load_config
from videotapestry.eval.datasets import LoadOptions, load_benchmark
from videotapestry.eval.judging import Judge, judge_name
from videotapestry.eval.report import write_report
from videotapestry.eval.run_reader import read_records
from videotapestry.eval.run_writer import RunDirectory, identity_differences, new_run_info
from videotapestry.eval.runner import EvalRunner, Inputs, RunnerOptions, cited_spans
from videotapestry.llm.client import default_client_factories
from videotapestry.llm.service import ModelService
from videotapestry.llm.usage import UsageSummary
from videotapestry.offline.client import OfflineClientFactory
from videotapestry.offline.perception import Perception
from videotapestry.prompts import PromptRegistry
from videotapestry.result import Result
from videotapestry.trace import Trace

CGBENCH = Path(__file__).parent / "fixtures" / "eval" / "cgbench" / "cgbench_mini.json"
TENT_Q = "Where did the speaker tell volunteers to pick up their name cards?"

ROWS: list[dict[str, Any]] = [
    {
        "id": "mc",
        "video": "v.mp4",
        "question": "What is the door code?",
        "options": ["1447", "4417"],
        "answer": "B",
        "evidence_spans": [[212, 257]],
    },
    {
        "id": "open_right",
        "video": "v.mp4",
        "question": "What is the door code for Gate B?",
        "answer": "4417",
        "evidence_spans": [{"start_s": 212, "end_s": 257, "kind": "screen"}],
    },
    {
        "id": "open_wrong",
        "video": "v.mp4",
        "question": TENT_Q,
        "reference_answer": "At the green tent next to the bridge",
        "evidence_spans": [[48.78, 52.67]],
    },
    {"id": "open_noref", "video": "v.mp4", "question": "What happens at the end?"},
]

#: What the stand-in method answers: letter, answer in words, cited (start, end) spans.
ANSWERS: dict[str, tuple[str, str, list[tuple[float, float]]]] = {
    "mc": ("B", "4417", [(240.0, 250.0), (230.0, 230.0)]),
    "open_right": ("", "The door code for Gate B is 4417.", [(215.0, 225.0)]),
    "open_wrong": ("", "At the yellow tent.", []),
    "open_noref": ("", "They leave.", [(0.0, 1.0)]),
}


def scripted_result(qid: str, question: str, options: list[str]) -> Result:
    letter, text, spans = ANSWERS[qid]
    sources = [
        EvidenceRef(id=f"F{i}", kind="frame", level="subgraph", start_s=a, end_s=b)
        for i, (a, b) in enumerate(spans, start=1)
    ]
    return Result(
        question_id=qid, question=question, options=options, answer=letter, reasoning="",
        answer_source="answer", variant="full", memory_text="", memory_tokens=0,
        handoff_trace="", levels=[], trace=Trace(), usage=UsageSummary(), prompt_hashes={},
        answer_text=text, citations=[Citation(claim=text, sources=sources)] if spans else [],
    )  # fmt: skip


class StandIn:
    """Just enough of ``VideoTapestry`` for the runner and its local answerer."""

    def __init__(self, config, service: ModelService) -> None:
        self.config = config
        self.service = service
        self.prompts = PromptRegistry()
        self.embedder = SimpleNamespace(embed=lambda texts, query=False: None)
        self.asked: dict[str, Any] = {}

    def for_variant(self, variant: str) -> StandIn:
        return self

    def prepare(self) -> None:
        self.prompts.prepare()

    def load_memory(self, memory: Path, video_fingerprint: str | None = None) -> None:
        return None

    def release_memory(self, memory: Path) -> None:
        return None

    async def aanswer(self, video, memory, question, options, *, question_id, **_: Any) -> Result:
        self.asked[question_id] = options
        return scripted_result(question_id, question, list(options or []))


@pytest.fixture(scope="module")
def perception(embedder) -> Perception:
    return Perception(ocr_engine=object(), embedder=embedder)


def offline_service(perception: Perception, *overrides: str):
    config = load_config(profile="offline", overrides=list(overrides))
    factories = {**default_client_factories(), "offline": OfflineClientFactory(perception)}
    return config, ModelService(config, client_factories=factories)


def run_questions(tmp_path: Path, perception: Perception, *overrides: str, concurrency: int = 2):
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    questions = load_benchmark("jsonl", path)
    config, service = offline_service(perception, *overrides)
    vt = StandIn(config, service)
    info = new_run_info(
        benchmark="jsonl", annotations=path, variants=["full"], config=config, prompts=vt.prompts
    )
    run = RunDirectory.open(tmp_path / "run", info)
    memory = tmp_path / "memories" / "v"
    memory.mkdir(parents=True)
    for name in ("memory.json", "manifest.json"):
        (memory / name).write_text("{}")  # found, never read: the stand-in answers
    runner = EvalRunner(
        vt,  # type: ignore[arg-type]
        run,
        Inputs(videos=None, memories=tmp_path / "memories"),
        RunnerOptions(concurrency=concurrency),
    )
    try:
        outcome = asyncio.run(runner.run(questions))
    finally:
        run.close()
    return vt, outcome, {r.question_id: r for r in read_records(run.path).records}


def test_the_runner_records_answers_in_words_cited_spans_and_verdicts(
    tmp_path: Path, perception: Perception
) -> None:
    vt, outcome, records = run_questions(tmp_path, perception)
    assert outcome.stopped is None and not outcome.failed
    # Multiple choice is asked with its options; free-form questions without any.
    assert vt.asked == {"mc": ["A. 1447", "B. 4417"], "open_right": None, "open_wrong": None,
                        "open_noref": None}  # fmt: skip
    mc = records["mc"]
    assert (mc.prediction, mc.correct, mc.answer_text, mc.judgement) == ("B", True, "4417", None)
    assert mc.cited_spans == [(230.0, 230.0), (240.0, 250.0)]  # the union, sorted
    assert mc.evidence_spans == [(212.0, 257.0)]  # copied from the question
    right = records["open_right"]
    assert (right.prediction, right.gold, right.reference_answer) == (None, None, "4417")
    assert right.judgement is not None and right.judgement.judge == "offline"
    assert right.judgement.correct is True and right.correct is True
    assert right.judgement.reasoning.startswith("Approximate offline judge")
    assert right.judgement.usage.calls == 1  # its own call, kept apart from the question's
    wrong = records["open_wrong"]
    assert wrong.judgement is not None and wrong.judgement.correct is False
    assert wrong.cited_spans == []  # cited nothing: a real outcome, not an error
    assert records["open_noref"].judgement is None  # no reference: nothing to judge
    assert vt.service.usage.summary().by_role["judge"].calls == 2


def test_the_report_of_that_run_scores_grounding_and_names_the_judge(
    tmp_path: Path, perception: Perception
) -> None:
    run_questions(tmp_path, perception)
    data = json.loads(json.dumps(write_report(tmp_path / "run").to_dict()))
    full = data["variants"]["full"]
    # Scored: mc (right), open_right (judged right), open_wrong (judged wrong).
    assert full["accuracy"] == {"correct": 2, "total": 3, "accuracy": 2 / 3}
    assert full["counts"]["unscored"] == 1  # open_noref
    g = full["grounding"]
    # mc: the frame at 230 s and 240-250 s inside 212-257 s: hit, IoU 10/45; open_right:
    # 215-225 s, hit, IoU 10/45; open_wrong cited nothing: miss.
    assert (g["questions"], g["hits"], g["uncited"]) == (3, 2, 1)
    assert g["miou"] == pytest.approx((10 / 45 + 10 / 45 + 0) / 3)
    assert full["judges"] == {"offline": 2}


def test_a_judge_that_cannot_be_made_stops_the_run(tmp_path: Path, perception: Perception) -> None:
    # The offline provider has one model; a judge of another name fails for every question.
    _, outcome, records = run_questions(
        tmp_path, perception, "models.roles.judge.model=not-a-model", concurrency=1
    )
    assert outcome.stopped is not None and "the judge failed: ConfigError" in outcome.stopped
    first = records["open_right"]
    assert first.status == "answered" and first.judgement is not None
    assert first.judgement.correct is None and "not-a-model" in (first.judgement.error or "")
    assert {records["open_wrong"].status, records["open_noref"].status} == {"skipped"}


def test_judging_an_empty_answer_costs_no_call(perception: Perception) -> None:
    config, service = offline_service(perception)
    question = load_benchmark("cgbench", CGBENCH, LoadOptions(mode="open"))[0]
    judge = Judge(config, PromptRegistry(), service)
    outcome = asyncio.run(judge.judge(question, "  "))
    assert (outcome.judgement.correct, outcome.judgement.score) == (False, 0.0)
    assert service.usage.summary().calls == 0
    said = asyncio.run(judge.judge(question, "It reads City Half Marathon 2019."))
    assert said.judgement.correct is True and service.usage.summary().calls == 1
    assert judge_name(load_config()) == "gpt-5.5"  # a model judge is named by its model


def test_cited_spans_skip_a_span_that_is_not_one() -> None:
    ref = EvidenceRef(id="F1", kind="frame", level="super", start_s=30.0, end_s=10.0)
    good = EvidenceRef(id="T1", kind="transcript_line", level="super", start_s=1.0, end_s=2.0)
    citations = [Citation(claim="x", sources=[ref, good]), Citation(claim="y", sources=[good])]
    assert cited_spans(citations) == [(1.0, 2.0)]


def test_open_mode_lists_free_form_questions_and_is_part_of_the_identity(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["eval", "--benchmark", "cgbench", "--annotations", str(CGBENCH),
                 "--mode", "open", "--list"]) == 0  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["options"], r["answer"]) for r in rows] == [([], None)] * 3
    assert rows[0]["reference_answer"] == "City Half Marathon 2019"
    assert rows[0]["evidence_spans"] == [[612.5, 618.0], [1204.0, 1210.5]]
    config = load_config(profile="offline")
    made = {
        mode: new_run_info(
            benchmark="cgbench", annotations=CGBENCH, variants=["full"], config=config,
            prompts=PromptRegistry(), mode=mode,
        )
        for mode in ("mc", "open")
    }  # fmt: skip
    assert identity_differences(made["mc"], made["open"]) == ["mode: 'mc' in the run, 'open' now"]
