"""What citing costs the method per question: model calls, prompt tokens and reply tokens.

Citations ride on the Answer agent's one call and on nothing else (no level agent sees a
ref): the composite memory shows what can be cited (the ``refs:`` lines ``assemble`` puts
under refined entries), the prompt asks for citations (the sentences of
``final_answer.jinja`` that describe refs and the ``citations`` key), and the reply lists
them; ``answer.citations: false`` leaves all three out. So the cost is measured on each
answered question's saved trace, without a second run: the answer call's prompt is rendered
again by the same registry from what the trace kept (question, options, handoff trace,
composite memory) and must come out at the exact size the call was sent with, else the
measurement refuses; then it is rendered as the switch off renders it (``citations=False``,
the memory without its ``refs:`` lines) and counted the same way (``tokens.estimate_tokens``,
the count the offline client bills). A real tokenizer gives other counts but about the same
ratio.

The calls are counted from the trace too: an answer with citations is still one answer
call; only a repair retry (a reply that was not valid JSON) would add one. An
OpenAI-compatible endpoint in ``json_schema`` mode is also sent the reply's schema, which
the offline client does not bill: ``schema_tokens`` counts it with and without citations
(``FinalAnswer`` and ``UncitedAnswer``, the one each setting of the switch sends).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.contracts.method import answer_model
from videotapestry.prompts import PromptRegistry, RenderedPrompt
from videotapestry.tokens import estimate_tokens

#: The Answer agent's prompt, which the full method and static memory answer with.
ANSWER_PROMPT = "final_answer"
ANSWER_ROLE = "answer"
_REFS_LINE = re.compile(r"^\s*refs: ")


def without_refs_lines(memory_text: str) -> str:
    """The composite memory without the ``refs:`` lines that name what can be cited: the
    memory ``assemble`` gives with ``citations=False``, from a trace of a run with them."""
    return "\n".join(line for line in memory_text.split("\n") if not _REFS_LINE.match(line))


def schema_tokens() -> tuple[int, int]:
    """Tokens of the answer's JSON schema, with citations and without."""
    cited, uncited = (answer_model(c).model_json_schema() for c in (True, False))
    return estimate_tokens(json.dumps(cited)), estimate_tokens(json.dumps(uncited))


def prompt_tokens(prompt: RenderedPrompt) -> int:
    """Tokens of the prompt's messages, counted as the offline client bills them."""
    return estimate_tokens(prompt.system + prompt.user)


@dataclass(frozen=True)
class CitationCost:
    """One question's answer call, with and without what citing adds to it."""

    question_id: str
    #: Every model call of the question, and the Answer agent's (one, or two after a repair).
    calls: int
    answer_calls: int
    #: The whole question's prompt tokens, as billed.
    question_prompt_tokens: int
    #: The answer call's prompt, as sent (checked against the bill) and without citations.
    answer_prompt_tokens: int
    answer_prompt_tokens_uncited: int
    #: What the answer call was billed for (the offline client bills the same count).
    answer_prompt_tokens_billed: int
    #: Of the removed tokens, those of the composite memory's ``refs:`` lines.
    refs_line_tokens: int
    #: The answer reply, as returned and without its ``citations`` list.
    reply_tokens: int
    reply_tokens_uncited: int
    cited: bool

    @property
    def added_prompt_tokens(self) -> int:
        return self.answer_prompt_tokens - self.answer_prompt_tokens_uncited

    @property
    def extra_calls(self) -> int:
        """Calls citing could have added: answer calls beyond the one the method makes."""
        return self.answer_calls - 1


class AnswerPrompts:
    """Renders the answer prompt as each setting of ``answer.citations`` renders it."""

    def __init__(self, registry: PromptRegistry) -> None:
        self.registry = registry

    def render(self, variables: Mapping[str, Any], *, cited: bool) -> RenderedPrompt:
        return self.registry.render(ANSWER_PROMPT, **variables, citations=cited)


def citation_cost(trace: Mapping[str, Any], prompts: AnswerPrompts) -> CitationCost:
    """The citation cost of one saved trace (``Result.save_trace``'s JSON) of a question
    the Answer agent answered; a ``ValueError`` when it has no answer call or the prompt
    rendered again is not the one the call was sent with."""
    result = trace["result"]
    events = [e for e in trace["events"] if e["kind"] == "model_call"]
    answers = [e for e in events if e["role"] == ANSWER_ROLE]
    if not answers:
        raise ValueError(f"question {result['question_id']} has no {ANSWER_ROLE} call")
    first = answers[0]
    memory = trace["memory_text"]
    variables = {
        "question": result["question"],
        "options": list(result["options"]),
        "handoff_trace": result["handoff_trace"],
        "memory": memory,
    }
    sent = prompts.render(variables, cited=True)
    sizes = [m["chars"] for m in first["inputs"]["messages"]]
    if sizes != [len(sent.system), len(sent.user)] or first["prompt_hash"] != sent.hash:
        raise ValueError(
            f"question {result['question_id']}: the answer prompt rendered again "
            f"({len(sent.system)}, {len(sent.user)} chars) is not the one sent ({sizes})"
        )
    uncited_memory = without_refs_lines(memory)
    uncited = prompts.render({**variables, "memory": uncited_memory}, cited=False)
    reply = first["output"] if isinstance(first["output"], dict) else {}
    return CitationCost(
        question_id=result["question_id"],
        calls=len(events),
        answer_calls=len(answers),
        question_prompt_tokens=sum(e["usage"]["prompt_tokens"] for e in events if e["usage"]),
        answer_prompt_tokens=prompt_tokens(sent),
        answer_prompt_tokens_uncited=prompt_tokens(uncited),
        answer_prompt_tokens_billed=first["usage"]["prompt_tokens"],
        refs_line_tokens=estimate_tokens(memory) - estimate_tokens(uncited_memory),
        reply_tokens=_json_tokens(reply),
        reply_tokens_uncited=_json_tokens({k: v for k, v in reply.items() if k != "citations"}),
        cited=bool(result["citations"]),
    )


def _json_tokens(reply: Mapping[str, Any]) -> int:
    """Tokens of a reply serialized as the offline client sends one."""
    return estimate_tokens(json.dumps(reply, ensure_ascii=False))


def trace_costs(trace_files: Sequence[Path], registry: PromptRegistry) -> list[CitationCost]:
    """``citation_cost`` of every trace file (the answered questions of a variant)."""
    prompts = AnswerPrompts(registry)
    return [citation_cost(json.loads(p.read_text(encoding="utf-8")), prompts) for p in trace_files]


@dataclass(frozen=True)
class CostSummary:
    """Citation costs over a variant's answered questions (means per question)."""

    questions: int
    calls: float
    extra_calls: int
    answer_prompt_tokens: float
    added_prompt_tokens: float
    refs_line_tokens: float
    question_prompt_tokens: float
    added_reply_tokens: float

    @property
    def added_share_of_answer(self) -> float:
        """Prompt tokens citing adds, as a share of the answer prompt without them."""
        base = self.answer_prompt_tokens - self.added_prompt_tokens
        return self.added_prompt_tokens / base if base else 0.0

    @property
    def added_share_of_question(self) -> float:
        """The same tokens as a share of every prompt the question sent without them."""
        base = self.question_prompt_tokens - self.added_prompt_tokens
        return self.added_prompt_tokens / base if base else 0.0


def summarize(costs: Sequence[CitationCost]) -> CostSummary:
    """Means per question; extra calls are a total (the goal is none)."""
    n = len(costs)
    if not n:
        raise ValueError("no answered question to measure")

    def mean(values: Sequence[int]) -> float:
        return sum(values) / n

    return CostSummary(
        questions=n,
        calls=mean([c.calls for c in costs]),
        extra_calls=sum(c.extra_calls for c in costs),
        answer_prompt_tokens=mean([c.answer_prompt_tokens for c in costs]),
        added_prompt_tokens=mean([c.added_prompt_tokens for c in costs]),
        refs_line_tokens=mean([c.refs_line_tokens for c in costs]),
        question_prompt_tokens=mean([c.question_prompt_tokens for c in costs]),
        added_reply_tokens=mean([c.reply_tokens - c.reply_tokens_uncited for c in costs]),
    )
