"""The frame proxy (issue 22 item 3): written from real generated videos with PyAV, read
back with real decoding, and compared frame by frame with the original through the frame
codes burned into every frame; refused when it is not of the video; written, resumed,
rewritten and removed by the builder; used by a whole question of the offline model."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from memory_builders.builder import MemoryBuilder
from memory_builders.progress import BuildProgress
from videotapestry.config import BuilderFrameProxySettings, ImagesConfig, VideoConfig, load_config
from videotapestry.run_setup import open_decoders
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import (
    TestVideo,
    make_h264_video,
    make_test_video,
    read_frame_index,
)
from videotapestry.testing.scripted_builder import ScriptedBuilderModel, offline_build_overrides
from videotapestry.video import (
    PROXY_FILE,
    PROXY_MANIFEST,
    ProxyReader,
    find_proxy,
    open_video,
    probe,
    proxy_max_side,
    sample_uniform,
    write_proxy,
)
from videotapestry.video.proxy import KeyframeTable, keyframe_runs

# --------------------------------------------------------------------------- pure rules


def test_keyframes_are_stored_as_runs_and_answer_as_the_source_would() -> None:
    assert keyframe_runs([0, 250, 500, 750]) == [(0, 250, 4)]
    assert keyframe_runs(range(10)) == [(0, 1, 10)]  # all-intra: one run
    irregular = [0, 12, 24, 30, 100, 101]
    runs = keyframe_runs(irregular)
    assert sum(count for _, _, count in runs) == len(irregular)
    table = KeyframeTable(runs)
    for index in range(0, 120):
        expected = max(k for k in irregular if k <= index)
        assert table.before(index) == expected
    assert KeyframeTable(keyframe_runs([5, 9])).before(4) is None
    assert keyframe_runs([]) == []


def test_the_proxy_is_as_large_as_the_largest_image_sent() -> None:
    assert proxy_max_side(VideoConfig(), ImagesConfig(), None) == 768
    assert proxy_max_side(VideoConfig(), ImagesConfig(frame_max_side=2000), None) == 1344
    assert proxy_max_side(VideoConfig(decoded_max_side=480), ImagesConfig(), None) == 480
    assert proxy_max_side(VideoConfig(), ImagesConfig(), 320) == 320


# --------------------------------------------------------------------------- real videos


@pytest.fixture(scope="module")
def h264(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    """8 s of H.264 with a keyframe every 4 s, larger than the proxy's 768-px side."""
    path = tmp_path_factory.mktemp("h264") / "long_gop.mp4"
    return make_h264_video(path, 8, fps=25, size=(800, 450), gop_frames=100, scene_s=3)


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> TestVideo:
    path = tmp_path_factory.mktemp("other") / "other.mp4"
    return make_test_video(path, 8, fps=25, size=(320, 180), scene_s=3)


@pytest.fixture(scope="module")
def proxied(h264: TestVideo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("memory")
    write_proxy(probe(h264.path), directory, BuilderFrameProxySettings(enabled=True), 768)
    return directory


def copy_of(directory: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memory"
    shutil.copytree(directory, target)
    return target


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["libx264", "mpeg4"])
@pytest.mark.parametrize("interval_s", [1.0, 0.0])
def test_every_frame_of_the_proxy_is_the_original_frame_at_the_same_timestamp(
    h264: TestVideo, tmp_path: Path, codec: str, interval_s: float
) -> None:
    info = probe(h264.path)
    settings = BuilderFrameProxySettings(codec=codec, keyframe_interval_s=interval_s)  # type: ignore[arg-type]
    made = write_proxy(info, tmp_path, settings, 768)
    assert (made.width, made.height) == (768, 432)
    assert made.keyframe_interval == (25 if interval_s else 1)
    assert made.frames == info.frame_count == h264.frame_count
    lookup = find_proxy(tmp_path, info)
    assert lookup.usable, lookup.refused
    every = list(range(info.frame_count))
    with open_video(h264.path) as original, ProxyReader(lookup, info, VideoConfig()) as proxy:
        assert proxy.info == original.info  # fingerprint, path, audio: the source's
        ours, theirs = proxy.frames_at_indices(every), original.frames_at_indices(every)
    for mine, truth in zip(ours, theirs, strict=True):
        # Documented tolerance at a constant frame rate: none. Same index, same timestamp,
        # and the pixels show the same source frame.
        assert (mine.index, mine.timestamp_s) == (truth.index, truth.timestamp_s)
        assert read_frame_index(mine.image) == read_frame_index(truth.image) == truth.index
        assert mine.image.shape == (432, 768, 3)


def test_sampling_picks_the_same_frames_as_in_the_original(h264: TestVideo, proxied: Path) -> None:
    info = probe(h264.path)
    with (
        open_video(h264.path) as original,
        ProxyReader(find_proxy(proxied, info), info, VideoConfig()) as proxy,
    ):
        # The source's keyframes (every 4 s), not the proxy's (every second): keyframe
        # snapping moves a sample to the same frame in both.
        assert [proxy.keyframe_before(i) for i in (0, 99, 100, 199)] == [0, 0, 100, 100]
        assert proxy.keyframe_before(150) == original.keyframe_before(150)
        for start, end, count in ((0.0, 8.0, 30), (2.5, 6.0, 7), (0.0, 8.0, 120)):
            ours = sample_uniform(proxy, start, end, count)
            theirs = sample_uniform(original, start, end, count)
            assert [f.timestamp_s for f in ours] == [f.timestamp_s for f in theirs]
            assert [read_frame_index(f.image) for f in ours] == [f.index for f in theirs]
        timestamps = [0.0, 0.039, 0.041, 3.999, 4.0, 7.77, 7.96]
        ours, theirs = proxy.frames_at(timestamps), original.frames_at(timestamps)
        assert [f.timestamp_s for f in ours] == [f.timestamp_s for f in theirs]


def test_a_proxy_of_another_video_is_refused(
    h264: TestVideo, other: TestVideo, proxied: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lookup = find_proxy(proxied, probe(other.path))
    assert not lookup.usable
    assert lookup.refused is not None and "made from another video" in lookup.refused
    with pytest.raises(Exception, match="no usable frame proxy"):
        ProxyReader(lookup, probe(other.path), VideoConfig())
    with caplog.at_level(logging.WARNING, logger="videotapestry.run_setup"):
        readers = open_decoders(other.path, VideoConfig(), memory_dir=proxied)
    try:
        assert readers and not any(isinstance(r, ProxyReader) for r in readers)
        assert read_frame_index(readers[0].frames_at_indices([7])[0].image) == 7
    finally:
        for reader in readers:
            reader.close()
    assert "made from another video" in caplog.text and "decoding the original" in caplog.text
    # The right video gets the proxy, in every parallel reader.
    readers = open_decoders(h264.path, VideoConfig(parallel_decoders=2), memory_dir=proxied)
    try:
        assert len(readers) == 2 and all(isinstance(r, ProxyReader) for r in readers)
    finally:
        for reader in readers:
            reader.close()
    # ... unless proxies are switched off.
    readers = open_decoders(h264.path, VideoConfig(frame_proxy=False), memory_dir=proxied)
    try:
        assert not any(isinstance(r, ProxyReader) for r in readers)
    finally:
        for reader in readers:
            reader.close()


def test_a_damaged_or_undescribed_proxy_is_refused(
    h264: TestVideo, proxied: Path, tmp_path: Path
) -> None:
    info = probe(h264.path)
    changed = copy_of(proxied, tmp_path / "changed")
    with (changed / PROXY_FILE).open("r+b") as handle:  # the file, not what was described
        handle.seek(0, 2)
        handle.truncate(handle.tell() // 2)
    assert "is not the file" in str(find_proxy(changed, info).refused)
    unfinished = copy_of(proxied, tmp_path / "unfinished")
    (unfinished / PROXY_MANIFEST).unlink()  # killed before its description was written
    assert "unfinished write" in str(find_proxy(unfinished, info).refused)
    garbage = copy_of(proxied, tmp_path / "garbage")
    (garbage / PROXY_MANIFEST).write_text('{"version": 1}')
    assert "not a frame proxy description" in str(find_proxy(garbage, info).refused)
    assert find_proxy(tmp_path, info).refused is None  # no proxy at all: nothing to say


# --------------------------------------------------------------------------- the builder


def build(server: FakeOpenAIServer, embedder, video: Path, out: Path, *overrides: str):
    config = load_config(
        overrides=offline_build_overrides(
            server.base_url, "builder.ocr.engine=none", "builder.macro.min_s=30", *overrides
        )
    )
    builder = MemoryBuilder(config, embedder=embedder, progress=BuildProgress(False))
    return builder.build(video, out)


@pytest.mark.slow
def test_the_builder_writes_resumes_rewrites_and_removes_the_proxy(
    embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-proxy-0123456789")
    tour = make_test_video(tmp_path / "tour.mp4", 60, fps=4, size=(192, 108), scene_s=15)
    out = tmp_path / "memory"
    on = "builder.frame_proxy.enabled=true"
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedBuilderModel(tour.fps, tour.scenes))
        first = build(server, embedder, tour.path, out, on)
        info = probe(tour.path)
        lookup = find_proxy(out, info)
        assert lookup.usable and lookup.manifest is not None
        assert lookup.manifest.frames == info.frame_count
        assert first.report.stages["frame_proxy"].computed == 1
        assert not list(out.glob(f".{PROXY_FILE}.*"))  # no temporary file left
        # A rerun keeps the finished memory, proxy included; one that runs the stages (a
        # memory file gone) reuses it; a deleted proxy file is written again, not trusted.
        assert build(server, embedder, tour.path, out, on).kept
        (out / "build_report.json").unlink()
        again = build(server, embedder, tour.path, out, on)
        assert again.report.stages["frame_proxy"].reused == 1
        assert find_proxy(out, info).manifest == lookup.manifest
        (out / PROXY_FILE).unlink()
        build(server, embedder, tour.path, out, on)
        assert find_proxy(out, info).usable
        # Changed settings write another proxy.
        build(server, embedder, tour.path, out, on, "builder.frame_proxy.keyframe_interval_s=0")
        rewritten = find_proxy(out, info).manifest
        assert rewritten is not None and rewritten.keyframe_interval == 1
        # The proxy off: the directory no longer offers one.
        build(server, embedder, tour.path, out)
        assert not (out / PROXY_FILE).exists() and not (out / PROXY_MANIFEST).exists()


# --------------------------------------------------------------------------- a question


@pytest.mark.slow
def test_a_question_reads_the_proxy_and_sees_the_same_moments(
    demo_cache: Path, tmp_path: Path
) -> None:
    """The offline model answers the sample's door-code question from the proxy as from the
    original: the same answer, from images of the same moments, and the trace says so."""
    from videotapestry.api import VideoTapestry
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    video = sample_video_path()
    memory = tmp_path / "memory"
    shutil.copytree(demo_memory_dir(video, demo_cache), memory)
    write_proxy(probe(video), memory, BuilderFrameProxySettings(enabled=True), 768)
    question = "What is the door code for Gate B, the delivery gate?"

    def ask(*overrides: str):
        vt = VideoTapestry(
            None,
            profile="offline",
            overrides=[f"cache.path={tmp_path / 'responses.sqlite'}", *overrides],
        )
        return vt.answer(video, memory, question, keep_images=True)

    with_proxy, without = ask(), ask("video.frame_proxy=false")
    notes = {e.name: e.output for e in with_proxy.trace.events if e.kind == "note"}
    assert notes["frame_proxy"]["path"] == str(memory / PROXY_FILE)
    assert "frame_proxy" not in {e.name for e in without.trace.events if e.kind == "note"}
    assert with_proxy.images and [i.timestamps for i in with_proxy.images] == [
        i.timestamps for i in without.images
    ]
    assert "4417" in with_proxy.answer_text and with_proxy.answer_text == without.answer_text
    assert not with_proxy.degraded
    # Skim and Focus decode the proxy's frames ahead while they plan, as from the original.
    prefetched = [e.output for e in with_proxy.trace.events if e.name == "frames_prefetched"]
    assert prefetched and all(n["error"] is None and n["decoded"] > 0 for n in prefetched)
    # Another video's proxy in that directory: refused on the trace as the video is opened,
    # whatever the variant (Direct's one call is enough), the original read.
    (memory / PROXY_MANIFEST).write_text(
        (memory / PROXY_MANIFEST).read_text().replace(probe(video).fingerprint, "v1-0-other")
    )
    refused = ask("variant=direct")
    notes = {e.name: e.output for e in refused.trace.events if e.kind == "note"}
    assert "made from another video" in notes["frame_proxy_refused"]["reason"]
    assert "frame_proxy" not in notes and refused.images and not refused.degraded
