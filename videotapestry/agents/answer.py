"""The Answer agent: one call over the composite memory, an answer, and what it rests on.

It sees only the question (with its options, when it has them), the compact handoff trace
and the serialized composite memory: no tools, no retrieval, no video. A multiple-choice
question always ends with exactly one valid letter, whatever the model returns or if the
call fails; a free-form question ends with the model's answer in words. ``source`` records
how the answer was obtained, so reports count fallbacks instead of hiding them.

The reply also cites the evidence the answer rests on by the ids the composite memory shows
(frames, transcript lines, memory nodes); the ids are resolved here to the moments of the
video they stand for, and an id that names nothing is dropped and reported (a warning on the
result: the answer itself is untouched). With ``answer.citations`` off the prompt and the
reply schema ask for the paper's two keys only, and nothing is cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from videotapestry.agents.citations import resolve_citations
from videotapestry.agents.options import extract_answer_letter
from videotapestry.agents.state import AnswerOutcome, EvidenceRef, QuestionInput
from videotapestry.contracts.method import FinalAnswer, answer_model
from videotapestry.errors import ModelCallError, StructuredOutputError
from videotapestry.images import ImagePart
from videotapestry.llm.service import ModelSession
from videotapestry.memory import VideoMemory
from videotapestry.prompts import PromptRegistry, RenderedPrompt
from videotapestry.question import option_body, option_letters


async def run_answer_agent(
    session: ModelSession,
    prompts: PromptRegistry,
    *,
    question: QuestionInput,
    memory: str,
    handoff_trace: str,
    evidence: Mapping[str, EvidenceRef],
    nodes: VideoMemory,
    citations: bool = True,
) -> AnswerOutcome:
    """``evidence`` are the observed refs the composite memory shows; ``nodes`` is the
    stored memory, whose node ids are citable over their time ranges. ``citations`` is
    ``answer.citations`` (the composite memory should then have been assembled with it)."""
    prompt = prompts.render(
        "final_answer",
        **question.prompt_variables(),
        handoff_trace=handoff_trace,
        memory=memory,
        citations=citations,
    )
    return await _answer(
        session, "answer", prompt, question.options, (), evidence, nodes, citations
    )


async def run_direct_answer(
    session: ModelSession,
    prompts: PromptRegistry,
    *,
    question: QuestionInput,
    frames: Sequence[ImagePart],
    frame_refs: Sequence[EvidenceRef],
    video_duration: float,
    nodes: VideoMemory,
    citations: bool = True,
) -> AnswerOutcome:
    """The Direct baseline: uniformly sampled frames straight to the model, each citable by
    its ``frame_refs`` id (when ``citations``, ``answer.citations``, asks for citing)."""
    prompt = prompts.render(
        "direct_answer",
        **question.prompt_variables(),
        video_duration=round(video_duration, 1),
        image_notes=[
            f"{ref.id}: {image.label}" for ref, image in zip(frame_refs, frames, strict=True)
        ],
        citations=citations,
    )
    evidence = {ref.id: ref for ref in frame_refs}
    return await _answer(
        session, "direct", prompt, question.options, frames, evidence, nodes, citations
    )


async def _answer(
    session: ModelSession,
    role: str,
    prompt: RenderedPrompt,
    options: Sequence[str],
    images: Sequence[ImagePart],
    evidence: Mapping[str, EvidenceRef],
    nodes: VideoMemory,
    citations_asked: bool,
) -> AnswerOutcome:
    error = None
    claims: list[tuple[str, list[str]]] = []
    try:
        # Images (the Direct baseline's frames, the same for every question) before the text.
        reply = await session.complete_json(
            role, prompt, answer_model(citations_asked), images, images_first=True
        )
        raw_answer, reasoning = reply.answer, reply.reasoning
        if isinstance(reply, FinalAnswer):  # unasked, citations are ignored like any extra key
            claims = [(c.claim, c.ids) for c in reply.citations]
    except StructuredOutputError as exc:
        # The model answered, just not in the schema: its text may still name a letter.
        raw_answer, reasoning, error = exc.raw_text, exc.raw_text, str(exc)
    except ModelCallError as exc:
        if not exc.recoverable:
            raise
        raw_answer, reasoning, error = "", "", str(exc)
    citations, invalid = resolve_citations(claims, evidence, nodes)
    if invalid:
        session.trace.note("citation_invalid", role=role, ids=invalid)
    if options:
        choice = extract_answer_letter(raw_answer, reasoning, options)
        letter, source = choice.letter, choice.source
        text = option_body(options[option_letters(options).index(letter)])
    else:
        letter, text = "", " ".join(raw_answer.split())
        source = "answer" if text else "fallback"
    if source == "fallback":
        session.trace.note("answer_fallback", role=role, letter=letter, error=error)
    return AnswerOutcome(
        letter=letter,
        text=text,
        reasoning=reasoning,
        raw_answer=raw_answer,
        source=source,
        prompt_hash=prompt.hash,
        error=error,
        citations=citations,
        invalid_citations=invalid,
        citations_asked=citations_asked,
    )
