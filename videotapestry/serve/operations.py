"""What a served request does, shared by the REST API and the MCP server: build a memory of a
video into a folder, answer a question, and turn an answer into what a client is sent.

Both front ends take their paths from whoever is on the other end of a socket, so each
function here takes paths already resolved by :class:`~videotapestry.serve.roots.Roots` and
does the work with the same facade and builder the commands use (``build-memory``, ``ask``):
a served answer is the answer ``ask`` would print.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from memory_builders.followers import HlsFollower, make_follower
from memory_builders.progress import BuildProgress, StageBar, StageUpdate
from memory_builders.sources import (
    SourceFollower,
    is_playlist,
    is_remote,
    is_stream_url,
    is_url,
    shown_url,
)
from videotapestry.agents.state import Citation, Degradation, EvidenceKind, ResultWarning
from videotapestry.errors import VideoTapestryError

if TYPE_CHECKING:
    from videotapestry.agents.context import ProgressCallback
    from videotapestry.api import VideoTapestry
    from videotapestry.config import BuilderFollowSettings, Config
    from videotapestry.embeddings import Embedder
    from videotapestry.library import IndexedVideo, Library, LibraryIndex, LibraryResult, SearchHit
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
    """``<the video's root>/memories/<its path under the root, less the suffix>``: where the
    library finds it again. The whole path, not the stem: ``a/talk.mp4`` and ``b/talk.mp4``
    get ``memories/a/talk`` and ``memories/b/talk``, not one folder that the second build
    would take over (two suffixes of one name, ``talk.mp4`` and ``talk.mkv``, still share
    one: the builder refuses the second, as the folder holds another video's memory)."""
    for root in roots.folders:
        if video.is_relative_to(root):
            return root / MEMORIES_FOLDER / video.relative_to(root).with_suffix("")
    raise VideoTapestryError(f"video {video}: not under the server's roots")


def build_memory(
    config: Config,
    video: Path,
    out: Path,
    *,
    embedder: Embedder,
    progress: BuildProgress,
    subtitles: Path | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Build (or resume building) ``video``'s memory into ``out``; its build report as JSON.
    ``force``: replace the memory of another video that ``out`` holds.

    Runs to the end in the calling thread with a facade of its own (its own model clients
    and event loop) sharing ``embedder``, so a server's event loop keeps answering while a
    build decodes and reads its video. A killed build resumes from its checkpoints in ``out``
    when called again with the same arguments.
    """
    from videotapestry.api import VideoTapestry

    vt = VideoTapestry(config, embedder=embedder)
    result = vt.build_memory(video, out, subtitles, progress=progress, force=force)
    report: dict[str, Any] = result.report.to_json()
    return report


#: Called with each version a followed build publishes: its figures as a progress event.
VersionCallback = Callable[[dict[str, Any]], object]


def follow_source(
    config: Config,
    source: str,
    out: Path,
    *,
    embedder: Embedder,
    roots: Roots,
    cancel: threading.Event,
    on_version: VersionCallback,
    library: Callable[[], Library] | None = None,
) -> dict[str, Any]:
    """Follow ``source`` (an HLS playlist under the roots or at an http(s) URL, a stream URL,
    or a file still being written under the roots) into ``out`` until it ends, as
    ``build-memory --follow`` does (SPEC §16); the last version's build report and pointer
    as JSON.

    ``on_version`` hears each published version: the video time it covers, the time that
    had arrived at the source by then and the lag between them. With ``library``, each
    version is indexed into the served library as ``build-memory --follow --library`` does
    (``library.index_built``: this memory only, the library's others left as they are). A
    set ``cancel`` stops it at its next look at the source or its next build step; the
    newest version stays readable and a new job on the same folder goes on from the
    recording and the checkpoints. Blocking, on a thread with an event loop of its own,
    like ``build_memory``.
    """
    import asyncio

    from memory_builders.builder import BuildResult, MemoryBuilder
    from memory_builders.follow import follow
    from memory_builders.recording import SEGMENTS_DIR
    from videotapestry.library import index_built
    from videotapestry.memory import RECORDING_DIR, LiveState, live_state

    settings = config.builder.follow
    segments = out / RECORDING_DIR / SEGMENTS_DIR
    follower = _ServedFollower(source, segments, settings, roots, cancel)
    progress = ReportingProgress(lambda *_figures: None, cancel)  # a cancel at a build step
    builder = MemoryBuilder(config, embedder=embedder, progress=progress)

    def published(result: BuildResult, state: LiveState) -> None:
        arrived = source_arrived_s(source, out, state.covered_s, settings.fetch_timeout_s)
        event: dict[str, Any] = {
            "stage": "follow",
            "done": state.covered_s,
            "total": None,
            "version": state.version,
            "covered_s": state.covered_s,
            "arrived_s": arrived,
            "lag_s": None if arrived is None else round(max(0.0, arrived - state.covered_s), 3),
            "ended": state.ended,
            "covers": state.describe(),
            "clips": result.report.clips,
        }
        if library is not None:  # this memory's new version, the library's others left
            event["library"] = index_built(
                library().index, [out], named=functools.partial(_named, roots)
            )
        on_version(event)

    async def run() -> BuildResult:
        try:
            return await follow(builder, source, out, on_version=published, follower=follower)
        finally:
            await builder.service.aclose()

    result = asyncio.run(run())
    state = live_state(out)
    return {
        "report": result.report.to_json(),
        "live": state.to_json() if state is not None else None,
        "covers": state.describe() if state is not None else None,
    }


@dataclasses.dataclass
class _RootedHls(HlsFollower):
    """An HLS follower of a served job: a segment named by a path must lie under the roots
    (and a remote playlist may name no local file at all)."""

    roots: Roots | None = None

    def _resolve(self, location: str) -> str:
        resolved = super()._resolve(location)
        if is_url(resolved):
            return resolved
        real = Path(os.path.realpath(resolved))
        if is_url(self.playlist) or self.roots is None or not self.roots.contains(real):
            raise VideoTapestryError(
                f"the playlist {self.playlist} lists {location}, a file outside the server's "
                "roots; a served follow reads segments under the roots or over http(s) only"
            )
        return resolved


class _ServedFollower:
    """The follower of a served job: the source's own, with its segments kept under the
    roots, stopped at a cancel before its next look at the source. Made at the first look
    (a follower makes its segments folder, which ``follow`` checks is a build's first)."""

    def __init__(
        self, source: str, segments: Path, settings: BuilderFollowSettings, roots: Roots,
        cancel: threading.Event,
    ) -> None:  # fmt: skip
        self._made = functools.partial(make_follower, source, segments, settings)
        self._settings = settings
        self._roots = roots
        self._cancel = cancel
        self._inner: SourceFollower | None = None
        self.whole_segments = True  # the source's own, once its follower is made

    def poll(self) -> bool:
        if self._cancel.is_set():
            raise JobCancelledError("following was cancelled; the newest version stays readable")
        if self._inner is None:
            inner = self._made()
            if isinstance(inner, HlsFollower):
                inner = _RootedHls(
                    inner.playlist, inner.segments, self._settings, roots=self._roots
                )
            self._inner = inner
            self.whole_segments = inner.whole_segments
        return self._inner.poll()

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


def source_arrived_s(source: str, out: Path, covered_s: float, timeout_s: float) -> float | None:
    """The video time that has arrived at ``source`` as far as is known now: the time the
    memory covers (what the recording held when its version was built) plus what the
    source lists beyond the recording (an HLS playlist's ``#EXTINF`` durations of segments
    not recorded yet), or a growing file's probed duration. None when the source cannot
    be read now, or is a stream URL, which tells no more than what was recorded (the lag
    is then unknown)."""
    import json

    from memory_builders.recording import STATE_FILE
    from memory_builders.sources import read_source
    from videotapestry.memory import RECORDING_DIR

    if is_stream_url(source):
        return None
    try:
        if is_playlist(source):
            text = read_source(source, timeout_s).decode("utf-8", "replace")
            state_file = out / RECORDING_DIR / STATE_FILE
            recorded = set(json.loads(state_file.read_text(encoding="utf-8")).get("appended", []))
            return round(covered_s + _unrecorded_s(text, recorded), 3)
        from videotapestry.video import probe

        return round(max(covered_s, probe(source).duration_s), 3)
    except (OSError, ValueError, VideoTapestryError):
        return None


def _unrecorded_s(playlist: str, recorded: set[str]) -> float:
    """The seconds of the segments a media playlist lists that the recording does not hold
    (named ``seg_<media sequence>.ts`` there, as the follower writes them)."""
    sequence, duration, total = 0, 0.0, 0.0
    for line in (line.strip() for line in playlist.splitlines()):
        if line.startswith("#EXT-X-MEDIA-SEQUENCE:"):
            sequence = int(line.split(":", 1)[1])
        elif line.startswith("#EXTINF:"):
            duration = float(line.split(":", 1)[1].split(",", 1)[0])
        elif line and not line.startswith("#"):
            if f"seg_{sequence:06d}.ts" not in recorded:
                total += duration
            sequence += 1
    return total


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


class ShownSource(BaseModel):
    """One cited source as a person reads it (``views.citation_text``), with the moment a
    click on it seeks to: the same time the CLI and the trace page show."""

    kind: EvidenceKind
    level: str
    shown: str = Field(
        description='the source in words: "frame at 04:18", "said at 03:12–03:16: “…”", '
        '"on screen at 03:32–04:18: “Door code 4417”", "memory, 00:37–01:47: …"'
    )
    when: str = Field(description='its time as shown: "04:18" (a frame), "03:12–03:16" (a span)')
    seek_s: float = Field(description="where a click seeks to: a frame's at_s, else start_s")
    start_s: float
    end_s: float


class ShownCitation(BaseModel):
    """A citation as a person reads it: the claim in words (no internal ids, no memory
    markup) and its sources in the order of ``citations``' own."""

    claim: str
    sources: list[ShownSource]

    @classmethod
    def all_of(cls, result: Result) -> list[ShownCitation]:
        """``result``'s citations, each time written as its trace page writes it."""
        from videotapestry.views.citation_text import (
            claim_text,
            seek_s,
            source_text,
            stored_texts,
        )
        from videotapestry.views.cited import source_moments

        texts = stored_texts(result.levels)
        return [
            cls(
                claim=claim_text(citation.claim),
                sources=[
                    ShownSource(
                        kind=source.kind,
                        level=source.level,
                        shown=source_text(source, when, texts=texts, claim=citation.claim),
                        when=when,
                        seek_s=seek_s(source),
                        start_s=source.start_s,
                        end_s=source.end_s,
                    )
                    for source, when in zip(citation.sources, moments, strict=True)
                ],
            )
            for citation, moments in zip(result.citations, source_moments(result), strict=True)
        ]


class ServedAnswer(BaseModel):
    """An answer as both front ends send it (a REST question job's result, the MCP
    ``answer_question`` tool's output): what ``ask --json`` prints of a run, less its
    internals, with every degradation also rendered, so a fallback is shown wherever the
    answer is (SPEC §7a), and each warning (a made-up citation) likewise, apart from them."""

    question_id: str
    run_id: str
    question: str
    options: list[str] = Field(description="the options asked; none for a free-form question")
    answer: str = Field(description="the option letter, or the answer in words (free-form)")
    answer_text: str = Field(description="the answer in words")
    reasoning: str
    variant: str
    citations: list[Citation] = Field(
        description="each claim with the sources it rests on, with their ids (for display, "
        "use citations_shown)"
    )
    citations_shown: list[ShownCitation] = Field(
        default_factory=list,
        description="the citations as a person reads them, one per item of citations: the "
        "claim in words, each source in words with its time and seek_s (what to show; "
        "citations keeps the ids)",
    )
    citations_asked: bool = Field(
        True, description="false when the answer was not asked to cite (answer.citations)"
    )
    degraded: list[Degradation] = Field(
        description="what this run lost of the method; empty for a faithful run"
    )
    degraded_text: list[str] = Field(description="each degradation as one line to show")
    warnings: list[ResultWarning] = Field(
        description="what to know about the answer that lost nothing of the method (a cited "
        "id that named nothing, dropped); the run is not degraded by it"
    )
    warnings_text: list[str] = Field(description="each warning as one line to show")
    observation_disabled: str | None = Field(
        description="why no frame or speech was observed (a memory-only question), else null"
    )
    levels_visited: list[str]
    usage: dict[str, Any] = Field(description="model calls, tokens and cost of the run")
    usage_text: str = Field(
        "",
        description="the usage as one line to show: calls, images, tokens (provider-cached "
        "and reasoning ones named), model seconds and dollars ('unpriced' when a model has no "
        "price, never $0)",
    )
    elapsed_s: float
    trace: str | None = Field(
        description="where the saved trace is read: its path under the roots (MCP "
        "read_trace) or its URL (REST)"
    )
    memory_covers: dict[str, Any] | None = Field(
        None,
        description="for a live memory (a followed source, SPEC §16), the version read: "
        "version, covered_s, ended, source and text ('live memory covering 00:00-03:20 "
        "(still recording)'); null for a memory of a finished video",
    )

    def text(self) -> str:
        """The answer as a person reads it (an MCP tool's text): the answer, each claim in
        words with its sources and their times, what the run lost, the warnings and where
        the trace is. No internal ids: they are in the structured fields."""
        from videotapestry.question import option_label

        chosen = next((o for o in self.options if option_label(o) == self.answer), "")
        lines = [f"answer: {self.answer}  {chosen}".rstrip() if self.options else
                 f"answer: {self.answer_text or '(none)'}"]  # fmt: skip
        if self.memory_covers:
            lines.append(f"memory: {self.memory_covers['text']}")
        if not self.citations_asked:
            lines.append("cites: not asked for (answer.citations is off)")
        elif not self.citations_shown:
            lines.append("cites: nothing (the answer gave no valid citation)")
        for n, citation in enumerate(self.citations_shown, 1):
            lines.append(f"claim {n}: {citation.claim}")
            lines += [f"  cites {source.shown}" for source in citation.sources]
        lines += [f"degraded: {line}" for line in self.degraded_text]
        lines += [f"warning: {line}" for line in self.warnings_text]
        if self.usage_text:
            lines.append(f"cost: {self.usage_text}")
        if self.trace:
            lines.append(f"trace: {self.trace}")
        return "\n".join(lines)

    @classmethod
    def of(cls, result: Result, *, trace: str | None) -> ServedAnswer:
        return cls(
            question_id=result.question_id,
            run_id=result.run_id,
            question=result.question,
            options=list(result.options),
            answer=result.answer,
            answer_text=result.answer_text or "",
            reasoning=result.reasoning,
            variant=result.variant,
            citations=list(result.citations),
            citations_shown=ShownCitation.all_of(result),
            citations_asked=result.citations_asked,
            degraded=list(result.degraded),
            degraded_text=[degradation.render() for degradation in result.degraded],
            warnings=list(result.warnings),
            warnings_text=[warning.render() for warning in result.warnings],
            observation_disabled=result.observation_disabled,
            levels_visited=list(result.levels_visited),
            usage=result.usage.to_dict(),
            usage_text=result.usage.describe(),
            elapsed_s=round(result.elapsed_s, 3),
            trace=trace,
            memory_covers=_served_covers(result.memory_covers),
        )


def _served_covers(covers: dict[str, Any] | None) -> dict[str, Any] | None:
    """A live memory's coverage as clients see it: a source that is a path on the server
    is named by its file name only (a URL as it is, a password in it masked)."""
    if covers is None:
        return covers
    source = str(covers.get("source", ""))
    if is_remote(source):
        return {**covers, "source": shown_url(source)}
    return {**covers, "source": Path(source).name}


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


#: The widest frame ``frame_jpeg`` returns: a thumbnail of a cited moment, not a still.
MAX_FRAME_WIDTH = 640
FRAME_QUALITY = 75


class FrameRequestError(VideoTapestryError):
    """A frame asked for at a time the video does not have (negative, not a number, past
    its end)."""


def frame_jpeg(video: Path, t: float, width: int) -> bytes:
    """The frame on screen at ``t`` seconds of ``video`` (resolved under the roots), as a
    JPEG ``width`` pixels wide, at most :data:`MAX_FRAME_WIDTH` and never wider than the
    video. Decoded with the project's reader (the frame the agents saw at that time, upright);
    the last 256 asked for are kept, by the file's size and change time, so a page shown
    again costs no decoding."""
    if not math.isfinite(t) or t < 0:
        raise FrameRequestError(f"t={t}: not a time in the video; give seconds, 0 or more")
    stat = video.stat()
    return _frame_jpeg(str(video), stat.st_size, stat.st_mtime_ns, round(t, 3), width)


@functools.lru_cache(maxsize=256)
def _frame_jpeg(path: str, size: int, mtime_ns: int, t: float, width: int) -> bytes:
    del size, mtime_ns  # the cache's key: a video replaced under its name is decoded again
    import cv2

    from videotapestry.config import VideoConfig
    from videotapestry.video.container import probe
    from videotapestry.video.encoding import encode_jpeg
    from videotapestry.video.reader import open_video

    info = probe(path)
    if t > info.duration_s:
        raise FrameRequestError(
            f"t={t:g}: past the end of {Path(path).name}, which is {info.duration_s:.3f} s "
            f"long; give 0 ≤ t ≤ {info.duration_s:.3f}"
        )
    shown_w, shown_h = info.display_size
    width = max(1, min(width, MAX_FRAME_WIDTH, shown_w))
    height = max(1, round(shown_h * width / shown_w))
    # decoded no larger than needed (the reader scales the longer side), then sized exactly
    config = VideoConfig(decoded_max_side=max(width, height, 16), decode_threads=1)
    with open_video(path, config) as reader:
        image = reader.frames_at([t])[0].image
    if image.shape[1] != width or image.shape[0] != height:
        image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return encode_jpeg(image, max_side=max(width, height), quality=FRAME_QUALITY)


# ----------------------------------------------------------------------------- the library

#: Where the served library is kept when ``serve.library`` names no folder: in the first
#: root, hidden (the listings and the library's own walk skip dot-folders).
LIBRARY_FOLDER = ".videotapestry-library"


def library_dir(config: Config, roots: Roots) -> Path:
    """The served library's folder: ``serve.library``, else :data:`LIBRARY_FOLDER` in the
    first root."""
    named = config.serve.library
    return Path(named).expanduser().absolute() if named else roots.folders[0] / LIBRARY_FOLDER


def served_video(roots: Roots, memory: Path, named: str | None) -> Path | None:
    """The video of a memory as a client may open it: the file its build report names when
    that lies under the roots, else the video a served build takes the memory from
    (``<root>/<path>.<suffix>`` for ``<root>/memories/<path>``), else None (answered from the
    memory alone). A file outside the roots is never read or named."""
    from videotapestry.serve.roots import VIDEO_SUFFIXES

    if named:
        resolved = Path(named).resolve()
        if roots.contains(resolved) and resolved.is_file():
            return resolved
    for root in roots.folders:
        stored = root / MEMORIES_FOLDER
        if memory.is_relative_to(stored):
            stem = root / memory.relative_to(stored)
            for suffix in sorted(VIDEO_SUFFIXES):
                if stem.with_suffix(suffix).is_file():
                    return stem.with_suffix(suffix).resolve()
    return None


def served_library(vt: VideoTapestry, roots: Roots) -> Library:
    """The served library answered with ``vt``: its index confined to the roots (hits and
    videos of memories outside them are left out, each video is one under the roots)."""
    library = vt.library(library_dir(vt.config, roots))
    library.index = _rooted_index(library.index.path, vt.embedder, roots)
    return library


def _rooted_index(path: Path, embedder: Embedder, roots: Roots) -> LibraryIndex:
    from videotapestry.library import LibraryIndex

    class RootedIndex(LibraryIndex):
        """A library index that shows only what lies under the roots."""

        def search(
            self, query: str, top_k: int = 10, *, levels: Sequence[str] | None = None
        ) -> list[SearchHit]:
            hits = super().search(query, top_k, levels=levels)
            return [_rooted(roots, hit) for hit in hits if roots.contains(Path(hit.memory))]

        def videos(self) -> list[IndexedVideo]:
            return [_rooted(roots, v) for v in super().videos() if roots.contains(Path(v.memory))]

    return RootedIndex(path, embedder)


def _rooted(roots: Roots, item: Any) -> Any:
    video = served_video(roots, Path(item.memory), item.video)
    return dataclasses.replace(item, video=str(video) if video else None)


def index_library(
    library: Library,
    roots: Roots,
    progress: Callable[[str, float, float | None], None] | None = None,
) -> dict[str, Any]:
    """Index every memory under the roots into the served library (new and changed ones,
    those gone removed); its update report, paths named relative to the roots. Blocking: run
    it on a thread. A memory reached through a symlink out of the roots is not indexed."""
    from videotapestry.library import find_memories

    memories = [m for m in find_memories(roots.folders) if roots.contains(m)]

    def advance(_memory: str, done: int, total: int) -> None:
        if progress is not None:
            progress("library", done, total)

    report = library.index.update(memories, progress=advance)
    return {
        "library": _named(roots, library.index.path),
        "added": [_named(roots, Path(m)) for m in report.added],
        "updated": [_named(roots, Path(m)) for m in report.updated],
        "removed": [_named(roots, Path(m)) for m in report.removed],
        "unchanged": report.unchanged,
        "moments_written": report.rows_written,
        "moments": library.index.count(),
        "failed": [{"memory": _named(roots, Path(m)), "why": why} for m, why in report.failed],
    }


def _named(roots: Roots, path: Path) -> str:
    """``path`` relative to its root; by its name alone when no root holds it."""
    try:
        return roots.relative(path)
    except VideoTapestryError:
        return f"(outside the roots)/{path.name}"


def _relative(roots: Roots, path: str | None) -> str | None:
    return _named(roots, Path(path)) if path else None


class ServedHit(BaseModel):
    """A moment the library search found, as a client shows it and opens it."""

    title: str = Field(description="its video's title")
    memory: str = Field(description="its memory, relative to its root")
    video: str | None = Field(
        description="its video relative to its root (GET /api/media?path=), or null when no "
        "video under the roots is known"
    )
    level: str = Field(description="video, stage, event, action, screen, entity or speech")
    node_id: str
    start_s: float
    end_s: float
    when: str = Field(description='its span as shown: "03:32–04:18"')
    seek_s: float = Field(description="where a click seeks to: the span's start")
    text: str
    score: float

    @classmethod
    def of(cls, roots: Roots, hit: SearchHit) -> ServedHit:
        from videotapestry.views.citation_text import span_text

        return cls(
            title=hit.title,
            memory=_named(roots, Path(hit.memory)),
            video=_relative(roots, hit.video),
            level=hit.level,
            node_id=hit.node_id,
            start_s=hit.start_s,
            end_s=hit.end_s,
            when=span_text(hit.start_s, hit.end_s),
            seek_s=hit.start_s,
            text=hit.text,
            score=round(hit.score, 6),
        )

    def line(self) -> str:
        """The hit in words: title, time, level, text; its video (no internal ids)."""
        from videotapestry.views.citation_text import trimmed

        where = f"\n   video: {self.video}" if self.video else f"\n   memory: {self.memory}"
        return f"{self.title} — {self.when} ({self.level}): {trimmed(self.text, 160)}{where}"


class ServedVideo(BaseModel):
    """A video the library holds."""

    title: str
    memory: str = Field(description="its memory, relative to its root")
    video: str | None = Field(description="its video relative to its root, or null")
    duration_s: float
    summary: str
    moments: int


def search_library(library: Library, roots: Roots, query: str, top: int) -> list[ServedHit]:
    """The ``top`` moments across the library that fit ``query``. Blocking."""
    return [ServedHit.of(roots, hit) for hit in library.search(query, top)]


def library_videos(library: Library, roots: Roots) -> list[ServedVideo]:
    """What the served library holds, by title. Blocking."""
    index = library.index
    return [
        ServedVideo(
            title=video.title,
            memory=_named(roots, Path(video.memory)),
            video=_relative(roots, video.video),
            duration_s=video.duration_s,
            summary=video.summary,
            moments=index.count(video.key),
        )
        for video in index.videos()
    ]


class ShownLibraryCitation(BaseModel):
    """A claim of a library answer in words, with the video it rests on and its sources in
    words, each with the moment a click seeks to (open ``video`` with GET /api/media)."""

    claim: str
    title: str = Field(description="the cited video's title")
    memory: str
    video: str | None = Field(description="the cited video relative to its root, or null")
    sources: list[ShownSource]


class ServedLibraryAnswer(BaseModel):
    """A question answered across the library, as both front ends send it: what
    ``ask --library --json`` prints (paths relative to the roots), with each citation in
    words and the usage as a line."""

    question: str
    options: list[str]
    answer: str = Field(description="the option letter, or the answer in words (free-form)")
    answer_text: str
    reasoning: str
    none_found: bool = Field(description="true when no video in the library shows this")
    answered_from: list[str] = Field(description="the titles of the videos cited")
    citations: list[dict[str, Any]] = Field(
        description="each claim with its video and sources, ids included (for display, use "
        "citations_shown)"
    )
    citations_shown: list[ShownLibraryCitation] = Field(
        description="the citations as a person reads them, one per item of citations"
    )
    videos: list[dict[str, Any]] = Field(
        description="each video asked: title, memory, video, its own answer and usage"
    )
    degraded: list[str] = Field(description="what any video's run lost of the method")
    invalid_citations: list[str]
    usage: dict[str, Any]
    usage_text: str
    elapsed_s: float

    @classmethod
    def of(cls, roots: Roots, result: LibraryResult) -> ServedLibraryAnswer:
        from videotapestry.views.citation_text import (
            claim_text,
            moment_text,
            seek_s,
            source_text,
            stored_texts,
        )

        data = result.to_dict()
        for item in (*data["citations"], *data["videos"]):
            item["memory"] = _named(roots, Path(item["memory"]))
            item["video"] = _relative(roots, item["video"])
        texts = {
            c.tag: stored_texts(run.levels)
            for c, run in zip(result.candidates, result.runs, strict=True)
        }
        shown = [
            ShownLibraryCitation(
                claim=claim_text(citation.claim),
                title=citation.title,
                memory=_named(roots, Path(citation.memory)),
                video=_relative(roots, citation.video),
                sources=[
                    ShownSource(
                        kind=source.kind,
                        level=source.level,
                        shown=source_text(
                            source, texts=texts.get(citation.tag), claim=citation.claim
                        ),
                        when=moment_text(source),
                        seek_s=seek_s(source),
                        start_s=source.start_s,
                        end_s=source.end_s,
                    )
                    for source in citation.sources
                ],
            )
            for citation in result.citations
        ]
        return cls(
            **{key: data[key] for key in _LIBRARY_FIELDS},
            citations_shown=shown,
            usage_text=result.usage.describe(),
        )

    def text(self) -> str:
        """The answer as a person reads it: the answer, the videos it rests on, each claim
        with its video and its sources in words, what was lost, the cost. No internal ids."""
        from videotapestry.question import option_label

        chosen = next((o for o in self.options if option_label(o) == self.answer), "")
        lines = [f"answer: {chosen or self.answer_text or self.answer or '(none)'}"]
        if self.answered_from:
            lines.append(f"from: {'; '.join(self.answered_from)}")
        for n, citation in enumerate(self.citations_shown, 1):
            lines.append(f"claim {n}: {citation.claim}")
            where = citation.video or citation.memory
            lines += [f"  cites {citation.title} ({where}): {s.shown}" for s in citation.sources]
        asked = ", ".join(v["title"] for v in self.videos) or "none (no moment matched)"
        lines.append(f"videos asked: {asked}")
        lines += [f"degraded: {line}" for line in self.degraded]
        if self.usage_text:
            lines.append(f"cost: {self.usage_text}")
        return "\n".join(lines)


_LIBRARY_FIELDS = (
    "question", "options", "answer", "answer_text", "reasoning", "none_found",
    "answered_from", "citations", "videos", "degraded", "invalid_citations", "usage",
    "elapsed_s",
)  # fmt: skip


async def answer_across_library(
    library: Library, roots: Roots, question: str, options: Sequence[str] = ()
) -> ServedLibraryAnswer:
    """A question answered across the served library (as ``ask --library``)."""
    result = await library.aanswer(question, list(options))
    return ServedLibraryAnswer.of(roots, result)
