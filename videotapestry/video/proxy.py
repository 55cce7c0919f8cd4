"""The frame proxy: a small, quickly seekable copy of a video that query-time tools decode
instead of the original (``builder.frame_proxy``, issue 22).

Long videos are often stored with keyframes 4-10 s apart, so reaching one frame decodes up
to a few hundred; this is most of the framework's CPU per question. The memory builder can
write, beside the memory, a copy at the largest size the agents are sent with a keyframe
every second (or every frame), which makes a random frame several times cheaper to decode.

What must not change is *which* moment a frame shows and the timestamp it carries, so:

- The proxy has one frame per decoded frame of the source, stored under the source's frame
  index (presentation time ``index / fps``), so the same index is the same source frame in
  both files. A ``ProxyReader`` reports the *source's* ``VideoInfo`` (fingerprint, path,
  duration, audio: the ASR tool and the result keep naming the original) and the *source's*
  keyframes, recorded while the proxy was written, so uniform sampling snaps to the same
  frames it would pick in the original. Documented tolerance: the frame returned for a
  timestamp is the source frame the original's reader returns (0 frames apart, identical
  timestamps) at a constant frame rate; where a variable-rate source has no frame of its
  own in a slot, both return the frame still on screen, at most one frame apart
  (``tests/test_frame_proxy.py`` checks the constant-rate case frame by frame).
- The pixels differ: a lossy re-encode, scaled down to ``max_side``. That changes what the
  model sees, which is why the builder writes a proxy only when asked.
- ``frame_proxy.json`` records the source's fingerprint and the proxy file's own; a proxy
  of another video, or a proxy file that is not the one described (replaced, truncated), is
  refused with a message saying which, and the original is decoded.

The video file is written first (whole or not at all), the description last, so a kill at
any moment leaves either a complete, described proxy or none the readers would use.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from videotapestry.config import BuilderFrameProxySettings, ImagesConfig, VideoConfig
from videotapestry.errors import VideoError, VideoTapestryError
from videotapestry.files import parse_json, replacing, write_json_atomic
from videotapestry.video.container import VideoInfo, decode_size, error_reason, fingerprint
from videotapestry.video.encoding import frame_side
from videotapestry.video.frame import Frame
from videotapestry.video.frame_cache import FrameCache
from videotapestry.video.reader import PyAVReader, with_cache
from videotapestry.video.sequential import SequentialPass

#: The proxy's video and its description, in the memory directory.
PROXY_FILE = "frame_proxy.mp4"
PROXY_MANIFEST = "frame_proxy.json"
PROXY_VERSION = 1

#: A run of keyframe indices ``start, start + step, ...`` (``count`` of them).
KeyframeRun = tuple[int, int, int]


class ProxyManifest(BaseModel):
    """``frame_proxy.json``: what the proxy is a copy of, and how it was made."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int = PROXY_VERSION
    source_fingerprint: str
    source_fps: float
    source_frame_count: int
    source_width: int
    source_height: int
    #: The source's keyframes as the proxy's pass decoded them, as arithmetic runs (a
    #: regular GOP or an all-intra source is one run).
    source_keyframes: list[KeyframeRun]
    proxy_fingerprint: str
    width: int
    height: int
    codec: str
    #: Frames between the proxy's own keyframes (1: all-intra).
    keyframe_interval: int
    frames: int
    bytes: int
    encode_s: float


@dataclass(frozen=True)
class ProxyLookup:
    """What a memory directory offers for a video: a usable proxy, a refused one (and why),
    or nothing."""

    path: Path | None = None
    manifest: ProxyManifest | None = None
    refused: str | None = None

    @property
    def usable(self) -> bool:
        return self.manifest is not None and self.path is not None


# --------------------------------------------------------------------------- keyframes


def keyframe_runs(indices: Sequence[int]) -> list[KeyframeRun]:
    """Sorted unique ``indices`` as runs of equal steps: greedy, so a regular GOP is one run."""
    values = sorted(set(indices))
    runs: list[KeyframeRun] = []
    position = 0
    while position < len(values):
        start = values[position]
        if position + 1 == len(values):
            runs.append((start, 1, 1))
            break
        step = values[position + 1] - start
        end = position + 1
        while end + 1 < len(values) and values[end + 1] - values[end] == step:
            end += 1
        runs.append((start, step, end - position + 1))
        position = end + 1
    return runs


class KeyframeTable:
    """``keyframe_before`` over recorded runs, as the source's reader would answer it."""

    def __init__(self, runs: Sequence[KeyframeRun]) -> None:
        self._starts = [run[0] for run in runs]
        self._runs = list(runs)

    def before(self, index: int) -> int | None:
        position = bisect.bisect_right(self._starts, index) - 1
        if position < 0:
            return None
        start, step, count = self._runs[position]
        return start + step * min(count - 1, (index - start) // step)


# --------------------------------------------------------------------------- finding


def proxy_max_side(video: VideoConfig, images: ImagesConfig, configured: int | None) -> int:
    """The proxy's longest side: the configured one, else the largest image the agents are
    sent (a single frame; grid cells are smaller), never above what the readers decode
    (``video.decoded_max_side``)."""
    side = configured or frame_side(images)
    return min(side, video.decoded_max_side) if video.decoded_max_side else side


def has_proxy(directory: str | Path) -> bool:
    """Whether ``directory`` holds a proxy at all (a cheap check before any probing)."""
    folder = Path(directory)
    return (folder / PROXY_MANIFEST).is_file() or (folder / PROXY_FILE).is_file()


def find_proxy(directory: str | Path, info: VideoInfo) -> ProxyLookup:
    """The proxy in ``directory`` if it is a complete copy of ``info``'s video; a refusal
    that says why otherwise; an empty lookup when there is none."""
    folder = Path(directory)
    path, described = folder / PROXY_FILE, folder / PROXY_MANIFEST
    if not described.is_file():
        if path.is_file():
            return ProxyLookup(refused=f"{path} has no {PROXY_MANIFEST} (an unfinished write?)")
        return ProxyLookup()
    try:
        manifest = read_manifest(described)
    except VideoTapestryError as exc:
        return ProxyLookup(refused=str(exc))
    if manifest.source_fingerprint != info.fingerprint:
        return ProxyLookup(
            refused=f"the frame proxy {path} was made from another video (fingerprint "
            f"{manifest.source_fingerprint}, this video {info.fingerprint}); rebuild the "
            "memory with builder.frame_proxy.enabled=true for this video"
        )
    if not path.is_file():
        return ProxyLookup(refused=f"{described} describes {path}, which is missing")
    actual = fingerprint(path)
    if actual != manifest.proxy_fingerprint:
        return ProxyLookup(
            refused=f"{path} is not the file {described} describes (fingerprint {actual}, "
            f"recorded {manifest.proxy_fingerprint}); rebuild the memory to write it again"
        )
    return ProxyLookup(path=path, manifest=manifest)


def read_manifest(path: Path) -> ProxyManifest:
    text = path.read_text(encoding="utf-8", errors="replace")
    data = parse_json(text, str(path), VideoError)
    try:
        manifest = ProxyManifest.model_validate(data)
    except ValidationError as exc:
        raise VideoError(
            f"{path} is not a frame proxy description: {exc.errors()[0]['msg']}", path=str(path)
        ) from None
    if manifest.version != PROXY_VERSION:
        raise VideoError(
            f"{path} has proxy version {manifest.version}, this program reads "
            f"{PROXY_VERSION}; rebuild the memory to write it again"
        )
    return manifest


def remove_proxy(directory: str | Path) -> bool:
    """Delete the proxy of ``directory`` (description first); whether there was one."""
    folder = Path(directory)
    found = False
    for name in (PROXY_MANIFEST, PROXY_FILE):
        if (folder / name).is_file():
            (folder / name).unlink()
            found = True
    return found


# --------------------------------------------------------------------------- reading


class ProxyReader:
    """A ``VideoReader`` of the source whose frames are decoded from its proxy.

    ``info`` is the source's; frames carry the source's indices and timestamps; keyframes
    are the source's (see the module docstring), so sampling picks the same frames.
    """

    backend = "proxy"

    def __init__(
        self,
        lookup: ProxyLookup,
        info: VideoInfo,
        config: VideoConfig,
        frame_cache: FrameCache | None = None,
    ) -> None:
        if lookup.manifest is None or lookup.path is None:
            raise VideoError(f"no usable frame proxy for {info.path}: {lookup.refused}")
        manifest = lookup.manifest
        self.info = info
        self.config = config
        self.path = lookup.path
        self.manifest = manifest
        # The proxy's frames under the proxy's own fingerprint (other pixels than the
        # source's at the same index), timed by the source's rate and count.
        decoded = replace(
            info,
            path=str(lookup.path),
            width=manifest.width,
            height=manifest.height,
            has_audio=False,
            fingerprint=manifest.proxy_fingerprint,
        )
        self._reader = with_cache(PyAVReader(lookup.path, config, info=decoded), frame_cache)
        self._keyframes = KeyframeTable(manifest.source_keyframes)

    @property
    def reused_frames(self) -> int:
        return int(getattr(self._reader, "reused_frames", 0))

    @property
    def frame_cache(self) -> FrameCache | None:
        """The cache the proxy's frames go to, under the proxy's fingerprint: what the
        Skim/Focus prefetch decodes into, as with the source's own readers."""
        cache = getattr(self._reader, "frame_cache", None)
        return cache if isinstance(cache, FrameCache) else None

    def frames_at(self, timestamps: Sequence[float]) -> list[Frame]:
        return self._reader.frames_at(timestamps)

    def frames_at_indices(self, indices: Sequence[int]) -> list[Frame]:
        return self._reader.frames_at_indices(indices)

    def keyframe_before(self, index: int) -> int | None:
        return self._keyframes.before(index)

    def kept_near(self, low: int, high: int, center: float) -> int | None:
        return self._reader.kept_near(low, high, center)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> ProxyReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProxyReader({self.info.path!r} via {str(self.path)!r})"


# --------------------------------------------------------------------------- writing


def proxy_codec(settings: BuilderFrameProxySettings) -> str:
    """The encoder to use: libx264 when asked for or available, else MPEG-4 part 2."""
    if settings.codec != "auto":
        return settings.codec
    import av

    try:
        av.codec.Codec("libx264", "w")
    except (av.error.FFmpegError, ValueError):
        return "mpeg4"
    return "libx264"


def write_proxy(
    info: VideoInfo,
    directory: str | Path,
    settings: BuilderFrameProxySettings,
    max_side: int,
    *,
    progress: Callable[[float], None] | None = None,
) -> ProxyManifest:
    """Write the proxy of ``info``'s video into ``directory``: one pass over every frame,
    each re-encoded under its own index; the description is written last."""
    import av

    folder = Path(directory)
    (folder / PROXY_MANIFEST).unlink(missing_ok=True)  # never an old description of a new file
    width, height = decode_size(info.width, info.height, max_side)
    codec = proxy_codec(settings)
    rate = Fraction(info.fps).limit_denominator(1001)
    interval = max(1, round(settings.keyframe_interval_s * info.fps))
    keyframes: list[int] = []
    started = time.perf_counter()
    decoding = SequentialPass(info)
    last_report = 0.0
    with replacing(folder / PROXY_FILE) as temporary, _encoding_errors(info):
        with av.open(str(temporary), "w", format="mp4") as container:
            stream = _encoder(container, codec, rate, (width, height), interval, settings)
            for frame in decoding:
                if frame.decoded.key_frame:
                    keyframes.append(frame.index)
                picture = frame.decoded.reformat(
                    width=width, height=height, format="yuv420p", interpolation="AREA"
                )
                picture.pts = frame.index
                picture.time_base = 1 / rate
                picture.pict_type = av.video.frame.PictureType.NONE
                container.mux(stream.encode(picture))
                if progress is not None and frame.timestamp_s - last_report >= 5.0:
                    last_report = frame.timestamp_s
                    progress(frame.timestamp_s)
            container.mux(stream.encode(None))
        if decoding.frames_decoded == 0:
            raise VideoError(
                f"{info.path}: no frame could be decoded for the frame proxy", path=info.path
            )
        proxy_fp = fingerprint(temporary)  # the same bytes after the rename
        size = temporary.stat().st_size
    manifest = ProxyManifest(
        source_fingerprint=info.fingerprint,
        source_fps=info.fps,
        source_frame_count=info.frame_count,
        source_width=info.width,
        source_height=info.height,
        source_keyframes=keyframe_runs(keyframes),
        proxy_fingerprint=proxy_fp,
        width=width,
        height=height,
        codec=codec,
        keyframe_interval=interval,
        frames=decoding.frames_decoded,
        bytes=size,
        encode_s=round(time.perf_counter() - started, 3),
    )
    write_json_atomic(folder / PROXY_MANIFEST, manifest.model_dump(mode="json"))
    return manifest


@contextmanager
def _encoding_errors(info: VideoInfo) -> Iterator[None]:
    """An FFmpeg error while writing the proxy as a ``VideoError`` naming the video."""
    import av

    try:
        yield
    except av.error.FFmpegError as exc:
        raise VideoError(
            f"cannot write the frame proxy of {info.path}: {error_reason(exc)}", path=info.path
        ) from None


def _encoder(
    container: Any,
    codec: str,
    rate: Fraction,
    size: tuple[int, int],
    interval: int,
    settings: BuilderFrameProxySettings,
) -> Any:
    """The proxy's video stream: no B-frames (a frame's presentation time is its index, with
    no reordering delay), keyframes exactly every ``interval`` frames."""
    stream = container.add_stream(codec, rate=rate)
    stream.width, stream.height = size
    stream.pix_fmt = "yuv420p"
    stream.time_base = 1 / rate
    if codec == "libx264":
        stream.options = {
            "preset": settings.preset,
            "crf": str(settings.crf),
            "tune": "fastdecode",
            "x264-params": f"keyint={interval}:min-keyint={interval}:scenecut=0:bframes=0",
        }
    else:  # MPEG-4 part 2: a fixed quantizer (3: near-transparent at these sizes)
        stream.codec_context.gop_size = interval
        stream.codec_context.max_b_frames = 0
        stream.options = {"qscale": "3"}
    return stream
