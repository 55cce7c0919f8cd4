"""The web app: a REST API over the roots and the jobs, server-sent events, and the browser UI.

``create_app`` builds one app from explicit settings (config, roots, token, data directory),
so a test, a benchmark and ``videotapestry serve`` each start their own, and nothing is
shared between them. Every path a request names goes through ``Roots.resolve``; every
request is checked against the token when one is set, and refused unless it comes from our
own names and pages (``access.OwnOriginsMiddleware``); our own errors become a 4xx with
their message (never a traceback).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Query, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from videotapestry.config import Config
from videotapestry.errors import VideoTapestryError
from videotapestry.question import validate_question
from videotapestry.serve.access import OwnOriginsMiddleware
from videotapestry.serve.jobs import Job, JobStore, UnknownJobError
from videotapestry.serve.limits import BodySizeLimit
from videotapestry.serve.operations import (
    MAX_FRAME_WIDTH,
    ServedHit,
    ServedVideo,
    default_memory_dir,
    frame_jpeg,
    library_dir,
    library_videos,
    memory_outline,
    search_library,
    served_library,
)
from videotapestry.serve.roots import VIDEO_SUFFIXES, PathOutsideRootsError, Roots
from videotapestry.serve.runner import JobRunner
from videotapestry.video.container import fingerprint

STATIC_DIR = Path(__file__).parent / "static"

#: The cookie the UI keeps the token in, so ``<video>`` and ``EventSource`` requests (which
#: cannot send headers) carry it too.
TOKEN_COOKIE = "videotapestry_token"

#: Questions shipped beside a video (the demo's ``questions.json`` form) offered by the UI.
QUESTIONS_FILE = "questions.json"

#: A frame's JPEG may be kept by the browser for an hour (a page of thumbnails shown again
#: asks for none of them); private, since a server with a token serves it to its holder only.
FRAME_CACHE_CONTROL = "private, max-age=3600"


@dataclass(frozen=True)
class ServeSettings:
    """Everything one server is started with."""

    config: Config
    roots: Roots
    data_dir: Path
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    """Host names answered besides the address a request arrives on and localhost (the
    name ``--host`` bound, beside ``serve.allowed_hosts``)."""


class BuildRequest(BaseModel):
    kind: Literal["build"]
    video: str = Field(
        description="a video under the roots (relative to its root); with follow, the source "
        "still arriving: an HLS playlist (.m3u8) or a file still being written under the "
        "roots, or an http(s) URL of a playlist"
    )
    out: str | None = Field(
        None,
        description="folder for the memory under the roots; default <root>/memories/<the "
        "video's path under its root, without its suffix> (needed to follow a URL)",
    )
    subtitles: str | None = Field(None, description="subtitles under the roots instead of ASR")
    force: bool = Field(
        False, description="build even when the folder holds another video's memory (replaced)"
    )
    follow: bool = Field(
        False,
        description="follow a source still arriving until it ends (build-memory --follow): "
        "a new memory version every builder.follow.append_every_s of video, one progress "
        "event each with the time it covers and the lag; the library, when the server has "
        "one, is indexed again after each",
    )


class AskRequest(BaseModel):
    kind: Literal["ask"]
    memory: str = Field(description="a stored memory under the roots")
    video: str | None = Field(None, description="its video (omit to answer from memory only)")
    question: str
    options: list[str] = Field(default_factory=list, description="none: free-form")


class LibraryAskRequest(BaseModel):
    """A question across the served library (as ``ask --library``)."""

    question: str
    options: list[str] = Field(default_factory=list, description="none: free-form")


class EvalRequest(BaseModel):
    """A benchmark run, as ``videotapestry eval`` takes it (paths under the roots)."""

    kind: Literal["eval"]
    benchmark: str = Field(description="videomme, lvbench, longvideobench, egoschema, cgbench …")
    annotations: str = Field(description="the benchmark's annotation file or folder")
    memories: str = Field(description="one memory folder per video: <memories>/<video stem>/")
    videos: str | None = Field(None, description="the videos; omit to answer from memories only")
    out: str | None = Field(
        None, description="the run directory (new, or one to resume); default evals/<benchmark>"
    )
    subtitles: str | None = Field(None, description="the benchmark's subtitles instead of ASR")
    variants: list[str] = Field(default_factory=list, description="none: the config's variant")
    mode: Literal["mc", "open"] = "mc"
    duration: str | None = Field(None, description="a duration group, e.g. long")
    ids: list[str] = Field(default_factory=list, description="only these question ids")
    limit: int | None = Field(None, ge=0, description="the first N selected questions")
    concurrency: int = Field(4, ge=1, description="questions in flight")
    build_missing: bool = Field(False, description="build a missing memory instead of failing")
    retry_failed: bool = Field(True, description="ask again questions that failed before")
    force: bool = Field(False, description="continue a run made with another config")


JobRequest = Annotated[BuildRequest | AskRequest | EvalRequest, Field(discriminator="kind")]


def create_app(settings: ServeSettings) -> FastAPI:
    """One server's app; its jobs resume when it starts and stop (unfinished) when it ends."""
    roots = settings.roots

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from videotapestry.api import VideoTapestry

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        traces = settings.data_dir / "traces"
        traces.mkdir(exist_ok=True)
        store = JobStore(settings.data_dir)
        vt = VideoTapestry(settings.config)
        runner = JobRunner(store, vt, roots, traces)
        app.state.runner = runner
        app.state.traces = traces
        await runner.resume()
        try:
            yield
        finally:
            await runner.stop()
            await vt.aclose()
            store.close()

    app = FastAPI(
        title="videotapestry",
        summary="Question answering over long videos: memories, answers with citations, traces",
        lifespan=lifespan,
    )
    _add_errors(app)
    if settings.token:
        _add_token_check(app, settings.token)
    app.add_middleware(BodySizeLimit, max_bytes=settings.config.serve.max_request_bytes)
    # Added last, so it runs first: another site's page gets its refusal before a 401.
    allowed = (*settings.config.serve.allowed_hosts, *settings.allowed_hosts)
    app.add_middleware(OwnOriginsMiddleware, allowed_hosts=allowed)

    def runner_of(request: Request) -> JobRunner:
        runner: JobRunner = request.app.state.runner
        return runner

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/api/videos")
    async def videos() -> list[dict[str, Any]]:
        """The videos under the roots, each with its memory (if built) and shipped questions."""
        listed = []
        for video in roots.videos():
            memory = default_memory_dir(roots, video)
            built = (memory / "memory.json").is_file()
            listed.append(
                {
                    "path": roots.relative(video),
                    "name": video.name,
                    "size": video.stat().st_size,
                    "memory": roots.relative(memory) if built else None,
                    "questions": _shipped_questions(video.parent / QUESTIONS_FILE, video.name),
                }
            )
        return listed

    @app.get("/api/memories")
    async def memories() -> list[dict[str, Any]]:
        """The memories under the roots; a live one (followed, SPEC §16) with ``live``: what
        its newest version covers ("live memory covering 00:00-03:20 (still recording)")."""
        return [
            {"path": roots.relative(path), "name": path.name, **_live_fields(roots, path)}
            for path in roots.memories()
        ]

    @app.get("/api/memory")
    async def memory(path: str = Query(description="a stored memory under the roots")) -> Any:
        """A memory's root, SuperEvents and MacroEvents (texts as stored, to show as text)."""
        resolved = roots.resolve(path)
        return await asyncio.to_thread(memory_outline, resolved)

    @app.get("/api/media")
    async def media(path: str = Query(description="a video under the roots")) -> FileResponse:
        """The video itself, with HTTP range requests (so a player can seek)."""
        return FileResponse(_video_file(roots, path))

    # Frames are decoded two at a time at most: a page of thumbnails leaves the server's
    # other work (a build, a question) its cores.
    decoding = asyncio.Semaphore(2)

    @app.get("/api/frame", response_class=Response)
    async def frame(
        path: str = Query(description="a video under the roots"),
        t: float = Query(description="seconds from the start: the frame on screen then"),
        w: int = Query(
            320,
            ge=16,
            description=f"width in pixels (at most {MAX_FRAME_WIDTH}, never wider than the video)",
        ),
    ) -> Response:
        """One frame of a video as a JPEG: a cited moment's thumbnail. A time that is no
        time of the video (negative, not a number, past its end) is a 400 that says why."""
        resolved = _video_file(roots, path)
        async with decoding:
            jpeg = await asyncio.to_thread(frame_jpeg, resolved, t, w)
        return Response(
            jpeg, media_type="image/jpeg", headers={"Cache-Control": FRAME_CACHE_CONTROL}
        )

    @app.post("/api/jobs", status_code=201)
    async def create_job(request: Request, body: Annotated[JobRequest, Body()]) -> Job:
        """Start a build, a question or an eval; an identical question about an unchanged
        memory is answered from the earlier job."""
        runner = runner_of(request)
        if isinstance(body, EvalRequest):
            return runner.shown(runner.submit("eval", _eval_inputs(roots, body)))
        if isinstance(body, BuildRequest) and body.follow:
            return runner.shown(runner.submit("build", _follow_inputs(roots, body)))
        if isinstance(body, BuildRequest):
            video = roots.resolve(body.video)
            out = (
                roots.resolve(body.out, must_exist=False)
                if body.out
                else default_memory_dir(roots, video)
            )
            subtitles = str(roots.resolve(body.subtitles)) if body.subtitles else None
            build = {
                "video": str(video),
                "out": str(out),
                "subtitles": subtitles,
                "force": body.force,
            }
            return runner.shown(runner.submit("build", build))
        validate_question(body.question, body.options, max_chars=settings.config.question.max_chars)
        memory_dir = roots.resolve(body.memory)
        asked_video = roots.asked_video(memory_dir, body.video) if body.video else None
        inputs = {
            "memory": str(memory_dir),
            "video": str(asked_video) if asked_video else None,
            "question": body.question,
            "options": body.options,
            "memory_stamp": _stamp(memory_dir),
            "video_fingerprint": await asyncio.to_thread(_video_stamp, asked_video),
        }
        earlier = runner.answered(inputs)
        return runner.shown(earlier if earlier is not None else runner.submit("ask", inputs))

    @app.get("/api/jobs")
    async def jobs(request: Request) -> list[Job]:
        runner = runner_of(request)
        return [runner.shown(job) for job in runner.store.all()]

    @app.get("/api/jobs/{job_id}")
    async def job(request: Request, job_id: str) -> Job:
        return runner_of(request).shown_by_id(job_id)

    @app.post("/api/jobs/{job_id}/cancel")
    async def cancel_job(request: Request, job_id: str) -> Job:
        runner = runner_of(request)
        return runner.shown(runner.cancel(job_id))

    @app.get("/api/jobs/{job_id}/events")
    async def job_events(request: Request, job_id: str) -> StreamingResponse:
        """Server-sent events: the job, its progress and each level as it finishes, its end."""
        runner = runner_of(request)
        runner.store.get(job_id)  # an unknown id is a 404 before the stream opens

        async def stream() -> AsyncIterator[str]:
            async for event in runner.follow(job_id):
                yield f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
        )

    @app.get("/api/jobs/{job_id}/trace")
    async def trace_json(request: Request, job_id: str) -> FileResponse:
        return FileResponse(_trace_file(request, job_id), media_type="application/json")

    @app.get("/api/jobs/{job_id}/trace.html", response_class=HTMLResponse)
    async def trace_html(request: Request, job_id: str) -> HTMLResponse:
        """The trace page ``inspect TRACE --html`` writes, frames decoded from the video."""
        from videotapestry.views.trace_html import trace_page

        path = _trace_file(request, job_id)
        inputs = runner_of(request).store.get(job_id).inputs
        video = inputs.get("video")
        correct = _answer_key(video, inputs.get("question"), inputs.get("options"))
        page = await asyncio.to_thread(trace_page, path, video=video, correct=correct)
        return HTMLResponse(page)

    @app.post("/api/library/index", status_code=201)
    async def index_library(request: Request) -> Job:
        """Index every memory under the roots into the served library (``serve.library``):
        a job, its progress the memories done, its result the update report. While one
        runs, asking again returns it."""
        runner = runner_of(request)
        running = next((j for j in runner.store.unfinished() if j.kind == "library_index"), None)
        inputs = {"library": str(library_dir(settings.config, roots))}
        return runner.shown(running or runner.submit("library_index", inputs))

    @app.get("/api/library/videos")
    async def library_videos_route(request: Request) -> list[ServedVideo]:
        """The videos the served library holds (those under the roots), by title."""
        library = served_library(runner_of(request).vt, roots)
        return await asyncio.to_thread(library_videos, library, roots)

    @app.get("/api/library/search")
    async def library_search(
        request: Request,
        q: str = Query(min_length=1, description="words to look for, by words and meaning"),
        top: int = Query(10, ge=1, le=100, description="moments returned"),
    ) -> list[ServedHit]:
        """The moments across the library that fit ``q`` best: each with its video (open it
        with GET /api/media?path=), its span and where a click seeks to."""
        library = served_library(runner_of(request).vt, roots)
        return await asyncio.to_thread(search_library, library, roots, q, top)

    @app.post("/api/library/ask", status_code=201)
    async def library_ask(request: Request, body: Annotated[LibraryAskRequest, Body()]) -> Job:
        """Ask across the library: a job whose result is the answer, the videos it cites
        and each citation in words with its video and time (``ServedLibraryAnswer``)."""
        validate_question(body.question, body.options, max_chars=settings.config.question.max_chars)
        inputs = {
            "library": str(library_dir(settings.config, roots)),
            "question": body.question,
            "options": body.options,
        }
        return runner_of(request).shown(runner_of(request).submit("library_ask", inputs))

    @app.get("/api/evals")
    async def eval_runs() -> list[dict[str, Any]]:
        """The eval run directories under the roots."""
        return [{"path": roots.relative(path), "name": path.name} for path in roots.eval_runs()]

    @app.get("/api/evals/report")
    async def eval_report(path: str = Query(description="an eval run under the roots")) -> Any:
        """A run's report (what ``eval-report`` writes): its figures and its markdown."""
        from videotapestry.eval.report import build_report, render_markdown

        report = await asyncio.to_thread(build_report, roots.resolve(path))
        return {"report": report.to_dict(), "markdown": render_markdown(report)}

    @app.get("/api/evals/compare")
    async def eval_compare(
        a: str = Query(description="the first run"), b: str = Query(description="the second")
    ) -> Any:
        """Two runs compared (what ``compare`` prints): the questions that flipped, McNemar."""
        from videotapestry.eval.compare import compare_runs

        comparison = await asyncio.to_thread(compare_runs, roots.resolve(a), roots.resolve(b))
        return {"comparison": comparison.to_dict(), "text": comparison.render()}

    return app


def _eval_inputs(roots: Roots, body: EvalRequest) -> dict[str, Any]:
    """An eval request's inputs with every path resolved under the roots (refused before a
    job exists); the benchmark's name is checked against the loaders."""
    from videotapestry.eval.datasets import loaders

    if body.benchmark not in loaders():
        raise VideoTapestryError(
            f"benchmark {body.benchmark!r}: unknown; one of {', '.join(sorted(loaders()))}"
        )
    annotations = roots.resolve(body.annotations)
    out = roots.resolve(body.out or f"evals/{body.benchmark}", must_exist=False)
    return {
        **body.model_dump(exclude={"kind"}),
        "annotations": str(annotations),
        "memories": str(roots.resolve(body.memories)),
        "videos": str(roots.resolve(body.videos)) if body.videos else None,
        "subtitles": str(roots.resolve(body.subtitles)) if body.subtitles else None,
        "out": str(out),
    }


def _follow_inputs(roots: Roots, body: BuildRequest) -> dict[str, Any]:
    """A followed build's inputs: its source (a URL as given, else a path resolved
    under the roots) and its folder under the roots (a URL names none by default)."""
    from memory_builders.sources import GROWING_SUFFIXES, is_playlist, is_remote, is_stream_url

    if body.subtitles or body.force:
        raise VideoTapestryError(
            "follow takes a source and a folder; subtitles and force are for finished files"
        )
    remote = is_remote(body.video)
    growing = not remote and Path(body.video).suffix.lower() in GROWING_SUFFIXES
    if not (is_playlist(body.video) or is_stream_url(body.video) or growing):
        raise VideoTapestryError(
            f"cannot follow {body.video}: give an HLS playlist (.m3u8, under the roots or an "
            "http(s) URL), an RTSP, RTMP or SRT URL, or a file still being written under the "
            "roots (MPEG-TS, fragmented MP4, Matroska)"
        )
    source = None if remote else roots.resolve(body.video, must_exist=False)
    if body.out:
        out = roots.resolve(body.out, must_exist=False)
    elif source is not None:
        out = default_memory_dir(roots, source)
    else:
        raise VideoTapestryError(f"following {body.video}: give out, a folder under the roots")
    return {"video": body.video if remote else str(source), "out": str(out), "follow": True}


def _live_fields(roots: Roots, memory: Path) -> dict[str, Any]:
    """For a followed memory, ``live`` (what it covers) and ``recording`` (its video, to
    play and ask with); nothing for any other."""
    from videotapestry.memory import live_state, recording_path

    try:
        state = live_state(memory)
    except VideoTapestryError:
        return {}
    if state is None:
        return {}
    recording = Path(os.path.realpath(recording_path(memory, state)))
    shown = roots.relative(recording) if roots.contains(recording) else None
    return {"live": state.describe(), "recording": shown}


def _video_file(roots: Roots, path: str) -> Path:
    """``path`` resolved under the roots, refused unless it is a video file."""
    resolved = roots.resolve(path)
    if not resolved.is_file() or resolved.suffix.lower() not in VIDEO_SUFFIXES:
        raise PathOutsideRootsError(f"path {path}: not a video file")
    return resolved


def _trace_file(request: Request, job_id: str) -> Path:
    job = request.app.state.runner.store.get(job_id)
    path: Path = request.app.state.traces / f"{job.id}.json"
    if job.kind != "ask" or not path.is_file():
        raise UnknownJobError(f"job {job_id}: no trace (only a finished question has one)")
    return path


def _stamp(memory_dir: Path) -> float:
    """When the memory last changed: a rebuilt memory is asked again, not answered from before."""
    try:
        return os.stat(memory_dir / "memory.json").st_mtime
    except OSError:
        return os.stat(memory_dir).st_mtime


def _video_stamp(video: Path | None) -> str | None:
    """The video's content identity, so a video replaced under the same name is asked again
    rather than given the answer about the file it replaced (a missing or unreadable video
    is left to the job, which reports it)."""
    if video is None:
        return None
    try:
        return fingerprint(video)
    except (OSError, VideoTapestryError):
        return None


def _shipped_questions(path: Path, video_name: str) -> list[dict[str, Any]]:
    """The questions of a ``questions.json`` beside the video that name it (or name none)."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("video", video_name) != video_name:
        return []
    return [
        {
            "id": str(q.get("id", "")),
            "question": str(q["question"]),
            "options": list(q["options"]),
            # the answer key, when the file gives one: the UI marks an answer right or wrong
            "answer": q["answer"] if isinstance(q.get("answer"), str) else None,
        }
        for q in data.get("questions", [])
        if isinstance(q, dict) and "question" in q and isinstance(q.get("options"), list)
    ]


def _answer_key(video: Any, question: Any, options: Any) -> str | None:
    """The right option of a question shipped beside ``video`` (asked as shipped), else None."""
    if not isinstance(video, str):
        return None
    path = Path(video)
    for shipped in _shipped_questions(path.parent / QUESTIONS_FILE, path.name):
        if shipped["question"] == question and shipped["options"] == options:
            answer: str | None = shipped["answer"]
            return answer
    return None


def _add_errors(app: FastAPI) -> None:
    """Our errors as a 4xx with their message: outside the roots 403, unknown 404, else 400."""

    @app.exception_handler(VideoTapestryError)
    async def our_error(request: Request, exc: VideoTapestryError) -> JSONResponse:
        status = 400
        if isinstance(exc, PathOutsideRootsError):
            status = 403
        elif isinstance(exc, UnknownJobError):
            status = 404
        return JSONResponse({"detail": str(exc)}, status_code=status)


def _add_token_check(app: FastAPI, token: str) -> None:
    """Every request must carry the token: a bearer header, the UI's cookie, or ``?token=``
    (the UI's first page load, which then keeps it in the cookie)."""

    @app.middleware("http")
    async def check_token(request: Request, call_next: Any) -> Any:
        header = request.headers.get("authorization", "")
        given = (
            header.removeprefix("Bearer ").strip()
            if header.startswith("Bearer ")
            else request.cookies.get(TOKEN_COOKIE) or request.query_params.get("token") or ""
        )
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse(
                {"detail": "missing or wrong token (send Authorization: Bearer <token>)"},
                status_code=401,
            )
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response
