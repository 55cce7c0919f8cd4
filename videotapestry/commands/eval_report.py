"""``videotapestry eval-report RUN``: a run directory's report, rebuilt from its results.

It only reads the run directory (no model, no config), so it takes no config options. Errors
of ours (a missing run directory, a run without results) are ``VideoTapestryError``s, which
``cli.main`` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json

from videotapestry.commands.common import AddConfigOptions


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "eval-report",
        help="write and print a run directory's report (accuracy, outcomes, usage, plot)",
        description="Rebuild RUN/report.md, RUN/report.json and RUN/accuracy_by_category.png "
        "from RUN/results.jsonl (also while the run is still going) and print the markdown.",
        epilog="exit status: 0 written, 2 error (no such run directory, no results)",
    )
    parser.add_argument("run", metavar="RUN", help="run directory made by `videotapestry eval`")
    parser.add_argument("--json", action="store_true", help="print report.json instead")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.eval.report import write_report

    report = write_report(args.run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print(report.markdown, end="")
    return 0
