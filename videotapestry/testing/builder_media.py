"""Generated videos for memory-builder tests: scene text on a known schedule, faults.

``make_text_schedule_video`` writes a video whose only large text is one line that changes on
a given schedule, independently of the background colour (which changes on its own, slower
schedule), with the frame-index code of ``videotapestry.testing.media`` along the bottom so
the scripted model can tell which frames it was sent. ``faststart_copy`` and
``truncate_video`` make a file whose header promises the full duration while its tail is
gone, the honest way to get frames that cannot be decoded (``remux_copy`` the same in
another container).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from videotapestry.testing.media import SCENE_COLORS, Scene, draw_frame_code

WORDS = (
    "GATE", "EXIT", "DOCK", "ROOM", "BAY", "HALL", "LANE", "PIER", "ZONE", "YARD", "DECK",
    "WING", "PATH", "ROAD", "PARK", "BANK",
)  # fmt: skip


@dataclass(frozen=True)
class ScheduledText:
    text: str
    start_s: float
    end_s: float


def text_schedule(
    duration_s: float, *, seed: int = 7, min_s: float = 8.0, max_s: float = 25.0
) -> list[ScheduledText]:
    """Texts of random length back to back, with a few text-free gaps, all distinct."""
    rng = random.Random(seed)
    items: list[ScheduledText] = []
    t = 0.0
    number = 10
    while t < duration_s - min_s:
        length = rng.uniform(min_s, max_s)
        if rng.random() < 0.15:  # a stretch with no text at all
            t += round(length / 2)
            continue
        end = min(duration_s, round(t + length))
        text = f"{WORDS[number % len(WORDS)]} {number}"
        items.append(ScheduledText(text, float(round(t)), float(end)))
        number += 1
        t = end
    return items


def make_text_schedule_video(
    path: str | Path,
    schedule: list[ScheduledText],
    duration_s: float,
    *,
    fps: float = 1.0,
    size: tuple[int, int] = (160, 90),
    colour_s: float = 60.0,
    frame_code: bool = True,
) -> tuple[Path, list[Scene]]:
    """Write an mp4v video showing ``schedule``; returns its path and its colour scenes.

    Without ``frame_code`` nothing but the text and the colour changes (the code strip
    changes every frame, which a change-gated OCR would have to read every time)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    width, height = size
    count = round(duration_s * fps)
    scenes = [
        Scene(k * colour_s, min(duration_s, (k + 1) * colour_s), f"COLOUR {k}", SCENE_COLORS[k % 8])
        for k in range(int(np.ceil(duration_s / colour_s)))
    ]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), fps, size)
    if not writer.isOpened():
        raise OSError(f"OpenCV cannot write an mp4v video to {path}")
    font = cv2.FONT_HERSHEY_DUPLEX
    try:
        for index in range(count):
            t = index / fps
            image = np.empty((height, width, 3), dtype=np.uint8)
            image[:] = scenes[min(len(scenes) - 1, int(t // colour_s))].color
            shown = next((s.text for s in schedule if s.start_s <= t < s.end_s), None)
            if shown:
                scale = 1.0
                (w, h), _ = cv2.getTextSize(shown, font, scale, 2)
                scale = min(0.38 * height / h, 0.9 * width / w)
                (w, h), _ = cv2.getTextSize(shown, font, scale, 2)
                origin = ((width - w) // 2, round(height * 0.2) + h)
                cv2.putText(image, shown, origin, font, scale, (255, 255, 255), 2, cv2.LINE_AA)
            if frame_code:
                draw_frame_code(image, index)
            writer.write(cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    return path, scenes


def faststart_copy(source: str | Path, target: str | Path) -> Path:
    """Remux ``source`` with its index (moov) first, so a truncated copy still opens."""
    return remux_copy(source, target, "mp4", {"movflags": "faststart"})


def remux_copy(
    source: str | Path, target: str | Path, container: str, options: dict[str, str] | None = None
) -> Path:
    """``source``'s video stream, unchanged, in another container (``matroska``: one whose
    header, unlike an MP4's, is not an index of every frame)."""
    import av

    target = Path(target)
    with (
        av.open(str(source)) as src,
        av.open(str(target), "w", format=container, options=options or {}) as out,
    ):
        stream_in = src.streams.video[0]
        stream_out = out.add_stream_from_template(stream_in)
        for packet in src.demux(stream_in):
            if packet.dts is None:
                continue
            packet.stream = stream_out
            out.mux(packet)
    return target


def truncate_video(path: str | Path, at_s: float) -> int:
    """Cut a faststart file where the data of the first frame at or after ``at_s`` begins:
    the header still promises the whole duration, the frames from ``at_s`` on are gone.
    Returns the new size in bytes."""
    import av

    path = Path(path)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        time_base = stream.time_base
        if time_base is None:
            raise ValueError(f"{path} has a video stream without a time base")
        cut = None
        for packet in container.demux(stream):
            if packet.pts is None or packet.pos is None or packet.pos <= 0:
                continue
            if float(packet.pts * time_base) >= at_s:
                cut = packet.pos
                break
    if cut is None:
        raise ValueError(f"{path} has no frame at or after {at_s} s")
    with path.open("r+b") as handle:
        handle.truncate(cut)
        handle.flush()
        os.fsync(handle.fileno())
    return cut
