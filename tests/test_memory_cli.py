"""`videotapestry import-memdreamer` and `videotapestry inspect` end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from videotapestry.cli import main
from videotapestry.memory import (
    NodeEmbeddings,
    VideoMemory,
    import_memdreamer,
    load_memory,
    save_memory,
)
from videotapestry.memory.embedding_index import current_digest, embeddings_match

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"
RELEASED = Path(__file__).parent / "fixtures" / "memdreamer_released"
QWEN_8B = "Qwen/Qwen3-Embedding-8B"


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
    assert "embeddings: packaged:all-MiniLM-L6-v2 (computed)" in capsys.readouterr().out
    embeddings = load_memory(dest).embeddings
    assert embeddings is not None and embeddings.vectors.shape == (23, 384)
    # Importing again over it with --force reuses the vectors of the configured model.
    stored = (dest / "embeddings.npy").read_bytes()
    assert main([*argv, "--force"]) == 0
    assert "embeddings: packaged:all-MiniLM-L6-v2 (kept)" in capsys.readouterr().out
    assert (dest / "embeddings.npy").read_bytes() == stored


def test_the_import_report_names_vectors_that_are_not_the_configured_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kitchen = RELEASED / "kitchen_0001"
    # The default embedder is not the model of embeddings.json: kept, with a note that
    # questions will replace them and how to use them instead.
    assert main(["import-memdreamer", str(kitchen), str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert f"embeddings: {QWEN_8B} (embeddings.json)" in out
    note = out.splitlines()[1]
    assert note.startswith(f"  note: the stored node vectors are {QWEN_8B}'s (8 values)")
    assert "embedding.model is Qwen/Qwen3-Embedding-0.6B" in note and "PACE-Mem" in note
    assert load_memory(tmp_path / "a").embeddings.model_name == QWEN_8B
    # Their own model configured: used as they are, nothing to note.
    same = ["-o", f"embedding.model={QWEN_8B}"]
    assert main(["import-memdreamer", str(kitchen), str(tmp_path / "b"), *same]) == 0
    assert "note:" not in capsys.readouterr().out
    # --embed with another model replaces them, and says which and why.
    argv = ["import-memdreamer", str(kitchen), str(tmp_path / "c"), "--embed"]
    assert main([*argv, "--profile", "offline"]) == 0
    out = capsys.readouterr().out
    assert "embeddings: packaged:all-MiniLM-L6-v2 (computed)" in out
    assert (
        f"note: the stored node vectors ({QWEN_8B}, 8 values) were replaced by "
        "packaged:all-MiniLM-L6-v2's (384 values) because embedding.model is "
        "packaged:all-MiniLM-L6-v2"
    ) in out
    assert load_memory(tmp_path / "c").embeddings.dimension == 384


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


# --------------------------------------------------------------------------- an existing memory


def toy_vectors(memory: VideoMemory, model: str = "toy-model") -> VideoMemory:
    ids, digest = current_digest(memory)
    vectors = np.random.default_rng(3).normal(size=(len(ids), 6)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return memory.with_embeddings(NodeEmbeddings(model, ids, vectors, digest))


def test_import_into_an_existing_memory_refuses_then_keeps_its_embeddings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "native"
    save_memory(toy_vectors(import_memdreamer(SAMPLE, video_fingerprint="fp-1")), dest)
    before = {p.name: p.read_bytes() for p in dest.iterdir()}

    assert main(["import-memdreamer", str(SAMPLE), str(dest)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(dest) in err and "--force" in err and "\n" not in err
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before  # nothing touched

    assert main(["import-memdreamer", str(SAMPLE), str(dest), "--force"]) == 0
    assert "embeddings: toy-model (kept)" in capsys.readouterr().out
    assert (dest / "embeddings.npy").read_bytes() == before["embeddings.npy"]
    loaded = load_memory(dest, expected_fingerprint="fp-1")  # same source: fingerprint kept
    assert loaded.manifest is not None and loaded.manifest.embedding_model == "toy-model"
    assert embeddings_match(loaded, "toy-model")


def test_force_drops_embeddings_of_texts_that_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "native"
    save_memory(toy_vectors(import_memdreamer(SAMPLE)), dest)
    edited = tmp_path / "edited"
    shutil.copytree(SAMPLE, edited)
    subgraph = edited / "phase2" / "episode_002" / "step5_subgraph.json"
    subgraph.write_text(subgraph.read_text().replace("220°C", "230°C"), encoding="utf-8")

    assert main(["import-memdreamer", str(edited), str(dest), "--force"]) == 0
    assert "; embeddings:" not in capsys.readouterr().out
    loaded = load_memory(dest)
    assert loaded.embeddings is None and not (dest / "embeddings.npy").exists()
    assert loaded.node("slot2_o1").text == "230°C"


def test_force_never_writes_into_a_directory_that_is_not_a_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    assert main(["import-memdreamer", str(SAMPLE), str(tmp_path / "busy"), "--force"]) == 2
    assert "not a videotapestry memory" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["notes.txt"]


# --------------------------------------------------------------------------- the released layout


def test_import_a_root_of_many_videos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "natives"
    assert main(["import-memdreamer", str(RELEASED), str(dest)]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if not line.startswith("  note: ")]
    assert len(lines) == 2
    # Both memories' Qwen3-Embedding-8B vectors are not the default model's: a note each.
    assert len(out) == 4 and out[1].startswith("  note: the stored node vectors are")
    assert lines[0].startswith(f"imported {RELEASED / 'harbour_0002'} -> {dest / 'harbour_0002'}")
    assert lines[1].endswith("embeddings: Qwen/Qwen3-Embedding-8B (embeddings.json)")
    kitchen = load_memory(dest / "kitchen_0001")
    assert kitchen == import_memdreamer(RELEASED / "kitchen_0001")
    assert kitchen.embeddings is not None and kitchen.embeddings.model_name == QWEN_8B
    assert load_memory(dest / "harbour_0002").node("slot0_o1").text == "GATE 4"


def test_a_failing_video_is_reported_and_the_others_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "release"
    shutil.copytree(RELEASED, root)
    (root / "harbour_0002" / "phase4" / "hierarchical_graph.json").write_text("{", "utf-8")
    (root / "notes").mkdir()  # not a video: ignored
    dest = tmp_path / "natives"
    assert main(["import-memdreamer", str(root), str(dest)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"imported {root / 'kitchen_0001'}")
    err = captured.err.splitlines()
    assert err[0].startswith("failed harbour_0002: ") and "not valid JSON" in err[0]
    assert err[1] == "videotapestry: error: 1 of 2 videos failed to import: harbour_0002"
    assert load_memory(dest / "kitchen_0001").counts()["OCRText"] == 2
    assert not (dest / "harbour_0002").exists() and not (dest / "notes").exists()


def test_one_fingerprint_for_a_root_of_videos_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import-memdreamer", str(RELEASED), str(tmp_path / "n"), "--fingerprint", "fp"]
    assert main(argv) == 2
    assert "holds 2" in capsys.readouterr().err
    assert not (tmp_path / "n").exists()


def test_inspect_opens_the_released_layout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(RELEASED / "kitchen_0001"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["embeddings"] == {"model": QWEN_8B, "count": 12, "dim": 8}
    scale = next(n for n in summary["nodes"] if n["id"] == "slot0_e2")
    assert scale["keyframe_path"].endswith("episode_0000/episode_0000/features/e2/best_frame.jpg")
    assert main(["inspect", str(RELEASED)]) == 2
    err = capsys.readouterr().err
    assert "2 videos (harbour_0002, kitchen_0001)" in err and "open one" in err
