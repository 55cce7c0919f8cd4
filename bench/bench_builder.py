"""Cost of building a memory from a raw video (not a test; prints figures).

The 60-minute 640x360 H.264 benchmark video (long GOPs, a moving texture, a ticking clock
and frame counter burned into every frame, a new scene every 60 s; generated once into
bench/.cache/ by bench_video_sampling.py's helper), the real builder, and a cheap scripted
model on the fake OpenAI-compatible server (replies computed from the prompt text only, so
the server spends almost no CPU of its own).

1. Framework time per video-minute with a zero-latency server: the whole build's wall time
   minus the time spent waiting for model replies (and ASR: the video has no audio), with
   the costs the builder measures itself (decoding and shot detection in the scan, OCR,
   reading kept frames, JPEG encoding, embeddings). Run without OCR (builder.ocr.engine=
   none), with rapidocr behind the region gate (builder.ocr.gate=regions, the default) and,
   as the reference in the same run, behind the whole-frame gate (gate=frame, the gate
   before the region gate, which reads every kept frame of this video whole). Goals: <= 2 s
   per video-minute with OCR, <= 0.6 without. The clock and counter change every second, so
   every kept frame has new text: the OCR figure is the worst case (text that never stands
   still), not the typical one. CPU seconds of the process over the run's wall time say how
   many of the cores the build kept busy.
2. Perception with 0.5 s injected latency per call and concurrency 8: the stage's wall time
   against the ideal, calls x 0.5 s / 8 (the scan and OCR come from checkpoints, so the
   stage only reads kept frames, encodes grids and calls). Goal: <= 1.25x ideal + the
   stage's own CPU time.
3. Calls, images and tokens per video-hour, by stage (tokens are the fake server's estimate:
   characters / 4 + 85 per image; a real VLM charges more for a 768-px grid image).

    python bench/bench_builder.py [--minutes 60] [--ocr all|regions|frame|off] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_video_sampling import long_video
from benchkit import smoke

from memory_builders.builder import MemoryBuilder
from memory_builders.progress import BuildProgress
from videotapestry.config import EmbeddingConfig, load_config
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_scenes
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, offline_build_overrides
from videotapestry.timecode import format_timestamp
from videotapestry.video import probe

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "0.25")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: long_\S+, \d+ min, \d+x\d+, \S+ fps; \d+ CPUs",
    r"^1\. framework time \(zero-latency server\), per video-minute",
    r"^  OCR regions +wall .* s/video-min +\(\d+ clips; process CPU ",
    r"^  OCR frame +wall .* s/video-min +\(\d+ clips; process CPU ",
    r"^  OCR off +wall .* s/video-min +\(\d+ clips; process CPU ",
    r"^    top costs \(thread-seconds\): ",
    r"^    OCR read \S+ of \S+ kept frames: \S+ detector calls, ",
    r"^  region gate / whole-frame gate, this run: framework ",
    r"^2\. perception at \S+ s per call, concurrency \d+: \d+ calls, wall ",
    r"^3\. per video-hour, by stage \(zero-latency run, OCR ",
    r"^  stage +calls +images +prompt tok +completion",
    r"^  perception +\d",
)
LATENCY_S = 0.5
CONCURRENCY = 8
_CLIP = re.compile(r"Clip (clip_\d+): (\S+) to (\S+) of")


def seconds(clock: str) -> float:
    value = 0.0
    for part in clock.split(":"):
        value = value * 60 + float(part)
    return value


def cheap_model(scenes) -> ScriptedBuilderModel:
    """The scripted builder model, with a perception reply made from the prompt text alone
    (the clip's time span), not from decoding the images."""

    def scene_at(t: float):
        return next((s for s in scenes if s.start_s <= t < s.end_s), scenes[-1])

    def perceive(request) -> dict:
        match = _CLIP.search(request.text)
        clip, start, end = match.group(1), seconds(match.group(2)), seconds(match.group(3))
        scene = scene_at((start + end) / 2)
        place = scene.text.split()[-1].title()
        seen = format_timestamp(start)
        return {
            "caption": f"A guide is in the {place.lower()} under the sign {scene.text}.",
            "entities": [
                {"id": "e1", "name": "Guide Anna", "type": "person", "seen_at": seen},
                {"id": "e2", "name": place, "type": "place", "seen_at": seen},
            ],
            "events": [
                {
                    "action": f"walks through the {place.lower()}",
                    "subject_ids": ["e1"],
                    "object_ids": ["e2"],
                    "time_range": [seen, format_timestamp(end)],
                }
            ],
            "on_screen_text": [{"text": scene.text, "type": "sign", "seen_at": seen}],
            "_clip": clip,
        }

    return ScriptedBuilderModel(25.0, scenes, overrides={"builder_clip": perceive})


def build(server, embedder, video: Path, out: Path, *overrides: str):
    config = load_config(
        overrides=offline_build_overrides(server.base_url, "cache.enabled=false", *overrides)
    )
    builder = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False))
    started = time.perf_counter()
    result = builder.build(video, out)
    return result, time.perf_counter() - started, builder.service.usage.records


#: Label -> the OCR overrides of a run.
MODES = {
    "regions": ("builder.ocr.engine=rapidocr", "builder.ocr.gate=regions"),
    "frame": ("builder.ocr.engine=rapidocr", "builder.ocr.gate=frame"),
    "off": ("builder.ocr.engine=none",),
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def framework_run(embedder, video: Path, minutes: float, ocr: str, work: Path) -> dict:
    scenes = make_scenes(probe(video).duration_s, 60.0)
    out = work / f"fw-{ocr}"
    with FakeOpenAIServer() as server:
        server.on(None, cheap_model(scenes))
        cpu = cpu_seconds()
        result, wall, records = build(
            server, embedder, video, out, *MODES[ocr], "builder.keep_frames=true"
        )
        cpu = cpu_seconds() - cpu
    report = result.report
    # Time the build spent waiting for replies: perception waits overlap (concurrency), so
    # each stage contributes its calls' summed latency divided by its achieved parallelism,
    # bounded by the stage's wall time.
    waiting = 0.0
    for name, stage in report.stages.items():
        latency = sum(r.latency_s for r in records if _stage_of(r) == name)
        waiting += min(stage.wall_s, latency / (CONCURRENCY if name == "perception" else 1))
    framework = wall - waiting - report.timings.get("asr", 0.0)
    return {
        "ocr": ocr,
        "wall_s": wall,
        "cpu_s": cpu,
        "model_wait_s": waiting,
        "framework_s": framework,
        "per_minute_s": framework / minutes,
        "timings": report.timings,
        "stages": report.stages,
        "out": out,
        "clips": report.clips,
    }


def _stage_of(record) -> str:
    return {
        "clip": "perception",
        "builder_macro_boundaries": "macro_bounds",
        "builder_macro": "macro_events",
        "builder_entity_merge": "entities",
        "builder_super": "super_events",
        "builder_root": "root",
    }.get(record.level or "", record.level or "")


def latency_run(embedder, video: Path, source: Path, ocr: tuple[str, ...], work: Path) -> dict:
    """Perception again, from the first run's scan and OCR checkpoints, at 0.5 s a call."""
    out = work / "latency"
    shutil.copytree(source, out)
    for name in ("perception", "boundaries", "macro"):
        shutil.rmtree(out / "build" / name, ignore_errors=True)
    for name in ("super", "root", "entities", "caption_similarity", "merge_plan"):
        (out / "build" / f"{name}.json").unlink(missing_ok=True)
    scenes = make_scenes(probe(video).duration_s, 60.0)
    with FakeOpenAIServer(latency_s=LATENCY_S) as server:
        server.on(None, cheap_model(scenes))
        result, _, _ = build(
            server,
            embedder,
            video,
            out,
            "builder.keep_frames=true",
            *ocr,
            f"builder.concurrency={CONCURRENCY}",
            f"models.max_concurrency_per_endpoint={CONCURRENCY}",
        )
    stage = result.report.stages["perception"]
    calls = stage.usage["calls"]
    cpu = result.report.timings.get("frames_load", 0.0) + result.report.timings.get("jpeg", 0.0)
    ideal = calls * LATENCY_S / CONCURRENCY
    return {"wall_s": stage.wall_s, "calls": calls, "ideal_s": ideal, "cpu_s": cpu}


def print_run(run: dict, minutes: float) -> None:
    print(
        f"  OCR {run['ocr']:<9} wall {run['wall_s']:7.1f} s, model wait "
        f"{run['model_wait_s']:5.1f} s, framework {run['framework_s']:7.1f} s = "
        f"{run['per_minute_s']:.2f} s/video-min  ({run['clips']} clips; process CPU "
        f"{run['cpu_s']:.1f} s = {run['cpu_s'] / minutes:.2f} s/video-min, "
        f"{run['cpu_s'] / run['wall_s']:.2f} cores busy)",
        flush=True,
    )
    costs = {k: v for k, v in run["timings"].items() if isinstance(v, float)}
    top = sorted(costs.items(), key=lambda kv: -kv[1])[:8]
    print("    top costs (thread-seconds): " + ", ".join(f"{k} {v:.1f}" for k, v in top))
    timings = run["timings"]
    if timings.get("ocr_frames"):
        print(
            f"    OCR read {timings['ocr_frames_read']} of {timings['ocr_frames']} kept "
            f"frames: {timings.get('ocr_detector_calls', 0)} detector calls, "
            f"{timings.get('ocr_boxes_recognized', 0)} boxes recognized, "
            f"{timings.get('ocr_boxes_kept', 0)} kept"
        )


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--ocr", choices=("all", *MODES), default="all")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-builder")
    video = long_video(args.minutes)
    info = probe(video)
    print(
        f"video: {video.name}, {info.duration_s / 60:.0f} min, {info.width}x{info.height}, "
        f"{info.fps:g} fps; {os.cpu_count()} CPUs",
        flush=True,
    )
    embedder = SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )
    embedder.embed(["warm up"])  # the model load is a one-off, not a per-minute cost
    modes = tuple(MODES) if args.ocr == "all" else (args.ocr,)
    work = Path(tempfile.mkdtemp(prefix="bench-builder-"))
    try:
        print("\n1. framework time (zero-latency server), per video-minute", flush=True)
        runs = []
        for mode in modes:
            runs.append(framework_run(embedder, video, args.minutes, mode, work))
            print_run(runs[-1], args.minutes)
        by_mode = {run["ocr"]: run for run in runs}
        if "regions" in by_mode and "frame" in by_mode:
            gated, reference = by_mode["regions"], by_mode["frame"]
            print(
                f"  region gate / whole-frame gate, this run: framework "
                f"{gated['framework_s'] / reference['framework_s']:.2f}x, OCR thread-seconds "
                f"{gated['timings']['ocr'] / reference['timings']['ocr']:.2f}x, process CPU "
                f"{gated['cpu_s'] / reference['cpu_s']:.2f}x"
            )
        latency = latency_run(embedder, video, runs[0]["out"], MODES[runs[0]["ocr"]], work)
        ratio = latency["wall_s"] / latency["ideal_s"]
        print(
            f"\n2. perception at {LATENCY_S} s per call, concurrency {CONCURRENCY}: "
            f"{latency['calls']} calls, wall {latency['wall_s']:.1f} s vs ideal "
            f"{latency['ideal_s']:.1f} s = {ratio:.2f}x (stage CPU {latency['cpu_s']:.1f} s; "
            f"goal <= 1.25x ideal + CPU = {1.25 * latency['ideal_s'] + latency['cpu_s']:.1f} s)"
        )
        hours = args.minutes / 60
        print(f"\n3. per video-hour, by stage (zero-latency run, OCR {runs[0]['ocr']})")
        print(f"  {'stage':<14}{'calls':>8}{'images':>8}{'prompt tok':>12}{'completion':>12}")
        for name, stage in runs[0]["stages"].items():
            usage = stage.usage
            if not usage.get("calls"):
                continue
            calls, images = usage["calls"] / hours, usage["images"] / hours
            prompt, completion = usage["prompt_tokens"] / hours, usage["completion_tokens"] / hours
            print(f"  {name:<14}{calls:>8.0f}{images:>8.0f}{prompt:>12.0f}{completion:>12.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
