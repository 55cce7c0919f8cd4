"""Benchmark loaders by command-line name: each reads the benchmark's own released files.

A loader takes the annotation file or the directory holding it and returns normalized
``EvalQuestion`` records; it never needs the videos, so ``eval --list`` works before a
single video is downloaded. Malformed files raise ``DatasetError`` naming file and row, and
so does a file that holds no question (empty, or none in the ``--duration`` asked for): a
run of nothing would otherwise finish with status 0 and an empty table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from videotapestry.eval.datasets.cgbench import load_cgbench
from videotapestry.eval.datasets.common import MODES, DatasetError, LoadOptions, Mode
from videotapestry.eval.datasets.egoschema import (
    egoschema_submission,
    load_egoschema,
    write_egoschema_submission,
)
from videotapestry.eval.datasets.jsonl import load_jsonl
from videotapestry.eval.datasets.longvideobench import load_longvideobench
from videotapestry.eval.datasets.lvbench import load_lvbench
from videotapestry.eval.datasets.videomme import load_videomme
from videotapestry.eval.questions import EvalQuestion

Loader = Callable[[Path, LoadOptions], list[EvalQuestion]]


def loaders() -> dict[str, Loader]:
    """Every benchmark name the command line accepts, with its loader."""
    return {
        "videomme": load_videomme,
        "lvbench": load_lvbench,
        "longvideobench": load_longvideobench,
        "egoschema": load_egoschema,
        "cgbench": load_cgbench,
        "jsonl": load_jsonl,
    }


def load_benchmark(
    name: str, annotations: str | Path, options: LoadOptions | None = None
) -> list[EvalQuestion]:
    """The benchmark's questions, normalized, in the file's order."""
    table = loaders()
    if name not in table:
        raise DatasetError(f"unknown benchmark {name!r}; choose one of {', '.join(table)}")
    path = Path(annotations).expanduser()
    if not path.exists():
        raise DatasetError(f"annotations not found: {path}")
    options = options or LoadOptions()
    questions = table[name](path, options)
    if not questions:
        within = f" with --duration {options.duration}" if options.duration else ""
        raise DatasetError(f"{path} holds no {name} questions{within}; nothing to run")
    return questions


__all__ = [
    "MODES",
    "DatasetError",
    "LoadOptions",
    "Mode",
    "egoschema_submission",
    "load_benchmark",
    "loaders",
    "write_egoschema_submission",
]
