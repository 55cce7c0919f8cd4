"""Test-only RTSP and RTMP servers on 127.0.0.1: each plays one H.264 video (RTMP: with its
AAC audio) to every player that connects, at a multiple of real time, then ends the stream.

PyAV cannot serve a stream to a player itself: its RTSP and RTMP "listen" modes take a
publisher, and an output it opens ignores the protocol options ``listen`` needs. Its
muxers still make what goes on the wire (H.264 in RTP packets, FLV tags), so what is left
here is the little of each protocol a player (FFmpeg's client) needs. RTP/MP2T (MPEG-TS in
RTP) would have been shorter, but crashed FFmpeg's RTSP reader in PyAV 15: not used.
"""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO


class _Server:
    """Accepts players on 127.0.0.1 (a free port) while the ``with`` block runs."""

    path = "live"

    def __init__(self, scheme: str, speed: float) -> None:
        self.speed = speed
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}/{self.path}"
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]

    def __enter__(self) -> _Server:
        self.threads[0].start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.set()
        self.listener.close()
        for thread in self.threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            try:
                self._session(conn, reader)
            except OSError:  # the player went away
                return

    def _session(self, conn: socket.socket, reader: BinaryIO) -> None:
        raise NotImplementedError

    def _paced(self, items: list[tuple[float, Any]]) -> Any:
        """``items`` (media time in s, item) at their times, ``speed`` times real time."""
        started = time.monotonic()
        for at, item in items:
            if self.stop.is_set():
                return
            time.sleep(max(0.0, started + at / self.speed - time.monotonic()))
            yield item


# --------------------------------------------------------------------------- RTSP

SDP = (
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=test\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n"
    "a=control:track0\r\n"
)


class _Writes(io.RawIOBase):
    """What a muxer writes, one write at a time (the RTP muxer writes one packet a time)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.writes.append(bytes(data))
        return len(data)


def _remuxed(video: Path, target: Any, format: str, audio: bool, **options: str) -> None:
    import av

    with av.open(str(video)) as src, av.open(target, "w", format=format, options=options) as out:
        chosen: list[Any] = [*src.streams.video[:1], *(src.streams.audio[:1] if audio else [])]
        mapping = {s.index: out.add_stream_from_template(s) for s in chosen}
        for packet in src.demux(*chosen):
            if packet.dts is not None:
                packet.stream = mapping[packet.stream.index]
                out.mux(packet)


def rtp_packets(video: Path) -> list[tuple[float, bytes]]:
    """``video``'s H.264 as RTP packets (RTCP left out), each at its media time (s)."""
    sink = _Writes()
    _remuxed(video, sink, "rtp", False, packetsize="1400")
    rtp = [p for p in sink.writes if not 200 <= p[1] <= 204]
    first = struct.unpack("!I", rtp[0][4:8])[0]
    return [(((struct.unpack("!I", p[4:8])[0] - first) & 0xFFFFFFFF) / 90000, p) for p in rtp]


class RtspServer(_Server):
    """``rtsp://127.0.0.1:PORT/live``: RTP over the RTSP connection (interleaved TCP, what
    the follower asks for); the end of the video closes the connection."""

    def __init__(self, video: Path, speed: float) -> None:
        super().__init__("rtsp", speed)
        self.packets = rtp_packets(video)

    def _session(self, conn: socket.socket, reader: BinaryIO) -> None:
        while not self.stop.is_set():
            lines = []
            while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                lines.append(line.decode().strip())
            if not lines:
                return
            method = lines[0].split()[0]
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            reader.read(int(headers.get("Content-Length", 0)))
            extra, body = ["Session: 1"], ""
            if method == "OPTIONS":
                extra = ["Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN"]
            elif method == "DESCRIBE":
                body = SDP
                extra = [f"Content-Base: {self.url}/", "Content-Type: application/sdp"]
            elif method == "SETUP":
                extra += ["Transport: RTP/AVP/TCP;unicast;interleaved=0-1"]
            reply = ["RTSP/1.0 200 OK", f"CSeq: {headers.get('CSeq', '0')}", *extra]
            conn.sendall("\r\n".join([*reply, f"Content-Length: {len(body)}", "", body]).encode())
            if method == "PLAY":
                for packet in self._paced(self.packets):
                    conn.sendall(b"$\x00" + struct.pack("!H", len(packet)) + packet)
                conn.shutdown(socket.SHUT_RDWR)
                return


# --------------------------------------------------------------------------- RTMP


def amf0(*values: Any) -> bytes:
    """AMF0, the encoding of RTMP commands: numbers, strings, objects and null."""
    out = b""
    for value in values:
        if value is None:
            out += b"\x05"
        elif isinstance(value, int | float):
            out += b"\x00" + struct.pack("!d", value)
        elif isinstance(value, str):
            out += b"\x02" + struct.pack("!H", len(value)) + value.encode()
        else:
            fields = b"".join(
                struct.pack("!H", len(k)) + k.encode() + amf0(v) for k, v in value.items()
            )
            out += b"\x03" + fields + b"\x00\x00\x09"
    return out


def flv_tags(video: Path) -> list[tuple[float, tuple[int, int, bytes]]]:
    """``video``'s video and audio as FLV tags: (media time in s, (type, ms, data))."""
    sink = io.BytesIO()
    _remuxed(video, sink, "flv", True)
    data, pos, tags = sink.getvalue(), 13, []
    while pos + 11 <= len(data):
        kind, size = data[pos], int.from_bytes(data[pos + 1 : pos + 4], "big")
        ms = int.from_bytes(data[pos + 4 : pos + 7], "big") | data[pos + 7] << 24
        tags.append((ms / 1000, (kind, ms, data[pos + 11 : pos + 11 + size])))
        pos += 11 + size + 4
    return tags


class RtmpServer(_Server):
    """``rtmp://127.0.0.1:PORT/live/stream``: the simple handshake (no digest), the replies
    a player waits for (connect, createStream, play), then the FLV tags as messages and,
    at the end, ``NetStream.Play.Stop``, as a server says a publisher stopped. ``plays``:
    the video is played that many times on one connection, its clock starting over each
    time, as when a publisher reconnects to the server."""

    path = "live/stream"
    CHUNK = 1 << 16

    def __init__(self, video: Path, speed: float, *, plays: int = 1) -> None:
        super().__init__("rtmp", speed)
        self.tags = flv_tags(video)
        self.plays = plays

    def _session(self, conn: socket.socket, reader: BinaryIO) -> None:
        c1 = reader.read(1537)[1:]
        conn.sendall(b"\x03" + bytes(1536) + c1)  # S0, S1 (version 0: no digest), S2 = C1
        reader.read(1536)  # C2
        self._send(conn, 2, 1, 0, struct.pack("!I", self.CHUNK))
        for name, number in self._commands(reader):
            if name == "connect":
                self._send(conn, 2, 5, 0, struct.pack("!I", 2500000))
                self._send(conn, 2, 6, 0, struct.pack("!IB", 2500000, 2))
                status = {"level": "status", "code": "NetConnection.Connect.Success"}
                self._send(conn, 3, 20, 0, amf0("_result", number, {"fmsVer": "FMS/3,0"}, status))
            elif name == "createStream":
                self._send(conn, 3, 20, 0, amf0("_result", number, None, 1))
            elif name == "play":
                self._send(conn, 2, 4, 0, struct.pack("!HI", 0, 1))  # stream begin
                self._status(conn, "NetStream.Play.Start")
                for _ in range(self.plays):
                    for kind, ms, data in self._paced(self.tags):
                        self._send(conn, 6, kind, 1, data, ms)
                self._status(conn, "NetStream.Play.Stop")
                conn.shutdown(socket.SHUT_RDWR)
                return

    def _commands(self, reader: BinaryIO) -> Any:
        """The player's commands (name, transaction number), read from its chunks."""
        size, headers, partial = 128, dict[int, dict[str, int]](), dict[int, bytes]()
        while not self.stop.is_set() and (first := reader.read(1)):
            kind_of_header, stream = first[0] >> 6, first[0] & 0x3F
            if stream < 2:
                stream = 64 + int.from_bytes(reader.read(stream + 1), "little")
            header = headers.setdefault(stream, {"length": 0, "type": 0})
            fields = reader.read((11, 7, 3, 0)[kind_of_header])
            if kind_of_header <= 1:
                header["length"] = int.from_bytes(fields[3:6], "big")
                header["type"] = fields[6]
            if kind_of_header <= 2 and fields[:3] == b"\xff\xff\xff":
                reader.read(4)
            body = partial.pop(stream, b"")
            body += reader.read(min(size, header["length"] - len(body)))
            if len(body) < header["length"]:
                partial[stream] = body
            elif header["type"] == 1:
                size = struct.unpack("!I", body[:4])[0] & 0x7FFFFFFF
            elif header["type"] == 20:
                (length,) = struct.unpack("!H", body[1:3])
                yield body[3 : 3 + length].decode(), struct.unpack("!d", body[4 + length :][:8])[0]

    def _status(self, conn: socket.socket, code: str) -> None:
        self._send(conn, 5, 20, 1, amf0("onStatus", 0, None, {"level": "status", "code": code}))

    def _send(
        self, conn: socket.socket, stream: int, kind: int, message_stream: int, body: bytes,
        ms: int = 0,
    ) -> None:  # fmt: skip
        """One message: a full chunk header, then continuation chunks of ``CHUNK`` bytes."""
        header = bytes([stream]) + min(ms, 0xFFFFFF).to_bytes(3, "big")
        header += len(body).to_bytes(3, "big") + bytes([kind]) + struct.pack("<I", message_stream)
        if ms >= 0xFFFFFF:
            header += struct.pack("!I", ms)
        parts = [body[i : i + self.CHUNK] for i in range(0, len(body), self.CHUNK)] or [b""]
        conn.sendall(header + parts[0] + b"".join(bytes([0xC0 | stream]) + p for p in parts[1:]))
