"""The Answer agent: one call over the composite memory, and always exactly one letter.

It sees only the question, the options, the compact handoff trace and the serialized
composite memory: no tools, no retrieval, no video. Whatever the model returns (or if the
call fails), the result is one valid option letter; ``source`` records how it was obtained so
reports can count fallbacks instead of hiding them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.agents.options import extract_answer_letter
from videotapestry.contracts.method import FinalAnswer
from videotapestry.errors import ModelCallError, StructuredOutputError
from videotapestry.images import ImagePart
from videotapestry.llm.service import ModelSession
from videotapestry.prompts import PromptRegistry, RenderedPrompt


@dataclass(frozen=True)
class AnswerResult:
    letter: str
    reasoning: str
    raw_answer: str
    source: str  # answer | option_text | reasoning | fallback
    prompt_hash: str
    error: str | None = None


async def run_answer_agent(
    session: ModelSession,
    prompts: PromptRegistry,
    *,
    question: str,
    options: Sequence[str],
    memory: str,
    handoff_trace: str,
) -> AnswerResult:
    prompt = prompts.render(
        "final_answer",
        question=question,
        options=list(options),
        handoff_trace=handoff_trace,
        memory=memory,
    )
    return await _answer(session, "answer", prompt, options, images=())


async def run_direct_answer(
    session: ModelSession,
    prompts: PromptRegistry,
    *,
    question: str,
    options: Sequence[str],
    frames: Sequence[ImagePart],
    video_duration: float,
) -> AnswerResult:
    """The Direct baseline: uniformly sampled frames straight to the model."""
    prompt = prompts.render(
        "direct_answer",
        question=question,
        options=list(options),
        video_duration=round(video_duration, 1),
        image_notes=[image.label for image in frames],
    )
    return await _answer(session, "direct", prompt, options, images=frames)


async def _answer(
    session: ModelSession,
    role: str,
    prompt: RenderedPrompt,
    options: Sequence[str],
    *,
    images: Sequence[ImagePart],
) -> AnswerResult:
    error = None
    try:
        reply = await session.complete_json(role, prompt, FinalAnswer, images)
        raw_answer, reasoning = reply.answer, reply.reasoning
    except StructuredOutputError as exc:
        # The model answered, just not in the schema: its text may still name a letter.
        raw_answer, reasoning, error = exc.raw_text, exc.raw_text, str(exc)
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        raw_answer, reasoning, error = "", "", str(exc)
    choice = extract_answer_letter(raw_answer, reasoning, options)
    if choice.source == "fallback":
        session.trace.note("answer_fallback", role=role, letter=choice.letter, error=error)
    return AnswerResult(
        letter=choice.letter,
        reasoning=reasoning,
        raw_answer=raw_answer,
        source=choice.source,
        prompt_hash=prompt.hash,
        error=error,
    )
