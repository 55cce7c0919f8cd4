"""``videotapestry demo``: the sample video, its memory and its questions, no key needed.

Exit status: 0 when every question is answered right, 1 when some answer is wrong, 3 when
all are right but a run lost part of the method (each loss is printed), 2 on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from videotapestry.commands.common import (
    EXIT_DEGRADED,
    AddConfigOptions,
    citation_lines,
    config_overrides,
)
from videotapestry.demo.runner import (
    DemoOutcome,
    Sample,
    demo_cache_dir,
    demo_memory_dir,
    load_questions,
    render_outcome,
    render_summary,
    run_demo,
)
from videotapestry.views.citation_text import stored_texts

EXIT_WRONG = 1


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="build the sample video's memory and answer its questions (offline, no key)",
        description="Build the shipped sample video's memory with the offline model (cached "
        "in the user cache directory), answer its questions with the full method and show "
        "the answers, the levels visited and the evidence. The offline model reads text in "
        "frames and in speech; it is not a vision-language model. --profile/--config run "
        "the same demo with a real model.",
        epilog="exit status: 0 all right, 1 some answer wrong, 3 degraded, 2 error",
    )
    parser.add_argument("--html", metavar="DIR", help="write one HTML page per question")
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help=f"memory and model replies between runs (default {demo_cache_dir()})",
    )
    parser.add_argument("--rebuild", action="store_true", help="build the memory from scratch")
    parser.add_argument("--video", metavar="FILE", help="another sample video (with --questions)")
    parser.add_argument("--questions", metavar="FILE", help="questions.json for --video")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.api import VideoTapestry

    sample = _sample(args)
    cache = Path(args.cache_dir) if args.cache_dir else demo_cache_dir()
    # The demo's cache settings come first, so that ``-o cache...`` still changes them.
    overrides = [
        "cache.enabled=true",
        f"cache.path={cache / 'responses.sqlite'}",
        *config_overrides(args),
    ]
    profile = args.profile or (None if args.config else "offline")
    vt = VideoTapestry(args.config, profile=profile, overrides=overrides)
    memory_dir = demo_memory_dir(sample.video, cache)

    def show(outcome: DemoOutcome) -> None:
        if not args.json:
            result = outcome.result
            texts = stored_texts(result.levels)
            cited = citation_lines(result.citations, asked=result.citations_asked, texts=texts)
            print(render_outcome(outcome, cited), flush=True)

    async def go():
        try:
            return await run_demo(
                vt,
                sample,
                memory_dir=memory_dir,
                rebuild=args.rebuild,
                progress=not args.quiet,
                on_outcome=show,
                html_dir=Path(args.html) if args.html else None,
            )
        finally:
            await vt.aclose()

    report = asyncio.run(go())
    if args.json:
        print(json.dumps(_as_json(report), ensure_ascii=False))
    else:
        print(render_summary(report))
        for page in report.pages:
            print(f"page: {page}")
    right, total = report.score
    if right < total:
        return EXIT_WRONG
    if any(o.result.degraded for o in report.outcomes):
        return EXIT_DEGRADED
    return 0


def _sample(args: argparse.Namespace) -> Sample:
    from videotapestry.errors import VideoTapestryError

    if bool(args.video) != bool(args.questions):
        raise VideoTapestryError("--video and --questions go together")
    if args.video:
        video, questions = Path(args.video), Path(args.questions)
    else:
        from videotapestry.demo import DATA_DIR, sample_video_path

        video, questions = sample_video_path(), DATA_DIR / "questions.json"
    if not video.is_file():
        raise VideoTapestryError(f"demo video {video} does not exist")
    return Sample(video, load_questions(questions))


def _as_json(report) -> dict:
    return {
        "right": report.score[0],
        "total": report.score[1],
        "video": str(report.video),
        "memory_dir": str(report.memory_dir),
        "build_s": round(report.build_s, 2),
        "build_calls": report.build_calls,
        "answer_s": round(report.answer_s, 2),
        "pages": [str(p) for p in report.pages],
        "questions": [
            {
                "id": o.question.id,
                "answer": o.result.answer,
                "expected": o.question.answer,
                "correct": o.correct,
                "levels_visited": o.result.levels_visited,
                "frames": [[level, t, text] for level, t, text in o.evidence.frames],
                "speech": [list(s) for s in o.evidence.speech],
                "memory": o.evidence.memory,
                "degraded": [d.render() for d in o.result.degraded],
                "warnings": [w.render() for w in o.result.warnings],
                "reasoning": o.result.reasoning,
                "cited": citation_lines(
                    o.result.citations,
                    asked=o.result.citations_asked,
                    texts=stored_texts(o.result.levels),
                ),
                "citations": [c.model_dump(mode="json") for c in o.result.citations],
            }
            for o in report.outcomes
        ],
    }
