"""What the bench scripts share: where their generated inputs are cached, and ``--smoke``.

Generated inputs (hour-long videos, embedded memories) are kept in bench/.cache/ and reused,
which is what makes a second run quick. A smoke run (``--smoke``, run for every script by
bench/smoke.py) must never touch them: a 1-minute video must neither be taken for a cached
60-minute one nor overwrite it, and the smoke run must generate its own inputs so that the
generation code runs too. So every script asks ``cache_dir`` for the directory, which is
``$VIDEOTAPESTRY_BENCH_CACHE`` when set (bench/smoke.py sets it to a fresh temporary
directory per script) and bench/.cache/ otherwise; ``--smoke`` without it makes a temporary
directory of its own, removed at exit.

``--smoke`` means "these options first": each script's ``SMOKE_ARGS`` are put in front of
the command line, so an option given explicitly still wins (argparse keeps the last value).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: The environment variable naming the cache directory (bench/.cache/ when unset).
CACHE_ENV = "VIDEOTAPESTRY_BENCH_CACHE"
DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"


def cache_dir(*parts: str) -> Path:
    """The bench cache directory (``$VIDEOTAPESTRY_BENCH_CACHE`` or bench/.cache/), joined
    with ``parts``. Read at every call: ``smoke`` may set the variable after imports."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else DEFAULT_CACHE).joinpath(*parts)


def smoke(smoke_args: Sequence[str]) -> bool:
    """Handle ``--smoke`` on the command line (call it before parsing the options).

    With ``--smoke``: removes it from ``sys.argv`` and puts ``smoke_args`` first (options
    given explicitly come later, so they win), and, unless ``$VIDEOTAPESTRY_BENCH_CACHE`` is
    set, points it and ``$XDG_CACHE_HOME`` at a temporary directory removed at exit, so
    smoke-sized inputs never meet the real ones. ``sys.argv`` is edited in place because
    some scripts parse with a shared parser (``fact_bench.bench_arguments``). Returns
    whether this is a smoke run."""
    if "--smoke" not in sys.argv[1:]:
        return False
    rest = [arg for arg in sys.argv[1:] if arg != "--smoke"]
    sys.argv[1:] = [*smoke_args, *rest]
    if not os.environ.get(CACHE_ENV):
        folder = tempfile.mkdtemp(prefix="bench-smoke-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ[CACHE_ENV] = str(Path(folder) / "cache")
        os.environ["XDG_CACHE_HOME"] = str(Path(folder) / "xdg")
    chosen = Path(os.environ[CACHE_ENV]).resolve()
    if chosen == DEFAULT_CACHE or DEFAULT_CACHE in chosen.parents:
        raise SystemExit(f"--smoke: ${CACHE_ENV} must not be inside {DEFAULT_CACHE}")
    print(
        f"smoke run: {' '.join(sys.argv[1:])}; inputs in {os.environ[CACHE_ENV]}",
        file=sys.stderr,
        flush=True,
    )
    return True
