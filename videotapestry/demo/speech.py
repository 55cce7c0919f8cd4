"""The narrator's voice: committed speech clips, and the one-off path that re-creates them.

espeak-ng is a system package that CI machines and users rarely have, so its output is
committed: one small Ogg/Opus clip per sentence (16 kHz mono) plus ``manifest.json`` with
each clip's text, length and where the voice starts and stops in it (first and last sample
above a loudness threshold, measured on the decoded clip, so the timeline matches what is
muxed). Generating the sample only decodes these clips; ``resynthesize`` (the generator's
``--resynthesize``) is the only code that runs espeak-ng.

A manifest whose sentences differ from ``script.STRETCHES`` is refused: the shipped answers
would describe speech the video does not contain.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np

from videotapestry.asr.audio import SAMPLE_RATE, decode_audio_window
from videotapestry.demo.script import ClipTiming, Sentence, all_sentences
from videotapestry.errors import SampleVideoError, TranscriptionError

SPEECH_DIR = Path(__file__).resolve().parent / "data" / "speech"
MANIFEST = "manifest.json"
VOICE = ("-v", "en-us", "-s", "150")
#: Opus at this rate keeps a sentence near 10 kB and Whisper's words unchanged.
OPUS_BIT_RATE = 24000
#: Peak level of a clip (espeak-ng writes near full scale).
LEVEL = 0.8
#: A sample louder than this counts as voice when finding a clip's onset and offset.
LOUDNESS = 0.02


@dataclass(frozen=True)
class SpeechClip:
    id: str
    text: str
    file: str
    duration_s: float
    onset_s: float
    offset_s: float

    @property
    def timing(self) -> ClipTiming:
        return ClipTiming(self.duration_s, self.onset_s, self.offset_s)


@dataclass(frozen=True)
class SpeechAssets:
    directory: Path
    voice: str
    clips: dict[str, SpeechClip]

    def timings(self) -> dict[str, ClipTiming]:
        return {clip_id: clip.timing for clip_id, clip in self.clips.items()}

    def samples(self, clip_id: str) -> np.ndarray:
        """The clip's 16 kHz mono float32 samples."""
        clip = self.clips[clip_id]
        return read_clip(self.directory / clip.file)


def read_clip(path: Path) -> np.ndarray:
    if not path.is_file():
        raise SampleVideoError(
            f"speech clip {path} is missing; run the generator with --resynthesize "
            "(needs espeak-ng)"
        )
    try:
        samples, _start = decode_audio_window(path, 0.0, 3600.0)
    except TranscriptionError as exc:
        raise SampleVideoError(f"cannot decode speech clip {path}: {exc}") from None
    return samples


def load_speech(directory: Path = SPEECH_DIR) -> SpeechAssets:
    """The committed clips, checked against the sentences the script says are spoken."""
    path = directory / MANIFEST
    if not path.is_file():
        raise SampleVideoError(
            f"no speech manifest at {path}; run the generator with --resynthesize "
            "(needs espeak-ng) to create the speech clips"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        clips = {
            item["id"]: SpeechClip(
                item["id"],
                item["text"],
                item["file"],
                float(item["duration_s"]),
                float(item["onset_s"]),
                float(item["offset_s"]),
            )
            for item in record["clips"]
        }
        voice = str(record["voice"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SampleVideoError(f"speech manifest {path} is malformed: {exc!r}") from None
    stale = [s.id for s in all_sentences() if s.id not in clips or clips[s.id].text != s.text]
    if stale:
        raise SampleVideoError(
            f"the speech clips in {directory} do not say what the script says for "
            f"{', '.join(stale)}; run the generator with --resynthesize (needs espeak-ng)"
        )
    return SpeechAssets(directory, voice, clips)


# --------------------------------------------------------------------------- synthesis


def voice_activity(samples: np.ndarray, threshold: float = LOUDNESS) -> tuple[float, float]:
    """Seconds from the clip's start to its first and last sample louder than ``threshold``."""
    loud = np.flatnonzero(np.abs(samples) > threshold)
    if not len(loud):
        return 0.0, 0.0
    return float(loud[0]) / SAMPLE_RATE, float(loud[-1] + 1) / SAMPLE_RATE


def _espeak(text: str, workdir: Path) -> np.ndarray:
    from scipy.io import wavfile
    from scipy.signal import resample_poly

    wav = workdir / "sentence.wav"
    result = subprocess.run(["espeak-ng", *VOICE, "-w", str(wav), text], capture_output=True)
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip()
        raise SampleVideoError(f"espeak-ng failed on {text!r}: {reason}")
    rate, samples = wavfile.read(wav)
    audio = samples.astype(np.float32) / 32768.0
    divisor = gcd(SAMPLE_RATE, rate)
    audio = resample_poly(audio, SAMPLE_RATE // divisor, rate // divisor).astype(np.float32)
    peak = float(np.abs(audio).max()) or 1.0
    return audio * (LEVEL / peak)


def write_opus(path: Path, samples: np.ndarray) -> None:
    """Mono 16 kHz Opus in an Ogg file."""
    import av

    with av.open(str(path), "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=SAMPLE_RATE, layout="mono")
        stream.bit_rate = OPUS_BIT_RATE
        chunk = 960
        for offset in range(0, len(samples), chunk):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples[None, offset : offset + chunk]),
                format="flt",
                layout="mono",
            )
            frame.sample_rate = SAMPLE_RATE
            frame.pts = offset
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def _espeak_version() -> str:
    result = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True)
    return result.stdout.split("Data at")[0].strip() or "espeak-ng"


def resynthesize(directory: Path = SPEECH_DIR, sentences: list[Sentence] | None = None) -> Path:
    """Speak every sentence with espeak-ng and write the clips and their manifest."""
    if shutil.which("espeak-ng") is None:
        raise SampleVideoError(
            "--resynthesize needs espeak-ng (apt-get install -y espeak-ng); the committed "
            "clips work without it"
        )
    sentences = all_sentences() if sentences is None else sentences
    directory.mkdir(parents=True, exist_ok=True)
    previous = _listed_files(directory / MANIFEST)
    items = []
    with tempfile.TemporaryDirectory() as tmp:
        for sentence in sentences:
            name = f"{sentence.id}.ogg"
            write_opus(directory / name, _espeak(sentence.text, Path(tmp)))
            decoded = read_clip(directory / name)
            onset, offset = voice_activity(decoded)
            items.append(
                {
                    "id": sentence.id,
                    "text": sentence.text,
                    "file": name,
                    "duration_s": round(len(decoded) / SAMPLE_RATE, 4),
                    "onset_s": round(onset, 4),
                    "offset_s": round(offset, 4),
                }
            )
    record = {
        "voice": f"{_espeak_version()} {' '.join(VOICE)}",
        "sample_rate": SAMPLE_RATE,
        "codec": f"opus {OPUS_BIT_RATE // 1000} kb/s, ogg",
        "clips": items,
    }
    path = directory / MANIFEST
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    for name in previous - {item["file"] for item in items}:  # clips of dropped sentences
        (directory / name).unlink(missing_ok=True)
    return path


def _listed_files(manifest: Path) -> set[str]:
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
        return {Path(item["file"]).name for item in record["clips"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
