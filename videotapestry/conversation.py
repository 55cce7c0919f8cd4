"""Follow-up questions about one video: a conversation over one memory.

Every turn runs the whole method, like a question on its own; what a conversation adds is
the turns before it. Each agent is shown the earlier questions, their answers and the times
those answers cited, and a reference to the previous answer ("what was on screen right after
that?") is resolved to the moment it cited before the method runs
(``videotapestry.agents.follow_up``), so the levels search next to that moment. What earlier
turns decoded and transcribed is kept: the conversation holds its decoders open, frames
decoded once are taken from the facade's frame cache (``video.frame_cache_mb``), the memory
stays loaded in its memory cache, and transcribed windows come from the transcript cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from videotapestry.agents.follow_up import said_spans
from videotapestry.agents.state import EarlierTurn
from videotapestry.asr.stored import StoredTranscript
from videotapestry.config import Config
from videotapestry.memory import VideoMemory, live_state, live_video
from videotapestry.result import Result
from videotapestry.run_setup import memory_directory, open_decoders
from videotapestry.video import FrameCache, VideoReader

T = TypeVar("T")


class Answerer(Protocol):
    """What a conversation needs of the facade (``VideoTapestry``), which creates it."""

    config: Config
    #: The decoded frames its questions share.
    frames: FrameCache

    #: ``VideoTapestry.aanswer``: called with the turn's question, options and history.
    @property
    def aanswer(self) -> Callable[..., Coroutine[Any, Any, Result]]: ...

    def run_sync(self, coroutine: Coroutine[Any, Any, T]) -> T: ...


def earlier_turn(result: Result, said: Sequence[tuple[float, float, str]] = ()) -> EarlierTurn:
    """What a later turn is shown of an answered one: the question as asked, the answer in
    words (or the letter), and every span its citations cover; a cited claim that is a line
    of the transcript ``said`` (start, end, text) covers that line's span."""
    spans = [
        span
        for citation in result.citations
        for span in said_spans(citation.claim, citation.spans, said)
    ]
    return EarlierTurn(
        question=result.asked or result.question,
        answer=result.answer_text or result.answer,
        spans=sorted(dict.fromkeys(spans)),
    )


@dataclass
class Conversation:
    """Questions about one video asked in turn; ``turns`` holds every answered one.

    Use it as a context manager (or call ``close``) to release its decoders.
    """

    vt: Answerer
    video: str | Path | None
    memory: str | Path | VideoMemory
    #: Passed to every ``aanswer`` call (``no_video``, ``subtitle_path``, ...).
    answer_options: dict[str, Any] = field(default_factory=dict)
    turns: list[Result] = field(default_factory=list)
    _readers: list[VideoReader] = field(default_factory=list, repr=False)
    #: The followed memory's version the readers were opened at (``memory.live``).
    _opened_at: str | None = field(default=None, repr=False)
    _transcript: list[tuple[float, float, str]] | None = field(default=None, repr=False)

    @property
    def history(self) -> list[EarlierTurn]:
        said = self._said() if self.turns else []
        return [earlier_turn(result, said) for result in self.turns]

    def _said(self) -> list[tuple[float, float, str]]:
        """The lines of the transcript the memory stores, read once: where a cited sentence
        was said."""
        if self._transcript is None:
            directory = memory_directory(self.memory)
            stored = (
                StoredTranscript.for_memory(directory)
                if directory is not None and self.vt.config.asr.memory_transcript
                else None
            )
            lines = stored.transcript.lines if stored is not None else []
            self._transcript = [(line.start_s, line.end_s, line.text) for line in lines]
        return self._transcript

    async def aask(self, question: str, options: Sequence[str] | None = None) -> Result:
        """Answer ``question`` (free-form without ``options``) in the light of the turns
        before it; the result joins ``turns``."""
        readers = await asyncio.to_thread(self._open)
        result = await self.vt.aanswer(
            self.video,
            self.memory,
            question,
            options,
            history=self.history,
            readers=readers,
            question_id=f"turn{len(self.turns) + 1}",
            **self.answer_options,
        )
        self.turns.append(result)
        return result

    def ask(self, question: str, options: Sequence[str] | None = None) -> Result:
        """Synchronous ``aask`` (for scripts)."""
        return self.vt.run_sync(self.aask(question, options))

    def _open(self) -> list[VideoReader]:
        """The conversation's decoders, opened at its first turn. A followed memory's are
        opened again when a newer version was published: its recording has grown (and was
        written anew), and questions may look at the new minutes."""
        if self.video is None or self.answer_options.get("no_video"):
            return self._readers
        folder = memory_directory(self.memory)
        state = live_state(folder) if folder is not None else None
        version = state.version if state is not None else None
        if self._readers and version == self._opened_at:
            return self._readers
        self.close()
        video = live_video(folder, self.video) if folder is not None else self.video
        self._readers = open_decoders(
            video, self.vt.config.video, self.vt.frames, memory_dir=folder
        )
        self._opened_at = version
        return self._readers

    @property
    def reused_frames(self) -> int:
        """Frames later turns took from what earlier turns decoded."""
        return sum(getattr(reader, "reused_frames", 0) for reader in self._readers)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        self._readers = []

    def __enter__(self) -> Conversation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
