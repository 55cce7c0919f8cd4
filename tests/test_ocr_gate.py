"""The OCR gate (builder.ocr.gate): which regions of a frame are read again, as pure rules,
and with the real rapidocr engine on drawn frames, counting what it is asked to do."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import pytest

from videotapestry.config import BuilderOcrSettings
from videotapestry.errors import ConfigError
from videotapestry.ocr import (
    OcrHit,
    OcrStats,
    RapidOcrEngine,
    TextBox,
    read_texts,
    text_key,
    thumbnail,
)
from videotapestry.ocr.gate import (
    DETECTOR_MAX_RATIO,
    box_changed,
    changed_cells,
    frame_reader,
    grow_regions,
    regions_from_cells,
)

# --------------------------------------------------------------------------- pure rules


def test_changed_cells_make_one_region_per_group_with_a_margin() -> None:
    cells = np.zeros((36, 64), dtype=bool)
    cells[14:18, 20:30] = True  # a group of cells in the middle
    cells[0, 60:63] = True  # another, top right
    regions = sorted(regions_from_cells(cells, 640, 360))
    assert len(regions) == 2
    middle, corner = regions
    assert middle[0] < 200 and middle[1] < 140 and middle[2] > 300 and middle[3] > 180
    assert corner[2] == 640 and corner[1] == 0  # clamped to the frame


def test_regions_grow_over_the_lines_they_touch_and_merge() -> None:
    # A changed digit in the middle of a line: the region must cover the whole line, with
    # background around it, and swallow the region it now overlaps.
    line = (100.0, 150.0, 500.0, 190.0)
    regions = grow_regions([(280, 140, 320, 200), (480, 150, 560, 200)], [line], 640, 360)
    assert len(regions) == 1
    left, top, right, bottom = regions[0]
    assert left <= 100 - 40 and right >= 560 and top <= 150 and bottom >= 190


def test_a_thin_wide_region_is_made_tall_enough_not_to_be_padded() -> None:
    (region,) = grow_regions([(0, 340, 640, 360)], [], 640, 360)
    assert region[3] == 360 and region[3] - region[1] > 640 / DETECTOR_MAX_RATIO


def test_one_changed_character_of_a_long_line_counts_and_noise_does_not() -> None:
    rng = np.random.default_rng(0)
    before = np.full((80, 640), 90, np.uint8)
    cv2.putText(before, "00:14.000 GATE 7", (20, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.6, 255, 3)
    noisy = np.clip(before + rng.integers(-6, 7, before.shape), 0, 255).astype(np.uint8)
    box = (10.0, 10.0, 600.0, 75.0)
    assert not box_changed(before, noisy, box, 12.0)
    after = np.full((80, 640), 90, np.uint8)
    cv2.putText(after, "00:16.000 GATE 7", (20, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.6, 255, 3)
    assert box_changed(before, after, box, 12.0)


def test_the_region_gate_refuses_an_engine_that_only_reads_whole_frames() -> None:
    class WholeOnly:
        name = "whole-only"

        def read(self, image: np.ndarray) -> list[OcrHit]:
            return []

    with pytest.raises(ConfigError, match=r"builder\.ocr\.gate=frame"):
        frame_reader(WholeOnly(), BuilderOcrSettings(gate="regions"), OcrStats())


# --------------------------------------------------------------------------- real rapidocr


class CountingRapidOcr(RapidOcrEngine):
    """The real engine, counting whole reads, detector calls and boxes recognized."""

    def __init__(self) -> None:
        super().__init__(BuilderOcrSettings(engine="rapidocr", threads=0))
        self.reads = self.detections = self.recognized = 0

    def read(self, image: np.ndarray) -> list[OcrHit]:
        self.reads += 1
        return super().read(image)

    def detect(self, image: np.ndarray) -> list[TextBox]:
        self.detections += 1
        return super().detect(image)

    def recognize(self, image: np.ndarray, boxes: Sequence[TextBox]) -> list[OcrHit]:
        self.recognized += len(boxes)
        return super().recognize(image, boxes)


@pytest.fixture(scope="module")
def engine() -> CountingRapidOcr:
    return CountingRapidOcr()


def _frame(clock: str, seed: int) -> np.ndarray:
    """A still title over a clock, on a background with fresh low-contrast noise each frame
    (as every frame of a real video differs from the last)."""
    rng = np.random.default_rng(seed)
    image = np.full((360, 640, 3), (40, 70, 160), np.uint8)
    image = np.clip(image + rng.integers(0, 8, image.shape), 0, 255).astype(np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.putText(image, "HARBOUR GATE 7", (90, 80), font, 1.6, (255, 255, 255), 3, cv2.LINE_AA)
    cv2.putText(image, clock, (200, 220), font, 1.8, (255, 255, 255), 3, cv2.LINE_AA)
    return image


CLOCKS = ["10:01", "10:02", "10:02", "10:03", "10:03 PM"]


def test_the_region_gate_recognizes_only_the_line_that_changed(engine) -> None:
    frames = [_frame(clock, seed) for seed, clock in enumerate(CLOCKS)]
    stats = OcrStats()
    reader = frame_reader(engine, BuilderOcrSettings(gate="regions"), stats)
    asked = []
    seen = []
    for image in frames:
        before = (engine.detections, engine.recognized)
        seen.append(sorted(text_key(h.text) for h in reader.hits(image)))
        asked.append((engine.detections - before[0], engine.recognized - before[1]))
    # The same texts as reading every frame whole.
    whole = [sorted(text_key(h.text) for h in engine.read(image)) for image in frames]
    assert seen == whole == [sorted(["harbourgate7", text_key(c)]) for c in CLOCKS]
    # Frame 0 is read whole (two lines recognized); frame 2 repeats frame 1 under new noise
    # and is not read at all; a digit changing inside the clock's box is recognized in that
    # box without the detector; the clock growing beyond its box ("PM") is detected again.
    # The title is recognized once.
    assert asked == [(1, 2), (0, 1), (0, 0), (0, 1), (1, 1)]
    assert (stats.read, stats.detected, stats.recognized) == (4, 2, 5)
    assert engine.reads == len(frames)  # the whole reads above were the reference's only


def test_spans_through_the_region_gate_match_the_ungated_spans(engine) -> None:
    frames = [(float(2 * i), lambda c=c, i=i: _frame(c, i)) for i, c in enumerate(CLOCKS)]
    gated, ungated = OcrStats(), OcrStats()
    regions = read_texts(
        engine, frames, BuilderOcrSettings(gate="regions"), end_s=10.0, stats=gated
    )
    reference = read_texts(
        engine, frames, BuilderOcrSettings(gate="none"), end_s=10.0, stats=ungated
    )

    def spans(found):
        return [(text_key(s.text), s.start_s, s.end_s) for s in found]

    assert spans(regions) == spans(reference)
    assert ("harbourgate7", 0.0, 10.0) in spans(regions)
    assert ("1002", 2.0, 6.0) in spans(regions)
    assert gated.frames == ungated.frames == ungated.read == 5
    assert ("1003pm", 8.0, 10.0) in spans(regions)
    assert gated.read == 4 and gated.recognized == 5


def test_auto_without_rapidocr_is_reported_not_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    from videotapestry.ocr import make_ocr_engine, missing_ocr

    monkeypatch.setitem(__import__("sys").modules, "rapidocr_onnxruntime", None)
    auto = BuilderOcrSettings(engine="auto")
    assert make_ocr_engine(auto) is None
    assert "offline" in (missing_ocr(auto, None) or "")
    assert missing_ocr(BuilderOcrSettings(engine="none"), None) is None


def _slide(counter: str, seed: int) -> np.ndarray:
    """A still slide with a counter in small print in its corner (the sample video's slides)."""
    rng = np.random.default_rng(seed)
    image = np.full((360, 640, 3), (30, 30, 30), np.uint8)
    image = np.clip(image + rng.integers(0, 6, image.shape), 0, 255).astype(np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.putText(image, "SITE MAP", (40, 70), font, 1.5, (240, 240, 240), 3, cv2.LINE_AA)
    cv2.putText(image, counter, (560, 345), font, 0.5, (150, 150, 150), 1, cv2.LINE_AA)
    return image


def test_small_print_that_changes_below_the_thumbnail_is_read_again(engine) -> None:
    first, second = _slide("1 / 20", 0), _slide("2 / 20", 1)
    # The thumbnail's cells (1/64 of the width) do not see the counter's digit change ...
    gray = [thumbnail(image) for image in (first, second)]
    assert not changed_cells(gray[0], gray[1], 12.0).any()
    reader = frame_reader(engine, BuilderOcrSettings(gate="regions"), OcrStats())
    assert "120" in {text_key(h.text).replace(" ", "") for h in reader.hits(first)}
    # ... but the counter's own box, compared with itself in finer cells, does.
    detections = engine.detections
    texts = {text_key(h.text) for h in reader.hits(second)}
    assert "220" in texts and "120" not in texts, texts
    assert "sitemap" in texts
    assert engine.detections == detections + 1  # one small region, not the whole frame


def test_words_come_back_spaced_from_the_test_videos(engine, tmp_path) -> None:
    """Issue 39: the recognizer (PP-OCRv4's Chinese model) seldom emits a space, so lines came
    back glued (``Doorcode4417``, ``EXITC0DE4417``); the engine puts the spaces back from the
    blanks in the line's pixels and undoes O/0 inside capital words. Frames decoded from the
    committed sample and from a video drawn as the builder's tests draw their signs."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.sample import sample_timeline
    from videotapestry.demo.script import SampleParams
    from videotapestry.testing.builder_media import ScheduledText, make_text_schedule_video
    from videotapestry.video import open_video

    timeline = sample_timeline(SampleParams())
    times = [
        (s.start_s + s.end_s) / 2 for s in (timeline.slide("gate_b"), timeline.slide("morning"))
    ]
    signs = ["EXIT CODE 4417", "DOCK 18", "WELCOME TO THE PLANT", "CONTROL ROOM"]
    video, _ = make_text_schedule_video(
        tmp_path / "signs.mp4",
        [ScheduledText(text, float(k), float(k + 1)) for k, text in enumerate(signs)],
        float(len(signs)),
        size=(320, 180),
        frame_code=False,
    )
    with open_video(sample_video_path()) as reader:
        slides = [frame.image for frame in reader.frames_at(times)]
    with open_video(video) as reader:
        shown = [frame.image for frame in reader.frames_at([k + 0.5 for k in range(len(signs))])]
    settings = BuilderOcrSettings(engine="rapidocr")

    def builder_texts(image: np.ndarray) -> set[str]:
        """What the builder's OCR keeps of one frame (through the region gate)."""
        return {s.text for s in read_texts(engine, [(0.0, lambda: image)], settings, end_s=1.0)}

    gate_b, morning = (builder_texts(image) for image in slides)
    assert {"Gate B: deliveries", "Door code 4417", "Open 06:30 to 12:00"} <= gate_b
    assert {"10:00 Brass band", "11:30 Puppet show", "12:15 Dance school"} <= morning
    assert [[hit.text for hit in engine.read(image)] for image in shown] == [[s] for s in signs]
