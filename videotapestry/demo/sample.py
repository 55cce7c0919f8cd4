"""Generate the demo sample: ``sample.mp4`` and the ``questions.json`` that belongs to it.

    python -m videotapestry.demo.sample --out DIR [--code 4417] [--code-at 262] [--seed 0]

The committed copy in ``videotapestry/demo/data/`` was made with the defaults
(``--out videotapestry/demo/data``). The video is an 18-minute slide deck (640x360, one frame
a second, H.264) with a mono AAC track that is silent except for four stretches of the
narrator, muxed from the committed clips of ``videotapestry/demo/data/speech`` (no espeak-ng
needed; ``--resynthesize`` re-creates the clips with it first). Everything the questions say
comes from ``script.layout``, so other parameters give a video and answers that agree.

Slides are drawn with DejaVu Sans when it is installed (Pillow's bundled face otherwise), in
large text, and are static for their whole time on screen: one keyframe per slide and a few
bytes per repeated frame, and an OCR pass gated on frame changes reads each slide once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from videotapestry.asr.audio import SAMPLE_RATE
from videotapestry.demo.script import (
    SampleParams,
    SampleQuestion,
    Timeline,
    layout,
    make_questions,
)
from videotapestry.demo.speech import SPEECH_DIR, SpeechAssets, load_speech, resynthesize
from videotapestry.errors import SampleVideoError

if TYPE_CHECKING:  # Pillow loads only when the slides are drawn
    from PIL import ImageDraw, ImageFont

VIDEO_NAME = "sample.mp4"
QUESTIONS_NAME = "questions.json"
FORMAT = "videotapestry-sample/1"

SIZE = (640, 360)
FPS = 1
CRF = 23
#: A keyframe at least this often (frames), besides the one x264 puts at each slide change.
KEYINT = 10
AUDIO_BIT_RATE = 24000

_BACKGROUND = (246, 244, 238)
_INK = (32, 32, 40)
_MUTED = (110, 110, 120)
#: Title-bar colour by section; near-twin slides share one, so colour tells them apart no
#: better than text does.
_SECTIONS = {
    (40, 60, 110): ("title", "plan", "site", "end"),
    (20, 110, 110): ("gate_a", "gate_b", "gate_c", "wifi", "parking"),
    (130, 45, 60): ("radio", "tents", "food", "stewards", "children"),
    (90, 50, 130): ("morning", "afternoon", "evening"),
    (160, 80, 20): ("weather", "emergency", "closing"),
}
_FOOTER = "Riverside Festival - volunteer briefing"


@dataclass(frozen=True)
class SampleResult:
    video: Path
    questions: Path
    timeline: Timeline
    seconds: float


# --------------------------------------------------------------------------- questions file


def questions_record(
    timeline: Timeline, questions: Sequence[SampleQuestion], voice: str
) -> dict[str, Any]:
    """The content of ``questions.json``: parameters, questions and the full timeline."""
    return {
        "format": FORMAT,
        "video": VIDEO_NAME,
        "generator": "python -m videotapestry.demo.sample",
        "parameters": timeline.params.to_json(),
        "duration_s": timeline.duration_s,
        "fps": FPS,
        "size": list(SIZE),
        "voice": voice,
        "questions": [q.to_json() for q in questions],
        "timeline": timeline.to_json(),
    }


def sample_timeline(params: SampleParams, speech: SpeechAssets | None = None) -> Timeline:
    return layout(params, (speech or load_speech()).timings())


def render_questions(params: SampleParams, speech: SpeechAssets | None = None) -> str:
    """``questions.json`` for ``params`` as text, without rendering any video."""
    speech = speech or load_speech()
    return _questions_text(sample_timeline(params, speech), speech)


def _questions_text(timeline: Timeline, speech: SpeechAssets) -> str:
    record = questions_record(timeline, make_questions(timeline), speech.voice)
    return json.dumps(record, indent=2) + "\n"


# --------------------------------------------------------------------------- drawing


def _font(size: int, *, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    from PIL import ImageFont

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    try:
        return ImageFont.truetype(name, size)
    except OSError:  # pragma: no cover - a system without DejaVu
        return ImageFont.load_default(size=size)


def _section_colour(key: str) -> tuple[int, int, int]:
    for colour, keys in _SECTIONS.items():
        if key in keys:
            return colour
    return (60, 60, 60)


def _fitted(
    draw: ImageDraw.ImageDraw, text: str, size: int, width: int, *, bold: bool = False
) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    # Shrink a line that would overflow the slide instead of letting it be cut off.
    while True:
        font = _font(size, bold=bold)
        left, _top, right, _bottom = draw.textbbox((0, 0), text, font=font)
        if right - left <= width or size <= 12:
            return font
        size -= 1


def render_slide(timeline: Timeline, number: int) -> np.ndarray:
    """Slide ``number`` (1-based) as an RGB array of ``SIZE``."""
    from PIL import Image, ImageDraw

    slide = timeline.slides[number - 1]
    width, height = SIZE
    margin = 28
    picture = Image.new("RGB", SIZE, _BACKGROUND)
    draw = ImageDraw.Draw(picture)
    draw.rectangle((0, 0, width, 78), fill=_section_colour(slide.key))
    title_font = _fitted(draw, slide.title, 36, width - 2 * margin, bold=True)
    draw.text((margin, 39), slide.title, fill=(255, 255, 255), font=title_font, anchor="lm")
    y = 104
    for line in slide.lines:
        font = _fitted(draw, line, 28, width - 2 * margin)
        draw.text((margin, y), line, fill=_INK, font=font)
        y += 52
    footer = _font(14)
    draw.line((margin, height - 34, width - margin, height - 34), fill=(210, 208, 200), width=1)
    draw.text((margin, height - 16), _FOOTER, fill=_MUTED, font=footer, anchor="lm")
    mark = f"{slide.number} / {len(timeline.slides)}"
    draw.text((width - margin, height - 16), mark, fill=_MUTED, font=footer, anchor="rm")
    return np.asarray(picture)


# --------------------------------------------------------------------------- audio


def audio_track(timeline: Timeline, speech: SpeechAssets) -> np.ndarray:
    """The whole soundtrack at 16 kHz: silence with every sentence at its placed time."""
    track = np.zeros(timeline.duration_s * SAMPLE_RATE, dtype=np.float32)
    for sentence in timeline.sentences:
        clip = speech.samples(sentence.id)
        first = round(sentence.placed_s * SAMPLE_RATE)
        piece = clip[: max(0, len(track) - first)]
        track[first : first + len(piece)] += piece
    return track


# --------------------------------------------------------------------------- writing


def write_video(path: Path, timeline: Timeline, speech: SpeechAssets) -> None:
    """H.264 at ``FPS`` plus mono AAC, interleaved second by second, written atomically."""
    import av

    audio = audio_track(timeline, speech)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")
    try:
        with av.open(str(tmp), "w", format="mp4") as out:
            video = out.add_stream("libx264", rate=Fraction(FPS))
            video.width, video.height = SIZE
            video.pix_fmt = "yuv420p"
            video.options = {
                "preset": "veryfast",
                "crf": str(CRF),
                "tune": "stillimage",
                "x264-params": f"keyint={KEYINT}:min-keyint=1",
            }
            sound = out.add_stream("aac", rate=SAMPLE_RATE, layout="mono")
            sound.bit_rate = AUDIO_BIT_RATE
            # Each slide is converted to YUV once; the encoder keeps its own reference to
            # every frame it is sent, so one frame object can be sent again with a new pts.
            slides = [
                av.VideoFrame.from_ndarray(render_slide(timeline, n), format="rgb24").reformat(
                    format="yuv420p"
                )
                for n in range(1, len(timeline.slides) + 1)
            ]
            for second in range(timeline.duration_s):
                frame = slides[timeline.slide_at(second).number - 1]
                frame.pts = second * FPS
                out.mux(video.encode(frame))
                first = second * SAMPLE_RATE
                piece = np.ascontiguousarray(audio[None, first : first + SAMPLE_RATE])
                samples = av.AudioFrame.from_ndarray(piece, format="flt", layout="mono")
                samples.sample_rate = SAMPLE_RATE
                samples.pts = first
                out.mux(sound.encode(samples))
            out.mux(video.encode(None))
            out.mux(sound.encode(None))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def generate(
    out_dir: str | Path,
    params: SampleParams | None = None,
    *,
    speech_dir: str | Path = SPEECH_DIR,
    video: bool = True,
) -> SampleResult:
    """Write ``sample.mp4`` (unless ``video`` is false) and ``questions.json`` into ``out_dir``."""
    started = time.perf_counter()
    params = params or SampleParams()
    out = Path(out_dir)
    speech = load_speech(Path(speech_dir))
    timeline = sample_timeline(params, speech)
    if video:
        write_video(out / VIDEO_NAME, timeline, speech)
    _write_text(out / QUESTIONS_NAME, _questions_text(timeline, speech))
    return SampleResult(
        out / VIDEO_NAME, out / QUESTIONS_NAME, timeline, time.perf_counter() - started
    )


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    defaults = SampleParams()
    parser = argparse.ArgumentParser(
        prog="python -m videotapestry.demo.sample",
        description="Write the demo sample video and its questions. The defaults reproduce "
        "the copy committed in videotapestry/demo/data.",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="where to write both files")
    parser.add_argument("--code", default=defaults.code, help="Gate B's door code (4 digits)")
    parser.add_argument(
        "--code-at",
        type=int,
        default=defaults.code_at_s,
        metavar="SECONDS",
        help="when the Gate B slide appears",
    )
    parser.add_argument(
        "--seed", type=int, default=defaults.seed, help="slide lengths, other codes, option order"
    )
    parser.add_argument("--duration", type=int, default=defaults.duration_s, metavar="SECONDS")
    parser.add_argument(
        "--speech-dir",
        default=str(SPEECH_DIR),
        metavar="DIR",
        help="speech clips and manifest.json (default: the committed ones)",
    )
    parser.add_argument(
        "--resynthesize",
        action="store_true",
        help="re-create the speech clips in --speech-dir with espeak-ng first",
    )
    parser.add_argument(
        "--questions-only", action="store_true", help="write questions.json, no video"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = SampleParams(
            code=args.code, code_at_s=args.code_at, seed=args.seed, duration_s=args.duration
        )
        if args.resynthesize:
            resynthesize(Path(args.speech_dir))
        result = generate(
            args.out, params, speech_dir=args.speech_dir, video=not args.questions_only
        )
    except (SampleVideoError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    written = [result.questions] if args.questions_only else [result.video, result.questions]
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    print(f"{len(result.timeline.slides)} slides, {result.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
