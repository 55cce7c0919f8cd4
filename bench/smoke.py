"""Run every bench script at smoke size and check that it printed its figures.

The bench scripts are not tests, so nothing ran them: a function renamed in the package
broke a script unnoticed until someone wanted its figures. This runs each
``bench_*.py`` as ``python bench_X.py --smoke`` (its smallest size that still goes through
every section) and fails a script that exits with an error or that does not print a line
matching each of its ``SMOKE_FIGURES`` patterns (one per section, so a section silently
skipped is noticed too). The patterns are read with ``ast``, without importing the script.

Each script gets a fresh temporary directory as its input cache (``$VIDEOTAPESTRY_BENCH_CACHE``,
see bench/benchkit.py) and as ``$XDG_CACHE_HOME``: smoke-sized inputs never meet the real
ones in bench/.cache/, and nothing reads or writes the user's cache.

    python bench/smoke.py [--only bench_ray ...] [-j 2] [--timeout 180] [--scripts-dir DIR]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
STDERR_LINES = 12  # of a failed script's stderr, in the report
#: The slowest scripts at smoke size, started first (longest first) so that the workers
#: finish close together instead of one running a long script alone at the end.
SLOWEST_FIRST = (
    "bench_prompt_cache",
    "bench_paper_setting",
    "bench_method",
    "bench_ray",
    "bench_serve",
    "bench_grounding",
    "bench_accuracy_cost",
    "bench_offline_vs_direct",
    "bench_builder",
    "bench_offline_model",
    "bench_eval",
)


@dataclass(frozen=True)
class Outcome:
    name: str
    seconds: float
    failure: str | None  # None: ok


def smoke_figures(script: Path) -> tuple[str, ...]:
    """The script's module-level ``SMOKE_FIGURES`` (a tuple of regular expressions), read
    without importing it; ValueError when it has none or they are not valid patterns."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "SMOKE_FIGURES" for t in targets):
            patterns = ast.literal_eval(value)
            if not (
                isinstance(patterns, tuple)
                and patterns
                and all(isinstance(p, str) for p in patterns)
            ):
                raise ValueError("SMOKE_FIGURES is not a non-empty tuple of strings")
            for pattern in patterns:
                re.compile(pattern)
            return patterns
    raise ValueError("no SMOKE_FIGURES: the runner cannot tell whether it printed its figures")


def child_env(cache: Path) -> dict[str, str]:
    """The script's environment: its own cache, no user cache, no downloads, the real bench/
    and repository on the path (so a copy elsewhere imports what the scripts do), and one
    thread per math library (a smoke run times nothing, and ``-j`` scripts share the cores:
    each library's pool of a thread per core only oversubscribes them)."""
    env = dict(os.environ)
    path = [str(BENCH), str(ROOT), env.get("PYTHONPATH", "")]
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in path if p),
        VIDEOTAPESTRY_BENCH_CACHE=str(cache / "bench"),
        XDG_CACHE_HOME=str(cache / "xdg"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        RAY_USAGE_STATS_ENABLED="0",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def run_one(script: Path, timeout: float) -> Outcome:
    """Run ``script --smoke`` in its own process group and judge what it printed."""
    try:
        patterns = smoke_figures(script)
    except (SyntaxError, ValueError, re.error) as error:
        return Outcome(script.name, 0.0, str(error))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"smoke-{script.stem}-") as cache:
        process = subprocess.Popen(
            [sys.executable, str(script), "--smoke"],
            cwd=ROOT,
            env=child_env(Path(cache)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its servers and workers are killed with it on timeout
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.communicate()
            return Outcome(script.name, time.perf_counter() - started, f"timed out ({timeout:g} s)")
        seconds = time.perf_counter() - started
        kill_group(process.pid)  # whatever it left running
    if process.returncode != 0:
        tail = "\n".join("    " + line for line in stderr.strip().splitlines()[-STDERR_LINES:])
        return Outcome(script.name, seconds, f"exit status {process.returncode}:\n{tail}")
    lines = stdout.splitlines()
    missing = [p for p in patterns if not any(re.search(p, line) for line in lines)]
    if missing:
        return Outcome(script.name, seconds, "no line matches " + ", ".join(map(repr, missing)))
    return Outcome(script.name, seconds, None)


def select(scripts_dir: Path, only: list[str] | None) -> list[Path]:
    """The scripts to run, the slowest first."""
    slowest = {name: rank for rank, name in enumerate(SLOWEST_FIRST)}
    scripts = sorted(
        scripts_dir.glob("bench_*.py"), key=lambda s: (slowest.get(s.stem, len(slowest)), s.name)
    )
    if only:
        wanted = {name.removesuffix(".py") for name in only}
        unknown = wanted - {s.stem for s in scripts}
        if unknown:
            raise SystemExit(f"no such bench script in {scripts_dir}: {', '.join(sorted(unknown))}")
        scripts = [s for s in scripts if s.stem in wanted]
    return scripts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these scripts only")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="scripts run at once")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per script")
    parser.add_argument("--scripts-dir", type=Path, default=BENCH, help="where bench_*.py are")
    args = parser.parse_args(argv)
    scripts = select(args.scripts_dir, args.only)
    if not scripts:
        print(f"no bench_*.py in {args.scripts_dir}")
        return 1
    width = max(len(s.name) for s in scripts)
    started = time.perf_counter()
    failed = 0
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, script, args.timeout) for script in scripts]
        for future in as_completed(futures):
            outcome = future.result()
            failed += outcome.failure is not None
            verdict = "ok" if outcome.failure is None else f"FAIL: {outcome.failure}"
            print(f"{outcome.name:<{width}} {outcome.seconds:6.1f} s  {verdict}", flush=True)
    total = time.perf_counter() - started
    print(f"{len(scripts)} scripts, {failed} failed, {total:.1f} s in all (-j {args.jobs})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
