"""``videotapestry compare RUN_A RUN_B``: two runs on their paired questions.

It only reads the two run directories (no model, no config), so it takes no config options.
Errors of ours (a missing run directory, a run without results, an unknown variant) are
``VideoTapestryError``s, which ``cli.main`` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json

from videotapestry.commands.common import AddConfigOptions


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two runs on their paired questions (McNemar) and show what differs",
        description="Accuracy difference on the questions scored in both runs (same variant "
        "and question id), McNemar's exact test, the questions that flipped each way, and "
        "the configuration keys, prompt hashes and models that differ between the runs.",
        epilog="exit status: 0 compared, 2 error (no such run directory, no results, unknown "
        "variant)",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    parser.add_argument("run_b", metavar="RUN_B", help="the run compared against it")
    parser.add_argument("--variant", metavar="V", help="only this variant (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.eval.compare import compare_runs

    comparison = compare_runs(args.run_a, args.run_b, variant=args.variant)
    if args.json:
        print(json.dumps(comparison.to_dict(), ensure_ascii=False))
    else:
        print(comparison.render(), end="")
    return 0
