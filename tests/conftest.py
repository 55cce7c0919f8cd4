"""Shared fixtures: the fake OpenAI-compatible server and a model service pointed at it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from videotapestry.config import Config, load_config
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
