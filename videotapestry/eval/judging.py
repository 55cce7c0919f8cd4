"""Judging a free-form answer against a benchmark's reference answer.

The judge is a model role like every other (``judge``, its prompt ``prompts/judge.jinja``,
its reply ``contracts.judge.JudgeVerdict``), called through the model service, so its
calls are cached, limited and counted like the method's; its usage is kept on the
record's ``judgement``, apart from the question's, because judging is the evaluation's
cost, not the method's. Under the offline profile the judge is the offline model's
approximate rule (``offline/judge.py``), and its verdicts are named ``offline``.

A judge that cannot give a verdict (its call failed, its reply stayed malformed) leaves the
answer unjudged rather than wrong, with the error on the record; an error every question
would repeat (a refused key, an unknown judge model) is returned as ``fatal`` so the runner
stops the run instead of leaving a table of unjudged answers (so does a judge role the
configuration cannot make a client for). An empty answer is wrong
without a call: there is nothing to judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from videotapestry.config import JUDGE_ROLE, Config
from videotapestry.contracts.judge import JudgeVerdict
from videotapestry.errors import ConfigError, ModelCallError, VideoTapestryError
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import OFFLINE_JUDGE, Judgement, RecordUsage

if TYPE_CHECKING:
    from videotapestry.llm.service import ModelService, ModelSession
    from videotapestry.prompts import PromptRegistry

PROMPT = "judge"


def judge_name(config: Config) -> str:
    """Who a run's judge is: ``offline`` (the approximate rule) or the judge role's model."""
    settings = config.models.settings_for(JUDGE_ROLE)
    return OFFLINE_JUDGE if settings.provider == "offline" else settings.model


def needs_judge(question: EvalQuestion) -> bool:
    """A free-form question with a reference to judge its answer against."""
    return question.free_form and bool(question.reference_answer)


@dataclass(frozen=True)
class JudgeOutcome:
    judgement: Judgement
    #: An error every later question would repeat: the run should stop.
    fatal: str | None = None


class Judge:
    """Judges free-form answers with one run's prompts and model service."""

    def __init__(self, config: Config, prompts: PromptRegistry, service: ModelService) -> None:
        self.name = judge_name(config)
        self.prompts = prompts
        self.service = service

    async def judge(self, question: EvalQuestion, answer: str) -> JudgeOutcome:
        reference = question.reference_answer
        if not reference:
            raise ValueError(f"question {question.id} has no reference answer to judge against")
        if not answer.strip():
            return JudgeOutcome(
                Judgement(
                    judge=self.name,
                    correct=False,
                    score=0.0,
                    reasoning="the answer is empty: wrong, without asking the judge",
                )
            )
        prompt = self.prompts.render(
            PROMPT, question=question.question, reference=reference, answer=answer.strip()
        )
        session = self.service.session()
        try:
            verdict = await session.complete_json(JUDGE_ROLE, prompt, JudgeVerdict)
        except VideoTapestryError as exc:
            fatal = isinstance(exc, ConfigError) or (
                isinstance(exc, ModelCallError) and not exc.recoverable
            )
            error = f"{type(exc).__name__}: {exc}"
            return JudgeOutcome(
                Judgement(judge=self.name, error=error, usage=_usage(session)),
                fatal=f"the judge failed: {error}" if fatal else None,
            )
        return JudgeOutcome(
            Judgement(
                judge=self.name,
                correct=verdict.correct,
                score=round(verdict.score, 3),
                reasoning=verdict.reasoning,
                usage=_usage(session),
            )
        )


def _usage(session: ModelSession) -> RecordUsage:
    return RecordUsage.model_validate(session.usage.summary().to_dict())
