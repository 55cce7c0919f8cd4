"""Answering across a library (SPEC §15): search picks the videos, the method runs on each,
one Answer agent composes the answer from their composite memories, citing (video, time).

1. The library is searched with the question (and its options): the videos of the best
   moments, up to ``max_videos``, are the candidates. When no moment matches any of the
   question's words and none is close in meaning, no video is asked and the answer is that
   none of the videos shows this.
2. The VideoTapestry method runs on each candidate video, concurrently (the model service's
   per-endpoint limit bounds the calls in flight), each with its own memory and, when the
   file is known, its video; the video's search hits are shown to its Overview agent as
   localization hints, after its own locator's windows.
3. The final Answer agent reads the candidates' composite memories one after another, each
   under a header naming its video, with every id written ``V<n>.<id>`` so a citation names
   its video; the ids resolve back to (video, moment). The final agent is the method's own
   Answer agent (same prompt and rules): a library question differs in what it reads, not in
   how it answers.
4. A free-form answer that another candidate's own run gave too, in the same words and
   citing its own evidence, cites that video as well (``corroborating``): the final agent
   may rest a fact on one video's line where two videos show it. Not for a multiple-choice
   letter, which a run with no evidence picks as readily.

The per-video runs are injected (``answer_video``, ``load_memory``): the facade supplies
its own ``aanswer``, so this module does not import it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from videotapestry.agents.answer import run_answer_agent
from videotapestry.agents.citations import citable, node_level, stored_ref
from videotapestry.agents.state import Citation, EvidenceRef, MomentHint, QuestionInput
from videotapestry.library.index import LibraryIndex, SearchHit
from videotapestry.llm import UsageSummary
from videotapestry.llm.service import ModelService
from videotapestry.memory import VideoMemory
from videotapestry.prompts import PromptRegistry
from videotapestry.question import validate_question
from videotapestry.result import Result
from videotapestry.timecode import format_timestamp

#: What a library answer says when no video supports one.
NONE_SHOWS_THIS = "None of the videos in the library shows this."
#: A moment this close in meaning (cosine, MiniLM-like embedders) counts as a match even
#: when none of the question's words is in it.
MIN_SIMILARITY = 0.45

AnswerVideo = Callable[
    [str | None, str, str, Sequence[str], Sequence[MomentHint]], Awaitable[Result]
]
#: At most this many of a video's search hits are shown to its Overview agent.
MAX_HINTS = 5
#: A candidate's memory by its directory and the fingerprint of the video its run read.
LoadMemory = Callable[[str, str | None], VideoMemory]

_TOKEN = re.compile(r"(?<![\w.])([A-Za-z][\w]*)(?![\w])")


@dataclass(frozen=True)
class Candidate:
    """A video the search put forward, with the moments that put it there."""

    tag: str
    video_key: str
    title: str
    memory: str
    video: str | None
    hits: tuple[SearchHit, ...]


@dataclass(frozen=True)
class LibraryCitation:
    """A claim of a library answer and the moments of one video it rests on."""

    claim: str
    tag: str
    title: str
    memory: str
    video: str | None
    sources: list[EvidenceRef]

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "video": self.video,
            "memory": self.memory,
            "title": self.title,
            "sources": [s.model_dump(mode="json") for s in self.sources],
        }


@dataclass
class LibraryResult:
    """A library question's answer, the videos asked and what each cost."""

    question: str
    options: list[str]
    answer: str
    answer_text: str
    reasoning: str
    citations: list[LibraryCitation]
    candidates: list[Candidate]
    #: Each candidate's own run (its answer, levels, usage), in the candidates' order.
    runs: list[Result]
    usage: UsageSummary
    elapsed_s: float
    #: True when no video supported an answer (``answer_text`` then says so).
    none_found: bool = False
    #: Cited ids that named nothing in any candidate (dropped).
    invalid_citations: list[str] = field(default_factory=list)
    #: Videos the search put forward whose run failed: (title, error). The answer comes
    #: from the others, and says which were lost.
    failed_videos: list[tuple[str, str]] = field(default_factory=list)

    @property
    def answered_from(self) -> list[str]:
        """The titles of the videos the answer cites, in the order first cited."""
        return list(dict.fromkeys(c.title for c in self.citations))

    @property
    def degraded(self) -> list[str]:
        """What the answer lost: each video's degradations, and each video not answered."""
        lost = [
            f"{c.title}: {d.render()}"
            for c, r in zip(self.candidates, self.runs, strict=True)
            for d in r.degraded
        ]
        return lost + [f"{title}: not answered ({error})" for title, error in self.failed_videos]

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer,
            "answer_text": self.answer_text,
            "reasoning": self.reasoning,
            "none_found": self.none_found,
            "answered_from": self.answered_from,
            "citations": [c.to_dict() for c in self.citations],
            "videos": [
                {
                    "title": c.title,
                    "memory": c.memory,
                    "video": c.video,
                    "answer": r.answer,
                    "answer_text": r.answer_text,
                    "usage": r.usage.to_dict(),
                }
                for c, r in zip(self.candidates, self.runs, strict=True)
            ],
            "degraded": self.degraded,
            "failed_videos": [{"title": t, "error": e} for t, e in self.failed_videos],
            "invalid_citations": list(self.invalid_citations),
            "usage": self.usage.to_dict(),
            "elapsed_s": round(self.elapsed_s, 3),
        }


def tagged(text: str, tag: str, ids: set[str]) -> str:
    """``text`` with each whole word that is one of ``ids`` written ``{tag}.{id}``."""
    return _TOKEN.sub(lambda m: f"{tag}.{m.group(1)}" if m.group(1) in ids else m.group(1), text)


def pick_candidates(hits: Sequence[SearchHit], max_videos: int) -> list[Candidate]:
    """The videos of the best moments, best first, each with its moments (``V1``, ``V2``...)."""
    by_video: dict[str, list[SearchHit]] = {}
    for hit in hits:
        by_video.setdefault(hit.video_key, []).append(hit)
    chosen = list(by_video.items())[:max_videos]
    return [
        Candidate(
            tag=f"V{n}",
            video_key=key,
            title=found[0].title,
            memory=found[0].memory,
            video=found[0].video,
            hits=tuple(found),
        )
        for n, (key, found) in enumerate(chosen, 1)
    ]


def hints_of(candidate: Candidate) -> list[MomentHint]:
    """A candidate's best search hits as the Overview agent's localization hints (the whole
    video's own row says nothing about where, so it is left out)."""
    return [
        MomentHint(start_s=h.start_s, end_s=h.end_s, text=h.text, level=h.level)
        for h in candidate.hits
        if h.level != "video"
    ][:MAX_HINTS]


def video_header(candidate: Candidate, duration_s: float) -> str:
    name = Path(candidate.video).name if candidate.video else Path(candidate.memory).name
    return (
        f'Video {candidate.tag}: "{candidate.title}" ({name}, {format_timestamp(duration_s)} long)'
    )


class Library:
    """A library directory answered over (``VideoTapestry.library``)."""

    def __init__(
        self,
        index: LibraryIndex,
        *,
        service: ModelService,
        prompts: PromptRegistry,
        answer_video: AnswerVideo,
        load_memory: LoadMemory,
        max_videos: int = 3,
        search_top_k: int = 20,
        citations: bool = True,
        max_question_chars: int = 20_000,
    ) -> None:
        self.index = index
        self.service = service
        self.prompts = prompts
        self.answer_video = answer_video
        self.load_memory = load_memory
        self.max_videos = max_videos
        self.search_top_k = search_top_k
        self.citations = citations
        self.max_question_chars = max_question_chars

    def search(self, query: str, top_k: int = 10) -> list[SearchHit]:
        return self.index.search(query, top_k)

    def update(self, roots: Sequence[str | Path]) -> Any:
        """Index every memory under ``roots`` (see ``LibraryIndex.update``)."""
        return self.index.update(roots)

    def answer(self, question: str, options: Sequence[str] | None = None) -> LibraryResult:
        return asyncio.run(self.aanswer(question, options))

    async def aanswer(self, question: str, options: Sequence[str] | None = None) -> LibraryResult:
        options = list(options or [])
        validate_question(question, options, max_chars=self.max_question_chars)
        started = time.perf_counter()
        query = " ".join([question, *options])
        hits = await asyncio.to_thread(self.index.search, query, self.search_top_k)
        supported = await asyncio.to_thread(self._supported, query, hits)
        candidates = pick_candidates(supported, self.max_videos)
        if not candidates:
            return LibraryResult(
                question=question,
                options=options,
                answer="",
                answer_text=NONE_SHOWS_THIS,
                reasoning="No moment of any video in the library matches the question's words "
                "or its meaning.",
                citations=[],
                candidates=[],
                runs=[],
                usage=UsageSummary(),
                elapsed_s=time.perf_counter() - started,
                none_found=True,
            )
        outcomes = await asyncio.gather(
            *(
                self.answer_video(c.video, c.memory, question, options, hints_of(c))
                for c in candidates
            ),
            return_exceptions=True,
        )
        failed = [
            (c.title, f"{type(o).__name__}: {o}")
            for c, o in zip(candidates, outcomes, strict=True)
            if isinstance(o, BaseException)
        ]
        answered = [
            (c, o) for c, o in zip(candidates, outcomes, strict=True) if isinstance(o, Result)
        ]
        if not answered:
            first = next(o for o in outcomes if isinstance(o, BaseException))
            raise first
        result = await self._compose(
            question, options, [c for c, _ in answered], [r for _, r in answered], started
        )
        result.failed_videos = failed
        return result

    def _supported(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The hits that bear on ``query`` at all: a word of the question in them (the text
        search found it), or a meaning close enough. The query and the hits without such a
        word are embedded together, once."""
        words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 3}
        worded = [any(w in hit.text.lower() for w in words) for hit in hits]
        unworded = [hit.text for hit, has in zip(hits, worded, strict=True) if not has]
        close: list[bool] = []
        if unworded:
            vectors = np.asarray(self.index.embedder.embed([query, *unworded]), dtype=np.float32)
            close = [float(vectors[0] @ v) >= MIN_SIMILARITY for v in vectors[1:]]
        near = iter(close)
        return [hit for hit, has in zip(hits, worded, strict=True) if has or next(near)]

    async def _compose(
        self,
        question: str,
        options: list[str],
        candidates: list[Candidate],
        runs: list[Result],
        started: float,
    ) -> LibraryResult:
        sections, handoffs = [], []
        known: dict[str, EvidenceRef] = {}
        owners: dict[str, Candidate] = {}
        memories = []
        for candidate, run in zip(candidates, runs, strict=True):
            # The memory its run loaded (the facade's cache, keyed by the video it was read
            # against), not a second load.
            memory = await asyncio.to_thread(
                self.load_memory, candidate.memory, run.video_fingerprint
            )
            memories.append(memory)
            evidence = citable(run.levels)
            ids = {n.id for n in memory.nodes()} | {memory.root.id} | set(evidence)
            for node_id in ids - set(evidence):
                known[f"{candidate.tag}.{node_id}"] = _tagged_ref(
                    stored_ref(memory, node_id, node_level(memory, node_id)), candidate.tag
                )
            for ref_id, ref in evidence.items():
                known[f"{candidate.tag}.{ref_id}"] = _tagged_ref(ref, candidate.tag)
            owners[candidate.tag] = candidate
            sections.append(
                video_header(candidate, memory.duration)
                + "\n"
                + tagged(run.memory_text, candidate.tag, ids)
            )
            if run.handoff_trace:
                handoffs.append(
                    f"{candidate.tag}: " + tagged(run.handoff_trace, candidate.tag, ids)
                )
        session = self.service.session()
        item = QuestionInput(question=question, options=options, question_id="library")
        outcome = await run_answer_agent(
            session,
            self.prompts,
            question=item,
            memory="\n\n".join(sections),
            handoff_trace="\n".join(handoffs),
            evidence=known,
            nodes=memories[0],
            citations=self.citations,
        )
        citations, invalid = _by_video(outcome.citations, owners)
        if not options:
            citations += corroborating(outcome.text, candidates, runs, citations)
        usage = UsageSummary()
        for run in runs:
            usage.merge(run.usage)
        usage.merge(session.usage.summary())
        return LibraryResult(
            question=question,
            options=options,
            answer=outcome.letter or outcome.text,
            answer_text=outcome.text,
            reasoning=outcome.reasoning,
            citations=citations,
            candidates=candidates,
            runs=runs,
            usage=usage,
            elapsed_s=time.perf_counter() - started,
            invalid_citations=[*outcome.invalid_citations, *invalid],
        )


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def corroborating(
    answer: str,
    candidates: Sequence[Candidate],
    runs: Sequence[Result],
    cited: Sequence[LibraryCitation],
) -> list[LibraryCitation]:
    """The citations of each candidate not cited yet whose own run answered ``answer`` in the
    same words (case and punctuation aside), from the evidence that run cited."""
    said = _words(answer)
    named = {c.tag for c in cited}
    if not said:
        return []
    return [
        LibraryCitation(
            claim=citation.claim,
            tag=candidate.tag,
            title=candidate.title,
            memory=candidate.memory,
            video=candidate.video,
            sources=list(citation.sources),
        )
        for candidate, run in zip(candidates, runs, strict=True)
        if candidate.tag not in named and _words(run.answer_text) == said
        for citation in run.citations
        if citation.sources
    ]


def _tagged_ref(ref: EvidenceRef, tag: str) -> EvidenceRef:
    return ref.model_copy(update={"id": f"{tag}.{ref.id}"})


def _by_video(
    citations: Sequence[Citation], owners: Mapping[str, Candidate]
) -> tuple[list[LibraryCitation], list[str]]:
    """Each claim split by the video its sources belong to; a source without a video tag
    (an id the model wrote without its ``V<n>.``) is dropped and named."""
    out: list[LibraryCitation] = []
    invalid: list[str] = []
    for citation in citations:
        grouped: dict[str, list[EvidenceRef]] = {}
        for source in citation.sources:
            tag, _, own = source.id.partition(".")
            if tag not in owners or not own:
                invalid.append(source.id)
                continue
            grouped.setdefault(tag, []).append(source.model_copy(update={"id": own}))
        for tag, sources in grouped.items():
            owner = owners[tag]
            out.append(
                LibraryCitation(
                    claim=citation.claim,
                    tag=tag,
                    title=owner.title,
                    memory=owner.memory,
                    video=owner.video,
                    sources=sources,
                )
            )
    return out, invalid
