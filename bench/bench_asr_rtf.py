"""Whisper real-time factor: the packaged tiny.en, int8, CPU (the offline profile).

Two inputs, both transcribed without the transcript cache:

- the committed speech fixture (36 s, about half of it silence that VAD skips);
- a dense-speech video built from the fixture's six sentences, cut out by the ground-truth
  times and chained with 0.3 s pauses to ``--minutes`` of speech (cached in bench/.cache/),
  which is the fair case: VAD can skip almost nothing.

Real-time factor = audio seconds / seconds of work (audio decoding + recognition); model
loading is reported separately. Goal: >= 20x on 2 cores.

    python bench/bench_asr_rtf.py [--minutes 5] [--threads 0 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from videotapestry.asr import WhisperTranscriber
from videotapestry.asr.audio import SAMPLE_RATE, decode_audio_window
from videotapestry.config import load_config
from videotapestry.testing.media import make_test_video
from videotapestry.video import TimeWindow, probe

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "speech.mp4"
TRUTH = ROOT / "tests" / "fixtures" / "speech.json"
CACHE = ROOT / "bench" / ".cache"


def dense_speech_video(minutes: float) -> Path:
    path = CACHE / f"dense_speech_{minutes:g}min.mp4"
    if path.exists():
        return path
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    audio, offset = decode_audio_window(FIXTURE, 0.0, truth["duration_s"])
    pieces = []
    for sentence in truth["sentences"]:
        first = int((sentence["start_s"] - offset - 0.05) * SAMPLE_RATE)
        last = int((sentence["end_s"] - offset + 0.1) * SAMPLE_RATE)
        pieces += [audio[max(0, first) : last], np.zeros(int(0.3 * SAMPLE_RATE), np.float32)]
    block = np.concatenate(pieces)
    total = int(minutes * 60 * SAMPLE_RATE)
    speech = np.resize(block, total).astype(np.float32)  # repeats the block to the length
    make_test_video(path, minutes * 60, fps=1.0, size=(192, 108), audio=speech)
    return path


def measure(path: Path, threads: int) -> tuple[float, float, float]:
    asr = load_config(profile="offline", overrides=[f"asr.cpu_threads={threads}"]).asr
    transcriber = WhisperTranscriber(asr, cache=None)
    started = time.perf_counter()
    transcriber._load()
    load_s = time.perf_counter() - started
    info = probe(path)
    lines = transcriber.transcribe(info, [TimeWindow(0.0, info.duration_s)])
    stats = transcriber.stats
    assert lines, "no speech recognized"
    return load_s, stats.audio_seconds, stats.decode_seconds + stats.recognize_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    dense = dense_speech_video(args.minutes)
    print(f"cores: {os.cpu_count()}; model: packaged:tiny.en, int8, beam 5, VAD, word times")
    for threads in args.threads:
        for name, path in (("fixture (36 s, sparse)", FIXTURE), (f"dense {dense.stem}", dense)):
            load_s, audio_s, work_s = measure(path, threads)
            print(
                f"cpu_threads={threads}: {name}: {audio_s:.0f} s audio in {work_s:.1f} s "
                f"-> {audio_s / work_s:.1f}x real time (model load {load_s:.1f} s)"
            )


if __name__ == "__main__":
    main()
