"""What a served request does, shared by the REST API and the MCP server: build a memory of a
video into a folder, answer a question, and turn an answer into what a client is sent.

Both front ends take their paths from whoever is on the other end of a socket, so each
function here takes paths already resolved by :class:`~videotapestry.serve.roots.Roots` and
does the work with the same facade and builder the commands use (``build-memory``, ``ask``):
a served answer is the answer ``ask`` would print.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_builders.progress import BuildProgress, StageBar, StageUpdate
from videotapestry.errors import VideoTapestryError

if TYPE_CHECKING:
    from videotapestry.agents.context import ProgressCallback
    from videotapestry.api import VideoTapestry
    from videotapestry.config import Config
    from videotapestry.embeddings import Embedder
    from videotapestry.result import Result
    from videotapestry.serve.roots import Roots

#: Called with (stage, done, total) whenever a build stage advances; total may be None.
StageCallback = Callable[[str, float, float | None], None]

#: Where a build puts a video's memory when the request names no folder.
MEMORIES_FOLDER = "memories"


class JobCancelledError(VideoTapestryError):
    """A build was cancelled by its client; its checkpoints are kept (a new build resumes)."""


class ReportingProgress(BuildProgress):
    """The builder's progress display for a served build: every stage's advance goes to
    ``on_stage`` (the job's progress and its event stream), through the listener every
    ``StageBar`` already tells, and a set ``cancel`` flag stops the build at its next step,
    raised from inside the builder so its checkpoints stand."""

    def __init__(self, on_stage: StageCallback, cancel: threading.Event | None = None) -> None:
        super().__init__(enabled=False, listener=self._advance)
        self._on_stage = on_stage
        self._cancel = cancel or threading.Event()

    def stage(self, name: str, total: float | None, unit: str = "clip") -> StageBar:
        self._advance(StageUpdate(name, 0.0, total, unit))  # a stage is shown as it starts
        return super().stage(name, total, unit)

    def _advance(self, update: StageUpdate) -> None:
        if self._cancel.is_set():
            raise JobCancelledError("the build was cancelled; its finished steps are kept")
        self._on_stage(update.stage, update.done, update.total)


def default_memory_dir(roots: Roots, video: Path) -> Path:
    """``<the video's root>/memories/<video stem>``: where the library finds it again."""
    for root in roots.folders:
        if video.is_relative_to(root):
            return root / MEMORIES_FOLDER / video.stem
    raise VideoTapestryError(f"video {video}: not under the server's roots")


def build_memory(
    config: Config,
    video: Path,
    out: Path,
    *,
    embedder: Embedder,
    progress: BuildProgress,
    subtitles: Path | None = None,
) -> dict[str, Any]:
    """Build (or resume building) ``video``'s memory into ``out``; its build report as JSON.

    Runs to the end in the calling thread with a facade of its own (its own model clients
    and event loop) sharing ``embedder``, so a server's event loop keeps answering while a
    build decodes and reads its video. A killed build resumes from its checkpoints in ``out``
    when called again with the same arguments.
    """
    from videotapestry.api import VideoTapestry

    vt = VideoTapestry(config, embedder=embedder)
    result = vt.build_memory(video, out, subtitles, progress=progress)
    report: dict[str, Any] = result.report.to_json()
    return report


async def answer_question(
    vt: VideoTapestry,
    *,
    video: Path | None,
    memory: Path,
    question: str,
    options: Sequence[str] = (),
    progress: ProgressCallback | None = None,
) -> Result:
    """One question answered as ``ask`` answers it (multiple-choice, or free-form without
    options); the caller saves the trace where its clients can read it."""
    return await vt.aanswer(
        video, memory, question, list(options), progress=progress, keep_images=False
    )


def answer_payload(result: Result, *, trace: str | None = None) -> dict[str, Any]:
    """What a client is sent for an answer: the result as ``ask --json`` prints it, each
    citation's moments as seconds to seek a player to, and every degradation rendered, so a
    fallback is shown wherever the answer is (SPEC §7a)."""
    payload = result.to_dict()
    payload["answer_text"] = payload.get("answer_text") or ""
    payload["citations"] = [
        {
            "claim": citation.claim,
            "sources": [
                {**source.model_dump(mode="json"), "seek_s": source.start_s}
                for source in citation.sources
            ],
        }
        for citation in result.citations
    ]
    payload["degraded_text"] = [degradation.render() for degradation in result.degraded]
    payload["trace"] = trace
    return payload


def level_event(event: dict[str, Any]) -> dict[str, Any] | None:
    """The event a client shows on the agents' timeline for one progress event of a question:
    a level that finished (with what it handed down), or None for the steps inside a level."""
    if event.get("step") != "done" and event.get("level") not in ("assemble", "answer"):
        return None
    return {key: value for key, value in event.items() if _jsonable(value)}


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, list, dict, type(None)))


def memory_outline(path: Path) -> dict[str, Any]:
    """A stored memory's top three levels as plain fields: the root summary, its SuperEvents
    and their MacroEvents with their times (what a library shows before any question)."""
    from videotapestry.memory import open_memory

    memory = open_memory(path)
    root = memory.root

    def span(node: Any) -> dict[str, float]:
        return {"start_s": node.time_range.start, "end_s": node.time_range.end}

    return {
        "title": root.title,
        "description": root.description,
        "duration_s": memory.duration,
        "counts": memory.counts(),
        "super_events": [
            {
                "id": super_event.id,
                "label": super_event.label,
                "description": super_event.description,
                **span(super_event),
                "macro_events": [
                    {"id": macro.id, "label": macro.label, "summary": macro.summary, **span(macro)}
                    for macro in memory.macro_events(super_event.id)
                ],
            }
            for super_event in memory.super_events()
        ],
    }
