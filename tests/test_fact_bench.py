"""The parts bench/bench_grounding.py measures with: a fact video's questions as an eval
benchmark's (testing/fact_bench.py), and what citing costs an answer call
(testing/citation_cost.py), on the shipped template and on a real answered question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videotapestry.contracts.method import FinalAnswer, UncitedAnswer
from videotapestry.prompts import PromptRegistry
from videotapestry.testing.citation_cost import (
    ANSWER_PROMPT,
    AnswerPrompts,
    citation_cost,
    schema_tokens,
    without_refs_lines,
)
from videotapestry.testing.fact_bench import (
    ON_SCREEN,
    OfflineModels,
    build_fact_memory,
    fact_eval_questions,
    offline_facade,
)
from videotapestry.testing.fact_videos import (
    FactVideo,
    fact_questions,
    make_fact_video,
    place_facts,
)

MEMORY = """Video: a warehouse tour
SuperEvents:
S_1 [00:00-05:00] The gate shows DOCK 14 CODE 5831.
  refs: S3-S5 (01:10-01:40); T2 (01:12-01:15)
  M_1 [01:00-02:00] DOCK 14 CODE 5831 on screen
    refs: K1-K2 (01:12-01:20)
    Evidence:
    01:12-01:20 DOCK 14 CODE 5831
      refs: F4 (01:13-01:14)
S_2 [05:00-10:00] A tent; the guide prefers refs: none."""


def _fact_video(tmp_path: Path) -> FactVideo:
    """The questions need the facts only, so no video is written."""
    facts = place_facts(600.0, 5, seed=3)
    return FactVideo(tmp_path / "facts.mp4", 600.0, facts, fact_questions(facts, seed=3))


def test_multiple_choice_questions_keep_options_gold_letter_and_the_fact_span(
    tmp_path: Path,
) -> None:
    video = _fact_video(tmp_path)
    questions = fact_eval_questions(video)
    assert [q.id for q in questions] == [q.id for q in video.questions]
    for question, fact_question in zip(questions, video.questions, strict=True):
        fact = fact_question.fact
        assert question.options == fact_question.options
        assert question.answer is not None and not question.free_form
        assert question.options[question.answer_index or 0].endswith(fact.code)
        assert question.reference_answer is None
        assert question.evidence_spans == [(fact.start_s, fact.end_s)]
        assert (question.video, question.video_id) == ("facts.mp4", "facts")
        assert question.categories == [ON_SCREEN]


def test_free_form_questions_are_the_same_questions_judged_against_the_code(
    tmp_path: Path,
) -> None:
    video = _fact_video(tmp_path)
    choice = fact_eval_questions(video)
    words = fact_eval_questions(video, free_form=True)
    for open_question, mc, fact_question in zip(words, choice, video.questions, strict=True):
        assert open_question.free_form and open_question.answer is None
        assert open_question.question == mc.question
        assert open_question.reference_answer == fact_question.fact.code
        assert open_question.evidence_spans == mc.evidence_spans


def test_only_the_refs_lines_leave_the_memory() -> None:
    stripped = without_refs_lines(MEMORY)
    assert "refs: S3" not in stripped and "refs: K1" not in stripped and "F4" not in stripped
    lines = MEMORY.split("\n")
    assert len(stripped.split("\n")) == len(lines) - 3
    assert all(line in stripped.split("\n") for line in lines if "refs: " not in line)
    # A node text that merely says "refs:" mid-line is the memory's, not a refs line.
    assert "prefers refs: none." in stripped


@pytest.mark.parametrize("options", [["A. 5831", "B. 1234"], []])
def test_the_uncited_answer_prompt_asks_for_no_citations(options: list[str]) -> None:
    registry = PromptRegistry()
    prompts = AnswerPrompts(registry)
    variables = {
        "question": "Which code was shown on screen for Dock 14?",
        "options": options,
        "handoff_trace": "",
        "memory": MEMORY,
    }
    cited = prompts.render(variables, cited=True)
    uncited = prompts.render({**variables, "memory": without_refs_lines(MEMORY)}, cited=False)
    assert cited == registry.render(ANSWER_PROMPT, **variables)  # the shipped prompt
    for part in ("citations", '"refs:"', "Cite", "ids"):
        assert part in cited.system
        assert part not in uncited.system
    assert '{"reasoning": string, "answer": string}' in uncited.system
    assert uncited.user.startswith("Question: Which code")
    assert "refs:" not in uncited.user.replace("prefers refs: none", "")
    assert len(uncited.system) < len(cited.system)


def test_the_reply_schema_without_citations_keeps_the_answer_and_names_no_claim() -> None:
    schema = FinalAnswer.model_json_schema()
    assert "citations" in json.dumps(schema) and "CitedClaim" in json.dumps(schema)
    stripped = UncitedAnswer.model_json_schema()
    assert "citations" not in json.dumps(stripped) and "CitedClaim" not in json.dumps(stripped)
    assert set(stripped["properties"]) == {"reasoning", "answer"}
    assert stripped["required"] == ["answer"]
    cited_tokens, uncited_tokens = schema_tokens()
    assert cited_tokens > uncited_tokens > 0


@pytest.mark.slow
def test_the_cost_of_a_real_cited_answer_is_measured_on_its_trace(tmp_path: Path, embedder) -> None:
    video = make_fact_video(tmp_path / "facts.mp4", duration_s=120.0, count=4, seed=5)
    models = OfflineModels.load(embedder)
    build_fact_memory(video, tmp_path / "memory", models)
    question = video.questions[0]
    vt = offline_facade(models=models)
    result = vt.answer(video.path, tmp_path / "memory", question.question, question.options)
    trace = json.loads(result.save_trace(tmp_path / "trace.json").read_text(encoding="utf-8"))

    cost = citation_cost(trace, AnswerPrompts(vt.prompts))
    assert result.citations and cost.cited
    assert cost.answer_calls == 1 and cost.extra_calls == 0
    assert cost.calls == result.usage.calls
    assert cost.question_prompt_tokens == result.usage.prompt_tokens
    # Counted as the call was billed, from the prompt rendered again.
    assert cost.answer_prompt_tokens == cost.answer_prompt_tokens_billed
    assert cost.answer_prompt_tokens == result.usage.by_role["answer"].prompt_tokens
    # The memory showed refs lines, and the instructions cost more than they did.
    assert "refs: " in result.memory_text and cost.refs_line_tokens > 0
    assert cost.added_prompt_tokens > cost.refs_line_tokens
    assert cost.reply_tokens > cost.reply_tokens_uncited

    trace["memory_text"] += "\nS_9 [00:00-00:01] a node the call never saw"
    with pytest.raises(ValueError, match="not the one sent"):
        citation_cost(trace, AnswerPrompts(vt.prompts))
