"""The followers of an HLS playlist and of a file still being written, and the choice of a
follower for a source (``make_follower``; a stream URL's is in ``stream_url``)."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memory_builders.report import BuildError
from memory_builders.sources import (
    GROWING_SUFFIXES,
    TS_PACKET,
    TS_SUFFIXES,
    GrowthClock,
    Playlist,
    SourceFollower,
    is_playlist,
    is_stream_url,
    is_url,
    parse_playlist,
    read_source,
    write_segment,
)
from memory_builders.stream_url import StreamUrlFollower
from videotapestry.config import BuilderFollowSettings


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

    def close(self) -> None:
        """Nothing reads the playlist between polls."""


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

    #: Segments written and the bytes they hold: read from the folder once (a restart goes
    #: on after them), then counted as they are written.
    _count: int = field(default=0, init=False)
    _copied: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.segments.mkdir(parents=True, exist_ok=True)
        self._growth = GrowthClock(self.settings.idle_end_s, self.clock)
        done = list(self.segments.glob("seg_*"))
        self._count, self._copied = len(done), sum(p.stat().st_size for p in done)

    def poll(self) -> bool:
        try:
            size = self.path.stat().st_size
        except OSError:
            return self._growth.idle()
        unit = TS_PACKET if self.path.suffix.lower() in TS_SUFFIXES else 1
        whole = (size - self._copied) // unit * unit
        if whole > 0:
            with self.path.open("rb") as handle:
                handle.seek(self._copied)
                data = handle.read(whole)
            name = f"seg_{self._count:06d}{self.path.suffix.lower()}"
            write_segment(self.segments, name, data)
            self._count, self._copied = self._count + 1, self._copied + len(data)
            self._growth.grew()
            return False
        return self._growth.idle()

    def close(self) -> None:
        """Nothing reads the file between polls."""


def make_follower(source: str, segments: Path, settings: BuilderFollowSettings) -> SourceFollower:
    """The follower for ``source``: an HLS playlist (``.m3u8``, local or http), a stream URL
    (``STREAM_SCHEMES``) or a file still being written (``GROWING_SUFFIXES``)."""
    if is_stream_url(source):
        return StreamUrlFollower(source, segments, settings)
    if is_playlist(source):
        return HlsFollower(source, segments, settings)
    if not is_url(source) and Path(source).suffix.lower() in GROWING_SUFFIXES:
        if not Path(source).is_file():
            raise BuildError(f"cannot follow {source}: no such file (yet)")
        return GrowingFileFollower(Path(source), segments, settings)
    raise BuildError(
        f"cannot follow {source}: --follow takes an HLS playlist (.m3u8, a path or an http(s) "
        "URL), an RTSP, RTMP or SRT URL, or a file still being written (MPEG-TS, fragmented "
        "MP4, Matroska); for a finished file, build without --follow"
    )
