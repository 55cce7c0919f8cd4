"""Following a stream URL FFmpeg opens (RTSP over TCP, RTMP, SRT): a reader thread copies
its packets, unchanged, into MPEG-TS segments (SPEC §16)."""

from __future__ import annotations

import logging
import os
import threading
import urllib.parse
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_builders.report import BuildError
from memory_builders.sources import GrowthClock, readable_packets, shown_url
from videotapestry.config import BuilderFollowSettings

#: Codecs MPEG-TS carries: a stream URL's video and audio are recorded as they come.
TS_VIDEO_CODECS = ("h264", "hevc", "mpeg2video", "mpeg1video", "mpeg4")
TS_AUDIO_CODECS = ("aac", "mp3", "mp2", "ac3", "eac3", "opus")

log = logging.getLogger("memory_builders")
#: How long ``close`` waits for the reader thread to write its last segment.
_CLOSE_WAIT_S = 5.0


class _StreamRecorder:
    """The reader thread of a ``StreamUrlFollower``: opens the URL, reads its packets and
    writes them, every ``segment_s`` at the next video keyframe, as a whole MPEG-TS segment.
    It keeps no reference to its follower, so a follower dropped without ``close`` (a
    cancelled follow) is collected and stops it."""

    def __init__(self, url: str, segments: Path, settings: BuilderFollowSettings) -> None:
        self.url = url
        self.shown = shown_url(url)
        self.segments = segments
        self.settings = settings
        self.stop = threading.Event()
        self.done = threading.Event()
        #: Why the stream ended, once it did; ``fatal``: nothing can be recorded (an error
        #: for the build); ``warn``: it ended by a timeout, not by the server.
        self.reason = ""
        self.fatal = self.warn = False
        self.growth = GrowthClock(settings.idle_end_s)
        names = sorted(p.name for p in segments.glob("seg_*.ts"))
        self.number = int(names[-1][4:10]) + 1 if names else 0
        #: Where the recorded timeline ends (s): a reconnect or a restart goes on from it,
        #: as the segments are joined into one stream whose time must not run back.
        self.end_s = _stream_end_s(segments / names[-1]) if names else 0.0

    def run(self) -> None:
        import av

        opened, error = False, ""
        try:
            while not self.stop.is_set():
                try:
                    container = av.open(self.url, options=self._options(), timeout=self._timeouts())
                except (av.error.FFmpegError, OSError) as exc:
                    error = _why(exc)
                else:
                    opened = True
                    with container:
                        error, finished = self._record(container)
                    if finished:
                        self.reason = error or f"{self.shown} ended the stream"
                        return
                if self.growth.idle():
                    idle = f"{self.settings.idle_end_s:g} s"
                    self.warn = True
                    self.reason = (
                        f"no packet from {self.shown} for {idle} (builder.follow.idle_end_s); "
                        f"the last error: {error}"
                        if opened
                        else f"cannot open {self.shown}: {error} (tried for {idle}, "
                        "builder.follow.idle_end_s)"
                    )
                    self.fatal = not opened and self.number == 0
                    return
                self.stop.wait(min(self.settings.poll_s, 1.0))
        except Exception as exc:  # a segment that cannot be written: the follow stops
            self.fatal, self.reason = True, f"recording {self.shown} failed: {exc}"
        finally:
            self.done.set()

    def _options(self) -> dict[str, str]:
        scheme = urllib.parse.urlsplit(self.url).scheme.lower()
        return {"rtsp_transport": "tcp"} if scheme in ("rtsp", "rtsps") else {}

    def _timeouts(self) -> tuple[float, float]:
        """Opening waits at most a fetch timeout; a read waits until the stream is idle."""
        idle = self.settings.idle_end_s
        return min(self.settings.fetch_timeout_s, idle), idle

    def _record(self, container: Any) -> tuple[str, bool]:
        """Record the open stream until it ends; an error to reconnect after ('' and True:
        the server ended it; a message and True: it cannot be recorded at all)."""
        import av

        video = [s for s in container.streams.video if s.codec_context.name in TS_VIDEO_CODECS]
        if not video:
            names = ", ".join(s.codec_context.name for s in container.streams.video) or "none"
            self.fatal = True
            return (
                f"{self.shown} has no video stream MPEG-TS can carry (video codecs: {names})",
                True,
            )
        audio = [s for s in container.streams.audio if s.codec_context.name in TS_AUDIO_CODECS]
        chosen = [video[0], *audio[:1]]
        pending: list[Any] = []  # packets of the segment being recorded
        timeline = _Timeline(self.end_s)
        started = 0.0  # the pending segment's first time (s)
        cut = self.settings.segment_s
        error, finished = "", True
        packets = container.demux(*chosen)
        try:
            for packet in packets:
                if self.stop.is_set():
                    break
                if packet.dts is None or packet.pts is None:
                    continue
                self.growth.grew()
                is_video = packet.stream is chosen[0]
                if not timeline.place(packet, is_video):
                    continue
                at = float(packet.dts * packet.time_base)
                if pending and is_video and packet.is_keyframe and at - started >= cut:
                    self._write(pending, chosen)
                    pending = []
                if not pending:
                    started = at
                pending.append(packet)
        except (av.error.EOFError, StopIteration):
            pass
        except (av.error.FFmpegError, OSError) as exc:
            error, finished = _why(exc), False
        if pending:
            self._write(pending, chosen)
        return error, finished

    def _write(self, packets: list[Any], streams: list[Any]) -> None:
        """``packets`` as the next segment, written whole under a temporary name."""
        import av

        name = f"seg_{self.number:06d}.ts"
        partial = self.segments / f".{name}.part"
        with av.open(str(partial), "w", format="mpegts", options={"mpegts_copyts": "1"}) as out:
            mapping = {s.index: out.add_stream_from_template(s) for s in streams}
            for packet in packets:
                self.end_s = max(self.end_s, _packet_end_s(packet))
                packet.stream = mapping[packet.stream.index]
                out.mux(packet)
        os.replace(partial, self.segments / name)
        self.number += 1


@dataclass
class _Timeline:
    """Puts one connection's packets on the recording's time: from its first video keyframe,
    where the recording so far ends (the segments are joined into one stream, whose time
    must not run back), and from there again when the server's clock starts over (a new
    publisher) on the same connection."""

    end: float  # where the recording ends so far (s)
    floor: float = 0.0  # where the packets from the last start on go
    offset: float | None = None  # seconds added to the server's times
    last: dict[int, float] = field(default_factory=dict)  # each stream's latest time

    def place(self, packet: Any, is_video: bool) -> bool:
        """Shift ``packet`` onto the recording's time; False to leave it out."""
        base = packet.time_base
        before = self.last.get(packet.stream.index)
        if self.offset is not None and before is not None:
            at = float(packet.dts * base) + self.offset
            if before - 1.0 < at <= before:
                return False  # repeated or out of order: MPEG-TS takes no such packet
            if at <= before:
                self.offset = None  # the server's clock started over
        if self.offset is None:
            if not (is_video and packet.is_keyframe):
                return False
            self.floor, self.last = self.end, {}
            self.offset = self.floor - float(packet.dts * base)
        shift = round(self.offset / base)
        packet.pts += shift
        packet.dts += shift
        at = float(packet.dts * base)
        if at < self.floor - 1e-3:
            return False  # audio from before the keyframe, heard already
        self.last[packet.stream.index] = at
        self.end = max(self.end, _packet_end_s(packet))
        return True


def _why(exc: Exception) -> str:
    """An FFmpeg error in words, without the URL (PyAV's interrupt is its timeout)."""
    import av

    if isinstance(exc, av.error.ExitError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc)


def _packet_end_s(packet: Any) -> float:
    """When a packet ends (s), in decoding or in presentation order, whichever is later: a
    stream going on after it starts there, so neither order runs back."""
    return float((max(packet.dts, packet.pts) + (packet.duration or 0)) * packet.time_base)


def _stream_end_s(segment: Path) -> float:
    """Where a recorded segment's timeline ends (s): its latest packet's end."""
    import av

    end = 0.0
    try:
        with av.open(str(segment)) as src:
            for packet in readable_packets(src.demux()):
                if packet.dts is not None and packet.pts is not None:
                    end = max(end, _packet_end_s(packet))
    except av.error.FFmpegError:
        pass
    return end


@dataclass
class StreamUrlFollower:
    """Follows a stream URL FFmpeg opens (RTSP over TCP, RTMP, SRT): a reader thread
    remuxes its video and first audio stream, packets unchanged, into MPEG-TS segments of
    about ``segment_s``, each starting at a video keyframe. A dropped connection is opened
    again; the stream ends when the server ends it, or when no packet has come (nor the
    URL opened) for ``idle_end_s``. A URL that never opens is an error."""

    url: str
    segments: Path
    settings: BuilderFollowSettings
    whole_segments: bool = field(default=True, init=False)
    _recorder: _StreamRecorder = field(init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.segments.mkdir(parents=True, exist_ok=True)
        self._recorder = _StreamRecorder(self.url, self.segments, self.settings)

    def poll(self) -> bool:
        recorder = self._recorder
        if self._thread is None:
            self._thread = threading.Thread(
                target=recorder.run, name=f"follow {shown_url(self.url)}", daemon=True
            )
            weakref.finalize(self, recorder.stop.set)
            self._thread.start()
        if not recorder.done.is_set():
            return False
        self._thread.join()
        if recorder.fatal:
            raise BuildError(recorder.reason)
        if recorder.warn:
            log.warning("%s; the stream is taken as ended", recorder.reason)
        return True

    def close(self) -> None:
        """Stop reading (what was read is written as a last segment) and wait for it a
        moment: a read blocked on a silent server ends at its own timeout, and the daemon
        thread then stops by itself."""
        self._recorder.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=_CLOSE_WAIT_S)
