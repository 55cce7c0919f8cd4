"""Can scene text still be read inside an Overview grid cell? OCR recall against image tokens.

A 3x2 grid as wide as ``images.grid_max_side`` gives each cell a third of that width, so a frame
is shrunk far more in a grid than as a single Skim/Focus frame. This bench measures what
that costs, through the real pipeline, for 640x360 and 1280x720 sources:

1. a generated H.264 video per size (cached in bench/.cache/) shows 120 scenes, each with
   four strings of known text and position at 2.5 / 3.5 / 5 / 7.5 % of the frame height
   (small sign text, slide text, subtitle, title), in four fonts and four styles
   (``videotapestry.testing.media.SceneTextRenderer``);
2. ``open_video`` -> ``uniform_indices`` -> ``decode_indices`` sample 120 frames (one per
   scene), ``overview_images`` packs them into the 20 JPEG grids of one Overview call, and
   ``frame_images`` encodes them as single frames (what Skim/Focus send);
3. the JPEGs are decoded, each string's box is cut from its cell (or frame) and read by
   rapidocr's recogniser. The native decoded frame, read the same way, is the ceiling row.

Recall ``exact`` is the share of strings read exactly (case, spaces and punctuation ignored,
O/0 and I/L/1 folded, as a reader with any language sense would); ``char`` is the mean
character accuracy (1 - edit distance / length). Boxes are given to the recogniser (no
detection): that isolates legibility of the pixels from detector quirks and keeps the run
short; ``--detect N`` adds a full detection + recognition pass over N cells per grid row as
a cross-check (slow: about 1.5 s per cell).

Image tokens per call are estimates from the documented resize rules (see ``tile_tokens``
and ``patch_tokens``); an Overview call carries 20 grids, a Skim/Focus call 50 frames.

    python bench/bench_grid_legibility.py [--cells 40] [--sides 768,1152,1344,1536]
                                          [--detect 12] [--chroma 420] [--frames 120] [--smoke]

``--frames`` (scenes, and frames sampled per row) other than 120 is for a quick run only: the
tokens per call still assume an Overview call of 20 grids.
"""

from __future__ import annotations

import argparse
import io
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from benchkit import cache_dir, smoke
from PIL import Image

from videotapestry.config import ImagesConfig, load_config
from videotapestry.testing.media import (
    SCENE_TEXT_HEIGHTS,
    SceneTextVideo,
    TextItem,
    make_scene_text_video,
)
from videotapestry.video import (
    Frame,
    decode_indices,
    encoding,
    frame_images,
    open_video,
    overview_images,
    uniform_indices,
)
from videotapestry.video.grids import cell_box, cell_size_for

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print
#: (two sides: the frame rows of 640x360 skip the second, those of 1280x720 resize once).
SMOKE_ARGS = ("--frames", "12", "--cells", "2", "--sides", "768,1536", "--detect", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^Scene text legibility: \d+ of \d+ frames per row, 4 strings each",
    r"^source +images +px per frame \(scale\) ",
    r"^640x360 +native frame ",
    r"^640x360 +grid, grid_max_side \d+ ",
    r"^640x360 +frame, max_side >= 640 ",
    r"^1280x720 +grid, grid_max_side \d+ ",
    r"^1280x720 +frame, max_side \d+ ",
    r"^1280x720 +frame, max_side >= 1280 ",
    r"^exact: share of strings read exactly",
    r"^det\+rec: full rapidocr detection \+ recognition",
)
SOURCES = ((640, 360), (1280, 720))
FRAMES_PER_OVERVIEW = 120  # 20 grids of 3x2: one Overview call
FRAMES_PER_SKIM = 50  # one Skim/Focus call
VIDEO_VERSION = 1  # bump when the scene-text generator changes, so the cache is rebuilt


# --------------------------------------------------------------------------- token rules


def tile_tokens(width: int, height: int) -> int:
    """OpenAI-style ``detail: high`` tile count (GPT-4o, GPT-4.1, GPT-5 family, o-series).

    Documented rule: fit within 2048x2048, then scale so the shortest side is 768 px, count
    512-px tiles, 170 tokens per tile plus 85. The 768 step only shrinks: billed usage of
    small images (a 128x64 image is one tile, 512x513 two) shows they are not enlarged.
    """
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(round(w) / 512) * math.ceil(round(h) / 512)
    return 85 + 170 * tiles


def patch_tokens(
    width: int, height: int, factor: int, min_tokens: int = 4, max_tokens: int = 16384
) -> int:
    """Qwen-VL-style tokens: ``smart_resize`` to multiples of ``factor``, one token each.

    Qwen2.5-VL: 14-px patches merged 2x2, so ``factor`` 28; Qwen3-VL: 16-px patches merged
    2x2, ``factor`` 32. Pixels are kept within [min_tokens, max_tokens] * factor² (the
    qwen-vl-utils defaults 4 and 16384); a server may set a lower max_pixels.
    """
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_tokens * factor**2:
        beta = math.sqrt(height * width / (max_tokens * factor**2))
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_tokens * factor**2:
        beta = math.sqrt(min_tokens * factor**2 / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return (h_bar // factor) * (w_bar // factor)


@dataclass(frozen=True)
class CallCost:
    """What one model call's images cost: tokens under each rule, and JPEG bytes."""

    tiles: int
    qwen25: int
    qwen3: int
    jpeg_bytes: int

    @staticmethod
    def of(sizes: Sequence[tuple[int, int]], jpeg_bytes: int) -> CallCost:
        return CallCost(
            sum(tile_tokens(w, h) for w, h in sizes),
            sum(patch_tokens(w, h, 28) for w, h in sizes),
            sum(patch_tokens(w, h, 32) for w, h in sizes),
            jpeg_bytes,
        )


# --------------------------------------------------------------------------- reading


_FOLD = str.maketrans({"O": "0", "I": "1", "L": "1"})


def normalize(text: str) -> str:
    """Upper-case letters and digits only, with the look-alikes O/0 and I/L/1 folded."""
    return "".join(c for c in text.upper() if c.isalnum()).translate(_FOLD)


def char_accuracy(truth: str, read: str) -> float:
    """1 - Levenshtein distance / len(truth), at least 0 (normalized strings)."""
    a, b = normalize(truth), normalize(read)
    if not a:
        return 1.0 if not b else 0.0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return max(0.0, 1.0 - previous[-1] / len(a))


@dataclass
class Crop:
    """One string's region in a decoded image, and what it should say."""

    item: TextItem
    pixels: np.ndarray


def crop_item(
    image: np.ndarray,
    item: TextItem,
    origin: tuple[float, float],
    scale: float,
    bounds: tuple[int, int, int, int],
) -> Crop:
    """``item``'s box mapped into ``image`` (frame pixel -> origin + scale * pixel), padded.

    The pad (a quarter of the text height, at least 2 px) gives the recogniser the margin it
    expects; ``bounds`` (left, top, right, bottom) keeps the crop inside its cell.
    """
    left, top, right, bottom = item.box
    x0, y0 = origin
    pad = max(2.0, 0.25 * (bottom - top) * scale)
    box = (
        max(bounds[0], math.floor(x0 + left * scale - pad)),
        max(bounds[1], math.floor(y0 + top * scale - pad)),
        min(bounds[2], math.ceil(x0 + right * scale + pad)),
        min(bounds[3], math.ceil(y0 + bottom * scale + pad)),
    )
    return Crop(item, np.ascontiguousarray(image[box[1] : box[3], box[0] : box[2]]))


class Reader:
    """rapidocr's recogniser over many crops at once (batched: far faster than one by one)."""

    def __init__(self) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self.engine = RapidOCR()
        self.seconds = 0.0

    def read(self, crops: Sequence[Crop]) -> list[str]:
        started = time.perf_counter()
        results, _elapsed = self.engine.text_rec([c.pixels for c in crops], False)
        self.seconds += time.perf_counter() - started
        return [text for text, *_ in results]

    def detect_and_read(self, image: np.ndarray) -> str:
        started = time.perf_counter()
        result, _elapsed = self.engine(image)
        self.seconds += time.perf_counter() - started
        return " ".join(text for _box, text, _score in result or [])


@dataclass
class Scores:
    """Per-height exact recall and overall character accuracy of one row."""

    exact_by_height: dict[float, float]
    exact: float
    char: float
    count: int

    @staticmethod
    def of(crops: Sequence[Crop], reads: Sequence[str]) -> Scores:
        hits: dict[float, list[bool]] = {}
        chars = []
        for crop, read in zip(crops, reads, strict=True):
            hits.setdefault(crop.item.height_fraction, []).append(
                normalize(read) == normalize(crop.item.text)
            )
            chars.append(char_accuracy(crop.item.text, read))
        all_hits = [hit for values in hits.values() for hit in values]
        return Scores(
            {h: statistics.mean(v) for h, v in sorted(hits.items())},
            statistics.mean(all_hits),
            statistics.mean(chars),
            len(all_hits),
        )


# --------------------------------------------------------------------------- the pipeline


def decode_jpeg(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def source_video(size: tuple[int, int], scenes: int = FRAMES_PER_OVERVIEW) -> SceneTextVideo:
    fewer = "" if scenes == FRAMES_PER_OVERVIEW else f"_{scenes}scenes"
    path = cache_dir(f"scene_text_v{VIDEO_VERSION}_{size[0]}x{size[1]}{fewer}.mp4")
    return make_scene_text_video(path, size, scenes=scenes, reuse=True)


def sample(video: SceneTextVideo, config) -> list[Frame]:
    with open_video(video.path, config.video) as reader:
        indices = uniform_indices(reader, 0.0, reader.info.duration_s, len(video.scenes))
        frames = decode_indices([reader], indices)
    scenes = {f.index // video.frames_per_scene for f in frames}
    if len(scenes) != len(frames):
        raise RuntimeError("uniform sampling did not take one frame per scene")
    return frames


def chosen(frames: Sequence[Frame], cells: int) -> set[int]:
    """Indices (into ``frames``) OCR'd: ``cells`` of them, spread over every grid."""
    step = max(1, round(len(frames) / max(1, cells)))
    return set(range(0, len(frames), step)[:cells])


def ceiling_crops(video: SceneTextVideo, frames: Sequence[Frame], keep: set[int]) -> list[Crop]:
    crops = []
    for position, frame in enumerate(frames):
        if position in keep:
            h, w = frame.image.shape[:2]
            for item in video.items_at(frame.index):
                crops.append(crop_item(frame.image, item, (0.0, 0.0), 1.0, (0, 0, w, h)))
    return crops


def grid_crops(
    video: SceneTextVideo, frames: Sequence[Frame], images: ImagesConfig, overview, keep: set[int]
) -> tuple[list[Crop], list[tuple[np.ndarray, list[TextItem]]], CallCost]:
    """Crops of the kept cells, the kept cells themselves (for ``--detect``), and the cost."""
    parts = overview_images(frames, images, overview)
    columns, rows = overview.grid_columns, overview.grid_rows
    src_h, src_w = frames[0].image.shape[:2]
    width = encoding.grid_width(frames, images.grid_max_side, columns)
    cell_w, cell_h = cell_size_for(frames[0].image.shape, columns, width)
    scale = min(cell_w / src_w, cell_h / src_h)
    new_w, new_h = max(1, round(src_w * scale)), max(1, round(src_h * scale))
    scale = new_w / src_w  # what fit_into actually did
    crops, cells, sizes = [], [], []
    position = 0
    for part in parts:
        image = decode_jpeg(part.jpeg)
        sizes.append((image.shape[1], image.shape[0]))
        expected = cell_box(columns * rows - 1, columns, (cell_w, cell_h))
        if image.shape[1] != expected[2] or image.shape[0] != expected[3]:
            raise RuntimeError(f"grid is {image.shape[1]}x{image.shape[0]}, cells do not add up")
        for cell in range(len(part.timestamps)):
            if position in keep:
                left, top, right, bottom = cell_box(cell, columns, (cell_w, cell_h))
                origin = (left + (cell_w - new_w) // 2, top + (cell_h - new_h) // 2)
                items = list(video.items_at(frames[position].index))
                for item in items:
                    crops.append(crop_item(image, item, origin, scale, (left, top, right, bottom)))
                cells.append((image[top:bottom, left:right], items))
            position += 1
    return crops, cells, CallCost.of(sizes, sum(len(p.jpeg) for p in parts))


def frame_crops(
    video: SceneTextVideo, frames: Sequence[Frame], images: ImagesConfig, keep: set[int]
) -> tuple[list[Crop], CallCost]:
    """Crops of the kept frames as Skim/Focus send them, and the cost of a 50-frame call."""
    wide = images.model_copy(update={"max_per_call": len(frames)})
    parts = frame_images(frames, wide, max_frames=len(frames))
    crops, sizes, sizes_all, total = [], [], [], 0
    for position, (part, frame) in enumerate(zip(parts, frames, strict=True)):
        image = decode_jpeg(part.jpeg)
        sizes_all.append((image.shape[1], image.shape[0]))
        total += len(part.jpeg)
        if position in keep:
            scale = image.shape[1] / frame.image.shape[1]
            bounds = (0, 0, image.shape[1], image.shape[0])
            for item in video.items_at(frame.index):
                crops.append(crop_item(image, item, (0.0, 0.0), scale, bounds))
    sizes = sizes_all[:FRAMES_PER_SKIM]
    per_call_bytes = round(total / len(parts) * FRAMES_PER_SKIM)
    return crops, CallCost.of(sizes, per_call_bytes)


def detect_recall(reader: Reader, cells: Sequence[tuple[np.ndarray, list[TextItem]]]) -> float:
    """Full detection + recognition per cell: share of strings found in the cell's text."""
    hits = []
    for pixels, items in cells:
        text = normalize(reader.detect_and_read(pixels))
        hits.extend(normalize(item.text) in text for item in items)
    return statistics.mean(hits) if hits else float("nan")


# --------------------------------------------------------------------------- report


@dataclass
class Row:
    source: str
    what: str
    pixels: str
    scores: Scores
    ceiling: Scores
    cost: CallCost | None
    detect: float | None = None


def format_table(rows: Sequence[Row], heights: Sequence[float]) -> str:
    size_heads = [f"{h * 100:g}%" for h in heights]
    head = [
        "source",
        "images",
        "px per frame (scale)",
        *size_heads,
        "exact",
        "char",
        "vs ceil",
        "tiles tok",
        "Qwen2.5 tok",
        "Qwen3 tok",
        "KiB",
        "det+rec",
    ]
    lines = []
    for row in rows:
        cost = row.cost
        ratio = row.scores.exact / row.ceiling.exact if row.ceiling.exact else float("nan")
        lines.append(
            [
                row.source,
                row.what,
                row.pixels,
                *[f"{row.scores.exact_by_height.get(h, float('nan')):.0%}" for h in heights],
                f"{row.scores.exact:.0%}",
                f"{row.scores.char:.0%}",
                f"{ratio:.2f}",
                f"{cost.tiles:,}" if cost else "-",
                f"{cost.qwen25:,}" if cost else "-",
                f"{cost.qwen3:,}" if cost else "-",
                f"{cost.jpeg_bytes / 1024:,.0f}" if cost else "-",
                f"{row.detect:.0%}" if row.detect is not None else "-",
            ]
        )
    widths = [max(len(str(x)) for x in column) for column in zip(head, *lines, strict=True)]
    numeric = set(range(3, len(head)))

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    out = [fmt(head), rule]
    previous = None
    for row, cells in zip(rows, lines, strict=True):
        if previous is not None and row.source != previous:
            out.append(rule)
        out.append(fmt(cells))
        previous = row.source
    return "\n".join(out)


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40, help="frames OCR'd per row (of 120)")
    parser.add_argument("--sides", default="768,1152,1344,1536", help="images.grid_max_side values")
    parser.add_argument("--detect", type=int, default=0, help="cells per grid row for det+rec")
    parser.add_argument(
        "--chroma", choices=("444", "420"), default="444", help="JPEG chroma subsampling"
    )
    parser.add_argument(
        "--frames", type=int, default=FRAMES_PER_OVERVIEW, help="scenes = frames sampled per row"
    )
    args = parser.parse_args()
    encoding.JPEG_SUBSAMPLING = 0 if args.chroma == "444" else 2  # compare with Pillow's default
    sides = [int(s) for s in args.sides.split(",")]
    config = load_config()
    overview = config.agents.overview
    reader = Reader()
    started = time.perf_counter()
    rows: list[Row] = []
    for size in SOURCES:
        video = source_video(size, args.frames)
        frames = sample(video, config)
        keep = chosen(frames, args.cells)
        source = f"{size[0]}x{size[1]}"
        crops = ceiling_crops(video, frames, keep)
        ceiling = Scores.of(crops, reader.read(crops))
        rows.append(
            Row(source, "native frame", f"{size[0]}x{size[1]} (1.00)", ceiling, ceiling, None)
        )
        for side in sides:
            images = config.images.model_copy(update={"grid_max_side": side})
            crops, cells, cost = grid_crops(video, frames, images, overview, keep)
            width = encoding.grid_width(frames, side, overview.grid_columns)
            cell_w, cell_h = cell_size_for(frames[0].image.shape, overview.grid_columns, width)
            detect = None
            if args.detect:
                detect = detect_recall(reader, cells[: args.detect])
            rows.append(
                Row(
                    source,
                    f"grid, grid_max_side {side}",
                    f"{cell_w}x{cell_h} ({cell_w / size[0]:.2f})",
                    Scores.of(crops, reader.read(crops)),
                    ceiling,
                    cost,
                    detect,
                )
            )
        seen: set[tuple[int, int]] = set()
        for side in sides:
            images = config.images.model_copy(
                update={"grid_max_side": side, "frame_max_side": side}
            )
            longest = max(size)
            shown = size if longest <= side else tuple(round(d * side / longest) for d in size)
            if shown in seen:
                continue  # the same frames as a smaller max_side: no new figures
            seen.add(shown)
            crops, cost = frame_crops(video, frames, images, keep)
            label = f"frame, max_side >= {longest}" if shown == size else f"frame, max_side {side}"
            rows.append(
                Row(
                    source,
                    label,
                    f"{shown[0]}x{shown[1]} ({shown[0] / size[0]:.2f})",
                    Scores.of(crops, reader.read(crops)),
                    ceiling,
                    cost,
                )
            )
    elapsed = time.perf_counter() - started
    print(
        f"Scene text legibility: {args.cells} of {args.frames} frames per row, 4 strings "
        f"each (text height = font em as % of frame height); jpeg_quality "
        f"{config.images.jpeg_quality}, chroma {args.chroma}; defaults grid_max_side "
        f"{config.images.grid_max_side}, frame_max_side {config.images.frame_max_side}; "
        f"{elapsed:.0f} s "
        f"({reader.seconds:.0f} s OCR)\n"
    )
    print(format_table(rows, SCENE_TEXT_HEIGHTS))
    print(
        "\nexact: share of strings read exactly (normalized); char: mean character accuracy; "
        "vs ceil: exact / native-frame exact.\nTokens and KiB are per call: an Overview call "
        "carries 20 grids, a Skim/Focus call 50 frames. tiles: OpenAI-style detail=high "
        "(fit 2048², shortest side to 768 if larger, 170/512-px tile + 85); Qwen2.5: 28-px "
        "patches; Qwen3: 32-px patches (smart_resize, one token each).\n"
        "det+rec: full rapidocr detection + recognition on the first --detect cells of the "
        "row, share of strings found."
    )


if __name__ == "__main__":
    main()
