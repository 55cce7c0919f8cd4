"""What a followed source has delivered so far, kept in the memory folder (SPEC §16).

A source still arriving is copied, as it comes, into ``<memory>/live/segments/``: one file
per HLS media segment (named by its media sequence number), or per stretch of new bytes of
a growing MPEG-TS file. Each is written whole under a temporary name and then renamed, so a
kill leaves only complete segments. The segments, in order, make one MPEG-TS stream;
between two builds the follower appends the new ones to ``recording.ts``, the video every
version of the memory is built from and every later question looks at, and records how
many bytes it holds (a kill between the append and the record is undone on restart by
cutting the file back to the recorded length).

Copying instead of reading the source in place is what lets a question look again at a
moment a live playlist has long dropped, and what lets a restarted build resume from the
same bytes. Sources: an HLS playlist (a local file or an ``http(s)://`` URL) and a growing
MPEG-TS file. Other sources are refused with a message naming what is supported.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memory_builders.report import BuildError
from videotapestry.config import BuilderFollowSettings
from videotapestry.files import write_json_atomic
from videotapestry.memory import LIVE_FINGERPRINT_PREFIX

SEGMENTS_DIR = "segments"
#: The arrived bytes in order, named ``stream`` with the source's container suffix.
STREAM_STEM = "stream"
#: What a growing file may be: containers FFmpeg reads from a prefix (an MP4 must be
#: fragmented, its index written ahead of each fragment, as recorders write them live).
GROWING_SUFFIXES = (".ts", ".m2ts", ".mts", ".mp4", ".m4v", ".mov", ".mkv", ".webm")
TS_SUFFIXES = (".ts", ".m2ts", ".mts")
RECORDING_FILE = "recording.mp4"
STATE_FILE = "recording.json"
#: MPEG-TS packets are 188 bytes: a growing file is copied in whole packets.
TS_PACKET = 188


class SourceFollower(Protocol):
    """Copies what arrived since the last poll into the segments folder."""

    #: Whether each segment ends where a frame ends (an HLS segment); a growing file's new
    #: bytes may end inside one, so its last frame waits for the next poll.
    whole_segments: bool

    def poll(self) -> bool:
        """Fetch the new segments; True once the source has ended."""
        ...


def is_playlist(source: str) -> bool:
    path = urllib.parse.urlsplit(source).path if is_url(source) else source
    return path.lower().endswith((".m3u8", ".m3u"))


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in ("http", "https")


def read_source(location: str, timeout_s: float) -> bytes:
    """The bytes of a local file or an ``http(s)://`` URL; ``OSError`` when unreachable."""
    if is_url(location):
        try:
            with urllib.request.urlopen(location, timeout=timeout_s) as response:
                return bytes(response.read())
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            raise OSError(f"{location}: {getattr(exc, 'reason', exc)}") from None
    return Path(location).read_bytes()


@dataclass(frozen=True)
class Playlist:
    """What an HLS media playlist lists: its first media sequence number, the segment
    locations in order, and whether it has ended (``#EXT-X-ENDLIST``)."""

    first_sequence: int
    segments: list[str]
    ended: bool


def parse_playlist(text: str) -> Playlist:
    """A media playlist's segments; a master playlist (variants) is refused."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or lines[0] != "#EXTM3U":
        raise BuildError("not an HLS playlist: it does not start with #EXTM3U")
    if any(line.startswith("#EXT-X-STREAM-INF") for line in lines):
        raise BuildError(
            "this is an HLS master playlist (it lists variants); follow one variant's media "
            "playlist instead"
        )
    first = 0
    segments: list[str] = []
    for line in lines:
        if line.startswith("#EXT-X-MEDIA-SEQUENCE:"):
            first = int(line.split(":", 1)[1])
        elif not line.startswith("#"):
            segments.append(line)
    return Playlist(first, segments, "#EXT-X-ENDLIST" in lines)


def write_segment(folder: Path, name: str, data: bytes) -> None:
    """A segment written whole or not at all."""
    partial = folder / f".{name}.part"
    partial.write_bytes(data)
    os.replace(partial, folder / name)


@dataclass
class GrowthClock:
    """When a source last grew: one that has not grown for ``limit_s`` has ended."""

    limit_s: float
    clock: Callable[[], float] = time.monotonic
    last: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.last = self.clock()

    def grew(self) -> None:
        self.last = self.clock()

    def idle(self) -> bool:
        return self.clock() - self.last > self.limit_s


@dataclass
class HlsFollower:
    """Follows an HLS media playlist: every segment it lists, once, in sequence order."""

    playlist: str
    segments: Path
    settings: BuilderFollowSettings
    clock: Callable[[], float] = time.monotonic
    whole_segments: bool = field(default=True, init=False)
    _growth: GrowthClock = field(init=False)

    def __post_init__(self) -> None:
        self.segments.mkdir(parents=True, exist_ok=True)
        self._growth = GrowthClock(self.settings.idle_end_s, self.clock)

    def poll(self) -> bool:
        timeout = self.settings.fetch_timeout_s
        try:
            playlist = parse_playlist(
                read_source(self.playlist, timeout).decode("utf-8", "replace")
            )
        except OSError:
            return self._growth.idle()  # unreachable for now: a live source may come back
        grew = False
        for offset, location in enumerate(playlist.segments):
            name = f"seg_{playlist.first_sequence + offset:06d}.ts"
            if (self.segments / name).is_file():
                continue
            try:
                data = read_source(self._resolve(location), timeout)
            except OSError:
                break  # listed but not served yet: the next poll takes it, in order
            write_segment(self.segments, name, data)
            grew = True
        if grew:
            self._growth.grew()
        return (playlist.ended and self._complete(playlist)) or self._growth.idle()

    def _complete(self, playlist: Playlist) -> bool:
        last = playlist.first_sequence + len(playlist.segments) - 1
        return not playlist.segments or (self.segments / f"seg_{last:06d}.ts").is_file()

    def _resolve(self, location: str) -> str:
        if is_url(location) or Path(location).is_absolute():
            return location
        if is_url(self.playlist):
            return urllib.parse.urljoin(self.playlist, location)
        return str(Path(self.playlist).parent / location)


@dataclass
class GrowingFileFollower:
    """Follows a file that another program is still writing (MPEG-TS, fragmented MP4,
    Matroska): its new bytes (in whole 188-byte packets for MPEG-TS) become the next
    segment; no growth for ``idle_end_s`` ends it."""

    path: Path
    segments: Path
    settings: BuilderFollowSettings
    clock: Callable[[], float] = time.monotonic
    whole_segments: bool = field(default=False, init=False)
    _growth: GrowthClock = field(init=False)

    def __post_init__(self) -> None:
        self.segments.mkdir(parents=True, exist_ok=True)
        self._growth = GrowthClock(self.settings.idle_end_s, self.clock)

    def poll(self) -> bool:
        done = list(self.segments.glob("seg_*"))
        copied = sum(p.stat().st_size for p in done)
        try:
            size = self.path.stat().st_size
        except OSError:
            return self._growth.idle()
        unit = TS_PACKET if self.path.suffix.lower() in TS_SUFFIXES else 1
        whole = (size - copied) // unit * unit
        if whole > 0:
            with self.path.open("rb") as handle:
                handle.seek(copied)
                data = handle.read(whole)
            write_segment(self.segments, f"seg_{len(done):06d}{self.path.suffix.lower()}", data)
            self._growth.grew()
            return False
        return self._growth.idle()


def make_follower(source: str, segments: Path, settings: BuilderFollowSettings) -> SourceFollower:
    """The follower for ``source``: an HLS playlist (``.m3u8``, local or http) or a file
    still being written (``GROWING_SUFFIXES``)."""
    if is_playlist(source):
        return HlsFollower(source, segments, settings)
    if not is_url(source) and Path(source).suffix.lower() in GROWING_SUFFIXES:
        if not Path(source).is_file():
            raise BuildError(f"cannot follow {source}: no such file (yet)")
        return GrowingFileFollower(Path(source), segments, settings)
    raise BuildError(
        f"cannot follow {source}: --follow takes an HLS playlist (.m3u8, a path or an http(s) "
        "URL) or a file still being written (MPEG-TS, fragmented MP4, Matroska); for a "
        "finished file, build without --follow"
    )


class Recording:
    """``stream.ts``: the arrived segments in order, and how many bytes of it count; and
    ``recording.mp4``, the same video remuxed after each append. MPEG-TS has no index, and
    the decoders seek in it by guesswork (seconds off, or not at all), while a question's
    tools must find a frame by its time: so versions are built from, and questions read,
    the MP4, which is replaced whole (a reader with the old file open keeps its copy)."""

    def __init__(self, folder: Path, source: str) -> None:
        self.folder = folder
        self.segments = folder / SEGMENTS_DIR
        self.path = folder / RECORDING_FILE
        self.state_file = folder / STATE_FILE
        folder.mkdir(parents=True, exist_ok=True)
        self.segments.mkdir(exist_ok=True)
        state = self._state()
        if state.get("source") not in (None, source):
            raise BuildError(
                f"{folder.parent} follows {state['source']}, not {source}; choose another "
                "memory folder"
            )
        self.source = source
        suffix = ".ts" if is_playlist(source) else Path(source).suffix.lower()
        self.stream = folder / f"{STREAM_STEM}{suffix}"
        self.appended: list[str] = list(state.get("appended", []))
        self.bytes = int(state.get("bytes", 0))
        self.identity: str | None = state.get("identity")
        #: Whether ``recording.mp4`` left out each stream's last packet (``append_new``).
        self._held_back = True
        # Undo an append whose record a kill prevented; drop half-written segments.
        if self.stream.exists() and self.stream.stat().st_size != self.bytes:
            with self.stream.open("r+b") as handle:
                handle.truncate(self.bytes)
            self.path.unlink(missing_ok=True)
        for partial in self.segments.glob(".*.part"):
            partial.unlink(missing_ok=True)

    def _state(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def append_new(self, *, torn_tail: bool = False) -> int:
        """Append the segments that arrived since the last call; how many. ``torn_tail``:
        the bytes may end inside a frame (a file still being written), so the last packet
        of each stream waits for the next append."""
        appended = set(self.appended)
        new = sorted(p.name for p in self.segments.glob("seg_*") if p.name not in appended)
        if not new:
            if self.bytes and (not self.path.is_file() or self._held_back != torn_tail):
                remux_to_mp4(self.stream, self.path, hold_back_last=torn_tail)
                self._held_back = torn_tail
            return 0
        with self.stream.open("ab") as out:
            for name in new:
                data = (self.segments / name).read_bytes()
                if self.identity is None:
                    self.identity = stream_identity(self.source, data)
                out.write(data)
                self.bytes += len(data)
                self.appended.append(name)
            out.flush()
            os.fsync(out.fileno())
        self._save()
        remux_to_mp4(self.stream, self.path, hold_back_last=torn_tail)
        self._held_back = torn_tail
        return len(new)

    def _save(self) -> None:
        write_json_atomic(
            self.state_file,
            {
                "source": self.source,
                "identity": self.identity,
                "appended": self.appended,
                "bytes": self.bytes,
            },
        )


def stream_identity(source: str, first_segment: bytes) -> str:
    """A followed stream's fingerprint: its source and first bytes, fixed for its life."""
    digest = hashlib.sha256(source.encode("utf-8"))
    digest.update(first_segment[: 1 << 16])
    return f"{LIVE_FINGERPRINT_PREFIX}{digest.hexdigest()[:24]}"


def remux_to_mp4(stream: Path, target: Path, *, hold_back_last: bool = False) -> None:
    """``stream``'s video and audio, packets unchanged, into an MP4 that replaces ``target``
    whole. A packet the demuxer cannot time is left out, and demuxing stops at data it
    cannot read (the torn end of a file still being written); ``hold_back_last`` leaves out
    each stream's last packet too, which such an end may have cut short."""
    import av

    partial = target.with_name(f".{target.name}.part")
    try:
        with av.open(str(stream)) as src, av.open(str(partial), "w", format="mp4") as out:
            mapping: dict[int, Any] = {}
            for chosen in (src.streams.video[:1], src.streams.audio[:1]):
                for one in chosen:
                    mapping[one.index] = out.add_stream_from_template(one)
            waiting: dict[int, Any] = {}
            for packet in _readable(src.demux(*[src.streams[i] for i in mapping])):
                if packet.dts is None or packet.stream.index not in mapping:
                    continue
                index = packet.stream.index
                ready = waiting.pop(index, None) if hold_back_last else packet
                if hold_back_last:
                    waiting[index] = packet
                if ready is not None:
                    ready.stream = mapping[index]
                    out.mux(ready)
    except (av.error.FFmpegError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        raise BuildError(f"cannot remux the recording {stream} into MP4: {exc}") from None
    os.replace(partial, target)


def _readable(packets: Iterator[Any]) -> Iterator[Any]:
    """The packets up to the first the demuxer cannot read."""
    import av

    while True:
        try:
            yield next(packets)
        except (StopIteration, av.error.EOFError):
            return
        except av.error.FFmpegError:
            return
