"""bench/smoke.py notices a broken bench script (issue 36).

The bench scripts are not tests, so nothing ran them and a renamed function broke one
unnoticed. bench/smoke.py runs every script at smoke size; here it runs on folders holding
copies of its cheapest script, bench_pace_mem_speed.py: the copy as it is passes (so the
script prints all its figure lines at smoke size), a copy with one imported name renamed
fails with the script and the import error named, and scripts that skip a figure line or
declare no SMOKE_FIGURES fail too. Every script in bench/ declares its SMOKE_FIGURES.
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "bench" / "smoke.py"
SCRIPT = ROOT / "bench" / "bench_pace_mem_speed.py"
IMPORT = "from videotapestry.retrieval import Clip, EvidenceRecord, pack_clips, select_evidence"


def run_smoke(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUNNER), "--scripts-dir", str(folder), "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def report_line(output: str, script: str) -> str:
    """The runner's line about ``script`` and the lines under it (a failure's stderr)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(script + " "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), None)
    return "\n".join(lines[start:end])


def test_an_unmodified_copy_passes(tmp_path: Path) -> None:
    shutil.copy(SCRIPT, tmp_path)
    done = run_smoke(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report_line(done.stdout, SCRIPT.name).endswith(" s  ok")
    assert "1 scripts, 0 failed" in done.stdout


def test_a_renamed_import_fails_the_run(tmp_path: Path) -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    assert IMPORT in source  # the name the copy renames
    broken = source.replace(IMPORT, IMPORT.replace("pack_clips", "pack_clips_renamed"))
    (tmp_path / SCRIPT.name).write_text(broken, encoding="utf-8")
    done = run_smoke(tmp_path)
    assert done.returncode == 1
    line = report_line(done.stdout, SCRIPT.name)
    assert "FAIL: exit status 1" in line
    assert "ImportError: cannot import name 'pack_clips_renamed'" in line
    assert "1 scripts, 1 failed" in done.stdout


def test_a_figure_line_not_printed_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "bench_quiet.py").write_text(
        'SMOKE_FIGURES: tuple[str, ...] = (r"^section 1: ", r"^section 2: ")\n'
        'print("section 1: 3.0 s")\n',
        encoding="utf-8",
    )
    done = run_smoke(tmp_path)
    assert done.returncode == 1
    assert "FAIL: no line matches '^section 2: '" in report_line(done.stdout, "bench_quiet.py")


def test_a_script_without_smoke_figures_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bench_silent.py").write_text('print("figures")\n', encoding="utf-8")
    done = run_smoke(tmp_path)
    assert done.returncode == 1
    assert "FAIL: no SMOKE_FIGURES" in report_line(done.stdout, "bench_silent.py")


def test_every_bench_script_declares_its_figures() -> None:
    """Read as the runner reads them (``ast``), so a new script without them fails here too."""
    smoke_figures = runpy.run_path(str(RUNNER))["smoke_figures"]
    scripts = sorted((ROOT / "bench").glob("bench_*.py"))
    assert len(scripts) >= 19
    for script in scripts:
        assert smoke_figures(script), script.name
