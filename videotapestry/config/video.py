"""The ``video`` and ``images`` sections: how frames are decoded from a file, and how large
the JPEGs made from them for a model are."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from videotapestry.config.base import StrictModel


class ImagesConfig(StrictModel):
    """Size and quality of the JPEGs sent (figures: bench/bench_grid_legibility.py).

    A 3x2 Overview grid is ``grid_max_side`` wide, so a frame in it is shrunk about three times
    more than as a single frame. At 768 a cell is 253 px and only 0.37-0.39 of the scene text
    the native frame shows is read (subtitle-sized text: 47 %); at 1344 a 16:9 grid is 504 px
    tall, still 3 OpenAI tiles (11.9k tokens per 20-grid call, as at 1152), and 0.79-0.80 is
    read; 1536 reads 0.86-0.89 for 22.1k. Single frames read 0.98-0.99 at 768 already, so
    they keep a lower cap of their own (``frame_max_side``).
    """

    max_per_call: int = Field(50, ge=1)
    grid_max_side: int = Field(
        1344,
        ge=32,
        description="longest side of an Overview grid, which is this wide (cells are a third "
        "of it, never wider than the frame), and the cap on every JPEG sent. 1344: a 16:9 3x2 "
        "grid fits 3 OpenAI 512-px tiles with 445-px cells",
    )
    frame_max_side: int = Field(
        768,
        ge=32,
        description="longest side of a single Skim/Focus/Direct frame, never above grid_max_side; "
        "768 reads 0.98-0.99 of the native frame's text at 425 tile tokens per 16:9 frame",
    )
    jpeg_quality: int = Field(85, ge=1, le=100)


class VideoConfig(StrictModel):
    """Which decoder reads a video, and how: threads, keyframe snapping, frame size."""

    backend: Literal["auto", "pyav", "decord", "opencv"] = Field(
        "auto",
        description="auto tries PyAV, then decord, then OpenCV, each when the one before "
        "cannot open or decode the file",
    )
    decode_threads: int = Field(0, ge=0, description="0 lets the decoder choose")
    skip_unreferenced: bool = Field(
        True,
        description="pyav: while decoding toward a frame far past its keyframe, skip the "
        "frames no other frame refers to (most B-frames); the frames returned are the same "
        "pixels, for about a third less decoding",
    )
    keyframe_snap: float = Field(
        0.25,
        ge=0.0,
        le=0.5,
        description="uniform sampling takes a keyframe within this fraction of a sample's "
        "sub-interval around its centre when there is one (decoding it is far cheaper); "
        "0 always takes the exact centre frame",
    )
    frame_proxy: bool = Field(
        True,
        description="decode the memory's frame proxy (builder.frame_proxy) instead of the video "
        "when it was made from this video (same frames at the same timestamps, re-encoded "
        "pixels); false always decodes the original",
    )
    decoded_max_side: int | None = Field(
        None,
        ge=16,
        description="longest side of the frames the decoder returns (larger ones are scaled "
        "down); null keeps the video's size",
    )
    parallel_decoders: int = Field(
        2,
        ge=1,
        le=16,
        description="readers (file handles and threads) that decode one observation's frames "
        "together, each a contiguous stretch; the frames are the same as with one",
    )
    frame_cache_mb: int = Field(
        256,
        ge=0,
        description="decoded frames kept for asking again, shared by the levels, variants "
        "and questions of one VideoTapestry (a conversation's turns, an eval's questions of "
        "one video); 0 keeps none",
    )
    render_cache_mb: int = Field(
        64,
        ge=0,
        description="rendered observations (the frames' grids and JPEG bytes) kept for asking "
        "again: a further question of a video sends the Overview the same images; not used "
        "with frame_reuse above 0 (a render then depends on what was decoded before); 0 keeps "
        "none",
    )
    decode_workers: int = Field(
        0,
        ge=0,
        le=32,
        description="processes that sample, decode and JPEG-encode observation frames, off "
        "the interpreter lock of the event loop (for many questions in flight); they share "
        "frame_cache_mb; 0 does that work in threads of the asking process",
    )
    # 0, the default, is paper-faithful and reproducible: with reuse on, which frame a sample
    # gets depends on what earlier questions of the facade decoded (and in what order), and
    # bench_method.py --only-decoding measured no time saved above the noise.
    frame_reuse: float = Field(
        0.0,
        ge=0.0,
        le=0.5,
        description="a uniform sample takes a frame already in the frame cache within this "
        "fraction of its sub-interval around its centre (the frame's own timestamp is kept "
        "and shown); checked before keyframe_snap; 0 reuses only the exact frame",
    )
