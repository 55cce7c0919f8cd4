"""Video tools: reading frames with true timestamps, window rules, grids and JPEG encoding."""

from videotapestry.timecode import format_timestamp
from videotapestry.video.container import VideoInfo, decode_size, fingerprint, probe, width_size
from videotapestry.video.encoding import (
    FrameTimestamps,
    encode_jpeg,
    frame_images,
    individual_frame_budget,
    overview_frame_budget,
    overview_images,
    stamp_frame,
)
from videotapestry.video.frame_cache import FrameCache
from videotapestry.video.frame_workers import (
    FrameJob,
    FrameWorkers,
    RenderedFrames,
    frame_workers_for,
    render_frames,
)
from videotapestry.video.grids import FrameGrid, pack_grids
from videotapestry.video.proxy import (
    PROXY_FILE,
    PROXY_MANIFEST,
    ProxyLookup,
    ProxyManifest,
    ProxyReader,
    find_proxy,
    has_proxy,
    proxy_max_side,
    remove_proxy,
    write_proxy,
)
from videotapestry.video.reader import (
    DecordReader,
    Frame,
    OpenCVReader,
    PyAVReader,
    VideoReader,
    open_video,
    with_cache,
)
from videotapestry.video.render_cache import RenderCache, render_key
from videotapestry.video.sampling import (
    decode_indices,
    sample_uniform,
    sample_windows,
    uniform_indices,
    window_indices,
)
from videotapestry.video.sequential import PassFrame, RateSampler, SequentialPass
from videotapestry.video.windows import (
    TimeWindow,
    asr_windows,
    observation_windows,
    visual_window,
)

__all__ = [
    "PROXY_FILE",
    "PROXY_MANIFEST",
    "DecordReader",
    "Frame",
    "FrameCache",
    "FrameGrid",
    "FrameJob",
    "FrameTimestamps",
    "FrameWorkers",
    "OpenCVReader",
    "PassFrame",
    "ProxyLookup",
    "ProxyManifest",
    "ProxyReader",
    "PyAVReader",
    "RateSampler",
    "RenderCache",
    "RenderedFrames",
    "SequentialPass",
    "TimeWindow",
    "VideoInfo",
    "VideoReader",
    "asr_windows",
    "decode_indices",
    "decode_size",
    "encode_jpeg",
    "find_proxy",
    "fingerprint",
    "format_timestamp",
    "frame_images",
    "frame_workers_for",
    "has_proxy",
    "individual_frame_budget",
    "observation_windows",
    "open_video",
    "overview_frame_budget",
    "overview_images",
    "pack_grids",
    "probe",
    "proxy_max_side",
    "remove_proxy",
    "render_frames",
    "render_key",
    "sample_uniform",
    "sample_windows",
    "stamp_frame",
    "uniform_indices",
    "visual_window",
    "width_size",
    "window_indices",
    "with_cache",
    "write_proxy",
]
