"""What the offline model costs: a cold build and full-method questions (not a test).

A generated tour video (one sign of scene text at a time, a new one every ``--sign-s``
seconds, with a subtitle line in each; ``videotapestry.testing.builder_media``), built cold
with ``--profile offline`` and then asked a few questions whose answers are on the signs.
Prints the build's wall time by stage and, per question, the wall time, the time spent in
OCR and in embeddings inside the offline model, the OCR passes, and whether the answer was
right. The model loads (MiniLM, rapidocr) are inside the first build and question.

    python bench/bench_offline_model.py [--minutes 15] [--size 640x360] [--fps 2] [--smoke]

``--questions N`` asks only the first N of the four questions, for a quick run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from pathlib import Path

from benchkit import smoke

from videotapestry.api import VideoTapestry
from videotapestry.config import load_config
from videotapestry.llm.client import default_client_factories
from videotapestry.llm.service import ModelService
from videotapestry.offline import OfflineClientFactory
from videotapestry.testing.builder_media import (
    ScheduledText,
    make_text_schedule_video,
)

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print.
SMOKE_ARGS = ("--minutes", "0.75", "--sign-s", "8", "--fps", "1", "--questions", "1")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^video: \S+ min \d+x\d+ \S+ fps, \d+ signs, written in ",
    r"^cold build: \S+ s \(\d+ MacroEvents, \d+ SuperEvents\); offline model: OCR ",
    r"^  builder timings: ",
    r"^'What is the exit code shown on the sign\?': \S* \(right: [A-C]\) in .* images, degraded ",
    r"^questions: \S+ s for \d+; build \+ questions ",
)
PLACES = ("GATE", "DOCK", "BAY", "HALL", "YARD", "PIER", "DECK", "WING", "LANE", "ZONE")


def tour(minutes: float, sign_s: float, seed: int = 3):
    """Signs "<PLACE> <n>" and, among them, the facts the questions ask about."""
    rng = random.Random(seed)
    count = int(minutes * 60 // sign_s)
    signs = [f"{PLACES[k % len(PLACES)]} {rng.randint(10, 99)}" for k in range(count)]
    facts = {
        "What is the exit code shown on the sign?": ("EXIT CODE 4417", ["1447", "4417", "7144"]),
        "What pressure does pump 3 show?": ("PUMP 3 PRESSURE 80", ["60", "80", "95"]),
        "At what time does the shift end?": ("SHIFT ENDS AT 18:00", ["16:00", "17:30", "18:00"]),
        "Which room number is the control room?": ("CONTROL ROOM 214", ["114", "214", "241"]),
    }
    slots = rng.sample(range(1, count), len(facts))
    questions = []
    for slot, (question, (sign, options)) in zip(slots, facts.items(), strict=True):
        signs[slot] = sign
        letter = "ABC"[options.index(sign.split()[-1])]
        questions.append((question, [f"{'ABC'[i]}. {o}" for i, o in enumerate(options)], letter))
    schedule = [ScheduledText(text, k * sign_s, (k + 1) * sign_s) for k, text in enumerate(signs)]
    cues = [
        (k * sign_s + 3, k * sign_s + 7, f"Here we pass {text.lower()}.")
        for k, text in enumerate(signs)
    ]
    return schedule, cues, questions


def write_srt(path: Path, cues) -> Path:
    def stamp(t: float) -> str:
        return f"{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{int(t % 60):02d},000"

    path.write_text(
        "\n".join(f"{i}\n{stamp(s)} --> {stamp(e)}\n{x}\n" for i, (s, e, x) in enumerate(cues, 1)),
        encoding="utf-8",
    )
    return path


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--sign-s", type=float, default=30.0)
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--fps", type=float, default=2.0)
    parser.add_argument("-o", "--override", action="append", default=[])
    parser.add_argument("--questions", type=int, help="ask only the first N questions")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    work = Path(tempfile.mkdtemp(prefix="bench-offline-"))
    try:
        schedule, cues, questions = tour(args.minutes, args.sign_s)
        questions = questions[: args.questions]
        started = time.perf_counter()
        video, _ = make_text_schedule_video(
            work / "tour.mp4",
            schedule,
            args.minutes * 60,
            fps=args.fps,
            size=(width, height),
            colour_s=90,
            frame_code=False,
        )
        subtitles = write_srt(work / "tour.srt", cues)
        print(
            f"video: {args.minutes:g} min {width}x{height} {args.fps:g} fps, "
            f"{len(schedule)} signs, written in {time.perf_counter() - started:.1f} s"
        )

        config = load_config(profile="offline", overrides=["cache.enabled=false", *args.override])
        factory = OfflineClientFactory()
        service = ModelService(
            config, client_factories={**default_client_factories(), "offline": factory}
        )
        vt = VideoTapestry(config, service=service)
        started = time.perf_counter()
        built = vt.build_memory(video, work / "memory", subtitles)
        wall = time.perf_counter() - started
        perception = factory.perception
        print(
            f"cold build: {wall:.1f} s ({len(built.memory.macro_events())} MacroEvents, "
            f"{len(built.memory.super_events())} SuperEvents); offline model: OCR "
            f"{perception.ocr_s:.1f} s / {perception.images_read} passes, embeddings "
            f"{perception.embed_s:.1f} s (incl. the MiniLM load)"
        )
        for name, stage in built.report.stages.items():
            if stage.wall_s >= 0.05:
                print(f"  {name:<14} {stage.wall_s:6.1f} s")
        timings = getattr(built.report, "timings", None) or {}
        if timings:
            shown = [
                f"{k} {v:.0f}" if "frames" in k else f"{k} {v:.1f} s" for k, v in timings.items()
            ]
            print("  builder timings:", ", ".join(shown))

        total = 0.0
        for question, options, letter in questions:
            ocr, passes, embed = perception.ocr_s, perception.images_read, perception.embed_s

            async def run(question=question, options=options):
                try:
                    return await vt.aanswer(video, work / "memory", question, options)
                finally:
                    await vt.aclose()

            started = time.perf_counter()
            result = asyncio.run(run())
            spent = time.perf_counter() - started
            total += spent
            print(
                f"{question!r}: {result.answer} (right: {letter}) in {spent:.1f} s; OCR "
                f"{perception.ocr_s - ocr:.1f} s / {perception.images_read - passes} passes, "
                f"embeddings {perception.embed_s - embed:.1f} s, {result.usage.calls} calls, "
                f"{result.usage.images} images, degraded {len(result.degraded)}"
            )
        print(
            f"questions: {total:.1f} s for {len(questions)}; build + questions {wall + total:.1f} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
