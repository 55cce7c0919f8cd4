"""Shared fixtures: the fake OpenAI-compatible server and a model service pointed at it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from videotapestry.config import Config, EmbeddingConfig, load_config
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.testing import FakeOpenAIServer

#: Looks like a real key so the redaction patterns are exercised too.
SECRET_KEY = "sk-test-SECRET-0123456789abcdefXYZ"


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return SECRET_KEY


def fake_config(server: FakeOpenAIServer, tmp_path: Path, *overrides: str) -> Config:
    """The default config aimed at ``server``, with a private cache and quick retries."""
    return load_config(
        overrides=[
            f"models.default.base_url={server.base_url}",
            "models.default.harness_headers=true",
            "models.default.model=fake-vlm",
            "models.default.timeout_s=5",
            "models.default.max_retries=2",
            f"cache.path={tmp_path / 'cache.sqlite'}",
            *overrides,
        ]
    )


def jpeg_bytes(color: tuple[int, int, int], size: tuple[int, int] = (64, 36)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


# --------------------------------------------------------------------------- method tests


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The packaged MiniLM, loaded once for every test that embeds."""
    return SentenceTransformerEmbedder(
        EmbeddingConfig(model="packaged:all-MiniLM-L6-v2", query_prompt_name=None)
    )


@pytest.fixture(scope="session")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As long as the sample memory (20 minutes), two frames a second."""
    from videotapestry.testing.media import make_test_video

    path = tmp_path_factory.mktemp("video") / "cooking.mp4"
    make_test_video(path, 1200, fps=2, size=(320, 180), scene_s=30)
    return path


@pytest.fixture
def server(api_key: str) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


# --------------------------------------------------------------------------- the demo sample


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo cache directory holding the shipped sample's memory (offline profile), built
    once for every test that answers from it (about 40 s on two cores). Its memory is at
    ``demo_memory_dir(sample_video_path(), demo_cache)``; the response cache beside it holds
    the build's calls only, so an answer computed later is never a replay."""
    from videotapestry.api import VideoTapestry
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    cache = tmp_path_factory.mktemp("demo-cache")
    vt = VideoTapestry(
        profile="offline",
        overrides=["cache.enabled=true", f"cache.path={cache / 'responses.sqlite'}"],
    )
    video = sample_video_path()
    build = vt.build_memory(video, demo_memory_dir(video, cache))
    assert build.report.status == "complete"
    return cache


# --------------------------------------------------------------------------- Ray executor

#: The key every Ray worker of the test cluster sees (set while the cluster starts).
RAY_TEST_KEY = "sk-test-ray-0123456789abcdef"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """One local Ray instance on 127.0.0.1 with 2 CPUs for every Ray test, stopped after."""
    pytest.importorskip("ray")
    from videotapestry.testing.ray_cluster import local_ray_cluster

    with local_ray_cluster(2, env={"OPENAI_API_KEY": RAY_TEST_KEY}) as cluster:
        yield cluster


@pytest.fixture
def ray_deadline() -> Iterator[None]:
    """Fails a Ray test that runs past 600 s instead of letting it hang (the executor's driver
    loop wakes every half second, so the alarm is seen). Generous on purpose: it catches a
    hang, not a slow machine (a kill-and-rerun test takes 2-5 min on 2 loaded cores)."""
    import signal

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError("the Ray test ran past its 600 s deadline")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(600)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
