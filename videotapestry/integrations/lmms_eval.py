"""``videotapestry`` as an lmms-eval model: ``lmms-eval --model videotapestry --tasks videomme``.

lmms-eval finds this class through the ``lmms_eval.models`` entry point
(``lmms_manifest.MANIFEST``) and only then imports it, so nothing else in videotapestry
imports lmms-eval. It is a "simple" model: each request's ``args`` are ``(context,
gen_kwargs, doc_to_visual, doc_id, task, split)``. The rendered ``context`` is not parsed:
the question and options come from the task's own record (``self.task_dict[task][split]
[doc_id]``) and the video path from the task's ``doc_to_visual``; the method answers with
the option letter, which every multiple-choice extraction of lmms-eval reads.

A failure of one request is that request's response (``lmms_session.failure_response``);
an error that every request would repeat stops lmms-eval's run with the reason.

Only ``generate_until`` is answered. Log-likelihood requests (``output_type:
multiple_choice`` tasks such as ``egoschema_mcppl``) score each option by a loss, and the
method has none to give: returning made-up numbers would be scored as if they were real,
so those raise. Multi-round generation is not part of the method either.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.instance import GenerationResult, TokenCounts
from lmms_eval.api.model import lmms
from loguru import logger

from videotapestry.errors import VideoTapestryError
from videotapestry.eval.answering import RunStoppedError
from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import ResultRecord
from videotapestry.eval.runner import MissingVideoError
from videotapestry.integrations.lmms_docs import question_from_doc, video_from_visuals
from videotapestry.integrations.lmms_session import (
    LmmsSession,
    LmmsSettings,
    error_text,
    failure_message,
    failure_response,
)


class VideoTapestryLMMS(lmms):
    """Answers lmms-eval's multiple-choice video questions with the VideoTapestry method.

    ``--model_args`` (comma-separated): ``memory_root`` (required; memories as
    ``<root>/<video stem>/``), ``build_missing``, ``profile``, ``config``, ``variant``,
    ``concurrency``, ``output_dir`` (the run directory: results, usage and a trace per
    question), ``force``, ``stop_after``, and any ``section.key=value`` config override.
    """

    is_simple = True

    def __init__(self, **model_args: Any) -> None:
        super().__init__()
        self.settings = LmmsSettings.from_model_args(model_args)
        self.session = LmmsSession(self.settings)
        logger.info(
            f"videotapestry: variant {self.session.variant}, memories under "
            f"{self.settings.memory_root}, run directory {self.session.run_dir.path}"
        )

    def generate_until(self, requests: list[Any]) -> list[GenerationResult]:
        # Each request becomes a question, or the message of why it cannot be one.
        slots: list[str | GenerationResult] = []
        questions: dict[str, EvalQuestion] = {}
        for request in requests:
            _context, _gen_kwargs, doc_to_visual, doc_id, task, split = request.args
            try:
                question = self._question(doc_to_visual, doc_id, task, split)
            except VideoTapestryError as exc:
                slots.append(self._failed(task, doc_id, error_text(exc)))
                continue
            # lmms-eval repeats a request for k-sample runs; the question is asked once.
            questions.setdefault(question.id, question)
            slots.append(question.id)
        records, stopped = (
            self.session.answer(list(questions.values())) if questions else ({}, None)
        )
        if stopped:
            # An error every question would repeat (a refused key, the same failure on the
            # first questions): lmms-eval would score the rest as wrong answers, a result
            # that says nothing about the method. Stop its run instead; what was answered
            # is kept, and a rerun with the same output_dir resumes.
            raise RunStoppedError(
                f"videotapestry: the run stopped early: {stopped}. The questions answered so "
                f"far are in {self.session.run_dir.path / 'results.jsonl'}; rerun with the "
                "same output_dir to resume"
            )
        return [
            slot if isinstance(slot, GenerationResult) else self._response(questions[slot], records)
            for slot in slots
        ]

    def _response(
        self, question: EvalQuestion, records: dict[str, ResultRecord]
    ) -> GenerationResult:
        record = records.get(question.id)
        if record is None or record.status != "answered" or not record.prediction:
            doc_id = question.extra["doc_id"]
            return self._failed(question.benchmark, doc_id, failure_message(record))
        return GenerationResult(
            text=record.prediction,
            token_counts=TokenCounts(
                input_tokens=record.usage.prompt_tokens,
                output_tokens=record.usage.completion_tokens,
            ),
        )

    def _question(self, doc_to_visual: Any, doc_id: int, task: str, split: str) -> EvalQuestion:
        where = f"task {task} ({split}) doc {doc_id}"
        try:
            doc = self.task_dict[task][split][doc_id]
        except (KeyError, IndexError, TypeError) as exc:
            raise VideoTapestryError(f"{where}: lmms-eval holds no such record ({exc})") from None
        try:
            visuals = doc_to_visual(doc)
        except VideoTapestryError:
            raise
        except (SystemExit, Exception) as exc:
            # Some tasks' doc_to_visual exit the process (sys.exit) or assert when a video
            # file is missing; that is this request's problem, not the whole run's.
            raise MissingVideoError(
                f"{where}: the task's doc_to_visual found no video: "
                f"{exc if str(exc) else type(exc).__name__}"
            ) from None
        return question_from_doc(
            doc, task=task, split=split, doc_id=doc_id, video=video_from_visuals(visuals, where)
        )

    @staticmethod
    def _failed(task: str, doc_id: Any, message: str) -> GenerationResult:
        logger.error(f"videotapestry: task {task} doc {doc_id}: {message}")
        return GenerationResult(text=failure_response(message))

    def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
        raise NotImplementedError(
            "videotapestry answers generate_until requests only: it chooses an option, it "
            "does not score each option's likelihood. Use the generation form of the task "
            "(output_type: generate_until, e.g. egoschema rather than egoschema_mcppl)"
        )

    def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
        raise NotImplementedError(
            "videotapestry answers one multiple-choice question per request; multi-round "
            "generation is not supported"
        )

    def clean(self) -> None:
        self.session.close()
        super().clean()
