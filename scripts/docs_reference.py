"""The generated parts of the documentation site, drawn from the code at build time.

A page of ``docs/`` asks for a generated block with a marker line of its own::

    <!-- generated: config -->

and the MkDocs hook at the bottom of this file (``hooks:`` in ``mkdocs.yml``) replaces the
marker with the block, so the reference pages cannot drift from the code: the config keys
come from the pydantic models (with their descriptions) and the comments of
``configs/default.yaml``, the commands and flags from the argparse parser, the prompts and
their variables from the prompt registry, the exit statuses from ``commands/common.py`` and
each command's docstring, the degradation kinds from their ``Literal`` and its comments, the
on-disk formats from the pydantic models that read them, the LangGraph graph from the
compiled graph itself, and the REST and MCP examples from calls to both servers
(``scripts/docs_serve_examples.py``). ``tests/test_docs.py`` calls the same functions to
check that every key, flag and prompt that exists is on a page.

Run it by hand to see one block: ``python scripts/docs_reference.py config``.
"""

from __future__ import annotations

import argparse
import ast
import html
import inspect
import io
import json
import re
import sys
import tokenize
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- generated: (?P<name>[a-z_]+)(?P<args>(?: [A-Za-z0-9_.]+)*) -->$", re.M)

#: ``models.roles`` holds one settings block per role; the reference lists the fields once.
ROLE_PLACEHOLDER = "<role>"
#: The default shown for a setting that has none (a price must give both numbers).
REQUIRED = "(required)"
#: A mapping section (``pricing``) is keyed by a name the user picks.
NAME_PLACEHOLDER = "<name>"


# --- config ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One setting: its dotted key, type, default, the model's description and the YAML
    comment ``configs/default.yaml`` gives it."""

    key: str
    type: str
    default: str
    description: str
    comment: str


def _type_name(annotation: Any) -> str:
    text = str(annotation) if not isinstance(annotation, type) else annotation.__name__
    text = re.sub(r"typing\.|videotapestry\.[a-z_.]+\.|pathlib\.", "", text)
    text = re.sub(r"^Optional\[(.*)\]$", r"\1 | None", text)
    return text.replace("NoneType", "None")


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _mapping_value_model(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) is dict:
        args = typing.get_args(annotation)
        if len(args) == 2:
            return _model_of(args[1])
    return None


def _optional_model(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [_model_of(a) for a in typing.get_args(annotation) if a is not type(None)]
        if len(models) == 1 and models[0] is not None:
            return models[0]
    return None


def walk_model(
    model: type[BaseModel], prefix: str = ""
) -> Iterator[tuple[str, Any, Any, str | None]]:
    """Every leaf setting under ``model``: (dotted key, annotation, default, description).

    Nested models are walked into; a ``dict[str, Model]`` section is walked as
    ``section.<name>.*``; the roles block (every field the same override model) is walked
    once as ``models.roles.<role>.*``.
    """
    fields = model.model_fields
    nested = {name: _model_of(f.annotation) for name, f in fields.items()}
    if len(fields) > 3 and len({m for m in nested.values()}) == 1 and None not in nested.values():
        role_model = next(iter(nested.values()))
        assert role_model is not None
        yield from walk_model(role_model, f"{prefix}{ROLE_PLACEHOLDER}.")
        return
    for name, field in fields.items():
        key = f"{prefix}{name}"
        sub = nested[name] or _optional_model(field.annotation)
        if sub is not None:
            yield from walk_model(sub, f"{key}.")
            continue
        value_model = _mapping_value_model(field.annotation)
        if value_model is not None:
            yield from walk_model(value_model, f"{key}.{NAME_PLACEHOLDER}.")
            continue
        default = (
            field.get_default(call_default_factory=True) if not field.is_required() else REQUIRED
        )
        yield key, field.annotation, default, field.description


def role_names(model: type[BaseModel] | None = None) -> list[str]:
    """The roles ``models.roles.<role>`` accepts."""
    from videotapestry.config import RoleModels

    return list((model or RoleModels).model_fields)


def yaml_comments(path: Path | None = None) -> dict[str, str]:
    """The comments of ``configs/default.yaml`` by dotted key: a key's own trailing comment,
    the comment lines just above it, and the indented comment lines that continue it."""
    lines = (path or ROOT / "configs" / "default.yaml").read_text(encoding="utf-8").splitlines()
    comments: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    last_key: str | None = None
    continues_at = 0  # a deeper comment line from this column on continues last_key's
    for line in lines:
        stripped = line.strip()
        if not stripped:
            above, last_key = [], None
            continue
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            if last_key is not None and indent >= continues_at:
                comments[last_key].append(text)  # a trailing comment continued below
            else:
                above.append(text)
                last_key = None
            continue
        match = re.match(r"(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?P<rest>.*)$", stripped)
        if match is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([*(k for _, k in stack), match["key"]])
        stack.append((indent, match["key"]))
        rest = match["rest"]
        trailing = rest.split(" #", 1)[1].strip() if " #" in rest else ""
        comments[key] = [*above, *([trailing] if trailing else [])]
        above = []
        last_key, continues_at = key, line.index(" #") + 1 if trailing else indent + 1
    return {key: " ".join(texts) for key, texts in comments.items() if texts}


def config_keys() -> list[ConfigKey]:
    """Every setting of ``Config``, in the order of the models."""
    from videotapestry.config import Config

    comments = yaml_comments()
    keys = []
    for key, annotation, default, description in walk_model(Config):
        shown = REQUIRED if default is REQUIRED else json.dumps(default, default=str)
        comment = comments.get(key, "")
        if not comment and ROLE_PLACEHOLDER in key:
            comment = comments.get(key.replace(f"roles.{ROLE_PLACEHOLDER}", "default"), "")
        keys.append(ConfigKey(key, _type_name(annotation), shown, description or "", comment))
    return keys


def _cell(text: str) -> str:
    """Prose in a table cell: one line, pipes escaped, ``<name>`` shown rather than a tag."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def _code_cell(text: str) -> str:
    """Code in a table cell: an escaped pipe would show its backslash inside backticks."""
    shown = html.escape(" ".join(text.split()), quote=False).replace("|", "&#124;")
    return f"<code>{shown}</code>" if shown else ""


def config_page() -> str:
    """The config reference: one table per top-level section."""
    out: list[str] = []
    section = None
    for item in config_keys():
        top = item.key.split(".")[0]
        if top != section:
            section = top
            out += [
                "",
                f"### `{top}`",
                "",
                "| key | type | default | meaning |",
                "|---|---|---|---|",
            ]
        meaning = _cell(item.description)
        if item.comment:
            comment = _cell(item.comment)
            meaning += f" <br>*default.yaml:* {comment}" if meaning else comment
        out.append(
            f"| `{item.key}` | {_code_cell(item.type)} | {_code_cell(item.default)} | {meaning} |"
        )
    out += [
        "",
        f"`{ROLE_PLACEHOLDER}` is one of: " + ", ".join(f"`{r}`" for r in role_names()) + ".",
        "A role's unset fields come from `models.default`.",
    ]
    return "\n".join(out).strip() + "\n"


# --- command line ------------------------------------------------------------------------


@dataclass(frozen=True)
class CliOption:
    command: str  # "ask", "prompts show", "" for the top level
    flags: tuple[str, ...]  # ("-o", "--override"); the metavar for a positional
    metavar: str
    default: str
    help: str


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def walk_parser(
    parser: argparse.ArgumentParser, command: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (command path, parser), the top level first, each command before its actions."""
    yield command, parser
    for name, sub in _subparsers(parser).items():
        yield from walk_parser(sub, f"{command} {name}".strip())


def _options(command: str, parser: argparse.ArgumentParser) -> list[CliOption]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        flags = tuple(action.option_strings) or (str(action.metavar or action.dest),)
        metavar = "" if action.nargs == 0 else str(action.metavar or action.dest.upper())
        flag_only = bool(action.option_strings) and action.nargs == 0
        no_default = action.default in (None, argparse.SUPPRESS)
        default = "" if flag_only or no_default else str(action.default)
        found.append(CliOption(command, flags, metavar, default, action.help or ""))
    return found


def cli_options() -> list[CliOption]:
    """Every option and positional argument of every command of ``videotapestry``."""
    from videotapestry.cli import build_parser

    return [opt for cmd, parser in walk_parser(build_parser()) for opt in _options(cmd, parser)]


def cli_page() -> str:
    """The CLI reference: a section per command with its description and a table of flags."""
    from videotapestry.cli import build_parser

    out: list[str] = []
    for command, parser in walk_parser(build_parser()):
        title = f"videotapestry {command}".strip()
        out += ["", f"### `{title}`", ""]
        description = parser.description or ""
        if not description and command:
            description = _command_help(command)
        if description:
            out += [description, ""]
        subs = _subparsers(parser)
        if subs:
            out += ["Commands: " + ", ".join(f"`{name}`" for name in subs) + ".", ""]
        options = _options(command, parser)
        if options:
            out += ["| argument | value | default | meaning |", "|---|---|---|---|"]
            for opt in options:
                flags = ", ".join(f"`{flag}`" for flag in opt.flags)
                metavar = _code_cell(opt.metavar)
                default = _code_cell(opt.default)
                help_text = _cell(opt.help.replace("%(default)s", opt.default))
                out.append(f"| {flags} | {metavar} | {default} | {help_text} |")
    return "\n".join(out).strip() + "\n"


def _command_help(command: str) -> str:
    from videotapestry.cli import build_parser

    parser = build_parser()
    *parents, last = command.split()
    for name in parents:
        parser = _subparsers(parser)[name]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == last:
                    return choice.help or ""
    return ""


# --- prompts -----------------------------------------------------------------------------


def prompt_rows() -> list[tuple[str, str, list[str]]]:
    """(prompt name, template file, variables it reads) for every role prompt."""
    from videotapestry.prompts import PromptRegistry

    registry = PromptRegistry()
    return [
        (name, registry.resolve(name).path.name, sorted(registry.variables(name)))
        for name in registry.names()
    ]


def prompts_page() -> str:
    from videotapestry.prompts import PromptRegistry

    registry = PromptRegistry()
    out = ["| prompt | file | variables |", "|---|---|---|"]
    for name, filename, variables in prompt_rows():
        shown = ", ".join(f"`{v}`" for v in variables)
        out.append(f"| `{name}` | `prompts/{filename}` | {shown} |")
    partials = sorted(p.name for p in registry.base_dir.glob("_*.jinja"))
    out += ["", "Partials (included by the prompts above, replaceable the same way): "]
    out[-1] += ", ".join(f"`{p}`" for p in partials) + "."
    return "\n".join(out) + "\n"


# --- exit statuses and degradations ------------------------------------------------------


def _commented_constants(path: Path, pattern: str) -> list[tuple[str, int, str]]:
    """(name, value, ``#:`` comment) of the module-level constants named like ``pattern``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for number, line in enumerate(lines):
        match = re.match(rf"({pattern}) = (\d+)$", line)
        if match is None:
            continue
        comment: list[str] = []
        for before in reversed(lines[:number]):
            if not before.startswith("#:"):
                break
            comment.insert(0, before[2:].strip())
        found.append((match[1], int(match[2]), " ".join(comment)))
    return found


def exit_statuses() -> list[tuple[str, int, str]]:
    from videotapestry.commands import common

    return _commented_constants(Path(inspect.getfile(common)), "EXIT_[A-Z_]+")


def exits_page() -> str:
    from videotapestry.cli import COMMANDS

    out = ["| status | name | meaning |", "|---|---|---|", "| 0 | | the command did its work |"]
    for name, value, comment in exit_statuses():
        out.append(f"| {value} | `{name}` | {_cell(_code(comment))} |")
    out += ["", "What each command returns, from its own documentation:", ""]
    for module in COMMANDS:
        doc = inspect.getdoc(module) or ""
        title = doc.split("\n", 1)[0].split(":", 1)[0].strip("` ")
        paragraph = next((p for p in doc.split("\n\n") if "Exit status" in p), "")
        if paragraph:
            statement = paragraph[paragraph.index("Exit status") :]
            out.append(f"- `{title}`: " + _code(" ".join(statement.split())))
    return "\n".join(out) + "\n"


def _literal_comments(source: str, name: str) -> list[tuple[str, str]]:
    """The values of the ``Literal`` assigned to ``name`` in ``source``, with the comment
    after each value on its line."""
    tree = ast.parse(source)
    node = next(
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == name for t in n.targets)
    )
    first, last = node.lineno, node.end_lineno or node.lineno
    values: list[tuple[str, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        row = token.start[0]
        if not first <= row <= last:
            continue
        if token.type == tokenize.STRING:
            values.append((ast.literal_eval(token.string), ""))
        elif token.type == tokenize.COMMENT and values:
            values[-1] = (values[-1][0], token.string.lstrip("# ").strip())
    return values


def degradation_kinds() -> list[tuple[str, str]]:
    from videotapestry.agents import state

    return _literal_comments(inspect.getsource(state), "DegradationKind")


def degradations_page() -> str:
    out = ["| kind | what was lost |", "|---|---|"]
    out += [f"| `{kind}` | {_cell(comment)} |" for kind, comment in degradation_kinds()]
    return "\n".join(out) + "\n"


def warning_kinds() -> list[tuple[str, str]]:
    from videotapestry.agents import state

    return _literal_comments(inspect.getsource(state), "WarningKind")


def warnings_page() -> str:
    out = ["| kind | what it says |", "|---|---|"]
    out += [f"| `{kind}` | {_cell(comment)} |" for kind, comment in warning_kinds()]
    return "\n".join(out) + "\n"


# --- the paper's setting ----------------------------------------------------------------


def paper_page(paper: Any = None) -> str:
    """Every key where ``configs/paper.yaml`` and the default differ, both values and the
    reason from ``videotapestry.config.paper``; a difference without a reason, or a reason
    for a key that no longer differs, stops the build."""
    from videotapestry.config import load_config
    from videotapestry.config.paper import PAPER_CONFIG, paper_differences, stale, unexplained

    differences = paper_differences(load_config(), paper or load_config(PAPER_CONFIG))
    if missing := unexplained(differences):
        raise ValueError(
            f"configs/{PAPER_CONFIG}.yaml differs from the default in {', '.join(missing)} "
            "with no reason: add one to DEFAULT_REASONS in videotapestry/config/paper.py"
        )
    if old := stale(differences):
        raise ValueError(f"DEFAULT_REASONS explains keys that no longer differ: {', '.join(old)}")
    out = ["| key | default | paper | why the default differs |", "|---|---|---|---|"]
    out += [
        f"| `{d.key}` | {_code_cell(json.dumps(d.default))} | {_code_cell(json.dumps(d.paper))} "
        f"| {_cell(d.reason or '')} |"
        for d in differences
    ]
    return "\n".join(out) + "\n"


# --- on-disk formats ---------------------------------------------------------------------


def _format_target(dotted: str) -> type[BaseModel]:
    module_name, _, attribute = dotted.rpartition(".")
    module = __import__(module_name, fromlist=[attribute])
    model: type[BaseModel] = getattr(module, attribute)
    return model


def model_page(dotted: str) -> str:
    """A field table of one pydantic model (what a JSON file of that shape holds)."""
    model = _format_target(dotted)
    doc = inspect.cleandoc(model.__dict__.get("__doc__") or "")  # its own, not BaseModel's
    out = [_code(" ".join(doc.split("\n\n")[0].split())), ""] if doc else []
    out += ["| field | type | meaning |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        shown = field.alias or name
        out.append(
            f"| `{shown}` | {_code_cell(_type_name(field.annotation))} "
            f"| {_cell(field.description or '')} |"
        )
    return "\n".join(out) + "\n"


def docstring_page(dotted: str) -> str:
    """A module's docstring, its indented blocks as code."""
    module = __import__(dotted, fromlist=["_"])
    doc = _code(inspect.getdoc(module) or "") + "\n"
    return re.sub(
        r"::\n\n((?:    .*\n|\n)+)", lambda m: ":\n\n```text\n" + _dedent(m[1]) + "```\n\n", doc
    )


def _code(text: str) -> str:
    """reStructuredText's double-backtick literals as Markdown code."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _dedent(block: str) -> str:
    return "\n".join(line[4:] for line in block.rstrip().splitlines()) + "\n"


# --- the graph ---------------------------------------------------------------------------


def graph_mermaid(variant: str = "full") -> str:
    """The compiled LangGraph graph of ``variant``, drawn by LangGraph itself, as a fence."""
    from videotapestry.graph import build_graph

    drawing = build_graph(variant=variant).get_graph().draw_mermaid()
    drawing = re.sub(r"^---\n.*?\n---\n", "", drawing, flags=re.S)  # the front matter
    drawing = drawing.replace("<p>__start__</p>", "start").replace("<p>__end__</p>", "end")
    return "```mermaid\n" + drawing.strip() + "\n```\n"


def variants_page() -> str:
    from videotapestry.variants import VARIANTS

    out = ["| variant | what it is |", "|---|---|"]
    for row in VARIANTS:
        doc = row.meaning
        out.append(f"| `{row.name}` | {_cell(doc)} |")
    return "\n".join(out) + "\n"


# --- REST and MCP examples -------------------------------------------------------------


def serve_examples_page() -> str:
    """Every REST route and MCP tool, called (``scripts/docs_serve_examples.py``)."""
    import importlib.util

    path = ROOT / "scripts" / "docs_serve_examples.py"
    spec = importlib.util.spec_from_file_location("docs_serve_examples", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_serve_examples"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    page: str = module.serve_examples_page()
    return page


GENERATORS: dict[str, Callable[..., str]] = {
    "config": config_page,
    "cli": cli_page,
    "prompts": prompts_page,
    "exits": exits_page,
    "degradations": degradations_page,
    "warnings": warnings_page,
    "paper": paper_page,
    "model": model_page,
    "docstring": docstring_page,
    "graph": graph_mermaid,
    "variants": variants_page,
    "serve_examples": serve_examples_page,
}


def expand(markdown: str) -> str:
    """``markdown`` with every generated-block marker replaced by its block."""

    def block(match: re.Match[str]) -> str:
        generator = GENERATORS[match["name"]]
        return generator(*match["args"].split()).rstrip("\n")

    return MARKER.sub(block, markdown)


# --- the MkDocs hook ---------------------------------------------------------------------


def on_page_markdown(markdown: str, **_: Any) -> str:
    return expand(markdown)


if __name__ == "__main__":
    name, *arguments = sys.argv[1:] or ["config"]
    print(GENERATORS[name](*arguments))
