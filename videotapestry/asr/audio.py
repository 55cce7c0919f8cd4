"""Decoding just one window of a video's audio, as 16 kHz mono float32 for Whisper.

``faster_whisper.decode_audio`` reads a whole file; for a ten-minute window of a two-hour
video that is twelve times the work. Here PyAV seeks to the window's start (to the audio
packet at or before it), decodes and resamples forward, and stops at the window's end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videotapestry.errors import TranscriptionError

SAMPLE_RATE = 16000


def decode_audio_window(
    path: str | Path, start_s: float, end_s: float, sample_rate: int = SAMPLE_RATE
) -> tuple[np.ndarray, float]:
    """Mono float32 samples of ``[start_s, end_s]`` and the time of the first one.

    The first sample's time is the window start, or later when the audio itself starts later.
    A file without an audio stream gives an empty array.
    """
    import av

    if end_s < start_s:
        raise ValueError(f"audio window [{start_s}, {end_s}] ends before it starts")
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, ValueError) as exc:
        raise TranscriptionError(f"cannot open the audio of {path}: {exc}") from None
    with container:
        if not container.streams.audio:
            return np.zeros(0, dtype=np.float32), start_s
        stream = container.streams.audio[0]
        stream.codec_context.thread_type = "AUTO"
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        if start_s > 0 and stream.time_base:
            container.seek(int(start_s / stream.time_base), stream=stream, backward=True)
        chunks: list[np.ndarray] = []
        first_time: float | None = None
        try:
            for frame in container.decode(stream):
                if frame.time is not None and frame.time > end_s:
                    break
                if first_time is None:
                    first_time = float(frame.time or 0.0)
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
        except av.error.FFmpegError as exc:
            raise TranscriptionError(f"cannot decode the audio of {path}: {exc}") from None
    if not chunks or first_time is None:
        return np.zeros(0, dtype=np.float32), start_s
    samples = np.concatenate(chunks).astype(np.float32, copy=False)
    begin = max(0, round((start_s - first_time) * sample_rate))
    stop = max(begin, round((end_s - first_time) * sample_rate))
    return samples[begin:stop], max(start_s, first_time)
