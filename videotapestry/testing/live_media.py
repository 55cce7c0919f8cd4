"""Live sources for tests and benches (SPEC §16): an HLS stream whose segments appear over
time, served over HTTP on 127.0.0.1 only, and an MP4 that another process is still writing.

``encode_hls`` turns a finished video into H.264 MPEG-TS segments and their playlist with
FFmpeg's own HLS muxer (through PyAV), as a live encoder would make them; ``HlsFeed`` then
publishes them into a served folder a few at a time, rewriting the playlist each time, and
ends it with ``#EXT-X-ENDLIST``: what a follower of a live event playlist sees.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PLAYLIST = "index.m3u8"


@dataclass(frozen=True)
class HlsSegment:
    name: str
    duration_s: float


def encode_hls(video: str | Path, folder: str | Path, segment_s: float) -> list[HlsSegment]:
    """``video`` re-encoded as H.264 MPEG-TS segments of ``segment_s`` seconds (a keyframe
    starts each) in ``folder``, with the complete playlist beside them; the segments."""
    import av

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with av.open(str(video)) as source:
        stream_in = source.streams.video[0]
        rate = stream_in.average_rate or Fraction(25)
        keyint = max(1, round(float(rate) * segment_s))
        options = {
            "hls_time": f"{segment_s:g}",
            "hls_list_size": "0",
            "hls_segment_filename": str(folder / "seg%04d.ts"),
        }
        with av.open(str(folder / PLAYLIST), "w", format="hls", options=options) as out:
            stream = h264_like(out, stream_in, rate, keyint, {"crf": "28"})
            for frame in source.decode(stream_in):
                image = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), "rgb24")
                out.mux(stream.encode(image))
            out.mux(stream.encode(None))
    return read_segments(folder / PLAYLIST)


def h264_like(
    out: Any, stream_in: Any, rate: Fraction, keyint: int, options: dict[str, str]
) -> Any:
    """An H.264 stream in ``out`` of ``stream_in``'s size at ``rate``, a keyframe exactly every
    ``keyint`` frames (as live encoders cut segments), with x264 ``options`` besides."""
    stream = out.add_stream("libx264", rate=rate)
    stream.width = stream_in.codec_context.width
    stream.height = stream_in.codec_context.height
    stream.pix_fmt = "yuv420p"
    stream.options = {
        "preset": "superfast",
        **options,
        "x264-params": f"keyint={keyint}:min-keyint={keyint}:scenecut=0",
    }
    return stream


def read_segments(playlist: Path) -> list[HlsSegment]:
    segments, duration = [], 0.0
    for line in playlist.read_text(encoding="utf-8").splitlines():
        if line.startswith("#EXTINF:"):
            duration = float(line.split(":", 1)[1].rstrip(","))
        elif line and not line.startswith("#"):
            segments.append(HlsSegment(line.strip(), duration))
    return segments


class HlsFeed:
    """Publishes encoded segments into ``served`` one batch at a time, as a live event."""

    def __init__(self, encoded: Path, served: Path, segments: list[HlsSegment]) -> None:
        self.encoded = encoded
        self.served = served
        self.segments = segments
        self.published = 0
        served.mkdir(parents=True, exist_ok=True)

    @property
    def published_s(self) -> float:
        return sum(s.duration_s for s in self.segments[: self.published])

    def publish(self, count: int, *, ended: bool = False) -> None:
        """Make the first ``count`` segments available (the playlist written last)."""
        for segment in self.segments[self.published : count]:
            shutil.copyfile(self.encoded / segment.name, self.served / segment.name)
        self.published = max(self.published, count)
        target = max(1, round(max(s.duration_s for s in self.segments)))
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{target}"]
        lines += ["#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:EVENT"]
        for segment in self.segments[: self.published]:
            lines += [f"#EXTINF:{segment.duration_s:.3f},", segment.name]
        if ended:
            lines.append("#EXT-X-ENDLIST")
        partial = self.served / f".{PLAYLIST}.part"
        partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
        partial.replace(self.served / PLAYLIST)

    def publish_until(self, seconds: float, *, ended: bool = False) -> None:
        """Publish the segments that start before ``seconds``."""
        count, t = 0, 0.0
        while count < len(self.segments) and t < seconds - 1e-6:
            t += self.segments[count].duration_s
            count += 1
        self.publish(count, ended=ended)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """``folder`` over HTTP on 127.0.0.1 (a free port) while the block runs; its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def write_growing_mp4(video: str | Path, target: str | Path, *, speed: float) -> None:
    """Re-encode ``video`` into ``target`` as a recorder writes live: H.264 in fragmented
    MP4 (its index ahead of each 2-s fragment), paced at ``speed`` times real time, so the
    file grows while a follower reads it. Run in a process of its own (``python -m
    videotapestry.testing.live_media``), as a recorder would be."""
    import av

    options = {"movflags": "frag_keyframe+empty_moov+default_base_moof", "flush_packets": "1"}
    with av.open(str(video)) as source, av.open(str(target), "w", format="mp4",
                                                  options=options) as out:  # fmt: skip
        stream_in = source.streams.video[0]
        rate = stream_in.average_rate or Fraction(25)
        keyint = max(1, round(float(rate) * 2))
        stream = h264_like(out, stream_in, rate, keyint, {"tune": "zerolatency"})
        started = time.monotonic()
        for number, frame in enumerate(source.decode(stream_in)):
            image = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), "rgb24")
            out.mux(stream.encode(image))
            due = started + number / float(rate) / speed
            time.sleep(max(0.0, due - time.monotonic()))
        out.mux(stream.encode(None))


def main() -> None:
    parser = argparse.ArgumentParser(description="write a growing fragmented MP4")
    parser.add_argument("video")
    parser.add_argument("target")
    parser.add_argument("--speed", type=float, default=1.0, help="times real time")
    args = parser.parse_args()
    write_growing_mp4(args.video, args.target, speed=args.speed)


if __name__ == "__main__":
    main()


def covered_now(memory_dir: Path) -> float:
    """The video time a followed memory's newest version covers; 0 before the first version
    (or while its pointer cannot be read), for a test's wait loop."""
    from videotapestry.errors import MemoryFormatError
    from videotapestry.memory import live_state

    try:
        state = live_state(memory_dir)
    except MemoryFormatError:
        return 0.0
    return state.covered_s if state is not None else 0.0
