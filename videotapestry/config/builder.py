"""The ``builder`` section: building a memory from a raw video (``memory_builders/``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from videotapestry.config.base import StrictModel


class BuilderScanSettings(StrictModel):
    """The one decoding pass over the video: shot cuts plus the frames kept for later stages."""

    sample_fps: float = Field(
        1.0, gt=0, le=30, description="frames kept per second for perception and OCR"
    )
    kept_frame_max_side: int = Field(
        768, ge=64, description="longest side of a kept frame (smaller frames stay as they are)"
    )
    frame_quality: int = Field(90, ge=50, le=100, description="JPEG quality of kept frames")
    detect_fps: float = Field(
        6.0, gt=0, description="frames per second PySceneDetect's ContentDetector looks at"
    )
    detect_width: int = Field(160, ge=32, description="width of the frames the detector sees")
    threshold: float = Field(27.0, gt=0, description="ContentDetector cut threshold")
    min_shot_s: float = Field(1.0, ge=0, description="shortest shot the detector reports")


class BuilderClipSettings(StrictModel):
    """Shots merged or split into clips, the atomic perception unit."""

    min_s: float = Field(10.0, gt=0)
    max_s: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _bounds(self) -> BuilderClipSettings:
        if self.max_s < 2 * self.min_s:
            raise ValueError(
                f"max_s ({self.max_s:g}) must be at least twice min_s ({self.min_s:g}) so that "
                "any stretch of video can be cut into clips inside the bounds"
            )
        return self


class BuilderTranscriptSettings(StrictModel):
    source: Literal["auto", "whisper", "subtitles", "none"] = Field(
        "auto",
        description="auto: the subtitles given to the build, else Whisper when the video has "
        "audio; none: build without speech",
    )
    chunk_s: float = Field(
        1200.0, ge=60, description="Whisper runs over consecutive windows this long (cached)"
    )


class BuilderPerceptionSettings(StrictModel):
    frames: int = Field(6, ge=1, le=50, description="frames per clip shown to the model")
    layout: Literal["grid", "frames"] = Field(
        "grid", description="grid: one labelled grid image per clip; frames: one image each"
    )
    grid_columns: int = Field(3, ge=1)
    grid_rows: int = Field(2, ge=1)
    transcript: bool = Field(
        True,
        description="send each clip's transcript with its frames, so captions and events "
        "carry what is said; false keeps speech out of the memory's nodes (the paper's "
        "memories give speech only through the ASR tool; the transcript is still stored "
        "for it)",
    )
    max_transcript_chars: int = Field(
        4000, ge=0, description="transcript text of one clip sent with it (longer is cut)"
    )


class BuilderOcrSettings(StrictModel):
    engine: Literal["auto", "rapidocr", "none"] = Field(
        "auto",
        description="none: on-screen text comes from the perception model only; rapidocr: "
        "also OCRText nodes with exact times (behind the gate, about 0.1 s of CPU per frame "
        "with new text); auto: rapidocr when installed (the offline extra), else none, "
        "recorded in the build report",
    )
    interval_s: float = Field(
        2.0,
        gt=0,
        description="read one kept frame per this many seconds (an OCRText node starts less "
        "than this after its text appears); below 1 / scan.sample_fps every kept frame is read",
    )
    min_confidence: float = Field(0.6, ge=0, le=1)
    min_chars: int = Field(2, ge=1)
    gate: Literal["regions", "frame", "none"] = Field(
        "regions",
        description="what of a kept frame is read again (videotapestry/ocr/): regions: only "
        "the bands whose picture changed, and in them only the text boxes that changed "
        "(each box also compared with itself, so small print that changes is read again); "
        "frame: the whole frame when its thumbnail changed (change_threshold); none: every "
        "kept frame, whole",
    )
    region_threshold: float = Field(
        12.0,
        gt=0,
        description="gate=regions: grey-level difference (0-255) of a thumbnail cell (1/64 "
        "of the width; an eighth of a box's height inside a text box) above which it counts "
        "as changed",
    )
    change_threshold: float = Field(
        2.0,
        ge=0,
        description="gate=frame: mean grey-level difference (0-255) between 64-px thumbnails "
        "below which a kept frame counts as unchanged and is not read again; 0 reads every "
        "kept frame",
    )
    threads: int = Field(1, ge=0, description="onnxruntime threads per OCR call (0: default)")


class BuilderFrameProxySettings(StrictModel):
    """A small copy of the video in the memory directory that query-time tools decode instead
    of the original (``videotapestry.video.proxy``). Off by default: its frames are a lossy
    re-encode, so the model sees other pixels (the same moments, at the same timestamps).

    Figures (bench/bench_frame_proxy.py --minutes 60, the 640x360 textured benchmark video):
    libx264 with a keyframe every second, CRF 23, ``veryfast``, tuned for fast decoding, is
    181 MB per video-hour (the source 112), costs 4.2 s of CPU per video-minute to write, and
    decodes a random frame with 14 times less CPU than the 10-s-GOP source. All-intra was
    about 3-4 times larger in a 2-minute trial (700 MB per hour at CRF 23).
    """

    enabled: bool = Field(
        False, description="write the proxy (frame_proxy.mp4 + frame_proxy.json) beside the memory"
    )
    max_side: int | None = Field(
        None,
        ge=64,
        description="longest side of the proxy's frames; null: the largest image the agents "
        "are sent (images.frame_max_side capped by images.grid_max_side and "
        "video.decoded_max_side); never above the video's own size",
    )
    keyframe_interval_s: float = Field(
        1.0,
        ge=0,
        description="a keyframe this often (reaching a frame decodes at most this much); "
        "0: every frame a keyframe (all-intra, about 3-4 times larger)",
    )
    codec: Literal["auto", "libx264", "mpeg4"] = Field(
        "auto",
        description="auto: libx264 when PyAV's FFmpeg has it, else MPEG-4 part 2 (larger)",
    )
    crf: int = Field(23, ge=0, le=51, description="libx264 quality (lower: better, larger)")
    preset: Literal["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"] = Field(
        "veryfast", description="libx264 speed/size trade-off of the encoding"
    )


class BuilderMacroSettings(StrictModel):
    """MacroEvents: consecutive clips grouped by a text model over a sliding window."""

    window_s: float = Field(600.0, gt=0, description="clip captions shown per boundary call")
    overlap_s: float = Field(120.0, ge=0)
    min_s: float = Field(60.0, ge=0, description="shorter MacroEvents merge into a neighbour")
    max_s: float = Field(600.0, gt=0, description="longer ones are split at the weakest link")


class BuilderEntitySettings(StrictModel):
    """Entity unification across the video."""

    merge_similarity: float = Field(
        0.9, ge=0, le=1, description="name embeddings this similar merge without asking"
    )
    ask_similarity: float = Field(
        0.75, ge=0, le=1, description="from here up to merge_similarity the model confirms"
    )
    max_questions: int = Field(60, ge=0, description="candidate merges sent to the model")


class BuilderSuperSettings(StrictModel):
    target_minutes: float = Field(
        15.0, gt=0, description="typical SuperEvent length the model is asked for"
    )
    max_stages: int = Field(12, ge=1)


class BuilderFollowSettings(StrictModel):
    """Following a source that is still arriving (``build-memory SOURCE MEM --follow``)."""

    poll_s: float = Field(2.0, gt=0, description="how often the source is looked at for more")
    append_every_s: float = Field(
        60.0, gt=0, description="video seconds that arrive before the next version is built"
    )
    idle_end_s: float = Field(
        60.0,
        gt=0,
        description="a source that has not grown for this long has ended (a growing file, a "
        "live playlist without ENDLIST, a source that stays unreachable)",
    )
    keep_versions: int = Field(
        3, ge=2, description="versions kept on disk; older ones are removed once readers moved on"
    )
    fetch_timeout_s: float = Field(20.0, gt=0, description="timeout of one playlist or segment")
    segment_s: float = Field(
        10.0,
        gt=0,
        description="a stream URL (RTSP, RTMP, SRT) is recorded in MPEG-TS segments of about "
        "this many seconds, each cut at a video keyframe; a kill loses at most the one being "
        "recorded",
    )
    revise_every_s: float = Field(
        0.0,
        ge=0,
        description="video seconds between revisions of the last SuperEvent and the root (a "
        "call each); 0 revises them with every version. In between, new MacroEvents join the "
        "last SuperEvent, whose text stays as it was",
    )


class BuilderConfig(StrictModel):
    """Building a memory from a raw video (memory_builders/, SPEC §4)."""

    concurrency: int = Field(8, ge=1, le=256, description="model calls in flight")
    cpu_workers: int = Field(
        2, ge=1, le=64, description="threads for decoding kept frames, OCR and JPEG encoding"
    )
    max_failed_share: float = Field(
        0.2, ge=0, le=1, description="stop the build when more clips than this share fail"
    )
    keep_frames: bool = Field(
        False, description="keep the decoded frames after a complete build (faster rebuilds)"
    )
    embeddings: bool = Field(True, description="compute node embeddings into the memory")
    scan: BuilderScanSettings = BuilderScanSettings()
    #: The optional frame proxy for query-time decoding (off by default).
    frame_proxy: BuilderFrameProxySettings = BuilderFrameProxySettings()
    clips: BuilderClipSettings = BuilderClipSettings()
    transcript: BuilderTranscriptSettings = BuilderTranscriptSettings()
    perception: BuilderPerceptionSettings = BuilderPerceptionSettings()
    ocr: BuilderOcrSettings = BuilderOcrSettings()
    macro: BuilderMacroSettings = BuilderMacroSettings()
    entities: BuilderEntitySettings = BuilderEntitySettings()
    super_events: BuilderSuperSettings = BuilderSuperSettings()
    follow: BuilderFollowSettings = BuilderFollowSettings()
