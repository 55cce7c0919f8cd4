"""``videotapestry config show``: the fully resolved configuration, as YAML."""

from __future__ import annotations

import argparse

from videotapestry.commands.common import AddConfigOptions, config_from


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser("config", help="show the resolved configuration")
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION")
    show = actions.add_parser("show", help="print the merged config as YAML")
    add_config(show)
    show.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(config_from(args).to_yaml(), end="")
    return 0
