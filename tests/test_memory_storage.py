"""Native storage: lossless round trip, fingerprints, versions, malformed files, no pickle."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from videotapestry import files
from videotapestry.errors import FingerprintMismatchError, MemoryFormatError
from videotapestry.memory import (
    Clip,
    NodeEmbeddings,
    TimeRange,
    VideoMemory,
    import_memdreamer,
    load_memory,
    save_memory,
)
from videotapestry.memory.embedding_index import current_digest

SAMPLE = Path(__file__).parent / "fixtures" / "memdreamer_sample"
FINGERPRINT = "sha256:abc123-video-a"


@pytest.fixture(scope="module")
def sample() -> VideoMemory:
    return import_memdreamer(SAMPLE, video_fingerprint=FINGERPRINT)


def saved(tmp_path: Path, memory: VideoMemory, name: str = "native") -> Path:
    save_memory(memory, tmp_path / name)
    return tmp_path / name


def with_vectors(memory: VideoMemory, model: str = "toy-model") -> VideoMemory:
    ids, digest = current_digest(memory)
    vectors = np.random.default_rng(7).normal(size=(len(ids), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return memory.with_embeddings(NodeEmbeddings(model, ids, vectors, digest))


def test_native_round_trip_is_lossless(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, sample)
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "memory.json"]
    loaded = load_memory(path)
    assert loaded == sample
    assert loaded.manifest is not None
    assert loaded.manifest.source == "memdreamer"
    assert loaded.manifest.video_fingerprint == FINGERPRINT
    assert loaded.manifest.counts == sample.counts()
    # Saving what was loaded writes byte-identical memory.json.
    again = saved(tmp_path, loaded, "again")
    assert (again / "memory.json").read_bytes() == (path / "memory.json").read_bytes()


def test_embeddings_round_trip_without_pickle(tmp_path: Path, sample: VideoMemory) -> None:
    memory = with_vectors(sample)
    path = saved(tmp_path, memory)
    ids_doc = json.loads((path / "embedding_ids.json").read_text())
    assert ids_doc["model"] == "toy-model" and len(ids_doc["ids"]) == 23
    loaded = load_memory(path)
    assert loaded.embeddings is not None and memory.embeddings is not None
    assert loaded.embeddings.ids == memory.embeddings.ids
    np.testing.assert_array_equal(loaded.embeddings.vectors, memory.embeddings.vectors)
    assert loaded.manifest is not None and loaded.manifest.embedding_model == "toy-model"
    # Saving without vectors removes the stale files instead of leaving them to be misread.
    save_memory(loaded.with_embeddings(None), path)
    assert not (path / "embeddings.npy").exists()
    assert load_memory(path).embeddings is None


def test_pickled_embeddings_are_refused(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, with_vectors(sample))
    objects = np.empty(23, dtype=object)
    objects[:] = [{"payload": i} for i in range(23)]
    np.save(path / "embeddings.npy", objects, allow_pickle=True)
    with pytest.raises(MemoryFormatError, match=r"embeddings\.npy is not a plain numeric \.npy"):
        load_memory(path)


def test_embedding_shape_mismatch_names_both_files(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, with_vectors(sample))
    np.save(path / "embeddings.npy", np.zeros((5, 8), dtype=np.float32))
    with pytest.raises(MemoryFormatError, match=r"shape \(5, 8\) does not match the 23 ids"):
        load_memory(path)


def test_fingerprint_mismatch_is_refused(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, sample)
    assert load_memory(path, expected_fingerprint=FINGERPRINT) == sample
    with pytest.raises(FingerprintMismatchError) as caught:
        load_memory(path, expected_fingerprint="sha256:other-video")
    assert FINGERPRINT in str(caught.value) and "sha256:other-video" in str(caught.value)


def test_memory_without_fingerprint_is_accepted_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = saved(tmp_path, import_memdreamer(SAMPLE))
    with caplog.at_level(logging.WARNING):
        load_memory(path, expected_fingerprint="sha256:any")
    assert "records no video fingerprint" in caplog.text


@pytest.mark.parametrize("file_name", ["memory.json", "manifest.json"])
def test_unknown_schema_version_names_file_and_field(
    tmp_path: Path, sample: VideoMemory, file_name: str
) -> None:
    path = saved(tmp_path, sample)
    data = json.loads((path / file_name).read_text())
    data["schema_version"] = 99
    (path / file_name).write_text(json.dumps(data))
    with pytest.raises(MemoryFormatError, match=rf"{file_name}: unknown schema_version 99"):
        load_memory(path)


def test_corrupt_json_names_file_and_line(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, sample)
    text = (path / "memory.json").read_text()
    (path / "memory.json").write_text(text[: len(text) // 2])
    with pytest.raises(MemoryFormatError, match=r"memory\.json is not valid JSON \(line \d+"):
        load_memory(path)


def test_malformed_node_field_names_file_field_and_id(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, sample)
    data = json.loads((path / "memory.json").read_text())
    index = next(i for i, n in enumerate(data["nodes"]) if n["id"] == "slot2_o1")
    data["nodes"][index]["time_range"] = [635, 615]
    (path / "memory.json").write_text(json.dumps(data))
    with pytest.raises(MemoryFormatError) as caught:
        load_memory(path)
    message = str(caught.value)
    assert f"memory.json: field nodes[{index}].time_range (id 'slot2_o1')" in message
    assert "ends (615.0) before it starts (635.0)" in message


def test_dangling_parent_and_relation_end_are_errors(tmp_path: Path, sample: VideoMemory) -> None:
    path = saved(tmp_path, sample)
    original = json.loads((path / "memory.json").read_text())
    data = json.loads(json.dumps(original))
    next(n for n in data["nodes"] if n["id"] == "slot5_o1")["parent_id"] = "macro_0042"
    (path / "memory.json").write_text(json.dumps(data))
    with pytest.raises(
        MemoryFormatError, match="OCRText 'slot5_o1' has unknown parent 'macro_0042'"
    ):
        load_memory(path)
    data = json.loads(json.dumps(original))
    data["edges"][0]["target"] = "super_77"
    (path / "memory.json").write_text(json.dumps(data))
    with pytest.raises(MemoryFormatError, match=r"relation 0 .* unknown target 'super_77'"):
        load_memory(path)


def test_not_a_memory_directory(tmp_path: Path) -> None:
    with pytest.raises(MemoryFormatError, match="does not exist"):
        load_memory(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MemoryFormatError, match=r"manifest\.json is missing"):
        load_memory(tmp_path / "empty")


def test_save_refuses_a_foreign_non_empty_directory(tmp_path: Path, sample: VideoMemory) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(MemoryFormatError, match="not empty and is not a videotapestry memory"):
        save_memory(sample, tmp_path / "photos")


def test_interrupted_save_leaves_the_previous_files_intact(
    tmp_path: Path, sample: VideoMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved(tmp_path, sample)
    before = {p.name: p.read_bytes() for p in path.iterdir()}

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        save_memory(with_vectors(sample), path)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before  # no temp files either
    assert load_memory(path) == sample


def test_builder_clips_round_trip_and_are_checked(tmp_path: Path, sample: VideoMemory) -> None:
    parts = {
        "root": sample.root,
        "super_events": sample.super_events(),
        "macro_events": sample.macro_events(),
        "subgraph_nodes": sample.nodes(["Entity", "Event", "OCRText"]),
        "relations": sample.relations(),
        "unification": sample.unification,
    }
    clips = [
        Clip(
            id="clip_0041",
            time_range=TimeRange(start=615, end=640),
            macro_id="macro_0002",
            node_ids=("slot2_o1", "slot2_v2"),
            captions=("The oven display reads 220°C.",),
        ),
        Clip(id="clip_0000", time_range=TimeRange(start=0, end=20), macro_id="macro_0000"),
    ]
    memory = VideoMemory(**parts, clips=clips)
    assert [c.id for c in memory.clips] == ["clip_0000", "clip_0041"]  # time order
    loaded = load_memory(saved(tmp_path, memory))
    assert loaded.clips == memory.clips and loaded == memory
    broken = Clip(id="clip_x", time_range=TimeRange(start=0, end=5), node_ids=("slot9_e1",))
    with pytest.raises(
        MemoryFormatError, match=r"clip 'clip_x' names unknown node ids \['slot9_e1'\]"
    ):
        VideoMemory(**parts, clips=[broken])
