"""An observation's frames sampled, decoded and encoded, in this thread or in worker processes.

Decoding, grid packing and JPEG encoding are the framework's largest CPU cost per question,
and much of it runs Python bytecode (the decoding loop, label drawing, array copies) that
holds the interpreter lock: with 16 questions in flight on 2 cores, worker threads doing it
stall the event loop that sends the model calls. ``FrameWorkers`` moves the whole job into
``video.decode_workers`` processes; what comes back is the JPEG bytes and the frame times
(tens of kB per image), never decoded arrays. ``decode_workers = 0`` renders in the calling
thread, as before.

One ``FrameJob`` describes an observation's frames (windows, sample count, grids or single
frames, image settings) and ``render_frames`` turns it into images the same way in a thread
or in a worker, so the images are identical either way. Each worker keeps its readers open
and its own ``FrameCache`` of ``frame_cache_mb / decode_workers``, so the decoded frames of
all workers stay within the configured budget; a job goes to the least busy worker, the one
its video hashes to on a tie, so the questions of one video mostly find their frames kept.

Failures keep their meaning: a ``VideoError`` in a worker (a corrupt file, an undecodable
frame) is raised in the caller as itself, so the tools record it as they do in-thread; a
worker that dies (a decoder crash) raises ``NoDecodableFramesError`` naming the video and is
replaced at the next job. Workers ignore Ctrl-C (the parent decides when to stop), end when
their pipe closes (the parent exited, however), and ``close`` stops and joins them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
import traceback
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Literal

from videotapestry.config import ImagesConfig, OverviewSettings, VideoConfig
from videotapestry.errors import NoDecodableFramesError, VideoError, VideoTapestryError
from videotapestry.images import ImagePart
from videotapestry.video.encoding import FrameTimestamps, frame_images, overview_images
from videotapestry.video.frame_cache import FrameCache
from videotapestry.video.reader import VideoReader, open_video
from videotapestry.video.sampling import decode_indices, window_indices
from videotapestry.video.windows import TimeWindow

#: Videos a worker keeps open at once (eval runs go video by video).
OPEN_VIDEOS = 4
#: Seconds ``close`` waits for a worker to finish its job before it is terminated.
STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class FrameJob:
    """The frames of one observation: where to sample, and how to send them.

    ``layout``: ``grids`` (the Overview, with ``overview``) or ``frames`` (single frames,
    at most ``max_frames``, each showing its time as ``label`` says: ``stamp_frame``).
    """

    path: str
    fingerprint: str
    video: VideoConfig
    windows: tuple[tuple[float, float], ...]
    count: int
    layout: Literal["grids", "frames"]
    images: ImagesConfig
    overview: OverviewSettings | None = None
    max_frames: int = 0
    label: FrameTimestamps = "tab"


@dataclass(frozen=True)
class RenderedFrames:
    """What an observation sends: the frames' true times (ascending) and their images."""

    frame_times: list[float]
    images: list[ImagePart]


def render_frames(readers: Sequence[VideoReader], job: FrameJob) -> RenderedFrames:
    """Sample ``job``'s windows with ``readers`` (open on its video), decode and encode."""
    windows = [TimeWindow(start, end) for start, end in job.windows]
    frames = decode_indices(readers, window_indices(readers[0], windows, job.count))
    if job.layout == "grids":
        if job.overview is None:
            raise ValueError("a grids job needs its overview settings")
        images = overview_images(frames, job.images, job.overview)
    else:
        images = frame_images(frames, job.images, max_frames=job.max_frames, label=job.label)
    return RenderedFrames([frame.timestamp_s for frame in frames], images)


class FrameWorkers:
    """``workers`` processes rendering ``FrameJob``s; ``render`` blocks, call it in a thread.

    Started on the first job (a run without video starts none) with the ``forkserver``
    method where there is one (``spawn`` elsewhere): forking a process that runs threads
    can copy a held lock into the child.
    """

    def __init__(self, workers: int, cache_bytes: int, *, start_method: str | None = None) -> None:
        if workers < 1:
            raise ValueError("FrameWorkers needs at least one worker")
        methods = multiprocessing.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        self._context = multiprocessing.get_context(method)
        self._cache_bytes = max(0, cache_bytes) // workers
        self._slots = [_Slot() for _ in range(workers)]
        self._choose = threading.Lock()
        self._finalizer = weakref.finalize(self, _stop_all, self._slots)

    @property
    def workers(self) -> int:
        return len(self._slots)

    def pids(self) -> list[int]:
        """Process ids of the workers running now (for tests and diagnostics)."""
        return [s.process.pid for s in self._slots if s.process is not None and s.process.pid]

    def render(self, job: FrameJob) -> RenderedFrames:
        slot = self._pick(job.path)
        try:
            with slot.lock:
                return self._run(slot, job)
        finally:
            with self._choose:
                slot.waiting -= 1

    def close(self) -> None:
        """Stop every worker (each finishes its job first); a later ``render`` restarts them."""
        _stop_all(self._slots)

    def __enter__(self) -> FrameWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pick(self, path: str) -> _Slot:
        preferred = zlib.crc32(path.encode("utf-8", "surrogateescape")) % len(self._slots)
        with self._choose:
            number = min(
                range(len(self._slots)),
                key=lambda n: (self._slots[n].waiting, (n - preferred) % len(self._slots)),
            )
            slot = self._slots[number]
            slot.waiting += 1
            return slot

    def _run(self, slot: _Slot, job: FrameJob) -> RenderedFrames:
        if slot.process is None or not slot.process.is_alive():
            slot.stop()
            slot.start(self._context, self._cache_bytes)
        assert slot.conn is not None  # set by start
        try:
            slot.conn.send(job)
            status, payload = slot.conn.recv()
        except (EOFError, OSError) as exc:
            code = slot.process.exitcode if slot.process is not None else None
            slot.stop()
            raise NoDecodableFramesError(
                f"{job.path}: the frame worker decoding it stopped (exit code {code}: "
                f"{type(exc).__name__}); the video may be corrupt. The next observation "
                "starts a new worker",
                path=job.path,
            ) from None
        if status == "ok":
            return payload
        if status == "video":
            raise payload
        raise VideoTapestryError(f"the frame worker failed on {job.path}: {payload}")


def frame_workers_for(config: VideoConfig) -> FrameWorkers | None:
    """The workers ``config`` asks for (``decode_workers``), None for decoding in threads;
    they share ``frame_cache_mb`` between them."""
    if config.decode_workers < 1:
        return None
    return FrameWorkers(config.decode_workers, config.frame_cache_mb * 2**20)


class _Slot:
    """One worker process, its pipe, and how many callers wait for it."""

    def __init__(self) -> None:
        self.process: BaseProcess | None = None
        self.conn: Connection | None = None
        self.lock = threading.Lock()
        self.waiting = 0

    def start(self, context: Any, cache_bytes: int) -> None:
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve, args=(child, cache_bytes), name="videotapestry-frames", daemon=True
        )
        process.start()
        child.close()
        self.process, self.conn = process, parent

    def stop(self) -> None:
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
            conn.close()
        if process is not None:
            process.join(STOP_TIMEOUT_S)
            if process.is_alive():
                process.terminate()
                process.join(STOP_TIMEOUT_S)
            process.close()


def _stop_all(slots: list[_Slot]) -> None:
    for slot in slots:
        with slot.lock:
            slot.stop()


def _serve(conn: Connection, cache_bytes: int) -> None:
    """A worker's life: render each job received until the pipe closes or says stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cache = FrameCache(cache_bytes)
    open_readers: OrderedDict[tuple[str, str, str], VideoReader] = OrderedDict()
    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                return
            if job is None:
                return
            try:
                reply: tuple[str, Any] = (
                    "ok",
                    render_frames([_reader(open_readers, cache, job)], job),
                )
            except VideoError as exc:
                reply = ("video", exc)
            except Exception as exc:  # a bug: its traceback goes back to the caller
                reply = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            try:
                conn.send(reply)
            except (OSError, ValueError):
                return
    finally:
        for reader in open_readers.values():
            reader.close()


def _reader(
    open_readers: OrderedDict[tuple[str, str, str], VideoReader], cache: FrameCache, job: FrameJob
) -> VideoReader:
    """The worker's reader of ``job``'s video, opened once per file, version and settings."""
    key = (job.path, job.fingerprint, job.video.model_dump_json())
    reader = open_readers.get(key)
    if reader is None:
        reader = open_video(job.path, job.video, frame_cache=cache)
        if reader.info.fingerprint != job.fingerprint:
            reader.close()
            raise VideoError(
                f"{job.path} changed since the question opened it (fingerprint "
                f"{reader.info.fingerprint}, expected {job.fingerprint}); ask again",
                path=job.path,
            )
        open_readers[key] = reader
        while len(open_readers) > OPEN_VIDEOS:
            _key, oldest = open_readers.popitem(last=False)
            oldest.close()
    open_readers.move_to_end(key)
    return reader
