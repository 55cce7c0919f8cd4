"""What a followed source is (SPEC §16): how it is named, how a follower copies what has
arrived into the segments folder, and when a source has stopped growing.

A source still arriving is copied, as it comes, into ``<memory>/live/segments/`` by a
follower (``followers``, ``stream_url``): one file per HLS media segment, per stretch of new
bytes of a growing file, or per ``builder.follow.segment_s`` of a stream URL's packets. Each
is written whole under a temporary name and then renamed (``write_segment``), so a kill
leaves only complete segments; ``recording`` joins them into the video the memory is built
from. Sources: an HLS playlist (a local file or an ``http(s)://`` URL), a file still being
written (MPEG-TS, fragmented MP4, Matroska), and a stream URL FFmpeg opens (``rtsp://``,
``rtmp://``, ``srt://`` and their TLS forms).
"""

from __future__ import annotations

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

#: What a growing file may be: containers FFmpeg reads from a prefix (an MP4 must be
#: fragmented, its index written ahead of each fragment, as recorders write them live).
GROWING_SUFFIXES = (".ts", ".m2ts", ".mts", ".mp4", ".m4v", ".mov", ".mkv", ".webm")
TS_SUFFIXES = (".ts", ".m2ts", ".mts")
#: MPEG-TS packets are 188 bytes: a growing file is copied in whole packets.
TS_PACKET = 188
#: URL schemes of live streams FFmpeg opens and reads packet by packet.
STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "srt")


class SourceFollower(Protocol):
    """Copies what arrived since the last poll into the segments folder."""

    #: Whether each segment ends where a frame ends (an HLS segment); a growing file's new
    #: bytes may end inside one, so its last frame waits for the next poll.
    whole_segments: bool

    def poll(self) -> bool:
        """Fetch the new segments; True once the source has ended."""
        ...

    def close(self) -> None:
        """Stop whatever still reads the source (a stream URL's reader thread)."""
        ...


def is_playlist(source: str) -> bool:
    path = urllib.parse.urlsplit(source).path if is_url(source) else source
    return path.lower().endswith((".m3u8", ".m3u"))


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in ("http", "https")


def is_remote(source: str) -> bool:
    """A source named by a URL (http(s), or a stream URL), not by a path."""
    return is_url(source) or is_stream_url(source)


def is_stream_url(source: str) -> bool:
    """An RTSP, RTMP or SRT URL (or its TLS form): a live stream read packet by packet."""
    return urllib.parse.urlsplit(source).scheme.lower() in STREAM_SCHEMES


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


def shown_url(url: str) -> str:
    """``url`` fit for a message: a password in it (``rtsp://user:pass@camera``) masked."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def readable_packets(packets: Iterator[Any]) -> Iterator[Any]:
    """The packets up to the first the demuxer cannot read."""
    import av

    while True:
        try:
            yield next(packets)
        except (StopIteration, av.error.EOFError):
            return
        except av.error.FFmpegError:
            return
