"""Shared fixtures (the fake OpenAI-compatible server, the packaged embedder, the sample's
memory built once per run) and the tiers: what a test needs becomes its markers."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from PIL import Image

from videotapestry.config import Config, EmbeddingConfig, load_config
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.scripted import ScriptedModel

#: Looks like a real key so the redaction patterns are exercised too.
SECRET_KEY = "sk-test-SECRET-0123456789abcdefXYZ"

# --------------------------------------------------------------------------- tiers and workers

#: What a shared fixture needs, given to every test that uses it as a marker (pyproject.toml
#: says what each marker means), so a test's tier follows from what it uses. A test module
#: declares its own fixtures' needs in a ``FIXTURE_NEEDS`` of its own. (Every fixture named
#: ``video`` here makes or reads a video longer than a minute.)
FIXTURE_NEEDS = {
    "ray_cluster": "ray",
    "sample_build": "long_video",
    "demo_cache": "long_video",
    "video": "long_video",
}
#: Left out of `make test-fast`; run first under xdist, so no worker ends on a long file.
HEAVY = ("slow", "browser", "ray", "lmms", "long_video")
#: How much more a ``slow`` test weighs than another heavy one when units are ordered.
SLOW_WEIGHT = 10
#: A test outside those markers that takes longer (setup included) is named at the end of the
#: run: the one-minute tier stays one minute only if such a test is marked or shortened.
UNMARKED_SLOW_S = 5.0
#: Marks a folder made by ``made_once`` as complete.
DONE = ".made"
_CACHE_HOME = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    # Nothing a test does reads or fills the user's caches (model replies, transcripts, the
    # demo's memory): each test process, each xdist worker, gets a cache home of its own.
    home = tempfile.mkdtemp(prefix="videotapestry-test-cache-")
    config.stash[_CACHE_HOME] = home
    os.environ["XDG_CACHE_HOME"] = home
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # The workers are as many as the cores: torch's pool of a thread per core in each of
        # them (and in the servers they start) only makes them take turns. Set before torch
        # is first imported (no conftest import loads it).
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    config.pluginmanager.register(UnmarkedSlowTests(), "unmarked-slow-tests")


def pytest_unconfigure(config: pytest.Config) -> None:
    if home := config.stash.get(_CACHE_HOME, None):
        shutil.rmtree(home, ignore_errors=True)


class UnmarkedSlowTests:
    """Sums each test's time (setup and teardown too) unless it carries a heavy marker, and
    names those over ``UNMARKED_SLOW_S`` at the end. Under xdist it runs in the controller,
    where the workers' reports arrive with their markers."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not any(marker in report.keywords for marker in HEAVY):
            self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        slow = sorted((-s, n) for n, s in self.seconds.items() if s > UNMARKED_SLOW_S)
        if slow:
            terminalreporter.section("unmarked tests slower than the fast tier allows")
            for seconds, nodeid in slow:
                terminalreporter.line(f"{-seconds:6.1f} s  {nodeid}")
            terminalreporter.line("mark each with what it needs (pyproject.toml) or shorten it")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from the fixtures a test uses, then the order xdist hands out units of work in
    (a test file, or a folder below tests/; each keeps its own order): the heaviest first, so
    no worker ends the run on a long one. A unit weighs ``SLOW_WEIGHT`` per ``slow`` test and
    one per other heavy test. The heaviest that needs the sample's memory leads (its worker
    builds the memory), the heavy units that do not need it follow, so the other worker works
    instead of waiting for the build, then the other heavy units that need it, then the rest."""
    for item in items:
        needs = {**FIXTURE_NEEDS, **getattr(item.module, "FIXTURE_NEEDS", {})}
        for fixture, marker in needs.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
    weight: dict[str, int] = {}
    sample: set[str] = set()
    for item in items:
        unit = work_unit(item.nodeid)
        if item.get_closest_marker("slow"):
            weight[unit] = weight.get(unit, 0) + SLOW_WEIGHT
        elif any(map(item.get_closest_marker, HEAVY)):
            weight[unit] = weight.get(unit, 0) + 1
        if "sample_build" in item.fixturenames:
            sample.add(unit)
    leader = max(sample & weight.keys(), key=lambda unit: weight[unit], default=None)

    def rank(item: pytest.Item) -> tuple[int, int]:
        unit = work_unit(item.nodeid)
        if unit not in weight:
            return (3, 0)
        if unit == leader:
            return (0, 0)
        return (2 if unit in sample else 1, -weight[unit])

    items.sort(key=rank)  # stable: a unit's tests keep their order


def work_unit(nodeid: str) -> str:
    """What xdist hands a worker at once: a test file, or a whole folder below tests/."""
    path = nodeid.split("::", 1)[0]
    folder = path.rpartition("/")[0]
    return folder if folder.count("/") > 0 else path


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist it is never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``-n``: one unit of work per test file, so its module fixtures are made once, and
    one per folder below tests/ (tests/ray/ shares one Ray instance and its processes), taken
    in the order above rather than by test count (xdist's ``--no-loadscope-reorder``, set
    here rather than in addopts so that ``-p no:xdist`` still runs)."""
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False

    class FileOrFolderScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return FileOrFolderScheduling(config, log)


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder ``make`` fills, made once per test run by whichever xdist worker asks first
    while the others wait for it. Shared: a test copies what it changes."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's base temp, above each worker's own
    folder = base / f"shared-{name}"
    with FileLock(f"{folder}.lock"):
        if not (folder / DONE).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / DONE).touch()
    return folder


@pytest.fixture
def quiet_server(api_key: str) -> Iterator[FakeOpenAIServer]:
    """The fake server answering every prompt with the scripted model's valid replies."""
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        yield server


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def module_api_key() -> Iterator[str]:
    """A key set for a whole module (its module-scoped fixtures build with it), unset after."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", SECRET_KEY)
        patch.delenv("OPENAI_BASE_URL", raising=False)
        yield SECRET_KEY


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
    """As long as the sample memory (20 minutes), two frames a second; made once per run."""
    from videotapestry.testing.media import make_test_video

    def make(folder: Path) -> None:
        make_test_video(folder / "cooking.mp4", 1200, fps=2, size=(320, 180), scene_s=30)

    return made_once(tmp_path_factory, "cooking-video", make) / "cooking.mp4"


@pytest.fixture
def server(api_key: str) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


# --------------------------------------------------------------------------- the demo sample


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo cache directory holding the shipped sample's memory (offline profile), built
    once per test run for every test that answers from it (about 40 s on two cores); read
    only: tests use a copy (``demo_cache``)."""
    from videotapestry.api import VideoTapestry
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    def build(cache: Path) -> None:
        vt = VideoTapestry(
            profile="offline",
            overrides=["cache.enabled=true", f"cache.path={cache / 'responses.sqlite'}"],
        )
        video = sample_video_path()
        report = vt.build_memory(video, demo_memory_dir(video, cache)).report
        assert report.status == "complete"

    return made_once(tmp_path_factory, "demo-cache", build)


@pytest.fixture(scope="module")
def demo_cache(sample_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test module's own copy of the demo cache holding the sample's memory (its checkpoints
    included): ``demo_memory_dir(sample_video_path(), demo_cache)``. The response cache
    beside it holds the build's calls only, so an answer computed later is never a replay."""
    cache = tmp_path_factory.mktemp("demo-cache")
    shutil.copytree(sample_build, cache, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
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
