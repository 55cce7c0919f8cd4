"""``videotapestry eval-report RUN`` and ``videotapestry compare RUN_A RUN_B``.

Both only read run directories (no model, no config), so they take no config options.
Errors of ours (a missing run directory, a run without results, an unknown variant) are
``VideoTapestryError``s, which ``cli.main`` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json


def add_parsers(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser(
        "eval-report",
        help="write and print a run directory's report (accuracy, outcomes, usage, plot)",
        description="Rebuild RUN/report.md, RUN/report.json and RUN/accuracy_by_category.png "
        "from RUN/results.jsonl (also while the run is still going) and print the markdown.",
        epilog="exit status: 0 written, 2 error (no such run directory, no results)",
    )
    report.add_argument("run", metavar="RUN", help="run directory made by `videotapestry eval`")
    report.add_argument("--json", action="store_true", help="print report.json instead")

    compare = commands.add_parser(
        "compare",
        help="compare two runs on their paired questions (McNemar) and show what differs",
        description="Accuracy difference on the questions scored in both runs (same variant "
        "and question id), McNemar's exact test, the questions that flipped each way, and "
        "the configuration keys, prompt hashes and models that differ between the runs.",
        epilog="exit status: 0 compared, 2 error (no such run directory, no results, unknown "
        "variant)",
    )
    compare.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    compare.add_argument("run_b", metavar="RUN_B", help="the run compared against it")
    compare.add_argument("--variant", metavar="V", help="only this variant (default: all)")
    compare.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    if args.command == "eval-report":
        return _report(args)
    return _compare(args)


def _report(args: argparse.Namespace) -> int:
    from videotapestry.eval.report import write_report

    report = write_report(args.run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print(report.markdown, end="")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from videotapestry.eval.compare import compare_runs

    comparison = compare_runs(args.run_a, args.run_b, variant=args.variant)
    if args.json:
        print(json.dumps(comparison.to_dict(), ensure_ascii=False))
    else:
        print(comparison.render(), end="")
    return 0
