"""The memory builder end to end, in process: generated videos with scene changes (real
decoding, real PySceneDetect), the real openai client over HTTP to the fake server, and the
scripted builder model, whose replies come from the frames and text each request carries."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_builders.builder import MemoryBuilder
from memory_builders.export import export_released_layout
from memory_builders.progress import BuildProgress
from memory_builders.report import (
    BuildError,
    BuildStoppedError,
    TooManyFailuresError,
    summary_text,
)
from videotapestry.config import load_config
from videotapestry.errors import MemoryFormatError
from videotapestry.memory import (
    RELATION_TYPES,
    EntityNode,
    VideoMemory,
    import_memdreamer,
    load_memory,
)
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.testing.builder_media import faststart_copy, truncate_video
from videotapestry.testing.media import TestVideo, make_test_video
from videotapestry.testing.scripted_builder import (
    GUIDE_NAMES,
    ScriptedBuilderModel,
    offline_build_overrides,
    perception_requests,
)
from videotapestry.video import fingerprint

#: Both videos of this module are longer than a minute.
FIXTURE_NEEDS = {"tour": "long_video", "truncated": "long_video"}

#: Every test and module fixture here builds with a key set (conftest's, unset after).
pytestmark = pytest.mark.usefixtures("module_api_key")


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    """150 s, a new scene (colour and sign) every 15 s: ten shots, ten clips."""
    path = tmp_path_factory.mktemp("tour") / "tour.mp4"
    return make_test_video(path, 150, fps=4, size=(192, 108), scene_s=15)


def build(server, embedder, video, out, *overrides, **kwargs):
    config = load_config(
        overrides=offline_build_overrides(
            server.base_url,
            "builder.ocr.engine=none",
            "builder.macro.min_s=30",
            *overrides,
        )
    )
    builder = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False))
    return builder.build(video, out, **kwargs)


@dataclass
class Built:
    server: FakeOpenAIServer
    video: TestVideo
    out: Path
    cache: Path
    memory: VideoMemory
    requests: list


@pytest.fixture(scope="module")
def built(tour, embedder, tmp_path_factory) -> Iterator[Built]:
    base = tmp_path_factory.mktemp("built")
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(tour.fps, tour.scenes))
        cache = base / "cache.sqlite"
        result = build(server, embedder, tour.path, base / "out", f"cache.path={cache}")
        yield Built(server, tour, base / "out", cache, result.memory, server.requests)


# --------------------------------------------------------------------------- structure


def test_times_are_absolute_and_nest_inside_their_parents(built: Built) -> None:
    memory = built.memory
    duration = built.video.duration_s
    assert memory.root.time_range.start == 0 and memory.root.time_range.end == duration
    supers = memory.super_events()
    assert supers[0].time_range.start == 0 and supers[-1].time_range.end == duration
    for a, b in itertools.pairwise(supers):
        assert a.time_range.end == b.time_range.start
    for sup in supers:
        macros = memory.macro_events(sup.id)
        # MacroEvents tile their SuperEvent: no gap, no overlap.
        assert macros[0].time_range.start == sup.time_range.start
        assert macros[-1].time_range.end == sup.time_range.end
        for a, b in itertools.pairwise(macros):
            assert a.time_range.end == b.time_range.start
        for macro in macros:
            nodes = memory.subgraph(macro.id).nodes
            assert nodes, macro.id
            for node in nodes:
                assert macro.time_range.start <= node.time_range.start
                assert node.time_range.end <= macro.time_range.end
                if isinstance(node, EntityNode):
                    assert macro.time_range.contains(node.grounding_time)
    clips = memory.clips
    assert len(clips) == 10 and clips[0].time_range.start == 0
    assert all(memory.macro_id_of(node_id) == c.macro_id for c in clips for node_id in c.node_ids)
    assert len(supers) >= 2 and len(memory.macro_events()) >= 4


def test_relations_join_existing_nodes_with_known_types(built: Built) -> None:
    memory = built.memory
    relations = memory.relations()
    assert all(r.type in RELATION_TYPES for r in relations)
    labels = Counter(r.label for r in relations)
    # Structural (PERFORMS/ACTS_ON), model-proposed (HAPPENS_IN, SHOWS_TEXT) and level ones.
    assert labels["PERFORMS"] and labels["HAPPENS_IN"] and labels["SHOWS_TEXT"]
    assert labels["LEADS_TO"] == len(memory.super_events()) - 1
    assert labels["BEFORE"] == len(memory.macro_events()) - 1
    # The scripted model also proposes one relation to a node that does not exist.
    assert not any("slot999" in (r.source + r.target) for r in relations)
    for relation in relations:
        if relation.label == "HAPPENS_IN":
            assert memory.macro_id_of(relation.source) == memory.macro_id_of(relation.target)


def test_the_memory_describes_what_the_video_shows(built: Built) -> None:
    memory, video = built.memory, built.video
    places = [n for n in memory.nodes(["Entity"]) if n.entity_type == "place"]
    assert len(places) == len(video.scenes)
    for place in places:  # named after the sign of the scene at its grounding moment
        assert place.name.upper() == video.scene_at(place.grounding_time).text.split()[-1]
    texts = {n.text for n in memory.nodes(["OCRText"])}
    assert texts == {scene.text for scene in video.scenes}
    for clip in memory.clips:
        assert video.scene_at(clip.time_range.start).text in clip.captions[0]


def test_entity_variants_are_unified(built: Built) -> None:
    memory = built.memory
    names = {n.name for n in memory.nodes(["Entity"]) if n.entity_type == "person"}
    assert names == set(GUIDE_NAMES)  # the clips call the guide by both names
    assert set(memory.variants_of("Anna")) == set(GUIDE_NAMES)
    assert len(memory.unification) == 1 + len(built.video.scenes)
    asked = [r for r in built.requests if r.prompt == "builder_entity_merge"]
    assert len(asked) == 1 and "Guide Anna" in asked[0].text


def test_embeddings_cover_every_subgraph_node(built: Built) -> None:
    memory = load_memory(built.out, expected_fingerprint=fingerprint(built.video.path))
    ids = {n.id for n in memory.nodes(["Entity", "Event", "OCRText"])}
    assert memory.embeddings is not None and set(memory.embeddings.ids) == ids
    assert memory.embeddings.model_name == "packaged:all-MiniLM-L6-v2"
    assert memory == built.memory


def test_manifest_records_models_prompts_config_and_usage(built: Built) -> None:
    manifest = load_memory(built.out).manifest
    assert manifest.source == "builder"
    assert manifest.video_fingerprint == fingerprint(built.video.path)
    assert manifest.models == {
        "builder_clip": "fake-vlm",
        "builder_macro_boundaries": "fake-vlm",
        "builder_macro": "fake-vlm",
        "builder_entity_merge": "fake-vlm",
        "builder_super": "fake-vlm",
        "builder_root": "fake-vlm",
    }
    assert set(manifest.prompt_hashes) == {
        "builder_clip",
        "builder_macro_boundaries",
        "builder_macro",
        "builder_entity_merge",
        "builder_super",
        "builder_root",
    }
    assert manifest.config["builder"]["macro"]["min_s"] == 30
    build_info = manifest.build
    assert build_info["status"] == "complete" and build_info["partial"] is False
    perception = build_info["stages"]["perception"]
    assert perception["computed"] == 10 and perception["usage"]["calls"] == 10
    assert perception["usage"]["images"] == 10  # one 3x2 grid per clip
    assert build_info["usage"]["calls"] == len(built.requests)
    assert build_info["timings"]["scan_detect"] > 0
    report = json.loads((built.out / "build_report.json").read_text())
    assert report["status"] == "complete" and report["clips"] == 10
    assert not (built.out / "build" / "frames").exists()  # deleted after a complete build


# --------------------------------------------------------------------------- reuse


def test_a_rebuild_makes_no_model_calls(built: Built, embedder, tmp_path: Path) -> None:
    server = built.server
    before = len(server.requests)
    kept = build(server, embedder, built.video.path, built.out, f"cache.path={built.cache}")
    assert kept.kept and kept.memory == built.memory  # up to date: returned as it is
    out = _copy(built, tmp_path)
    (out / "build_report.json").unlink()  # a file of the memory gone: it is built again
    again = build(server, embedder, built.video.path, out, f"cache.path={built.cache}")
    assert len(server.requests) == before  # every stage from its checkpoint
    assert not again.kept and again.memory == built.memory
    assert again.report.stages["perception"].reused == 10
    # A new directory has no checkpoints, but the response cache answers every call.
    fresh = build(server, embedder, built.video.path, tmp_path / "o", f"cache.path={built.cache}")
    assert len(server.requests) == before
    assert fresh.memory == built.memory
    assert fresh.report.usage["cached_calls"] == fresh.report.usage["calls"] > 0


def test_a_build_killed_while_moving_its_files_leaves_no_stale_memory(
    built: Built, embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _copy(built, tmp_path)
    (out / "build_report.json").unlink()  # else the memory is up to date and kept as it is
    real_replace, moved = os.replace, []

    def dying_replace(src, dst) -> None:
        if Path(dst).parent == out and moved:
            raise KeyboardInterrupt  # the process dies after the first file moved
        real_replace(src, dst)
        if Path(dst).parent == out:
            moved.append(Path(dst).name)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        build(built.server, embedder, built.video.path, out, f"cache.path={built.cache}")
    monkeypatch.setattr(os, "replace", real_replace)
    assert moved and not (out / "manifest.json").exists()
    with pytest.raises(MemoryFormatError, match=r"manifest\.json is missing"):
        load_memory(out)
    again = build(built.server, embedder, built.video.path, out, f"cache.path={built.cache}")
    assert load_memory(out) == again.memory == built.memory


def _copy(built: Built, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(built.out, out)
    return out


def test_a_changed_prompt_redoes_only_its_stage(built: Built, embedder, tmp_path: Path) -> None:
    out = _copy(built, tmp_path)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    root_prompt = (Path(__file__).parents[1] / "prompts" / "builder_root.jinja").read_text()
    (prompts / "builder_root.jinja").write_text(
        root_prompt.replace("{% endblock %}", "Keep the title short.\n{% endblock %}", 1)
    )
    server = built.server
    before = len(server.requests)
    result = build(
        server, embedder, built.video.path, out, "cache.enabled=false",
        f"prompts.override_dir={prompts}",
    )  # fmt: skip
    assert [r.prompt for r in server.requests[before:]] == ["builder_root"]
    assert result.memory.root.title == built.memory.root.title
    assert (
        load_memory(out).manifest.prompt_hashes["builder_root"]
        != (load_memory(built.out).manifest.prompt_hashes["builder_root"])
    )


def test_a_changed_setting_redoes_only_what_depends_on_it(
    built: Built, embedder, tmp_path: Path
) -> None:
    out = _copy(built, tmp_path)
    server = built.server
    before = len(server.requests)
    build(
        server, embedder, built.video.path, out, "cache.enabled=false",
        "builder.super_events.target_minutes=5",
    )  # fmt: skip
    # The SuperEvent prompt changed; its stages came out the same, so the root is reused.
    assert [r.prompt for r in server.requests[before:]] == ["builder_super"]
    before = len(server.requests)
    build(
        server, embedder, built.video.path, out, "cache.enabled=false",
        "builder.super_events.target_minutes=5", "builder.perception.frames=4",
    )  # fmt: skip
    counts = Counter(r.prompt for r in server.requests[before:])
    assert counts["builder_clip"] == 10  # every clip is perceived again with 4 frames
    assert all(len(r.images) == 1 for r in server.requests[before:] if r.prompt == "builder_clip")


# --------------------------------------------------------------------------- export


def test_export_to_memdreamers_layout_imports_back_equal(built: Built, tmp_path: Path) -> None:
    memory = load_memory(built.out)
    dest = export_released_layout(memory, tmp_path / "memdreamer")
    assert (dest / "phase4" / "hierarchical_graph_final.json").is_file()
    assert (dest / "phase4" / "intermediate" / "step2p5_entity_unification.json").is_file()
    subgraphs = sorted((dest / "phase2_topdown").glob("episode_*/episode_*/step5_subgraph.json"))
    assert len(subgraphs) == len(memory.macro_events())
    assert subgraphs[0].parent.name == "episode_0000"
    vectors = json.loads((dest / "embeddings.json").read_text())
    assert set(vectors) == set(memory.embeddings.ids)
    first = memory.embeddings.ids[0]
    assert vectors[first] == pytest.approx(memory.embeddings.vector(first).tolist(), abs=1e-6)
    imported = import_memdreamer(dest)
    without_clips = VideoMemory(
        root=memory.root,
        super_events=memory.super_events(),
        macro_events=memory.macro_events(),
        subgraph_nodes=memory.nodes(["Entity", "Event", "OCRText"]),
        relations=memory.relations(),
        unification=memory.unification,
    )
    assert imported == without_clips  # the layout has no builder clips; everything else


# --------------------------------------------------------------------------- faults


@pytest.fixture(scope="module")
def truncated(tmp_path_factory) -> TestVideo:
    """130 s in 10 s scenes, cut after 95 s: the undecodable 90-130 s stretch becomes two
    20 s clips, the second of which (clip_0011, 110-130 s) has no frame at all."""
    folder = tmp_path_factory.mktemp("truncated")
    raw = make_test_video(folder / "raw.mp4", 130, fps=4, size=(192, 108), scene_s=10)
    path = faststart_copy(raw.path, folder / "cut.mp4")
    truncate_video(path, 95.0)
    return TestVideo(path, raw.fps, raw.frame_count, raw.width, raw.height, raw.scenes)


def test_a_garbage_reply_and_undecodable_frames_are_reported_and_the_build_completes(
    truncated: TestVideo, embedder, tmp_path: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.on(
            None, ScriptedBuilderModel(truncated.fps, truncated.scenes, garbage_clips={"clip_0004"})
        )
        result = build(server, embedder, truncated.path, tmp_path / "out", "cache.enabled=false")
        counts = perception_requests(server.requests)
    assert result.report.status == "partial" and result.partial
    failures = {f.clip_id: f for f in result.report.failures}
    assert set(failures) == {"clip_0004", "clip_0011"}
    assert failures["clip_0004"].stage == "perception"
    assert "repair retry" in failures["clip_0004"].reason
    assert failures["clip_0011"].stage == "frames" and "truncated" in failures["clip_0011"].reason
    assert counts["clip_0004"] == 2 and "clip_0011" not in counts  # first reply + its repair
    memory = result.memory
    assert len(memory.clips) == 11  # the clips still tile the video, the failed ones empty
    empty = {c.id for c in memory.clips if not c.captions}
    assert empty == {"clip_0004", "clip_0011"}
    manifest = load_memory(tmp_path / "out").manifest
    assert manifest.build["partial"] is True
    assert {f["clip_id"] for f in manifest.build["failed_clips"]} == set(failures)
    assert "PARTIAL: 2 of 11 clips failed" in summary_text(result.report)


def test_too_many_failed_clips_stop_the_build_and_a_rerun_resumes(
    truncated: TestVideo, embedder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    garbage = {"clip_0003", "clip_0006", "clip_0009"}
    with FakeOpenAIServer() as server:
        server.on(
            None, ScriptedBuilderModel(truncated.fps, truncated.scenes, garbage_clips=garbage)
        )
        with pytest.raises(TooManyFailuresError, match=r"builder.max_failed_share=0.2"):
            build(server, embedder, truncated.path, out, "cache.enabled=false")
        assert not (out / "memory.json").exists()
        stopped = json.loads((out / "build" / "build_report.json").read_text())
        assert stopped["status"] == "stopped" and len(stopped["failures"]) >= 3  # > 20% of 11
        finished = {Path(n).name for n in (out / "build" / "perception").glob("*.json")}
        assert finished and not {f"{c}.json" for c in garbage} & finished
        # The cause is fixed (the model now answers every clip): the rerun asks only for the
        # clips without a checkpoint and completes (partial: the truncated clip stays lost).
        server.reset()
        server.on(None, ScriptedBuilderModel(truncated.fps, truncated.scenes))
        result = build(server, embedder, truncated.path, out, "cache.enabled=false")
        asked = set(perception_requests(server.requests))
    assert not asked & {Path(n).stem for n in finished}
    assert garbage <= asked
    assert [f.clip_id for f in result.report.failures] == ["clip_0011"]


def test_an_unknown_model_stops_at_the_first_call(tour: TestVideo, embedder, tmp_path) -> None:
    with FakeOpenAIServer() as server:
        server.on(
            None,
            lambda request: FakeReply(content="The model `fake-vlm` does not exist", status=404),
        )
        with pytest.raises(BuildStoppedError) as stopped:
            build(server, embedder, tour.path, tmp_path / "out", "cache.enabled=false")
        assert len(server.requests) == 1
    message = str(stopped.value)
    assert "role builder_clip" in message and "model fake-vlm" in message
    assert "404" in message and "does not exist" in message
    report = json.loads((tmp_path / "out" / "build" / "build_report.json").read_text())
    assert report["status"] == "stopped"


def test_a_missing_key_stops_before_any_request(
    tour: TestVideo, embedder, tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAIServer() as server:
        with pytest.raises(BuildStoppedError, match="OPENAI_API_KEY is not set"):
            build(server, embedder, tour.path, tmp_path / "out", "cache.enabled=false")
        assert server.requests == []


def test_a_directory_holding_something_else_is_refused(tour: TestVideo, embedder, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with FakeOpenAIServer() as server, pytest.raises(BuildError, match="not empty"):
        build(server, embedder, tour.path, tmp_path, "cache.enabled=false")


def test_build_memory_from_the_facade(tour: TestVideo, embedder, tmp_path: Path) -> None:
    from videotapestry.api import VideoTapestry

    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(tour.fps, tour.scenes))
        vt = VideoTapestry(
            overrides=offline_build_overrides(
                server.base_url, "builder.ocr.engine=none", "cache.enabled=false"
            ),
            embedder=embedder,
        )
        result = vt.build_memory(tour.path, tmp_path / "m")
        loaded = asyncio.run(_load(vt, tmp_path / "m", tour))
    assert result.report.status == "complete"
    assert loaded.memory == result.memory


async def _load(vt, path, video):
    return vt.load_memory(path, video_fingerprint=fingerprint(video.path))


def test_progress_bars_show_each_stage_and_quiet_shows_nothing(
    tour: TestVideo, embedder, tmp_path: Path
) -> None:
    import io

    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(tour.fps, tour.scenes))
        config = load_config(
            overrides=offline_build_overrides(
                server.base_url, "builder.ocr.engine=none", "cache.enabled=false"
            )
        )
        stream = io.StringIO()
        MemoryBuilder(config, embedder=embedder, progress=BuildProgress(True, stream=stream)).build(
            tour.path, tmp_path / "a"
        )
        quiet = io.StringIO()
        MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False, stream=quiet)).build(
            tour.path, tmp_path / "b"
        )
    shown = stream.getvalue()
    for stage in ("scan", "perception", "macro bounds", "macro events"):
        assert stage in shown
    assert "10/10" in shown and "calls 10" in shown  # perception: clips done, calls so far
    assert quiet.getvalue() == ""
