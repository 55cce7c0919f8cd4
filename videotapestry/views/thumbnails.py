"""Small pictures of what each level saw, for the run's HTML page.

A trace stores image references (label, timestamps, hash), never the bytes. The pictures
come from the images a live ``Result`` kept (the very JPEGs the model was sent, shrunk), or
are decoded again from the video at the recorded timestamps with the project's reader and
packed the way the agents saw them (a timestamp-labelled 3-column grid for an Overview grid,
one labelled frame otherwise). When neither is possible the page says why instead.

A cited frame that no level's thumbnail shows (the Direct baseline's frames, or a level's
images not kept) gets a picture of its own, by its time, from the same two sources.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from videotapestry.agents.state import ImageRef, LevelOutcome
from videotapestry.config import VideoConfig
from videotapestry.errors import VideoError
from videotapestry.images import ImagePart
from videotapestry.video.encoding import encode_jpeg
from videotapestry.video.grids import pack_grids
from videotapestry.video.reader import Frame, open_video

FRAME_SIDE = 200
GRID_WIDTH = 390
QUALITY = 70
#: Frames are decoded at this size at most: thumbnails need no more, and it is faster.
DECODE_MAX_SIDE = 480
GRID_COLUMNS = 3


@dataclass(frozen=True)
class Thumbnails:
    """JPEG data URLs keyed by ``ImageRef.sha256``; ``missing`` says why some are absent.

    ``frames`` holds single frames by time (``frame_key``): the cited frames the page
    pictures apart from the levels' thumbnails.
    """

    urls: dict[str, str] = field(default_factory=dict)
    source: str = ""
    missing: str | None = None
    frames: dict[float, str] = field(default_factory=dict)

    def frame(self, t: float) -> str | None:
        return self.frames.get(frame_key(t))


def frame_key(t: float) -> float:
    """Times recorded by different tools for one frame agree to the millisecond."""
    return round(t, 3)


def image_refs(levels: Sequence[LevelOutcome]) -> list[ImageRef]:
    return [ref for outcome in levels for obs in outcome.observations for ref in obs.images]


def data_url(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _side(ref: ImageRef) -> int:
    return GRID_WIDTH if len(ref.timestamps) > 1 else FRAME_SIDE


def from_images(parts: Sequence[ImagePart], refs: Sequence[ImageRef]) -> Thumbnails:
    """The kept JPEGs of a live result, shrunk, matched to the references by hash."""
    by_hash = {part.sha256[:16]: part for part in parts}
    urls: dict[str, str] = {}
    for ref in refs:
        part = by_hash.get(ref.sha256)
        if part is None or ref.sha256 in urls:
            continue
        try:
            image = Image.open(io.BytesIO(part.jpeg))
            urls[ref.sha256] = data_url(encode_jpeg(image, max_side=_side(ref), quality=QUALITY))
        except (UnidentifiedImageError, OSError):
            continue
    missing = None
    if len({ref.sha256 for ref in refs}) > len(urls):
        missing = "the result keeps no image for some references (answered with keep_images=False?)"
    return Thumbnails(urls, "the images the agents were sent", missing)


def frames_from_images(parts: Sequence[ImagePart], times: Sequence[float]) -> dict[float, str]:
    """The kept single-frame images (the Direct baseline's) at ``times``, shrunk."""
    wanted = {frame_key(t) for t in times}
    frames: dict[float, str] = {}
    for part in parts:
        if len(part.timestamps) != 1 or frame_key(part.timestamps[0]) not in wanted:
            continue
        key = frame_key(part.timestamps[0])
        try:
            image = Image.open(io.BytesIO(part.jpeg))
            jpeg = encode_jpeg(image, max_side=FRAME_SIDE, quality=QUALITY)
            frames.setdefault(key, data_url(jpeg))
        except (UnidentifiedImageError, OSError):
            continue
    return frames


def _picture(frames: Sequence[Frame]) -> bytes:
    columns = min(GRID_COLUMNS, len(frames))
    width = GRID_WIDTH if len(frames) > 1 else FRAME_SIDE
    grid = pack_grids(
        frames, columns=columns, rows=math.ceil(len(frames) / columns), grid_width=width
    )[0]
    return encode_jpeg(grid.image, max_side=width, quality=QUALITY)


def from_video(
    path: str | Path,
    refs: Sequence[ImageRef],
    *,
    fingerprint: str | None = None,
    frames: Sequence[float] = (),
) -> Thumbnails:
    """Frames decoded again at the references' timestamps (and single ``frames`` by time); a
    video whose fingerprint is not the run's gives no pictures (they would show another
    video), only the reason."""
    try:
        reader = open_video(path, VideoConfig(decoded_max_side=DECODE_MAX_SIDE))
    except VideoError as exc:
        return Thumbnails(missing=f"the video could not be read: {exc}")
    with reader:
        if fingerprint and reader.info.fingerprint != fingerprint:
            return Thumbnails(
                missing=f"{path} is not the video this run saw (its fingerprint differs from "
                "the one the trace recorded); pass the right one with --video"
            )
        times = sorted({t for ref in refs for t in ref.timestamps} | set(frames))
        try:
            decoded = dict(zip(times, reader.frames_at(times), strict=True))
        except VideoError as exc:
            return Thumbnails(missing=f"frames of {path} could not be decoded: {exc}")
    urls = {}
    for ref in refs:
        if ref.timestamps and ref.sha256 not in urls:
            urls[ref.sha256] = data_url(_picture([decoded[t] for t in ref.timestamps]))
    singles = {frame_key(t): data_url(_picture([decoded[t]])) for t in frames}
    return Thumbnails(urls, f"frames decoded again from {path}", frames=singles)
