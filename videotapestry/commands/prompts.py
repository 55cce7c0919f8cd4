"""``videotapestry prompts list|show``: which template each role uses, overrides included."""

from __future__ import annotations

import argparse

from videotapestry.commands.common import AddConfigOptions, prompt_registry


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser("prompts", help="list or show the active prompt templates")
    actions = parser.add_subparsers(dest="prompts_command", metavar="ACTION")
    listing = actions.add_parser("list", help="each role and the file it resolves to")
    add_config(listing)
    listing.set_defaults(handler=run)
    show = actions.add_parser("show", help="print one role's template")
    show.add_argument("role")
    add_config(show)
    show.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.prompts_command == "list":
        return _list(args)
    return _show(args)


def _list(args: argparse.Namespace) -> int:
    registry = prompt_registry(args)
    rows = []
    for name in registry.names():
        source = registry.resolve(name)
        rows.append((name, "override" if source.overridden else "shipped", str(source.path)))
    width = max(len(r[0]) for r in rows)
    for name, origin, path in rows:
        print(f"{name:<{width}}  {origin:<8}  {path}")
    return 0


def _show(args: argparse.Namespace) -> int:
    registry = prompt_registry(args)
    source = registry.resolve(args.role)
    variables = ", ".join(sorted(registry.variables(args.role)))
    origin = "override" if source.overridden else "shipped"
    print(f"# {args.role}: {source.path} ({origin})")
    print(f"# variables: {variables}")
    print(registry.source(args.role), end="")
    return 0
