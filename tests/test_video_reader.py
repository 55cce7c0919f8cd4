"""Frames carry their true timestamps, with decord and with OpenCV; bad files fail clearly.

Every generated frame has its index burned into its pixels (videotapestry.testing.media), so
each test reads the index back from the decoded image and compares it with the index and
timestamp the reader claims.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from scipy.io import wavfile

from videotapestry.config import VideoConfig
from videotapestry.errors import (
    NoDecodableFramesError,
    VideoError,
    VideoNotFoundError,
    VideoUnreadableError,
    VideoWindowError,
)
from videotapestry.testing.media import (
    FrameRenderer,
    TestVideo,
    make_h264_video,
    make_scenes,
    make_test_video,
    read_frame_index,
    set_display_rotation,
)
from videotapestry.video import (
    DecordReader,
    OpenCVReader,
    PyAVReader,
    SequentialPass,
    decode_indices,
    fingerprint,
    open_video,
    probe,
    sample_uniform,
    sample_windows,
    uniform_indices,
)
from videotapestry.video.container import orientation
from videotapestry.video.frame import turned_size, upright
from videotapestry.video.reader import decord_turns_frames, opencv_turn
from videotapestry.video.windows import TimeWindow

BACKENDS = ("pyav", "decord", "opencv")
READERS = {"pyav": PyAVReader, "decord": DecordReader, "opencv": OpenCVReader}


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TestVideo]:
    folder = tmp_path_factory.mktemp("media")
    return {
        # OpenCV's MPEG-4 Part 2 writer: 25 fps, short GOPs.
        "mp4v": make_test_video(folder / "mp4v.mp4", 40.0, fps=25.0, size=(320, 180)),
        # H.264 with B-frames at NTSC 29.97 fps: timestamps are not round numbers.
        "h264": make_h264_video(
            folder / "h264.mp4",
            30.0,
            fps=30000 / 1001,
            size=(320, 180),
            gop_frames=60,
            texture=False,
        ),
    }


def assert_true_frames(frames, fps: float) -> None:
    for frame in frames:
        assert read_frame_index(frame.image) == frame.index, frame
        assert frame.timestamp_s == pytest.approx(frame.index / fps, abs=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["mp4v", "h264"])
def test_every_frame_is_the_one_its_timestamp_claims(media, kind: str, backend: str) -> None:
    video = media[kind]
    with open_video(video.path, VideoConfig(backend=backend)) as reader:
        assert type(reader) is READERS[backend]
        assert reader.info.frame_count == video.frame_count
        assert reader.info.fps == pytest.approx(video.fps)
        for snap in (0.0, 0.25):
            frames = sample_uniform(reader, 0, video.duration_s, 120, keyframe_snap=snap)
            assert len(frames) == 120
            assert [f.index for f in frames] == sorted({f.index for f in frames})
            assert_true_frames(frames, video.fps)
        # Arbitrary times, out of order, with a repeat and both ends of the video.
        rng = np.random.default_rng(7)
        times = [*rng.uniform(0, video.duration_s, 25), 0.0, video.duration_s, 3.3, 3.3]
        frames = reader.frames_at(times)
        assert [f.index for f in frames] == [
            min(math.floor(t * video.fps + 1e-6), video.frame_count - 1) for t in times
        ]
        assert_true_frames(frames, video.fps)
        for t, frame in zip(times, frames, strict=True):  # never later, < 1 frame earlier
            assert t - 1 / video.fps - 1e-9 <= frame.timestamp_s <= t + 1e-9


def test_pyav_timestamps_hold_in_a_variable_frame_rate_video(tmp_path: Path) -> None:
    """Frames at 25 fps time slots with a one-second hole (slots 50-74 missing)."""
    slots = [*range(50), *range(75, 100)]
    renderer = FrameRenderer((320, 180), 25.0, make_scenes(4.0, 1.0))
    path = tmp_path / "vfr.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 180, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 25)
        for slot in slots:
            frame = av.VideoFrame.from_ndarray(renderer.render(slot), format="rgb24")
            frame.pts, frame.time_base = slot, Fraction(1, 25)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    with open_video(path, VideoConfig(backend="pyav")) as reader:
        fps = reader.info.fps  # the average rate: 75 frames in 4 s
        for t in np.arange(0.0, 3.95, 0.1):
            [frame] = reader.frames_at([t])
            slot = read_frame_index(frame.image)
            assert abs(frame.timestamp_s - slot / 25) <= 0.5 / fps + 1e-9, t
            if 2.0 <= t < 3.0:  # inside the hole the last frame before it stays on screen
                assert slot == 49


@pytest.mark.parametrize("backend", BACKENDS)
def test_uniform_samples_sit_at_the_centres_of_equal_slots(media, backend: str) -> None:
    video = media["mp4v"]
    with open_video(video.path, VideoConfig(backend=backend, keyframe_snap=0)) as reader:
        frames = sample_uniform(reader, 7.3, 19.1, 50)
    width = (19.1 - 7.3) / 50
    expected = [math.floor((7.3 + (k + 0.5) * width) * video.fps) for k in range(50)]
    assert [f.index for f in frames] == expected
    assert_true_frames(frames, video.fps)


@pytest.mark.parametrize("backend", ["pyav", "decord"])
def test_keyframe_snapping_keeps_each_sample_inside_its_slot(media, backend: str) -> None:
    video = media["h264"]
    with open_video(video.path, VideoConfig(backend=backend, keyframe_snap=0.25)) as reader:
        assert reader.keyframe_before(59) == 0 and reader.keyframe_before(61) == 60
        assert reader.keyframe_before(899) == 840
        frames = sample_uniform(reader, 0, video.duration_s, 10)
    width = video.duration_s / 10
    for k, frame in enumerate(frames):
        center = (k + 0.5) * width
        assert abs(frame.timestamp_s - center) <= 0.25 * width + 1 / video.fps
    snapped = [f.index for f in frames if f.index % 60 == 0]  # a keyframe every 60 frames
    assert len(snapped) >= 5  # ~2 s apart, slots of 3 s with 1.5 s bands: most samples snap
    assert_true_frames(frames, video.fps)


def test_opencv_cannot_tell_keyframes_so_it_samples_exact_centres(media) -> None:
    video = media["h264"]
    with open_video(video.path, VideoConfig(backend="opencv", keyframe_snap=0.25)) as reader:
        assert reader.keyframe_before(100) is None
        frames = sample_uniform(reader, 0, video.duration_s, 10)
    width = video.duration_s / 10
    expected = [math.floor((k + 0.5) * width * video.fps + 1e-6) for k in range(10)]
    assert [f.index for f in frames] == expected


def test_frames_from_several_windows_come_in_time_order_without_repeats(media) -> None:
    video = media["mp4v"]
    windows = [TimeWindow(30, 34), TimeWindow(2, 10), TimeWindow(8, 12)]
    with open_video(video.path, VideoConfig(keyframe_snap=0)) as reader:
        frames = sample_windows(reader, windows, 20)
    indices = [f.index for f in frames]
    assert indices == sorted(set(indices)) and 18 <= len(indices) <= 20
    assert all(any(w.start_s <= f.timestamp_s <= w.end_s for w in windows) for f in frames)
    assert_true_frames(frames, video.fps)


@pytest.mark.parametrize("backend", BACKENDS)
def test_decode_max_side_downscales_and_keeps_the_frame(media, backend: str) -> None:
    video = media["mp4v"]
    config = VideoConfig(backend=backend, decoded_max_side=160)
    with open_video(video.path, config) as reader:
        frames = reader.frames_at([1.0, 20.0])
    assert all(f.image.shape == (90, 160, 3) for f in frames)
    assert [read_frame_index(f.image) for f in frames] == [25, 500]


def test_probe_and_fingerprint(media, tmp_path: Path) -> None:
    video = media["mp4v"]
    info = probe(video.path)
    assert (info.width, info.height, info.frame_count) == (320, 180, 1000)
    assert info.duration_s == pytest.approx(40.0)
    assert info.fps == pytest.approx(25.0)
    assert info.has_audio is False
    assert info.fingerprint == fingerprint(video.path)
    copy = tmp_path / "copy.mp4"
    data = bytearray(video.path.read_bytes())
    copy.write_bytes(data)
    assert fingerprint(copy) == info.fingerprint  # content, not name
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(data)
    assert fingerprint(copy) != info.fingerprint


def test_probe_sees_an_audio_track(tmp_path: Path) -> None:
    silence = np.zeros(16000 * 2, dtype=np.float32)
    video = make_test_video(tmp_path / "av.mp4", 2.0, fps=10, audio=silence)
    assert probe(video.path).has_audio is True
    with open_video(video.path) as reader:  # the audio track does not disturb the frames
        assert_true_frames(reader.frames_at([0.0, 1.05, 1.95]), 10.0)


# --------------------------------------------------------------------------- rotation


@pytest.fixture(scope="module")
def phone_videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TestVideo, list]]:
    """name -> (a video with a display matrix, PyAV's frames of it before it had one).
    192x108 (decord 0.6 fails to turn some sizes, 128x72 among them)."""
    folder = tmp_path_factory.mktemp("phone")
    videos = {}
    for degrees, mirror in ((90, False), (180, False), (270, False), (90, True)):
        name = f"{degrees}{'m' if mirror else ''}"
        video = make_test_video(folder / f"{name}.mp4", 2.0, fps=10, size=(192, 108))
        with open_video(video.path, VideoConfig(backend="pyav")) as reader:
            stored = [f.image for f in reader.frames_at_indices(ROTATION_INDICES)]
        set_display_rotation(video.path, degrees, mirror=mirror)
        videos[name] = (video, stored)
    return videos


ROTATION_INDICES = [0, 7, 19]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("degrees", [90, 180, 270])
def test_a_rotated_video_is_read_upright_by_every_backend(
    phone_videos, degrees: int, backend: str
) -> None:
    """The stored pixels turned as a player turns them, identical whichever backend decoded
    them (decord and OpenCV would turn them themselves, PyAV never does)."""
    video, stored = phone_videos[str(degrees)]
    info = probe(video.path)
    assert (info.rotation_deg, info.not_upright) == (degrees, None)
    assert (info.width, info.height) == (192, 108)  # as stored
    assert info.display_size == ((108, 192) if degrees % 180 else (192, 108))
    with open_video(video.path, VideoConfig(backend=backend)) as reader:
        assert type(reader) is READERS[backend] and reader.info.not_upright is None
        frames = reader.frames_at_indices(ROTATION_INDICES)
    for frame, before in zip(frames, stored, strict=True):
        assert frame.image.shape[1::-1] == info.display_size
        assert np.array_equal(frame.image, np.rot90(before, k=-degrees // 90))
        # Turned back, the index code is at the bottom again: the turn's direction is right.
        assert read_frame_index(upright(frame.image, -degrees)) == frame.index


@pytest.mark.parametrize("degrees", [90, 180])
def test_rotated_frames_downscaled_agree_between_backends(phone_videos, degrees: int) -> None:
    """With ``decoded_max_side`` each backend scales its own way (and decord before turning),
    so the pixels differ a little, but every backend gives the upright size and picture."""
    video, _ = phone_videos[str(degrees)]
    images = {}
    for backend in BACKENDS:
        config = VideoConfig(backend=backend, decoded_max_side=96)
        with open_video(video.path, config) as reader:
            images[backend] = np.stack([f.image for f in reader.frames_at_indices([7, 19])])
    expected = (2, 96, 54, 3) if degrees % 180 else (2, 54, 96, 3)
    for backend, image in images.items():
        assert image.shape == expected, backend
        difference = np.abs(image.astype(int) - images["pyav"]).mean()
        assert difference < 8, (backend, difference)
        # A wrongly turned picture would differ from PyAV's by far more than the scaling.
        upside_down = np.abs(np.flip(image, axis=(1, 2)).astype(int) - images["pyav"]).mean()
        assert upside_down > 3 * difference + 10, (backend, upside_down)


def test_an_opencv_that_turns_frames_itself_gives_the_same_upright_frames(
    phone_videos, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OpenCV that cannot be told to leave frames as stored turns them itself (what it
    does by default, here without being asked not to): only the rest of the turn is ours."""
    import cv2

    def leave_as_is(capture):
        auto = capture.get(cv2.CAP_PROP_ORIENTATION_AUTO)
        return auto, capture.get(cv2.CAP_PROP_ORIENTATION_META)

    monkeypatch.setattr(OpenCVReader, "_orientation_handling", staticmethod(leave_as_is))
    video, _ = phone_videos["90"]
    for side in (None, 96):
        config = VideoConfig(backend="opencv", decoded_max_side=side)
        with open_video(video.path, config) as reader:
            frames = reader.frames_at_indices(ROTATION_INDICES)
            assert reader.info.not_upright is None
        with open_video(video.path, replace_backend(config, "pyav")) as reader:
            expected = reader.frames_at_indices(ROTATION_INDICES)
        for frame, want in zip(frames, expected, strict=True):
            assert frame.image.shape == want.image.shape
            assert np.abs(frame.image.astype(int) - want.image).mean() < (1 if side is None else 8)


def replace_backend(config: VideoConfig, backend: str) -> VideoConfig:
    return config.model_copy(update={"backend": backend})


def test_a_mirroring_display_matrix_is_said_by_probe_and_every_reader(phone_videos) -> None:
    """A mirror is no quarter turn: the frames are turned, not flipped, and every reader
    says so (each question then records it as a degradation)."""
    video, stored = phone_videos["90m"]
    info = probe(video.path)
    assert info.not_upright is not None and "mirror" in info.not_upright
    images = []
    for backend in BACKENDS:
        with open_video(video.path, VideoConfig(backend=backend)) as reader:
            assert reader.info.not_upright == info.not_upright
            images.append(reader.frames_at_indices([7])[0].image)
    assert all(np.array_equal(image, images[0]) for image in images)
    assert np.array_equal(images[0], upright(stored[1], info.rotation_deg))


def test_the_sequential_pass_turns_frames_as_the_readers_do(phone_videos) -> None:
    video, _ = phone_videos["270"]
    info = probe(video.path)
    with open_video(video.path, VideoConfig(backend="pyav")) as reader:
        want = {f.index: f.image for f in reader.frames_at_indices(ROTATION_INDICES)}
    got = {}
    for frame in SequentialPass(info):
        if frame.index in want:
            got[frame.index] = frame.to_array(info.display_size)
            small = frame.to_array((54, 96))
            assert small.shape == (96, 54, 3)  # the size asked is the upright one
    assert all(np.array_equal(got[i], want[i]) for i in want)


@pytest.mark.parametrize("degrees", [0, 90, 180, 270, -90, 450])
def test_upright_turns_clockwise_by_quarter_turns(degrees: int) -> None:
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    turned = upright(image, degrees)
    assert turned.flags["C_CONTIGUOUS"]
    assert turned.shape[1::-1] == turned_size((3, 2), degrees)
    clockwise = {0: image, 90: image[::-1].transpose(1, 0, 2), 180: image[::-1, ::-1]}
    clockwise[270] = clockwise[90][::-1, ::-1]
    assert np.array_equal(turned, clockwise[degrees % 360])
    with pytest.raises(ValueError, match="quarter turns"):
        upright(image, 45)


def test_orientation_applies_quarter_turns_and_says_what_else_is_asked() -> None:
    assert orientation(-90.0, mirrored=False) == (90, None)
    assert orientation(90.0, mirrored=False) == (270, None)
    assert orientation(-180.0, mirrored=False) == (180, None)
    assert orientation(0.0, mirrored=False) == (0, None)
    turn, why = orientation(-30.0, mirrored=False)
    assert turn == 0 and why is not None and "30°" in why and "quarter turns" in why
    turn, why = orientation(-90.0, mirrored=True)
    assert turn == 90 and why is not None and "mirror" in why


def test_opencv_turn_leaves_to_us_what_opencv_does_not_turn() -> None:
    assert opencv_turn(90, auto=0.0, meta=90.0) == (0, 90, None)  # switched off: all ours
    assert opencv_turn(90, auto=1.0, meta=90.0) == (90, 0, None)  # it turns it all
    assert opencv_turn(180, auto=1.0, meta=90.0) == (90, 90, None)  # the rest is ours
    assert opencv_turn(0, auto=-1.0, meta=-1.0) == (0, 0, None)  # nothing to turn
    turned, ours, why = opencv_turn(90, auto=-1.0, meta=-1.0)  # an OpenCV that says nothing
    assert (turned, ours) == (0, 90) and why is not None and "OpenCV" in why


def test_decord_turns_frames_from_version_0_6() -> None:
    assert decord_turns_frames("0.6.0") and decord_turns_frames("1.0")
    assert not decord_turns_frames("0.5.2")


# --------------------------------------------------------------------------- bad input


def faststart_copy(source: Path, target: Path) -> Path:
    """The same video with its index (moov) first, as web videos are: truncation keeps it."""
    with (
        av.open(str(source)) as src,
        av.open(str(target), "w", options={"movflags": "faststart"}) as out,
    ):
        stream_in = src.streams.video[0]
        stream_out = out.add_stream_from_template(stream_in)
        for packet in src.demux(stream_in):
            if packet.dts is not None:
                packet.stream = stream_out
                out.mux(packet)
    return target


@pytest.fixture(scope="module")
def bad_files(media, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad")
    good = media["mp4v"].path.read_bytes()
    files = {
        "empty": b"",
        "truncated": good[: len(good) // 2],  # OpenCV writes its index last: now missing
        "text": b"this is not a video\n" * 50,
        "random": np.random.default_rng(0).integers(0, 256, 50_000, dtype=np.uint8).tobytes(),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = folder / f"{name}.mp4"
        paths[name].write_bytes(data)
    paths["audio_only"] = folder / "audio_only.wav"
    wavfile.write(paths["audio_only"], 16000, np.zeros(16000, dtype=np.int16))
    # A valid container whose picture data is wiped: it opens, nothing decodes.
    wiped = bytearray(good)
    start, end = wiped.find(b"mdat") + 4, wiped.find(b"moov") - 4
    wiped[start:end] = bytes(end - start)
    paths["wiped"] = folder / "wiped.mp4"
    paths["wiped"].write_bytes(bytes(wiped))
    return paths


@pytest.mark.parametrize("backend", ["auto", *BACKENDS])
@pytest.mark.parametrize(
    ("name", "error", "words"),
    [
        ("missing", VideoNotFoundError, "does not exist"),
        ("directory", VideoNotFoundError, "not a file"),
        ("empty", VideoUnreadableError, "empty"),
        ("truncated", VideoUnreadableError, "cannot be opened"),
        ("text", VideoUnreadableError, "cannot be opened"),
        ("random", VideoUnreadableError, "cannot be opened"),
        ("audio_only", VideoUnreadableError, "no video stream"),
        ("wiped", NoDecodableFramesError, "no decodable frames"),
    ],
)
def test_bad_files_raise_typed_errors_naming_the_path(
    bad_files, tmp_path: Path, backend: str, name: str, error: type, words: str
) -> None:
    path = {"missing": tmp_path / "nope.mp4", "directory": tmp_path}.get(name) or bad_files[name]
    with pytest.raises(error) as caught:
        open_video(path, VideoConfig(backend=backend))
    assert str(path) in str(caught.value)
    assert words in str(caught.value)
    assert caught.value.path == str(path)


def test_missing_file_fails_in_probe_and_fingerprint_too(tmp_path: Path) -> None:
    for call in (probe, fingerprint):
        with pytest.raises(VideoNotFoundError, match=r"nope\.mp4"):
            call(tmp_path / "nope.mp4")


def test_truncated_web_video_falls_back_to_opencv_and_never_returns_a_wrong_frame(
    media, tmp_path: Path
) -> None:
    full = faststart_copy(media["h264"].path, tmp_path / "fast.mp4")
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    with open_video(cut) as reader:
        early = reader.frames_at([1.0, 5.0])
        assert_true_frames(early, media["h264"].fps)
        with pytest.raises(NoDecodableFramesError, match=r"cut\.mp4"):
            reader.frames_at([media["h264"].duration_s - 1.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_windows_and_timestamps_outside_the_video_are_errors(media, backend: str) -> None:
    video = media["mp4v"]
    with open_video(video.path, VideoConfig(backend=backend)) as reader:
        for start, end in ((41.0, 50.0), (-10.0, -1.0), (20.0, 10.0), (math.nan, 5.0)):
            with pytest.raises(VideoWindowError, match=r"mp4v\.mp4"):
                sample_uniform(reader, start, end, 5)
        for t in (-1.0, 40.5, math.inf):
            with pytest.raises(VideoWindowError, match="outside"):
                reader.frames_at([t])
        with pytest.raises(VideoWindowError, match="frame 1000"):
            reader.frames_at_indices([1000])
        # Partly outside: clipped to the video.
        frames = sample_uniform(reader, 30.0, 100.0, 4, keyframe_snap=0)
        assert [f.index for f in frames] == [781, 843, 906, 968]  # centres of [30, 40]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closed_reader_says_so(media, backend: str) -> None:
    reader = open_video(media["mp4v"].path, VideoConfig(backend=backend))
    reader.close()
    with pytest.raises(VideoError, match="closed"):
        reader.frames_at([1.0])


def test_every_video_error_is_a_video_error() -> None:
    for error in (VideoNotFoundError, VideoUnreadableError, NoDecodableFramesError):
        assert issubclass(error, VideoError)


@pytest.mark.parametrize("kind", ["mp4v", "h264"])
def test_parallel_decoders_return_exactly_the_frames_one_reader_would(media, kind: str) -> None:
    video = media[kind]
    config = VideoConfig(keyframe_snap=0.25)
    with (
        open_video(video.path, config) as one,
        open_video(video.path, config) as two,
        open_video(video.path, config) as three,
    ):
        indices = uniform_indices(one, 0, video.duration_s, 120)
        alone = sample_uniform(one, 0, video.duration_s, 120)
        together = decode_indices([one, two, three], [*indices, indices[5]])  # with a repeat
        assert [f.index for f in together] == [f.index for f in alone] == sorted(set(indices))
        for a, b in zip(alone, together, strict=True):
            assert np.array_equal(a.image, b.image)
        assert_true_frames(together, video.fps)
        assert decode_indices([one, two], []) == []


def test_pyav_skips_unreferenced_frames_far_from_a_target_and_returns_the_same_pixels(
    media,
) -> None:
    video = media["h264"]  # x264 with B-frames, a keyframe every 60 frames
    rng = np.random.default_rng(3)
    indices = sorted(int(i) for i in rng.choice(video.frame_count, 30, replace=False))
    skips, decodes_all = VideoConfig(backend="pyav"), VideoConfig(skip_unreferenced=False)
    with open_video(video.path, skips) as skipping, open_video(video.path, decodes_all) as plain:
        fast = skipping.frames_at_indices(indices)
        reference = plain.frames_at_indices(indices)
        decoded = (skipping.frames_decoded, plain.frames_decoded)
    for got, want in zip(fast, reference, strict=True):
        assert got.index == want.index and np.array_equal(got.image, want.image)
    assert_true_frames(fast, video.fps)
    assert decoded[0] < decoded[1], decoded  # how much less is a bench figure


def test_pyav_decodes_a_target_again_when_skipping_passed_it(media) -> None:
    # A margin of 0 switches skipping off only at the target itself, after the decoder may
    # already have dropped it (B-frames come out late): the reader must notice and decode it
    # again without skipping, returning the true frame.
    video = media["h264"]
    with open_video(video.path, VideoConfig(backend="pyav")) as reader:
        reader.skip_margin = 0
        frames = reader.frames_at_indices(list(range(5, video.frame_count, 7)))
    assert_true_frames(frames, video.fps)
