"""docs/architecture.md shows the layers the code is checked against, and names every part.

The diagram is drawn from the import contract (which ``lint-imports`` holds the code to), so
a layer added, moved or renamed in ``pyproject.toml`` without redrawing the page fails here;
and every package and top-level module of the tree must be described on the page.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

pytest.importorskip("importlinter", reason="import-linter is not installed (the dev extra)")


def test_the_diagram_is_the_layers_contract() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "architecture_diagram.py"), "--check", str(DOC)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_part_of_the_tree_is_described() -> None:
    text = DOC.read_text(encoding="utf-8")
    prose = text.split("```mermaid")[0] + text.split("```\n")[-1]
    parts = ["memory_builders/"] + [
        f"`{path.stem}`" if path.is_file() else f"`{path.name}/`"
        for path in sorted((ROOT / "videotapestry").iterdir())
        if (path.suffix == ".py" and path.name != "__init__.py")
        or (path.is_dir() and (path / "__init__.py").exists())
    ]
    missing = [part for part in parts if part not in prose]
    assert missing == []
