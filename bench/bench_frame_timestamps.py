"""What the timestamp tab of a Skim/Focus frame hides, and what moving it off the picture costs.

A single frame sent by the Skim or Focus agent carries its time in a black tab over its
top-left corner (``agents.frame_timestamps: tab``). On-screen text often sits exactly there
(a dashcam's clock, a channel name, a slide's heading). This bench measures, through the real
pipeline, how much of such text can still be read for each setting:

- ``tab``: the tab over the corner;
- ``strip``: the same tab on a black strip added above the frame (no pixel covered);
- ``untouched``: the frame as decoded, only scaled (the paper's frames).

1. a generated H.264 video per source size (cached in bench/.cache/) shows one scene per
   sampled frame, each with two strings of known text and box starting at the left edge in
   the top 26 % of the frame, at 3.5 % and 5 % of the frame height
   (``videotapestry.testing.media.SceneTextRenderer`` with ``area="top_left"``);
2. ``uniform_indices`` -> ``decode_indices`` sample one frame per scene and ``frame_images``
   encodes them as a Skim/Focus call sends them, once per setting;
3. the JPEGs are decoded, each string's box (moved down by the strip, when there is one) is
   cut out and read by rapidocr's recogniser, as in bench_grid_legibility.py, whose reading
   and token rules this bench shares. The native decoded frame is the ceiling row.

``exact`` is the share of strings read exactly (normalized as there), ``char`` the mean
character accuracy, ``covered`` the share of strings whose box the tab overlaps. Tokens and
KiB are per 50-frame call (OpenAI tiles, Qwen2.5-VL and Qwen3-VL patches).

    python bench/bench_frame_timestamps.py [--frames 120] [--smoke]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from bench_grid_legibility import (
    FRAMES_PER_SKIM,
    CallCost,
    Crop,
    Reader,
    Scores,
    crop_item,
    decode_jpeg,
    sample,
)
from benchkit import cache_dir, smoke
from PIL import Image, ImageDraw

from videotapestry.config import load_config
from videotapestry.testing.media import SceneTextVideo, make_scene_text_video
from videotapestry.video import Frame, FrameTimestamps, frame_images
from videotapestry.video.grids import label_font, label_pad

SMOKE_ARGS = ("--frames", "6")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^Top-left text under the frame timestamp: \d+ frames per source",
    r"^640x360 +native frame ",
    r"^640x360 +tab ",
    r"^640x360 +strip ",
    r"^640x360 +untouched ",
    r"^1280x720 +tab ",
    r"^1280x720 +untouched ",
)
SOURCES = ((640, 360), (1280, 720))
#: Heights of the corner strings (font em as a share of the frame height): a clock or a
#: channel name, and a slide heading.
CORNER_HEIGHTS = (0.035, 0.05)
PLACEMENTS: tuple[FrameTimestamps, ...] = ("tab", "strip", "untouched")
VIDEO_VERSION = 1  # bump when the generator's corner layout changes


def corner_video(size: tuple[int, int], scenes: int) -> SceneTextVideo:
    path = cache_dir(f"scene_text_corner_v{VIDEO_VERSION}_{size[0]}x{size[1]}_{scenes}.mp4")
    return make_scene_text_video(
        path, size, scenes=scenes, heights=CORNER_HEIGHTS, area="top_left", reuse=True
    )


def tab_size(text: str, picture_height: int) -> tuple[int, int]:
    """(width, height) of the tab ``draw_label`` draws for ``text`` over a picture this tall."""
    font = label_font(picture_height)
    box = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=font)
    pad = label_pad(box)
    return int(box[2] - box[0]) + 2 * pad + 1, int(box[3] - box[1]) + 2 * pad + 1


def placement_crops(
    video: SceneTextVideo, frames: Sequence[Frame], placement: FrameTimestamps, config
) -> tuple[list[Crop], float, CallCost]:
    """Crops of every corner string as ``placement`` sends the frames, the share of strings
    the tab overlaps, and the cost of a 50-frame call."""
    images = config.images.model_copy(update={"max_per_call": len(frames)})
    parts = frame_images(frames, images, max_frames=len(frames), label=placement)
    crops: list[Crop] = []
    covered: list[bool] = []
    sizes = []
    total = 0
    for part, frame in zip(parts, frames, strict=True):
        sent = decode_jpeg(part.jpeg)
        sizes.append((sent.shape[1], sent.shape[0]))
        total += len(part.jpeg)
        scale = sent.shape[1] / frame.image.shape[1]
        shown_h = round(frame.image.shape[0] * scale)
        strip = sent.shape[0] - shown_h  # rows added above the picture (0 unless a strip)
        text = part.label.removeprefix("frame ")
        tab_w, tab_h = tab_size(text, shown_h) if placement == "tab" else (0, 0)
        bounds = (0, strip, sent.shape[1], sent.shape[0])
        for item in video.items_at(frame.index):
            crops.append(crop_item(sent, item, (0.0, float(strip)), scale, bounds))
            left, top, _right, _bottom = item.box
            covered.append(left * scale < tab_w and top * scale < tab_h)
    per_call_bytes = round(total / len(parts) * FRAMES_PER_SKIM)
    share = sum(covered) / len(covered) if covered else 0.0
    return crops, share, CallCost.of(sizes[:FRAMES_PER_SKIM], per_call_bytes)


def native_crops(video: SceneTextVideo, frames: Sequence[Frame]) -> list[Crop]:
    crops = []
    for frame in frames:
        h, w = frame.image.shape[:2]
        crops += [crop_item(frame.image, i, (0.0, 0.0), 1.0, (0, 0, w, h)) for i in
                  video.items_at(frame.index)]  # fmt: skip
    return crops


def row(source: str, what: str, px: str, scores: Scores, covered: str, cost: CallCost | None):
    tokens = (
        f"{cost.tiles:>7,} {cost.qwen25:>7,} {cost.qwen3:>7,} {cost.jpeg_bytes / 1024:>6,.0f}"
        if cost
        else f"{'-':>7} {'-':>7} {'-':>7} {'-':>6}"
    )
    by_height = " ".join(f"{scores.exact_by_height.get(h, float('nan')):>5.0%}" for h in
                         CORNER_HEIGHTS)  # fmt: skip
    return (
        f"{source:<9} {what:<12} {px:<9} {by_height} {scores.exact:>6.0%} {scores.char:>5.0%} "
        f"{covered:>7} {tokens}"
    )


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120, help="scenes = frames per source")
    args = parser.parse_args()
    config = load_config()
    reader = Reader()
    started = time.perf_counter()
    heads = " ".join(f"{h * 100:>4g}%" for h in CORNER_HEIGHTS)
    lines = [
        f"{'source':<9} {'images':<12} {'sent px':<9} {heads} {'exact':>6} {'char':>5} "
        f"{'covered':>7} {'tiles':>7} {'Qwen2.5':>7} {'Qwen3':>7} {'KiB':>6}"
    ]
    for size in SOURCES:
        video = corner_video(size, args.frames)
        frames = sample(video, config)
        source = f"{size[0]}x{size[1]}"
        crops = native_crops(video, frames)
        ceiling = Scores.of(crops, reader.read(crops))
        lines.append(row(source, "native frame", source, ceiling, "-", None))
        for placement in PLACEMENTS:
            crops, covered, cost = placement_crops(video, frames, placement, config)
            sent = decode_jpeg(
                frame_images(frames[:1], config.images, max_frames=1, label=placement)[0].jpeg
            )
            px = f"{sent.shape[1]}x{sent.shape[0]}"
            scores = Scores.of(crops, reader.read(crops))
            lines.append(row(source, placement, px, scores, f"{covered:.0%}", cost))
    elapsed = time.perf_counter() - started
    print(
        f"Top-left text under the frame timestamp: {args.frames} frames per source, "
        f"{len(CORNER_HEIGHTS)} strings each at the left edge of the top 26 %; "
        f"frame_max_side {config.images.frame_max_side}, jpeg_quality "
        f"{config.images.jpeg_quality}; {elapsed:.0f} s ({reader.seconds:.0f} s OCR)\n"
    )
    print("\n".join(lines))
    print(
        "\nexact: share of strings read exactly (normalized), by text height and overall; "
        "char: mean character accuracy; covered: strings whose box the tab overlaps.\n"
        "Tokens and KiB per 50-frame Skim/Focus call: OpenAI tiles (detail=high), Qwen2.5-VL "
        "28-px and Qwen3-VL 32-px patches."
    )


if __name__ == "__main__":
    main()
