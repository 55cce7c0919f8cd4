"""The recording of a followed source, kept in the memory folder (SPEC §16).

The segments a follower copied into ``<memory>/live/segments/`` (``sources``) make one
stream, in order; between two builds the new ones are appended to ``stream.*`` and remuxed
to ``recording.mp4``, the video every version of the memory is built from and every later
question looks at, and the bytes it holds are recorded (a kill between the append and the
record is undone on restart by cutting the file back to the recorded length).

Copying instead of reading the source in place is what lets a question look again at a
moment a live playlist has long dropped, and what lets a restarted build resume from the
same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from memory_builders.report import BuildError
from memory_builders.sources import is_playlist, is_stream_url, readable_packets
from videotapestry.errors import VideoError
from videotapestry.files import write_json_atomic
from videotapestry.memory import LIVE_FINGERPRINT_PREFIX
from videotapestry.video import probe

SEGMENTS_DIR = "segments"
#: The arrived bytes in order, named ``stream`` with the source's container suffix.
STREAM_STEM = "stream"
RECORDING_FILE = "recording.mp4"
STATE_FILE = "recording.json"


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
        live = is_playlist(source) or is_stream_url(source)
        suffix = ".ts" if live else Path(source).suffix.lower()
        self.stream = folder / f"{STREAM_STEM}{suffix}"
        self.appended: list[str] = list(state.get("appended", []))
        self.bytes = int(state.get("bytes", 0))
        self.identity: str | None = state.get("identity")
        #: How ``recording.mp4`` was last remuxed from all of ``stream.*``: whether it left
        #: out each stream's last packet; None when it is missing what arrived since.
        self._remuxed: bool | None = None
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

    def append_new(self) -> int:
        """Append the segments that arrived since the last call to ``stream.*``; how many.
        Cheap: the MP4 is remuxed only when a version is built (``update_mp4``), not at each
        look at the source, as remuxing reads the whole recording."""
        appended = set(self.appended)
        new = sorted(p.name for p in self.segments.glob("seg_*") if p.name not in appended)
        if not new:
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
        self._remuxed = None
        return len(new)

    def arrived_s(self) -> float:
        """The video time the recording holds (0 while nothing decodable arrived): read from
        ``stream.*`` itself where its container tells its length (MPEG-TS by its first and
        last times, a fragmented MP4 by its fragments), else from the MP4 remuxed for it."""
        if self.bytes == 0:
            return 0.0
        try:
            told = probe(self.stream).duration_s
        except VideoError:
            told = 0.0
        if told > 0:
            return told
        try:
            self.update_mp4(torn_tail=True)
            return probe(self.path).duration_s
        except (VideoError, BuildError):
            return 0.0

    def update_mp4(self, *, torn_tail: bool = False) -> None:
        """Remux ``stream.*`` into ``recording.mp4`` unless it already holds all of it.
        ``torn_tail``: the bytes may end inside a frame (a file still being written), so the
        last packet of each stream waits for the next remux."""
        if self.bytes and (self._remuxed != torn_tail or not self.path.is_file()):
            remux_to_mp4(self.stream, self.path, hold_back_last=torn_tail)
            self._remuxed = torn_tail

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
            for packet in readable_packets(src.demux(*[src.streams[i] for i in mapping])):
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
