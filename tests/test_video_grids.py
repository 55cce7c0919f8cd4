"""Overview grids and Skim/Focus frames: time order, right labels, sizes and the image caps.

Grid cells are checked through the whole real path: frames sampled from a generated video,
packed, JPEG-encoded and decoded again; the burned-in frame code of every cell is read back,
and the timestamp labels are read with OCR (rapidocr).
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

from videotapestry.config import ImagesConfig, LevelSettings, OverviewSettings, load_config
from videotapestry.errors import ImageLimitError
from videotapestry.images import ImagePart
from videotapestry.testing.media import make_test_video, read_frame_index
from videotapestry.timecode import format_range, format_timestamp, label_decimals
from videotapestry.video import (
    Frame,
    frame_images,
    individual_frame_budget,
    open_video,
    overview_frame_budget,
    overview_images,
    pack_grids,
    sample_uniform,
)
from videotapestry.video.grids import CELL_GAP

FPS = 2.0


@pytest.fixture(scope="module")
def config():
    return load_config()


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory):
    # Four minutes at 2 fps: 120 samples are 2 s apart, so labels are whole seconds.
    return make_test_video(tmp_path_factory.mktemp("grids") / "v.mp4", 240.0, fps=FPS)


@pytest.fixture(scope="module")
def frames(video):
    with open_video(video.path) as reader:
        return sample_uniform(reader, 0.0, video.duration_s, 120)


@pytest.fixture(scope="module")
def ocr():
    from rapidocr_onnxruntime import RapidOCR

    return RapidOCR()


def decode(part: ImagePart) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(part.jpeg)).convert("RGB"))


def cells_of(image: np.ndarray, columns: int = 3, rows: int = 2) -> list[np.ndarray]:
    cell_w = (image.shape[1] - (columns - 1) * CELL_GAP) // columns
    cell_h = (image.shape[0] - (rows - 1) * CELL_GAP) // rows
    return [
        image[
            r * (cell_h + CELL_GAP) : r * (cell_h + CELL_GAP) + cell_h,
            c * (cell_w + CELL_GAP) : c * (cell_w + CELL_GAP) + cell_w,
        ]
        for r in range(rows)
        for c in range(columns)
    ]


def label_tab(cell: np.ndarray) -> np.ndarray:
    """The black label tab in the cell's top-left corner (white text on black)."""
    dark = cell.max(axis=2) < 60

    def run(line: np.ndarray) -> int:  # length of the dark run at the start of the line
        return len(line) if line.all() else int(np.argmin(line))

    return cell[: run(dark[:, 1]), : run(dark[1])]


def read_label(ocr, cell: np.ndarray) -> str:
    tab = np.pad(label_tab(cell), ((4, 4), (4, 4), (0, 0)))
    result, _ = ocr(tab, use_det=False, use_cls=False, use_rec=True)  # one line of text
    return "".join(text for text, _score in result or []).replace(" ", "")


def test_overview_grids_are_in_time_order_and_labelled_with_the_right_times(
    config, video, frames, ocr
) -> None:
    parts = overview_images(frames, config.images, config.agents.overview)
    assert len(parts) == 20
    seen: list[int] = []
    for number, part in enumerate(parts):
        assert len(part.timestamps) == 6
        assert part.label.startswith(f"grid {number + 1}/20 ")
        image = decode(part)
        assert max(image.shape[:2]) <= config.images.grid_max_side
        cells = cells_of(image)
        for cell, timestamp in zip(cells, part.timestamps, strict=True):
            index = read_frame_index(cell)
            assert index / FPS == pytest.approx(timestamp)  # the cell shows that moment
            seen.append(index)
        labels = [read_label(ocr, cell) for cell in cells]
        assert labels == [format_timestamp(t) for t in part.timestamps]
    assert seen == sorted(seen) and len(set(seen)) == 120
    assert [t for part in parts for t in part.timestamps] == [f.timestamp_s for f in frames]


def test_grids_sort_frames_and_leave_unused_cells_black(frames) -> None:
    shuffled = [frames[i] for i in (9, 3, 0, 12, 7, 1, 5, 2)]
    grids = pack_grids(shuffled, columns=3, rows=2, cell_size=(160, 90))
    assert [len(g.timestamps) for g in grids] == [6, 2]
    ordered = sorted(f.timestamp_s for f in shuffled)
    assert [t for g in grids for t in g.timestamps] == ordered
    last = np.asarray(grids[1].image)
    assert last.shape == (2 * 90 + CELL_GAP, 3 * 160 + 2 * CELL_GAP, 3)
    for position in range(2, 6):
        left, top, right, bottom = grids[1].cell_box(position)
        assert last[top:bottom, left:right].max() == 0
    for position in range(2):
        left, top, right, bottom = grids[1].cell_box(position)
        assert read_frame_index(last[top:bottom, left:right]) / FPS == grids[1].timestamps[position]


def test_labels_switch_to_hours_and_fractions_when_needed(ocr) -> None:
    picture = np.full((180, 320, 3), (40, 70, 200), dtype=np.uint8)
    hour = [Frame(t, int(t * 25), picture) for t in (3599.5, 3600.0, 3725.9)]
    grid = pack_grids(hour, cell_size=(320, 180))[0]
    assert grid.labels == ("59:59", "1:00:00", "1:02:05")
    cells = [
        np.asarray(grid.image)[slice(*grid.cell_box(i)[1::2]), slice(*grid.cell_box(i)[::2])]
        for i in range(3)
    ]
    assert [read_label(ocr, cell) for cell in cells] == list(grid.labels)
    close = [Frame(t, int(t * 25), picture) for t in (12.0, 12.4, 12.8)]
    assert pack_grids(close)[0].labels == ("00:12.0", "00:12.4", "00:12.8")


def test_individual_frames_keep_their_timestamp_and_size(config, frames) -> None:
    images = ImagesConfig(grid_max_side=256, jpeg_quality=70)
    parts = frame_images(frames[:50], images, max_frames=50)
    assert len(parts) == 50
    for part, frame in zip(parts, frames[:50], strict=True):
        assert part.timestamps == (frame.timestamp_s,)
        assert part.label == f"frame {format_timestamp(frame.timestamp_s)}"
        image = decode(part)
        assert max(image.shape[:2]) == 256
        assert read_frame_index(image) == frame.index
        tab = label_tab(image)  # the black label tab in the corner
        assert 30 < tab.shape[1] < 128 and 10 < tab.shape[0] < 40
    unlabelled = frame_images(frames[:1], images, max_frames=50, label="untouched")
    assert label_tab(decode(unlabelled[0])).size == 0


def test_quality_and_max_side_change_the_bytes(frames) -> None:
    small = overview_images(
        frames[:6], ImagesConfig(grid_max_side=384, jpeg_quality=40), OverviewSettings()
    )
    large = overview_images(
        frames[:6], ImagesConfig(grid_max_side=768, jpeg_quality=90), OverviewSettings()
    )
    assert 380 <= decode(small[0]).shape[1] <= 384 and 764 <= decode(large[0]).shape[1] <= 768
    assert len(small[0].jpeg) * 3 < len(large[0].jpeg)


def test_image_caps_are_enforced(config, frames) -> None:
    overview = config.agents.overview
    assert overview_frame_budget(config.images, overview) == 120
    tight = ImagesConfig(max_per_call=10)
    assert overview_frame_budget(tight, overview) == 60
    with pytest.raises(ImageLimitError, match="max_per_call=10"):
        overview_images(frames[:61], tight, overview)
    assert len(overview_images(frames[:60], tight, overview)) == 10
    more = [*frames, Frame(999.0, 1998, frames[0].image)]
    with pytest.raises(ImageLimitError, match="121 frames"):
        overview_images(more, config.images, overview)
    assert individual_frame_budget(config.images, LevelSettings(max_frames=80)) == 50
    with pytest.raises(ImageLimitError, match="51 individual frames"):
        frame_images(frames[:51], config.images, max_frames=80)
    with pytest.raises(ImageLimitError):
        frame_images(frames[:21], config.images, max_frames=20)


@pytest.mark.parametrize(
    ("seconds", "decimals", "text"),
    [
        (0.0, 0, "00:00"),
        (59.99, 0, "00:59"),
        (61.0, 0, "01:01"),
        (3599.999, 0, "59:59"),
        (3600.0, 0, "1:00:00"),
        (3725.4, 1, "1:02:05.4"),
        (0.3, 1, "00:00.3"),
        (36000.0, 0, "10:00:00"),
    ],
)
def test_format_timestamp(seconds: float, decimals: int, text: str) -> None:
    assert format_timestamp(seconds, decimals) == text


def test_timestamp_helpers_reject_bad_input_and_pick_decimals() -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            format_timestamp(bad)
    assert label_decimals([0.0, 5.0, 10.0]) == 0
    assert label_decimals([1.0, 1.5]) == 1
    assert label_decimals([1.0, 1.04]) == 2
    assert format_range(65.2, 3601.0) == "[01:05-1:00:01]"
    assert re.fullmatch(r"\[\d\d:\d\d-\d\d:\d\d\]", format_range(1, 2))


def test_grids_follow_max_side_single_frames_their_own_lower_cap(frames) -> None:
    # A grid cell gets a third of the grid's width, so grids need a larger side than single
    # frames for on-screen text to stay legible (bench/bench_grid_legibility.py).
    from PIL import JpegImagePlugin

    images = ImagesConfig(grid_max_side=900, frame_max_side=200)
    grid = overview_images(frames[:6], images, OverviewSettings())[0]
    assert 896 <= decode(grid).shape[1] <= 900
    single = frame_images(frames[:1], images, max_frames=1)[0]
    assert max(decode(single).shape[:2]) == 200
    # grid_max_side still bounds every image: lowering it alone shrinks single frames too
    capped = frame_images(frames[:1], ImagesConfig(grid_max_side=160), max_frames=1)[0]
    assert max(decode(capped).shape[:2]) == 160
    # cells never enlarge a frame: 320-px frames make grids at most 3 x 320 + 2 gaps wide
    wide = overview_images(frames[:6], ImagesConfig(grid_max_side=2000), OverviewSettings())[0]
    assert decode(wide).shape[1] == 3 * 320 + 2 * CELL_GAP
    # colour kept at full resolution (4:4:4), so coloured text and tab edges do not smear
    for part in (grid, single):
        assert JpegImagePlugin.get_sampling(Image.open(io.BytesIO(part.jpeg))) == 0
    defaults = load_config().images
    assert defaults.frame_max_side < defaults.grid_max_side
