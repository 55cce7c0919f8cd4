"""Write the documentation's copy of the quickstart notebook, executed, with its outputs.

The site renders ``docs/examples/quickstart.ipynb`` as it is (``mkdocs-jupyter`` with
``execute: false``): executing it at build time would build the sample's memory with the
offline model, about a minute or more on two cores, in every ``make test``. So this script
runs ``examples/quickstart.ipynb`` once in a kernel and commits the result;
``tests/test_docs.py`` fails when the copy's cells are no longer the source's (run this
again after editing the notebook).

    python scripts/execute_notebook.py [--timeout 900]

It shares ``videotapestry demo``'s cache ($XDG_CACHE_HOME/videotapestry/demo/<version>-<checkout>),
so with the demo's memory built it answers from it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "examples" / "quickstart.ipynb"
TARGET = ROOT / "docs" / "examples" / "quickstart.ipynb"


def tidy(notebook: nbformat.NotebookNode) -> None:
    """Drop what says nothing about the example: execution timings, and the warning tqdm
    prints in a kernel without ipywidgets."""
    for cell in notebook.cells:
        cell.get("metadata", {}).pop("execution", None)
        if "outputs" in cell:
            cell.outputs = [o for o in cell.outputs if "TqdmWarning" not in o.get("text", "")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument("--tidy-only", action="store_true", help="tidy the copy, run nothing")
    args = parser.parse_args()
    if args.tidy_only:
        notebook = nbformat.read(TARGET, as_version=4)
        tidy(notebook)
        nbformat.write(notebook, TARGET)
        return 0
    notebook = nbformat.read(SOURCE, as_version=4)
    started = time.perf_counter()
    ExecutePreprocessor(timeout=args.timeout, kernel_name="python3").preprocess(
        notebook, {"metadata": {"path": str(ROOT / "examples")}}
    )
    tidy(notebook)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, TARGET)
    print(f"{TARGET.relative_to(ROOT)} written in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
