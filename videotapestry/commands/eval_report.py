"""``videotapestry eval-report RUN``: a run directory's report, rebuilt from its results.

It only reads the run directory (no model, no config), so it takes no config options. Errors
of ours (a missing run directory, a run without results) are ``VideoTapestryError``s, which
``cli.main`` prints as one line with exit status 2. ``--export FORMAT`` writes the run's
answers in a benchmark's own submission or results format instead (``eval/exports.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from videotapestry.commands.common import AddConfigOptions


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    from videotapestry.eval.exports import FORMATS

    parser = subparsers.add_parser(
        "eval-report",
        help="write and print a run directory's report (accuracy, outcomes, usage, plot)",
        description="Rebuild RUN/report.md, RUN/report.json and RUN/accuracy_by_category.png "
        "from RUN/results.jsonl (also while the run is still going) and print the markdown; "
        "or, with --export, write the run's answers as a benchmark's official scorer or "
        "leaderboard reads them.",
        epilog="exit status: 0 written, 2 error (no such run directory, no results)",
    )
    parser.add_argument("run", metavar="RUN", help="run directory made by `videotapestry eval`")
    parser.add_argument("--json", action="store_true", help="print report.json instead")
    parser.add_argument(
        "--export",
        choices=FORMATS,
        help="write the run's answers in the benchmark's official format instead of the "
        "report: videomme (the results JSON eval_your_results.py scores), longvideobench "
        "(the test submission {id: letter}), egoschema (Kaggle's q_uid,answer CSV), lvbench "
        "({uid: letter}, as its compute_accuracy reads)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="with --export: the file (default: stdout)"
    )
    parser.add_argument(
        "--variant", metavar="V", help="with --export: the variant (needed when RUN has several)"
    )
    parser.add_argument(
        "--annotations",
        metavar="PATH",
        help="with --export videomme: the annotations (default: those run.json records)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.eval.report import write_report

    if args.export:
        return _export(args)

    report = write_report(args.run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print(report.markdown, end="")
    return 0


def _export(args: argparse.Namespace) -> int:
    from videotapestry.eval.exports import UNANSWERED, export_run
    from videotapestry.files import write_atomic

    export = export_run(args.run, args.export, variant=args.variant, annotations=args.annotations)
    if args.output:
        write_atomic(Path(args.output).expanduser(), export.text)
        where = args.output
    else:
        sys.stdout.write(export.text)
        where = "stdout"
    print(
        f"{args.export} ({export.variant}): {export.answered} answer(s) written to {where}",
        file=sys.stderr,
    )
    if export.unanswered:
        shown = ", ".join(export.unanswered[:5]) + (", ..." if len(export.unanswered) > 5 else "")
        print(
            f"videotapestry: note: {len(export.unanswered)} question(s) have no answer "
            f"({shown}); {UNANSWERED[args.export]}",
            file=sys.stderr,
        )
    return 0
