"""`videotapestry import-memdreamer` and `videotapestry inspect` end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from videotapestry.cli import main
from videotapestry.memory import import_memdreamer, load_memory

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"


def test_import_then_inspect_native_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "native"
    assert main(["import-memdreamer", str(SAMPLE), str(dest), "--fingerprint", "fp-1"]) == 0
    assert "imported" in capsys.readouterr().out
    memory = load_memory(dest, expected_fingerprint="fp-1")
    assert memory == import_memdreamer(SAMPLE)

    assert main(["inspect", str(dest), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["MacroEvent"] == 6 and summary["counts"]["OCRText"] == 4
    assert summary["manifest"]["video_fingerprint"] == "fp-1"
    node = next(n for n in summary["nodes"] if n["id"] == "slot5_o1")
    assert node == {
        "id": "slot5_o1",
        "kind": "OCRText",
        "label": "9/10",
        "time_range": [1170.0, 1190.0],
        "parent": "macro_0005",
    }


def test_import_with_embeddings_from_the_offline_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "native"
    argv = ["import-memdreamer", str(SAMPLE), str(dest), "--embed", "--profile", "offline"]
    assert main(argv) == 0
    assert "embeddings: packaged:all-MiniLM-L6-v2" in capsys.readouterr().out
    embeddings = load_memory(dest).embeddings
    assert embeddings is not None and embeddings.vectors.shape == (23, 384)


def test_inspect_memdreamer_directory_as_tree_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "memory.html"
    assert main(["inspect", str(SAMPLE), "--html", str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("root_001 [00:00-20:00] RootEvent")
    assert any("macro_0005 [17:30-20:00] MacroEvent: guest_tasting" in line for line in out)
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "guest_tasting" in html


def test_errors_are_one_line_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(SAMPLE, broken)
    for path in broken.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(broken / "phase2")
    assert main(["import-memdreamer", str(broken), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("videotapestry: error:") and "phase2 folder is missing" in err
    assert "\n" not in err
    assert main(["inspect", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
