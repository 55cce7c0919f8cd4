"""The images of a clip's perception call: which kept frames, and how they are laid out.

A clip is shown to the model as ``perception.frames`` of its kept frames, spread evenly over
it, either packed into timestamp-labelled grids (one image, the default: cheaper in image
tokens and the model sees the order at a glance) or one image per frame. Each image comes
with a note for the prompt saying what it shows, since a chat message carries its images
after its text.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_builders.scan import KeptFrame
from memory_builders.segmentation import ClipSpan
from videotapestry.config import BuilderPerceptionSettings, ImagesConfig
from videotapestry.images import ImagePart
from videotapestry.video import Frame, encode_jpeg, frame_images, pack_grids


def select_frames(frames: Sequence[KeptFrame], clip: ClipSpan, count: int) -> list[KeptFrame]:
    """``count`` kept frames spread over the clip: the nearest to each of ``count`` equal
    slots' centres, without repeats (all of them when the clip has fewer)."""
    if len(frames) <= count:
        return list(frames)
    width = (clip.end_s - clip.start_s) / count
    chosen: list[KeptFrame] = []
    for k in range(count):
        centre = clip.start_s + (k + 0.5) * width
        free = [f for f in frames if f not in chosen]
        chosen.append(min(free, key=lambda f: (abs(f.timestamp_s - centre), f.index)))
    return sorted(chosen, key=lambda f: f.index)


def clip_images(
    frames: list[Frame], perception: BuilderPerceptionSettings, images: ImagesConfig
) -> tuple[list[ImagePart], list[str]]:
    """The call's images and, per image, the note that tells the model what it shows."""
    if perception.layout == "frames":
        parts = frame_images(frames, images, max_frames=len(frames))
        notes = [
            f"Image {k}: the frame at {p.label.removeprefix('frame ')}"
            for k, p in enumerate(parts, 1)
        ]
        return parts, notes
    grids = pack_grids(
        frames,
        columns=perception.grid_columns,
        rows=perception.grid_rows,
        grid_width=images.grid_max_side,
    )
    parts, notes = [], []
    for k, grid in enumerate(grids, start=1):
        jpeg = encode_jpeg(grid.image, max_side=images.grid_max_side, quality=images.jpeg_quality)
        parts.append(ImagePart(jpeg, f"grid {k}/{len(grids)}", grid.timestamps))
        notes.append(
            f"Image {k}: a grid of {len(grid.labels)} frames in {grid.columns} columns and "
            f"{grid.rows} rows, read left to right then top to bottom, at " + ", ".join(grid.labels)
        )
    return parts, notes
