"""The MCP server: the framework as tools another agent can call (SPEC §13, issue 24).

A coding or research agent reaches tools through MCP; this server gives it the videos and
memories under the roots, a memory build (with the SDK's progress notifications, so the
agent's user sees a long build move), an answer with the moments it rests on, a saved trace,
and each memory's tree as a resource. It is built on the official Python SDK's
``MCPServer``: tool inputs are validated against the schemas the SDK derives from the type
hints, every path an input names goes through ``Roots.resolve``, and a failure comes back as
a tool error carrying our one-line message, never a traceback. Whatever a run lost of the
method (``Result.degraded``, a build's failed clips and degradations) is part of the
returned value, so a caller cannot take a degraded answer for a faithful one (SPEC §7a).

``create_mcp_server`` builds everything from its arguments (config, roots, traces folder), so
two servers in one process share nothing. This module deliberately does not use
``from __future__ import annotations``: the SDK reads the tools' annotations at run time.
"""

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

import anyio
from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from memory_builders.sources import is_remote
from videotapestry import __version__
from videotapestry.api import VideoTapestry
from videotapestry.config import Config
from videotapestry.errors import VideoTapestryError
from videotapestry.memory import open_memory
from videotapestry.memory.inspect import memory_tree
from videotapestry.result import Result, load_result
from videotapestry.serve.operations import (
    ServedAnswer,
    ServedHit,
    ServedLibraryAnswer,
    default_memory_dir,
    follow_source,
    served_library,
)
from videotapestry.serve.operations import answer_across_library as library_answer
from videotapestry.serve.operations import search_library as search_operation
from videotapestry.serve.roots import Roots
from videotapestry.trace import scrub

MEMORY_URI = "memory://{+path}"
"""The resource template of a memory's tree; ``path`` as ``list_memories`` names it."""

NOTHING_FOUND = (
    "nothing found: the library is empty or nothing in it fits (index it with POST "
    "/api/library/index on videotapestry serve, or videotapestry library index)"
)

TRACES_FOLDER = "videotapestry-traces"
"""Where answers' traces go by default: under the first root, so ``read_trace`` can read them."""

INSTRUCTIONS = (
    "Question answering over long videos. Paths are relative to the server's roots (as "
    "list_videos and list_memories name them). Build a video's memory once with "
    "build_memory, then ask questions with answer_question: give options for a "
    "multiple-choice question, none for a free-form one. Every answer cites the moments of "
    "the video it rests on; a non-empty 'degraded' list means the run lost part of the method. "
    "search_library and answer_across_library work across every video in the library."
)


# ----------------------------------------------------------------------------- tool outputs


class VideoEntry(BaseModel):
    path: str = Field(description="the video, relative to its root (what the tools take)")
    size_bytes: int


class VideoList(BaseModel):
    videos: list[VideoEntry]


class MemoryEntry(BaseModel):
    path: str = Field(description="the memory folder, relative to its root")
    resource_uri: str = Field(description="its tree as a resource")


class MemoryList(BaseModel):
    memories: list[MemoryEntry]


class BuildFailure(BaseModel):
    """A clip the build left out (the memory is then partial)."""

    clip_id: str
    start_s: float
    end_s: float
    stage: str
    reason: str


class BuildDegradation(BaseModel):
    """Something the build did differently from its configuration (a lost transcript …)."""

    what: str
    where: str
    why: str


class BuildOutput(BaseModel):
    memory: str = Field(description="the memory folder, relative to its root")
    resource_uri: str
    status: str = Field(description="complete, or partial when some clips failed")
    clips: int
    duration_s: float
    model_calls: int
    wall_s: float
    failures: list[BuildFailure]
    degradations: list[BuildDegradation]
    covers: str | None = Field(
        None,
        description="a followed build's last version: 'live memory covering 00:00-06:00 (the "
        "stream has ended)'; null for a finished video's build",
    )


class LibrarySearchOutput(BaseModel):
    hits: list[ServedHit] = Field(description="the moments found, best first")


class TraceOutput(BaseModel):
    path: str
    result: dict[str, Any] = Field(description="the run's summary: answer, citations, usage …")
    memory_text: str = Field(description="the composite memory the Answer agent read")


# ----------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class McpSettings:
    """What one server is started with; nothing is read from anywhere else."""

    config: Config
    roots: Roots
    #: Where answers' traces are written; must lie under a root.
    traces_dir: Path
    name: str = "videotapestry"


def default_traces_dir(roots: Roots) -> Path:
    return roots.folders[0] / TRACES_FOLDER


def create_mcp_server(settings: McpSettings) -> MCPServer:
    """A server over ``settings``: one facade (models, embedder, loaded memories) shared by
    its tools, closed when the server stops."""
    roots = settings.roots
    traces_dir = roots.resolve(settings.traces_dir, must_exist=False)
    vt = VideoTapestry(settings.config)
    one_build_at_a_time = asyncio.Lock()  # builds are CPU-bound and own their output folder

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await vt.aclose()

    server: MCPServer = MCPServer(
        settings.name,
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
    )

    @server.tool()
    async def list_videos() -> VideoList:
        """The video files under the server's roots."""
        found = await anyio.to_thread.run_sync(lambda: list(roots.videos()))
        return VideoList(
            videos=[VideoEntry(path=roots.relative(p), size_bytes=p.stat().st_size) for p in found]
        )

    @server.tool()
    async def list_memories() -> MemoryList:
        """The stored memories (native format) under the server's roots."""
        found = await anyio.to_thread.run_sync(lambda: list(roots.memories()))
        return MemoryList(memories=[_memory_entry(roots, p) for p in found])

    @server.tool()
    async def build_memory(
        video: Annotated[
            str,
            Field(
                min_length=1,
                description="a video under the roots; with follow, the source still arriving "
                "(an HLS playlist or a file still being written under the roots, an http(s) "
                "playlist URL, or an RTSP, RTMP or SRT URL)",
            ),
        ],
        ctx: Context,
        out: Annotated[
            str | None,
            Field(
                description="the memory folder to write (default memories/<the video's path "
                "under its root, without its suffix>; needed to follow a URL)"
            ),
        ] = None,
        restart: Annotated[bool, Field(description="discard checkpoints, start over")] = False,
        force: Annotated[
            bool,
            Field(description="build even when the folder holds another video's memory"),
        ] = False,
        follow: Annotated[
            bool,
            Field(
                description="follow a source still arriving until it ends: a new memory "
                "version every builder.follow.append_every_s of video (a progress "
                "notification each, with the time covered and the lag), answerable at once"
            ),
        ] = False,
    ) -> BuildOutput:
        """Build (or resume building) a video's hierarchical memory. Progress is reported as
        the stages advance; a killed build resumes from its checkpoints when called again.
        With follow, the memory grows while its source arrives (a live stream, a recording
        being written) and the call returns when the source ends."""
        with _tool_errors():
            if follow:
                if restart or force:
                    raise VideoTapestryError("follow takes no restart or force")
                return await _follow(video, out, ctx)
            source = roots.resolve(video)
            target = (
                roots.resolve(out, must_exist=False) if out else default_memory_dir(roots, source)
            )
            if not source.is_file():
                raise VideoTapestryError(f"video {video}: not a file")
            async with one_build_at_a_time, _progress_relay(ctx) as relay:
                build = await vt.abuild_memory(
                    source, target, restart=restart, on_stage=relay.stage, force=force
                )
            return _build_output(roots, target, build.report.to_json())

    async def _follow(video: str, out: str | None, ctx: Context) -> BuildOutput:
        """``build_memory`` with ``follow``: each version as a progress notification."""
        remote = is_remote(video)
        source = video if remote else str(roots.resolve(video, must_exist=False))
        if out:
            target = roots.resolve(out, must_exist=False)
        elif not remote:
            target = default_memory_dir(roots, Path(source))
        else:
            raise VideoTapestryError(f"following {video}: give out, a folder under the roots")
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        versions: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        async def relay() -> None:
            count = 0
            while (event := await versions.get()) is not None:
                count += 1
                lag = event["lag_s"]
                lagging = "unknown" if lag is None else f"{lag:g} s"
                await ctx.report_progress(count, None, f"{event['covers']}; lag {lagging}")

        task = asyncio.create_task(relay())
        try:
            async with one_build_at_a_time:
                followed = await anyio.to_thread.run_sync(
                    lambda: follow_source(
                        vt.config,
                        source,
                        target,
                        embedder=vt.embedder,
                        roots=roots,
                        cancel=cancel,
                        on_version=lambda e: loop.call_soon_threadsafe(versions.put_nowait, e),
                    )
                )
        finally:
            cancel.set()  # a call given up (the client went away) stops the thread too
            loop.call_soon(versions.put_nowait, None)
            await task
        return _build_output(roots, target, followed["report"], followed["covers"])

    @server.tool()
    async def answer_question(
        video: Annotated[str, Field(min_length=1, description="the video under the roots")],
        memory: Annotated[str, Field(min_length=1, description="its memory under the roots")],
        question: Annotated[str, Field(min_length=1)],
        ctx: Context,
        options: Annotated[
            list[str] | None,
            Field(description='2 to 26 options ("A. …" or plain texts); none: free-form'),
        ] = None,
    ) -> Annotated[CallToolResult, ServedAnswer]:
        """Answer a question about a video with the full method, citing the moments the
        answer rests on; the trace of the run is saved for read_trace. The text is the
        answer as a person reads it (claims in words, sources with their times); the
        structured result has every field, the ids included."""
        with _tool_errors():
            memory_path = roots.resolve(memory)
            video_path = roots.asked_video(memory_path, video)
            async with _progress_relay(ctx) as relay:
                result = await vt.aanswer(
                    video_path, memory_path, question, options or [], progress=relay.event
                )
            trace = await anyio.to_thread.run_sync(
                result.save_trace, traces_dir / _trace_name(result)
            )
            served = ServedAnswer.of(result, trace=roots.relative(trace))
            return CallToolResult(
                content=[TextContent(type="text", text=served.text())],
                structured_content=served.model_dump(mode="json"),
            )

    @server.tool()
    async def search_library(
        query: Annotated[str, Field(min_length=1, description="words to look for")],
        top: Annotated[int, Field(ge=1, le=100, description="moments returned")] = 10,
    ) -> Annotated[CallToolResult, LibrarySearchOutput]:
        """Search every video in the library (the memories under the roots, indexed) for
        moments that fit the query, by their words and their meaning: each hit names its
        video, its time span, its level and its text."""
        with _tool_errors():
            library = served_library(vt, roots)
            hits = await anyio.to_thread.run_sync(search_operation, library, roots, query, top)
            found = LibrarySearchOutput(hits=hits)
            lines = [f"{n}. {hit.line()}" for n, hit in enumerate(hits, 1)]
            return CallToolResult(
                content=[TextContent(type="text", text="\n".join(lines) or NOTHING_FOUND)],
                structured_content=found.model_dump(mode="json"),
            )

    @server.tool()
    async def answer_across_library(
        question: Annotated[str, Field(min_length=1)],
        options: Annotated[
            list[str] | None,
            Field(description='2 to 26 options ("A. …" or plain texts); none: free-form'),
        ] = None,
    ) -> Annotated[CallToolResult, ServedLibraryAnswer]:
        """Answer a question across the library: the videos whose moments fit it are asked
        with the full method, and one answer cites (video, time). "None of the videos in the
        library shows this." is an answer. The text names each cited video and moment in
        words; the structured result has every field."""
        with _tool_errors():
            library = served_library(vt, roots)
            served = await library_answer(library, roots, question, options or [])
            return CallToolResult(
                content=[TextContent(type="text", text=served.text())],
                structured_content=served.model_dump(mode="json"),
            )

    @server.tool()
    async def read_trace(
        path: Annotated[str, Field(min_length=1, description="a trace JSON under the roots")],
    ) -> TraceOutput:
        """A saved run: its answer, citations, degradations, levels and usage."""
        with _tool_errors():
            trace = roots.resolve(path)
            if trace.suffix.lower() != ".json" or not trace.is_file():
                raise VideoTapestryError(f"trace {path}: not a trace JSON file")
            result = await anyio.to_thread.run_sync(load_result, trace)
            return TraceOutput(
                path=roots.relative(trace), result=result.to_dict(), memory_text=result.memory_text
            )

    # The roots check below is the one check (with a message naming the roots), so the SDK's
    # own generic rejection of ``..`` is waived for this parameter.
    @server.resource(
        MEMORY_URI,
        name="memory tree",
        description="A memory's hierarchy: root, SuperEvents, MacroEvents and subgraph nodes",
        mime_type="text/plain",
        security=ResourceSecurity(exempt_params={"path"}),
    )
    async def memory_resource(path: str) -> str:
        try:
            folder = roots.resolve(path)
            loaded = await anyio.to_thread.run_sync(open_memory, folder)
        except VideoTapestryError as exc:
            raise ResourceError(scrub(str(exc))) from None
        return memory_tree(loaded)

    return server


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Our errors (bad input, a path outside the roots, a refused model call) and file errors
    as a tool error with one clear line; the SDK turns it into an ``is_error`` result."""
    try:
        yield
    except VideoTapestryError as exc:
        raise ToolError(scrub(str(exc))) from None
    except OSError as exc:
        raise ToolError(scrub(f"{exc.filename or 'file'}: {exc.strerror or exc}")) from None


class _StageCount(Protocol):
    """What the builder's progress listener hears (``memory_builders.progress.StageUpdate``)."""

    stage: str
    done: float
    total: float | None
    unit: str


class _ProgressRelay:
    """Build stages and question steps to the client as MCP progress notifications.

    The builder's scan reports from its decoding thread, so everything heard is queued onto
    the event loop and sent in order by one task. MCP wants the progress value to grow:
    a build's is the number of stages finished plus the current one's fraction, a
    question's the number of steps so far.
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[float, str] | None] = asyncio.Queue()
        self._stages: list[str] = []
        self._steps = 0
        self._sent = 0.0

    def stage(self, update: _StageCount) -> None:
        self._loop.call_soon_threadsafe(self._stage, update)

    def event(self, event: dict[str, Any]) -> None:
        self._loop.call_soon_threadsafe(self._event, event)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    def _stage(self, update: _StageCount) -> None:
        if update.stage not in self._stages:
            self._stages.append(update.stage)
        fraction = min(update.done / update.total, 1.0) if update.total else 0.0
        total = f"/{update.total:g}" if update.total else ""
        self._queue.put_nowait(
            (
                self._stages.index(update.stage) + fraction,
                f"{update.stage}: {update.done:g}{total} {update.unit}",
            )
        )

    def _event(self, event: dict[str, Any]) -> None:
        self._steps += 1
        self._queue.put_nowait((self._steps, f"{event.get('level')}: {event.get('step')}"))

    async def forward(self) -> None:
        while (item := await self._queue.get()) is not None:
            progress, message = item
            if progress > self._sent:
                self._sent = progress
                await self._ctx.report_progress(progress, None, message)


@contextlib.asynccontextmanager
async def _progress_relay(ctx: Context) -> AsyncIterator[_ProgressRelay]:
    relay = _ProgressRelay(ctx)
    task = asyncio.create_task(relay.forward())
    try:
        yield relay
    finally:
        relay.close()
        await task


def _memory_entry(roots: Roots, folder: Path) -> MemoryEntry:
    name = roots.relative(folder)
    return MemoryEntry(path=name, resource_uri=f"memory://{name}")


def _build_output(
    roots: Roots, folder: Path, report: dict[str, Any], covers: str | None = None
) -> BuildOutput:
    entry = _memory_entry(roots, folder)
    return BuildOutput(
        memory=entry.path,
        resource_uri=entry.resource_uri,
        status="partial" if report["partial"] else "complete",
        clips=report["clips"],
        duration_s=report["duration_s"],
        model_calls=int(report.get("usage", {}).get("calls", 0)),
        wall_s=round(report["wall_s"], 2),
        failures=[BuildFailure.model_validate(f) for f in report["failures"]],
        degradations=[BuildDegradation.model_validate(d) for d in report["degradations"]],
        covers=covers,
    )


def _trace_name(result: Result) -> str:
    """A new file per run, so asking again never overwrites an earlier trace."""
    return f"{result.question_id}-{time.strftime('%Y%m%d-%H%M%S')}-{result.run_id[:6]}.json"
