"""Whisper real-time factor: the packaged tiny.en, int8, CPU (the offline profile).

Two inputs, both transcribed without the transcript cache:

- the committed speech fixture (36 s, about half of it silence that VAD skips);
- a dense-speech video built from the fixture's six sentences, cut out by the ground-truth
  times and chained with 0.3 s pauses to ``--minutes`` of speech (cached in bench/.cache/),
  which is the fair case: VAD can skip almost nothing.

Real-time factor = audio seconds / seconds of work (audio decoding + recognition); model
loading is reported separately. Word error rate against the known sentences is printed too,
so a faster setting that loses words shows up. Goal: >= 20x on 2 cores.

    python bench/bench_asr_rtf.py [--minutes 5] [--beams 1 5] [--threads 0] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import jiwer
import numpy as np
from benchkit import cache_dir, smoke

from videotapestry.asr import WhisperTranscriber
from videotapestry.asr.audio import SAMPLE_RATE, decode_audio_window
from videotapestry.config import load_config
from videotapestry.testing.media import make_test_video
from videotapestry.video import TimeWindow, probe

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "speech.mp4"
TRUTH = ROOT / "tests" / "fixtures" / "speech.json"
#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "0.25", "--beams", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^cores: \d+; model: packaged:tiny\.en",
    r"^input +beam +threads +audio +work +x real time +WER +load",
    r"^fixture 36 s \(sparse\) +\d",
    r"^dense_speech_\S+ +\d",
)


def dense_speech_video(minutes: float) -> Path:
    path = cache_dir(f"dense_speech_{minutes:g}min.mp4")
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


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]+", " ", text.lower()).split()


def measure(path: Path, beam: int, threads: int) -> dict[str, float]:
    overrides = [f"asr.beam_size={beam}", f"asr.cpu_threads={threads}"]
    asr = load_config(profile="offline", overrides=overrides).asr
    transcriber = WhisperTranscriber(asr, cache=None)
    started = time.perf_counter()
    transcriber._load()
    load_s = time.perf_counter() - started
    info = probe(path)
    lines = transcriber.transcribe(info, [TimeWindow(0.0, info.duration_s)])
    stats = transcriber.stats
    spoken = [w for line in lines for w in words(line.text)]
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    block = [w for sentence in truth["sentences"] for w in words(sentence["text"])]
    repeats = max(1, round(len(spoken) / len(block)))  # the dense video repeats the block
    return {
        "load_s": load_s,
        "audio_s": stats.audio_seconds,
        "work_s": stats.decode_seconds + stats.recognize_seconds,
        "wer": jiwer.wer(" ".join(block * repeats), " ".join(spoken)),
    }


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--threads", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    dense = dense_speech_video(args.minutes)
    print(f"cores: {os.cpu_count()}; model: packaged:tiny.en, int8, VAD, word timestamps")
    print(
        f"{'input':<24} {'beam':>4} {'threads':>7} {'audio':>6} {'work':>6} {'x real time':>11} "
        f"{'WER':>6} {'load':>5}"
    )
    for threads in args.threads:
        for beam in args.beams:
            for name, path in (("fixture 36 s (sparse)", FIXTURE), (dense.stem, dense)):
                r = measure(path, beam, threads)
                print(
                    f"{name:<24} {beam:>4} {threads:>7} {r['audio_s']:>5.0f}s {r['work_s']:>5.1f}s "
                    f"{r['audio_s'] / r['work_s']:>10.1f}x {r['wer']:>6.1%} {r['load_s']:>4.1f}s"
                )


if __name__ == "__main__":
    main()
