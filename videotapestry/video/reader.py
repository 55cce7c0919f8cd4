"""Reading frames from a video file, with the true timestamp of every frame returned.

What the agents "see" is exactly what this module returns, so two things matter above speed:
a frame's timestamp must be the time that frame is on screen, and a bad file must fail with an
error that names it. Conventions:

- Frame ``i`` is on screen during ``[i / fps, (i + 1) / fps)``; its timestamp is ``i / fps``
  and the video's duration is ``frame_count / fps``. The frame shown at time ``t`` is
  ``floor(t * fps)`` (``index_at``), so a returned timestamp is never later than the one asked
  for and never more than one frame earlier.
- Frames are RGB ``uint8`` arrays of shape ``(height, width, 3)``, upright: turned as the
  display matrix asks (``VideoInfo.rotation_deg``, ``frame.upright``), so a phone's portrait
  video is portrait whichever backend decoded it; what cannot be applied is said in
  ``info.not_upright``.
- ``fps`` is the stream's average rate. PyAV derives a frame's index from its presentation
  time, so timestamps stay right in variable-frame-rate files; decord and OpenCV count
  frames, which is exact only at a constant frame rate.

Three backends, one interface. ``PyAVReader`` (FFmpeg through PyAV) seeks to the keyframe
before a wanted frame, decodes forward and converts only the frames it returns; it is the
default because it is the fastest at sparse sampling of long videos (bench/
bench_video_sampling.py). ``DecordReader`` decodes in batches on decord's threads.
``OpenCVReader`` opens what the others cannot. ``open_video`` picks one per
``VideoConfig.backend`` (``auto``: PyAV, then decord, then OpenCV). What is known before
decoding (probing, fingerprints, the frame at a time, decode sizes, a stream's clock) is in
``container``; work that looks at every frame (the memory builder's scan) uses
``sequential.SequentialPass``, timed by the same clock as ``PyAVReader``.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from videotapestry.config import VideoConfig
from videotapestry.errors import (
    NoDecodableFramesError,
    VideoError,
    VideoUnreadableError,
    VideoWindowError,
)
from videotapestry.video.container import (
    TIME_EPSILON,
    StreamClock,
    VideoInfo,
    decode_size,
    error_reason,
    index_at,
    open_stream,
    probe,
)
from videotapestry.video.frame import Frame, turned_size, upright
from videotapestry.video.frame_cache import FrameCache, FrameKey

_log = logging.getLogger(__name__)


@runtime_checkable
class VideoReader(Protocol):
    """An open video. Readers are not thread-safe across calls; open one per worker."""

    info: VideoInfo
    config: VideoConfig

    def frames_at(self, timestamps: Sequence[float]) -> list[Frame]:
        """The frames on screen at ``timestamps``, in the order asked (repeats allowed)."""
        ...

    def frames_at_indices(self, indices: Sequence[int]) -> list[Frame]:
        """The frames with these indices, in the order asked (repeats allowed)."""
        ...

    def keyframe_before(self, index: int) -> int | None:
        """The last keyframe at or before frame ``index``; None when the backend cannot tell.

        Decoding a keyframe needs no other frame, so uniform sampling prefers them.
        """
        ...

    def kept_near(self, low: int, high: int, center: float) -> int | None:
        """A frame in ``[low, high]`` that is decoded already (the one nearest ``center``, a
        frame index), or None: uniform sampling may take it instead of decoding another."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> VideoReader: ...

    def __exit__(self, *exc: object) -> None: ...


# --------------------------------------------------------------------------- readers


class _ReaderBase:
    backend = "base"

    def __init__(self, info: VideoInfo, config: VideoConfig) -> None:
        self.info = info
        self.config = config
        self._lock = threading.Lock()
        #: Frames decoded before, by this or another reader of the same facade; None keeps
        #: nothing (``open_video(..., frame_cache=)``).
        self.frame_cache: FrameCache | None = None
        #: How many frames this reader took from the cache instead of decoding them.
        self.reused_frames = 0

    def frames_at(self, timestamps: Sequence[float]) -> list[Frame]:
        indices = [self._index_for(t) for t in timestamps]
        return self.frames_at_indices(indices)

    def frames_at_indices(self, indices: Sequence[int]) -> list[Frame]:
        wanted = [int(i) for i in indices]
        for index in wanted:
            if not 0 <= index < self.info.frame_count:
                raise VideoWindowError(
                    f"frame {index} is outside {self.info.path} "
                    f"(frames 0..{self.info.frame_count - 1})",
                    path=self.info.path,
                )
        unique = sorted(set(wanted))
        if not unique:
            return []
        if self._closed():
            raise VideoError(f"the reader of {self.info.path} is closed", path=self.info.path)
        cache = self.frame_cache
        by_index: dict[int, Frame] = {}
        if cache is not None:
            for index in unique:
                kept = cache.get(self._cache_key(index))
                if kept is not None:
                    by_index[index] = kept
            self.reused_frames += len(by_index)
        missing = [i for i in unique if i not in by_index]
        if missing:
            with self._lock:
                decoded = self._decode(missing)
            for index, (actual, image) in zip(missing, decoded, strict=True):
                by_index[index] = Frame(actual / self.info.fps, actual, image)
                if cache is not None:
                    cache.put(self._cache_key(index), by_index[index])
        return [by_index[index] for index in wanted]

    def _cache_key(self, index: int) -> FrameKey:
        return (self.info.fingerprint, self.config.decoded_max_side, index)

    def kept_near(self, low: int, high: int, center: float) -> int | None:
        if self.frame_cache is None:
            return None
        video = (self.info.fingerprint, self.config.decoded_max_side)
        return self.frame_cache.nearest(video, low, high, center)

    def keyframe_before(self, index: int) -> int | None:
        return None

    def _index_for(self, t: float) -> int:
        duration = self.info.duration_s
        if not math.isfinite(t) or t < -TIME_EPSILON or t > duration + TIME_EPSILON:
            raise VideoWindowError(
                f"timestamp {t:g} s is outside {self.info.path} (0 to {duration:.3f} s)",
                path=self.info.path,
            )
        return index_at(t, self.info.fps, self.info.frame_count)

    def _decode(self, indices: list[int]) -> list[tuple[int, np.ndarray]]:
        """(index of the frame on screen at each wanted index, its RGB image), sorted input."""
        raise NotImplementedError

    def _closed(self) -> bool:
        raise NotImplementedError

    def _decode_failed(
        self, indices: int | Sequence[int], exc: BaseException | str
    ) -> NoDecodableFramesError:
        wanted = [indices] if isinstance(indices, int) else list(indices)
        what = f"frame {wanted[0]}" if len(wanted) == 1 else f"frames {wanted[0]}..{wanted[-1]}"
        return NoDecodableFramesError(
            f"{self.info.path}: {what} (from {wanted[0] / self.info.fps:.3f} s) cannot be "
            f"decoded with {self.backend} (file truncated or corrupt?): {error_reason(exc)}",
            path=self.info.path,
        )

    def close(self) -> None:  # pragma: no cover - overridden
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.info.path!r})"


class PyAVReader(_ReaderBase):
    """FFmpeg through PyAV: seeks to the keyframe before a wanted frame and decodes forward.

    Only wanted frames are converted to RGB, and a keyframe (what uniform sampling prefers)
    is one seek and one decode. A frame's index is its presentation time times the frame
    rate, so in a variable-frame-rate file it is the time slot the frame is shown in; where
    a slot has no frame of its own, the frame still on screen is returned, with its own index.
    """

    backend = "pyav"
    #: When keyframes are unknown: up to this many frames ahead, decode forward, not seek.
    forward_limit = 48
    #: Decoding toward a frame further ahead than this skips the frames no other frame
    #: refers to (most B-frames), then decodes everything from this far before it: twice
    #: H.264's largest reordering delay (16 frames), so neither the wanted frame nor one
    #: after it (a later target decoded on from here) is skipped.
    skip_margin: int | None = 32

    def __init__(
        self, path: str | Path, config: VideoConfig | None = None, *, info: VideoInfo | None = None
    ) -> None:
        config = config or VideoConfig()
        info = info or probe(path)
        self._container, self._stream = open_stream(info)
        # Slice threads (or one thread): frame threading would make every seek decode
        # several frames before the first one comes out.
        self._stream.thread_type = "SLICE"
        if config.decode_threads:
            self._stream.thread_count = config.decode_threads
        if not config.skip_unreferenced:
            self.skip_margin = None
        super().__init__(info, config)
        self._clock = StreamClock(self._stream, info)
        self._size = decode_size(info.width, info.height, config.decoded_max_side)
        self._frames: Iterator[Any] | None = None  # the decoding generator, after ``_last``
        self._last: tuple[int, Any] | None = None  # (index, av frame) last decoded
        self._keyframes: dict[int, int | None] = {}
        self._index_container: Any = None  # opened on the first keyframe question
        self._index_lock = threading.Lock()
        #: Frames the decoder returned (skipped ones are not), for benches and tests.
        self.frames_decoded = 0
        try:
            self._decode([0])  # fail at open, not at first use, when nothing decodes
        except NoDecodableFramesError:
            self.close()
            raise

    def keyframe_before(self, index: int) -> int | None:
        with self._index_lock:
            if index not in self._keyframes:
                self._keyframes[index] = self._find_keyframe(index)
            return self._keyframes[index]

    def _find_keyframe(self, index: int) -> int | None:
        """Seek a second, demux-only handle of the file and read one packet: no decoding,
        and the decoding position of the main handle is left alone."""
        import av

        try:
            if self._index_container is None:
                self._index_container = av.open(self.info.path)
            container = self._index_container
            stream = container.streams.video[0]
            container.seek(self._clock.pts_of(index), stream=stream, backward=True)
            for packet in container.demux(stream):
                if packet.pts is not None:
                    return self._clock.index_of(packet.pts) if packet.is_keyframe else None
        except av.error.FFmpegError:
            return None
        return None

    def _decode(self, indices: list[int]) -> list[tuple[int, np.ndarray]]:
        import av

        results = []
        for target in indices:
            if self._last is not None and self._last[0] == target:  # decoded already
                results.append((target, self._to_rgb(self._last[1])))
                continue
            if not self._continue_to(target):
                self._restart_at(target)
            try:
                found = self._advance_to(target)
            except av.error.FFmpegError as exc:
                self._frames = None
                raise self._decode_failed(target, exc) from None
            results.append((found[0], self._to_rgb(found[1])))
        return results

    def _continue_to(self, target: int) -> bool:
        """Whether decoding on from the current position beats seeking to ``target``."""
        last = self._last
        if last is None or self._frames is None or last[0] >= target:
            return False
        keyframe = self.keyframe_before(target)
        if keyframe is None:
            return target - last[0] <= self.forward_limit
        return keyframe <= last[0]  # no keyframe in between: a seek would decode more

    def _advance_to(self, target: int) -> tuple[int, Any]:
        """Decode forward to the frame on screen at ``target``'s time.

        Far from the target, frames no other frame refers to are not decoded at all
        (FFmpeg's ``skip_frame``: the frames that are decoded come out pixel for pixel the
        same, a third less work on x264's B-frames). Unless the target itself then comes
        out, it is decoded again from its keyframe without skipping (the frame on screen
        at its time may be one that was skipped), so skipping never changes a frame returned.
        """
        # Decoding starts after the last frame decoded, or (after a seek) at the keyframe
        # before the target; unknown keyframes are never skipped from.
        start = self._last[0] if self._last is not None else self.keyframe_before(target)
        margin = self.skip_margin
        skip_until = (
            target - margin
            if margin is not None and start is not None and target - start > margin
            else None
        )
        exact, on_screen = self._decode_forward(target, skip_until)
        if exact is None and skip_until is not None:
            self._restart_at(target)
            exact, on_screen = self._decode_forward(target, skip_until=None)
        if exact is not None:
            return exact
        # No frame of its own at ``target``: the one still on screen, if it is recent.
        if on_screen is not None and target - on_screen[0] <= max(1.0, self.info.fps):
            return on_screen
        shown = "none" if on_screen is None else f"frame {on_screen[0]}"
        raise self._decode_failed(target, f"the decoder returned {shown} before it")

    def _decode_forward(
        self, target: int, skip_until: int | None
    ) -> tuple[tuple[int, Any] | None, tuple[int, Any] | None]:
        """Decode until ``target`` or past it, skipping unreferenced frames until one at
        ``skip_until`` or later comes out: the target's frame if it came out, else the last
        frame before it."""
        codec = self._stream.codec_context
        on_screen = self._last if self._last is not None and self._last[0] <= target else None
        assert self._frames is not None  # set by _decode before it advances
        try:
            if skip_until is not None:
                codec.skip_frame = "NONREF"
            for frame in self._frames:
                self.frames_decoded += 1
                index = self._clock.index_of(frame.pts) if frame.pts is not None else None
                if index is None:
                    index = self._last[0] + 1 if self._last is not None else 0
                if skip_until is not None and index >= skip_until:
                    codec.skip_frame = "DEFAULT"
                    skip_until = None
                self._last = (index, frame)
                if index == target:
                    return self._last, on_screen
                if index > target:
                    return None, on_screen
                on_screen = self._last
            self._frames = None  # end of stream
            return None, on_screen
        finally:
            codec.skip_frame = "DEFAULT"

    def _seek(self, index: int) -> None:
        self._container.seek(self._clock.pts_of(index), stream=self._stream, backward=True)

    def _restart_at(self, index: int) -> None:
        """Decode afresh from the keyframe before ``index``."""
        self._seek(index)
        self._last = None
        self._frames = self._container.decode(self._stream)

    def _to_rgb(self, frame: Any) -> np.ndarray:
        width, height = self._size
        image = frame.to_ndarray(format="rgb24", width=width, height=height)
        return upright(image, self.info.rotation_deg)

    def close(self) -> None:
        if self._container is not None:
            self._frames = None
            self._last = None
            self._container.close()
            self._container = None
        if self._index_container is not None:
            self._index_container.close()
            self._index_container = None

    def _closed(self) -> bool:
        return self._container is None


class DecordReader(_ReaderBase):
    """decord's batch decoder; seeks to the keyframe before each wanted frame only when needed."""

    backend = "decord"

    def __init__(
        self, path: str | Path, config: VideoConfig | None = None, *, info: VideoInfo | None = None
    ) -> None:
        config = config or VideoConfig()
        info = info or probe(path)
        try:
            import decord
        except ImportError as exc:
            raise VideoUnreadableError(
                f"decord is not installed, cannot open {info.path} with it", path=info.path
            ) from exc
        width, height = decode_size(info.width, info.height, config.decoded_max_side)
        sized = (width, height) != (info.width, info.height)
        # decord turns quarter-turned frames itself (before scaling them to the size asked,
        # which is then the upright one); an older one leaves them to ``upright``.
        turned = info.rotation_deg if decord_turns_frames(decord.__version__) else 0
        width, height = turned_size((width, height), turned)
        try:
            self._reader = decord.VideoReader(
                info.path,
                ctx=decord.cpu(0),
                num_threads=config.decode_threads,
                width=width if sized else -1,
                height=height if sized else -1,
            )
            count = len(self._reader)
            fps = float(self._reader.get_avg_fps())
        except Exception as exc:  # decord raises DECORDError and RuntimeError alike
            raise VideoUnreadableError(
                f"decord cannot open {info.path}: {error_reason(exc)}", path=info.path
            ) from None
        if count <= 0 or not fps > 0:
            raise NoDecodableFramesError(
                f"{info.path} has no decodable frames (decord counts {count} at {fps:g} fps)",
                path=info.path,
            )
        super().__init__(replace(info, frame_count=count, fps=fps, duration_s=count / fps), config)
        self._keyframes: np.ndarray | None = None
        self._turn = (info.rotation_deg - turned) % 360  # what is left for ``upright``
        self._decode([0])  # fail at open, not at first use, when nothing decodes

    def _decode(self, indices: list[int]) -> list[tuple[int, np.ndarray]]:
        try:
            batch = self._reader.get_batch(indices).asnumpy()
        except Exception as exc:
            raise self._decode_failed(indices, exc) from None
        return [(i, upright(image, self._turn)) for i, image in zip(indices, batch, strict=True)]

    def keyframe_before(self, index: int) -> int | None:
        if self._keyframes is None:
            try:
                self._keyframes = np.asarray(self._reader.get_key_indices(), dtype=np.int64)
            except Exception:
                return None
        position = int(np.searchsorted(self._keyframes, index, side="right")) - 1
        return int(self._keyframes[position]) if position >= 0 else None

    def close(self) -> None:
        self._reader = None  # decord frees its decoder when the object goes

    def _closed(self) -> bool:
        return self._reader is None


class OpenCVReader(_ReaderBase):
    """OpenCV's FFmpeg backend, frame-accurate: short hops decode forward, long ones seek."""

    backend = "opencv"
    #: Up to this many frames ahead, decoding forward is cheaper than a seek (which decodes from
    #: the previous keyframe anyway, and OpenCV cannot say where that is).
    forward_limit = 48

    def __init__(
        self, path: str | Path, config: VideoConfig | None = None, *, info: VideoInfo | None = None
    ) -> None:
        import cv2

        config = config or VideoConfig()
        info = info or probe(path)
        params = [cv2.CAP_PROP_N_THREADS, config.decode_threads] if config.decode_threads else []
        capture = cv2.VideoCapture(info.path, cv2.CAP_FFMPEG, params)
        if not capture.isOpened():
            raise VideoUnreadableError(f"OpenCV cannot open {info.path}", path=info.path)
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0) or info.frame_count
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0) or info.fps
        auto, meta = self._orientation_handling(capture)
        #: (degrees OpenCV turns frames itself, degrees left for ``upright``)
        self._turned, self._turn, unknown = opencv_turn(info.rotation_deg, auto=auto, meta=meta)
        not_upright = "; ".join(why for why in (info.not_upright, unknown) if why) or None
        counted = replace(info, frame_count=count, fps=fps, duration_s=count / fps)
        super().__init__(replace(counted, not_upright=not_upright), config)
        self._capture: cv2.VideoCapture | None = capture
        self._next = 0  # index the next read() returns
        self._size = decode_size(info.width, info.height, config.decoded_max_side)
        try:
            self._decode([0])  # fail at open, not at first use, when nothing decodes
        except NoDecodableFramesError:
            self.close()
            raise

    def _decode(self, indices: list[int]) -> list[tuple[int, np.ndarray]]:
        import cv2

        capture = self._capture
        assert capture is not None  # frames_at_indices checks _closed() first
        images = []
        for index in indices:
            if not self._next <= index <= self._next + self.forward_limit:
                capture.set(cv2.CAP_PROP_POS_FRAMES, index)
                self._next = index
            while self._next < index:
                if not capture.grab():
                    raise self._decode_failed(self._next, "the decoder returned no frame")
                self._next += 1
            ok, bgr = capture.read()
            landed = int(capture.get(cv2.CAP_PROP_POS_FRAMES)) - 1
            if not ok or bgr is None or landed != index:
                self._next = -(self.forward_limit + 2)  # position unknown: seek next time
                # A seek past the end of a truncated file lands on the last frame it has; a
                # wrong frame with a right timestamp is worse than an error.
                why = "no frame" if not ok or bgr is None else f"frame {landed} instead"
                raise self._decode_failed(index, f"the decoder returned {why}")
            self._next = index + 1
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            size = turned_size(self._size, self._turned)
            if rgb.shape[1::-1] != size:
                rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
            images.append((index, upright(rgb, self._turn)))
        return images

    @staticmethod
    def _orientation_handling(capture: Any) -> tuple[float, float]:
        """OpenCV's (``CAP_PROP_ORIENTATION_AUTO``, ``CAP_PROP_ORIENTATION_META``) after
        asking it to leave frames as stored, so that ``upright`` turns them as it turns the
        other backends' frames (OpenCV turns them itself by default, decord never does)."""
        import cv2

        capture.set(cv2.CAP_PROP_ORIENTATION_AUTO, 0)
        auto = float(capture.get(cv2.CAP_PROP_ORIENTATION_AUTO))
        return auto, float(capture.get(cv2.CAP_PROP_ORIENTATION_META))

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()
            self._capture = None

    def _closed(self) -> bool:
        return self._capture is None


def decord_turns_frames(version: str) -> bool:
    """Whether this decord turns frames by the display matrix itself (from 0.6 it does, by
    the same quarter turn FFmpeg reports; the backend tests compare its pixels with PyAV's)."""
    parts = [int(p) for p in version.split(".")[:2] if p.isdigit()]
    return tuple(parts) >= (0, 6)


def opencv_turn(rotation_deg: int, *, auto: float, meta: float) -> tuple[int, int, str | None]:
    """(degrees OpenCV turns its frames itself, degrees still to turn them upright, why
    they may not be upright) for a video to be turned ``rotation_deg`` clockwise.

    ``auto`` is OpenCV's auto-orientation once asked to switch it off: 0, frames come as
    stored; 1, OpenCV turns them by ``meta`` degrees clockwise (when it cannot be switched
    off), and only the rest of the turn is ours. Any other value (a build that reports
    neither) leaves what OpenCV did unknown, which is said rather than guessed at.
    """
    if auto == 0 or not rotation_deg:
        return 0, rotation_deg, None
    if auto == 1 and meta >= 0 and meta % 90 == 0:
        turned = int(meta) % 360
        return turned, (rotation_deg - turned) % 360, None
    unknown = (
        f"OpenCV reports no orientation handling (auto-orientation {auto:g}, angle {meta:g}); "
        f"its frames are turned {rotation_deg}° clockwise as if it left them as stored"
    )
    return 0, rotation_deg, unknown


#: The backends ``auto`` tries, in order.
AUTO_BACKENDS = ("pyav", "decord", "opencv")


def open_video(
    path: str | Path, config: VideoConfig | None = None, *, frame_cache: FrameCache | None = None
) -> VideoReader:
    """Open ``path`` with the configured backend; ``auto`` tries PyAV, decord, then OpenCV.
    With ``frame_cache`` the reader takes frames decoded before from it and adds its own.

    The file is probed first, so missing, empty, truncated and non-video files fail with a
    typed error before any decoder is tried. In ``auto`` mode a file one backend cannot open
    (or decode the first frame of) goes to the next; if all fail, the error carries every
    reason.
    """
    config = config or VideoConfig()
    info = probe(path)
    readers = {"pyav": PyAVReader, "decord": DecordReader, "opencv": OpenCVReader}
    if config.backend != "auto":
        return with_cache(readers[config.backend](path, config, info=info), frame_cache)
    failures: list[VideoError] = []
    for name in AUTO_BACKENDS:
        try:
            reader = readers[name](path, config, info=info)
        except VideoError as exc:
            failures.append(exc)
            continue
        if failures:
            _log.info("%s: using %s (%s)", info.path, name, "; ".join(map(str, failures)))
        return with_cache(reader, frame_cache)
    raise type(failures[-1])(
        f"{info.path} cannot be read: " + "; and ".join(str(e) for e in failures),
        path=info.path,
    )


def with_cache(reader: VideoReader, frame_cache: FrameCache | None) -> VideoReader:
    """``reader``, sharing ``frame_cache`` (a reader of our backends has the attribute)."""
    if frame_cache is not None and isinstance(reader, _ReaderBase):
        reader.frame_cache = frame_cache
    return reader


def read_frames(path: str | Path, timestamps: Iterable[float], config: VideoConfig | None = None):
    """Open, read the frames at ``timestamps`` and close: for one-off use."""
    with open_video(path, config) as reader:
        return reader.frames_at(list(timestamps))
