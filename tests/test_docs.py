"""The documentation site cannot drift from the code.

- The reference pages list every config key (with its default), every command-line flag,
  every prompt with its variables, every exit status and degradation kind that exists. Each
  is compared with the code walked here on its own terms (the config's JSON schema, the
  argparse parser, the prompt registry), not with the generator's own walk.
- A config key added without a description or a ``configs/default.yaml`` comment fails.
- Every generated-block marker in ``docs/`` expands, and the graph drawn is the graph compiled.
- The notebook page is an executed copy of ``examples/quickstart.ipynb`` with the same cells.
- Every command block marked ``<!-- runs offline -->`` in the pages is run, line by line.
- The REST and MCP examples page shows every route of the web app and every MCP tool, and
  each tool accepts the example arguments the page shows (called for real).

``mkdocs build --strict`` itself runs in ``make test`` (the Makefile's step before pytest),
so it is not repeated here; the hook's generators are tested directly.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from videotapestry.agents.state import DegradationKind, WarningKind
from videotapestry.cli import build_parser
from videotapestry.config import Config
from videotapestry.prompts import PromptRegistry

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts/docs_reference.py")
assert _spec is not None and _spec.loader is not None
reference: Any = importlib.util.module_from_spec(_spec)
sys.modules["docs_reference"] = reference  # its dataclasses look their module up
_spec.loader.exec_module(reference)

#: Keys documented today only by their name, type and default. Do not add to this list: give
#: a new key a ``description`` in its pydantic model or a comment in configs/default.yaml.
UNDOCUMENTED_KEYS = frozenset(
    {
        "models.default.model",
        "models.default.temperature",
        "models.default.max_tokens",
        "models.default.timeout_s",
        "models.default.image_detail",
        "models.roles.<role>.model",
        "models.roles.<role>.api_key_env",
        "models.roles.<role>.temperature",
        "models.roles.<role>.max_tokens",
        "models.roles.<role>.timeout_s",
        "models.roles.<role>.image_detail",
        "models.roles.<role>.extra_body",
        "models.max_concurrency_per_endpoint",
        "pricing.<name>.input_per_mtok",
        "pricing.<name>.output_per_mtok",
        "cache.enabled",
        "images.jpeg_quality",
        "agents.overview.grid_rows",
        "agents.focus.max_frames",
        "agents.direct.max_frames",
        "agents.level_limits.max_observations",
        "agents.level_limits.max_updates",
        "agents.level_limits.max_calls",
        "asr.device",
        "asr.compute_type",
        "asr.beam_size",
        "embedding.batch_size",
        "embedding.device",
        "evidence.mmr_lambda",
        "evidence.adaptive_tail_fraction",
        "evidence.adaptive_buffer",
        "builder.clips.min_s",
        "builder.clips.max_s",
        "builder.perception.grid_columns",
        "builder.perception.grid_rows",
        "builder.ocr.min_confidence",
        "builder.ocr.min_chars",
        "builder.macro.overlap_s",
        "builder.super_events.max_stages",
        "executor.ray.build.num_cpus",
        "executor.ray.eval.num_cpus",
    }
)


# --------------------------------------------------------------------------- config keys


def _schema_keys(schema: dict[str, Any], node: dict[str, Any], prefix: str) -> Iterator[str]:
    """Dotted leaf keys of a JSON schema, ``$ref``s resolved, maps as ``<name>``, and the
    roles block (``models.roles``, every property the same model) as ``<role>``."""
    node = _resolve(schema, node)
    properties = node.get("properties")
    if properties is None:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in _resolve(schema, extra):
            yield from _schema_keys(schema, extra, f"{prefix}.<name>")
        else:
            yield prefix
        return
    if prefix.endswith("models.roles"):
        first = next(iter(properties.values()))
        yield from _schema_keys(schema, first, f"{prefix}.<role>")
        return
    for name, sub in properties.items():
        yield from _schema_keys(schema, sub, f"{prefix}.{name}" if prefix else name)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return _resolve(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[1]])
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1 and ("$ref" in branches[0] or "properties" in branches[0]):
        return _resolve(schema, branches[0])
    return node


def _config_rows() -> dict[str, str]:
    rows = {}
    for line in reference.config_page().splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            rows[match[1]] = line
    return rows


def test_the_config_reference_has_every_key_with_its_default() -> None:
    schema = Config.model_json_schema()
    keys = set(_schema_keys(schema, schema, ""))
    rows = _config_rows()
    assert len(keys) > 100
    assert keys - set(rows) == set(), "keys missing from the config reference"
    assert set(rows) - keys == set(), "keys on the page that the config does not have"
    config = Config()
    for key in keys:
        if "<" in key:
            continue
        value: Any = config
        for part in key.split("."):
            value = getattr(value, part)
        shown = html.escape(json.dumps(value, default=str), quote=False).replace("|", "&#124;")
        assert f"<code>{shown}</code>" in rows[key], (key, shown)


def test_the_config_reference_names_every_role() -> None:
    schema = Config.model_json_schema()
    roles = _resolve(
        schema, _resolve(schema, schema["properties"]["models"])["properties"]["roles"]
    )
    page = reference.config_page()
    for role in roles["properties"]:
        assert f"`{role}`" in page


def test_a_config_key_without_a_description_or_comment_fails() -> None:
    undocumented = {k.key for k in reference.config_keys() if not (k.description or k.comment)}
    assert undocumented - UNDOCUMENTED_KEYS == set(), "document these keys"
    assert UNDOCUMENTED_KEYS - undocumented == set(), "documented now: drop them from the list"


def test_default_yaml_comments_reach_their_keys() -> None:
    rows = _config_rows()
    assert (
        "frames sampled from the one continuous visual window" in rows["agents.overview.max_frames"]
    )
    # a trailing comment continued on the next line is kept whole
    assert "refined_paths_only \\| direct" in rows["variant"]
    assert "proxies that route by role" in rows["models.default.harness_headers"]


# --------------------------------------------------------------------------- command line


def _parsers(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, Any]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_the_cli_reference_has_every_command_and_flag() -> None:
    page = reference.cli_page()
    sections = dict(re.findall(r"### `([^`]+)`\n(.*?)(?=\n### |\Z)", page, flags=re.S))
    commands = list(_parsers(build_parser(), "videotapestry"))
    assert len(commands) > 12
    for path, parser in commands:
        assert path in sections, f"{path} has no section"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for flag in action.option_strings or [action.metavar or action.dest]:
                assert f"`{flag}`" in sections[path], f"{path}: {flag}"
            if action.help and action.help != argparse.SUPPRESS:
                first_words = " ".join(action.help.split()[:4]).replace("|", "\\|")
                first_words = first_words.replace("<", "&lt;").replace("%(default)s", "")
                assert first_words.split("%")[0] in sections[path], f"{path}: help of {action.dest}"


# --------------------------------------------------------------------------- prompts, statuses


def test_the_prompt_reference_has_every_prompt_and_its_variables() -> None:
    page = reference.prompts_page()
    registry = PromptRegistry()
    assert len(registry.names()) > 15
    for name in registry.names():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
        for variable in registry.variables(name):
            assert f"`{variable}`" in row, (name, variable)
    for partial in registry.base_dir.glob("_*.jinja"):
        assert f"`{partial.name}`" in page


def test_every_exit_status_and_degradation_kind_is_listed() -> None:
    from videotapestry.commands import common

    exits = reference.exits_page()
    for name in dir(common):
        if name.startswith("EXIT_"):
            assert f"| {getattr(common, name)} | `{name}` |" in exits
    for command in ("ask", "build-memory", "eval", "demo", "chat"):
        assert f"- `videotapestry {command}`: Exit status" in exits
    degradations = reference.degradations_page()
    for kind in get_args(DegradationKind):
        row = next(line for line in degradations.splitlines() if f"`{kind}`" in line)
        assert len(row.split("|")[2].strip()) > 10, f"{kind} has no explanation"
    warnings = reference.warnings_page()
    for kind in get_args(WarningKind):
        row = next(line for line in warnings.splitlines() if f"`{kind}`" in line)
        assert len(row.split("|")[2].strip()) > 10, f"{kind} has no explanation"
    assert "citation_invalid" not in degradations


# --------------------------------------------------------------------------- pages


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@pytest.fixture(scope="module")
def serve_examples() -> str:
    """The REST and MCP examples page, made once for the module (both servers, ~25 s)."""
    page: str = reference.serve_examples_page()
    return page


def test_every_generated_block_expands(monkeypatch: pytest.MonkeyPatch) -> None:
    # the examples page starts both servers (about 25 s): its own slow test makes it
    monkeypatch.setitem(reference.GENERATORS, "serve_examples", lambda: "(made elsewhere)")
    markers = 0
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        markers += len(reference.MARKER.findall(text))
        assert not reference.MARKER.search(reference.expand(text)), page
    assert markers >= 20


def test_the_graph_drawn_is_the_graph_compiled() -> None:
    from videotapestry.graph import build_graph

    for variant in ("full", "single_agent", "direct"):
        drawing = reference.graph_mermaid(variant)
        nodes = set(build_graph(variant=variant).get_graph().nodes) - {"__start__", "__end__"}
        assert drawing.startswith("```mermaid\n")
        for node in nodes:
            assert re.search(rf"^\s*{node}\({node}\)", drawing, flags=re.M), (variant, node)
    assert "overview -.-> skim" in reference.graph_mermaid("full")  # the conditional descent


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in [*_pages(), *DOCS.rglob("*.ipynb")]:
        assert f": {page.relative_to(DOCS).as_posix()}" in nav, page


def test_the_notebook_page_is_the_executed_quickstart() -> None:
    source = json.loads((ROOT / "examples" / "quickstart.ipynb").read_text(encoding="utf-8"))
    shown = json.loads((DOCS / "examples" / "quickstart.ipynb").read_text(encoding="utf-8"))

    def cells(notebook: dict[str, Any]) -> list[tuple[str, str]]:
        return [(c["cell_type"], "".join(c["source"])) for c in notebook["cells"]]

    assert cells(shown) == cells(source), "run python scripts/execute_notebook.py"
    code = [c for c in shown["cells"] if c["cell_type"] == "code"]
    assert all(c.get("execution_count") for c in code), "the copy is not executed"
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    printed = "".join("".join(o.get("text", "")) for o in outputs)
    assert re.search(r"answer ([A-D]) \(shipped answer \1\)", printed), "the notebook's answer"


# --------------------------------------------------------------------------- REST and MCP


def _served_tools(root: Path) -> list[Any]:
    import asyncio

    from mcp import Client

    from videotapestry.config import load_config
    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server
    from videotapestry.serve.roots import Roots

    config = load_config(None, profile="offline", overrides=["cache.enabled=false"])
    server = create_mcp_server(McpSettings(config, Roots.of([root]), root / "traces"))

    async def listed() -> list[Any]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(listed())


@pytest.mark.slow
def test_the_serve_examples_show_every_route_and_tool(serve_examples: str, tmp_path: Path) -> None:
    from fastapi.routing import APIRoute

    from videotapestry.config import load_config
    from videotapestry.serve.app import ServeSettings, create_app
    from videotapestry.serve.roots import Roots

    settings = ServeSettings(load_config(None, profile="offline"), Roots.of([tmp_path]), tmp_path)
    routes = [r for r in create_app(settings).routes if isinstance(r, APIRoute)]
    shown = [r for r in routes if r.include_in_schema]
    assert len(shown) >= 14
    for route in shown:
        path = route.path.replace("{job_id}", "<job id>")
        for method in route.methods:
            requested = rf"^{method} {re.escape(path)}(?:[? ]|$)"
            assert re.search(requested, serve_examples, flags=re.M), f"{method} {route.path}"
    tools = _served_tools(tmp_path)
    assert {t.name for t in tools} == set(reference_examples().TOOL_EXAMPLES)
    for tool in tools:
        assert f"### `{tool.name}`" in serve_examples
        arguments = reference_examples().TOOL_EXAMPLES[tool.name]
        assert set(tool.input_schema.get("required", [])) <= set(arguments), tool.name
        assert set(arguments) <= set(tool.input_schema.get("properties", {})), tool.name
    # what changes from run to run is a placeholder: the page is the same on every build
    assert "vt-docs-serve-" not in serve_examples and "/tmp/" not in serve_examples
    assert not re.search(r"\b[0-9a-f]{12}\b", serve_examples), "a job or run id is shown"
    assert '"state": "done"' in serve_examples and '"answer": "A"' in serve_examples


def reference_examples() -> Any:
    """``scripts/docs_serve_examples.py`` (loaded once, by the generator or here)."""
    if "docs_serve_examples" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "docs_serve_examples", ROOT / "scripts/docs_serve_examples.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_serve_examples"] = module
        spec.loader.exec_module(module)
    return sys.modules["docs_serve_examples"]


@pytest.mark.slow
def test_every_mcp_tool_accepts_the_arguments_the_examples_show(
    tmp_path: Path, demo_cache: Path
) -> None:
    """Each tool called with the page's arguments, the model runs included (the sample's
    memory is the test run's one build of it, so ``build_memory`` finds it complete)."""
    import asyncio

    from mcp import Client

    from videotapestry.config import load_config
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir
    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server
    from videotapestry.serve.roots import Roots

    shutil.copy(sample_video_path(), tmp_path / "sample.mp4")
    memory = demo_memory_dir(sample_video_path(), demo_cache)
    shutil.copytree(memory, tmp_path / "memories" / "sample")
    config = load_config(None, profile="offline", overrides=["cache.enabled=false"])
    roots = Roots.of([tmp_path])
    server = create_mcp_server(McpSettings(config, roots, tmp_path / "videotapestry-traces"))
    examples = reference_examples().TOOL_EXAMPLES

    async def call_each() -> dict[str, Any]:
        results: dict[str, Any] = {}
        async with Client(server) as client:
            for name in ("list_videos", "list_memories", "build_memory", "answer_question"):
                results[name] = await client.call_tool(name, examples[name])
            trace = results["answer_question"].structured_content["trace"]
            assert examples["read_trace"]["path"].startswith(trace.rsplit("/", 1)[0] + "/")
            results["read_trace"] = await client.call_tool("read_trace", {"path": trace})
        return results

    for name, result in asyncio.run(call_each()).items():
        assert not result.is_error, (name, result.content)


# --------------------------------------------------------------------------- offline commands

OFFLINE = re.compile(r"^<!-- runs offline -->\n```bash\n(?P<body>.*?)\n```", re.M | re.S)


MARKED = re.compile(r"^<!-- runs offline -->$", re.M)


def offline_blocks() -> list[tuple[str, list[str]]]:
    """(page, its command lines) for every block marked to run offline."""
    blocks = []
    for page in _pages():
        for body in OFFLINE.findall(page.read_text(encoding="utf-8")):
            joined = re.sub(r"\\\n\s*", " ", body)
            lines = [line.split(" #")[0].strip() for line in joined.splitlines()]
            blocks.append((page.relative_to(DOCS).as_posix(), [x for x in lines if x]))
    return blocks


def test_pages_mark_their_offline_commands() -> None:
    for path in _pages():  # a marker not followed by a bash block would run nothing
        text = path.read_text(encoding="utf-8")
        assert len(MARKED.findall(text)) == len(OFFLINE.findall(text)), path
    pages = {page for page, _ in offline_blocks()}
    assert len(pages) >= 8
    for page, lines in offline_blocks():
        for line in lines:
            assert line.startswith("videotapestry "), f"{page}: {line}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> Path:
    """Where the pages' commands run: what a clone has that they name (the sample video, the
    test fixtures) and a cache of its own. ``memories/sample`` starts as a copy of the
    suite's one offline build of the sample (``demo_cache``, checkpoints included), so the
    pages' ``build-memory`` line runs for real but resumes with no model call instead of a
    second cold build."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    work = tmp_path_factory.mktemp("docs-commands")
    (work / "videotapestry" / "demo").mkdir(parents=True)
    (work / "videotapestry" / "demo" / "data").symlink_to(ROOT / "videotapestry/demo/data")
    (work / "tests").mkdir()
    (work / "tests" / "fixtures").symlink_to(ROOT / "tests" / "fixtures")
    shutil.copytree(demo_memory_dir(sample_video_path(), demo_cache), work / "memories/sample")
    return work


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, lines", offline_blocks(), ids=[f"{p}#{i}" for i, (p, _) in enumerate(offline_blocks())]
)
def test_offline_commands_in_the_pages_run(page: str, lines: list[str], workdir: Path) -> None:
    environment = {
        **os.environ,
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    environment.pop("OPENAI_API_KEY", None)
    videotapestry = shutil.which("videotapestry") or ""
    for line in lines:
        words = shlex.split(line)
        command = (
            [videotapestry, *words[1:]]
            if videotapestry
            else [sys.executable, "-m", "videotapestry.cli", *words[1:]]
        )
        done = subprocess.run(
            command, cwd=workdir, env=environment, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{page}: {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert done.stdout.strip(), f"{page}: {line} printed nothing"
