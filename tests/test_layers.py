"""The import contracts hold, and they would catch the mistakes they exist for.

``lint-imports`` (run by ``make test``) checks the contracts in pyproject.toml on the real
tree. These tests plant each kind of violation in a copy of the tree and show the contract
that forbids it breaks, so a contract that stopped checking anything (a misspelt module, a
layer left out) cannot pass quietly; and they check the layers name every part of the tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("videotapestry", "memory_builders")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is not installed (the dev extra)"
)


def contracts() -> list[dict]:
    from importlinter.api import read_configuration

    return read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages and the contracts, to plant violations in."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(tree: Path, module: str, line: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = tree / module.replace(".", "/") / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_copy_keeps_every_contract(tree: Path) -> None:
    done = lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract", "names"),
    [
        # A base module reaching up to the facade.
        ("videotapestry.timecode", "import videotapestry.api", "layers", "videotapestry.api"),
        # The core importing the builder, which is a client of the core.
        (
            "videotapestry.llm.client",
            "import memory_builders.builder",
            "layers",
            "memory_builders",
        ),
        # The core importing the offline model instead of finding it by entry point.
        ("videotapestry.graph", "import videotapestry.offline", "layers", "videotapestry.offline"),
        # A result drawing itself with a view (the cycle the restructure removed).
        (
            "videotapestry.result",
            "import videotapestry.views.trace_html",
            "layers",
            "videotapestry.views",
        ),
        # Two modules of one package importing each other.
        (
            "videotapestry.memory.types",
            "import videotapestry.memory.locator",
            "acyclic",
            ".types -> .locator",
        ),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    tree: Path, module: str, line: str, contract: str, names: str
) -> None:
    plant(tree, module, line)
    done = lint(tree)
    assert done.returncode != 0
    name = next(c["name"] for c in contracts() if c["id"] == contract)
    assert f"{name} BROKEN" in done.stdout
    assert names in done.stdout


def test_the_layers_name_every_part_of_the_tree() -> None:
    """A new package or top-level module outside the layers would be checked by nothing."""
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    listed = {
        name.strip() for layer in layers["layers"] for name in layer.replace("|", ":").split(":")
    }
    parts = {"memory_builders"} | {
        f"videotapestry.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "videotapestry").iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py")
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert parts - listed == set(), "parts of the tree in no layer"
    assert listed - parts == set(), "layers naming modules that do not exist"
