"""SQLite response cache keyed by a hash of the full request.

Reruns of an evaluation must be free and reproducible (temperature 0.1 is not
deterministic), so every successful reply is stored under a key that covers everything that
can change the answer: endpoint, model, sampling settings, the JSON schema asked for, every
message's text and the SHA-256 of every image's bytes. Only replies are stored, never
request headers, so no API key can end up in the file.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from videotapestry.kvstore import SqliteStore
from videotapestry.llm.types import ModelRequest, ModelResponse, TokenUsage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    created REAL NOT NULL,
    role TEXT,
    prompt_name TEXT,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    json_mode TEXT
)
"""


def request_key(request: ModelRequest, endpoint: str) -> str:
    """Hash of everything in ``request`` that can change the reply (not the trace labels)."""
    settings = request.settings
    payload = {
        "provider": settings.provider,
        "endpoint": endpoint,
        "model": settings.model,
        "temperature": settings.temperature,
        "reasoning_effort": settings.reasoning_effort,
        "max_tokens": settings.max_tokens,
        "json_mode": settings.json_mode,
        "image_detail": settings.image_detail,
        "extra_body": settings.extra_body,
        "json_spec": (
            None
            if request.json_spec is None
            else {"name": request.json_spec.name, "schema": request.json_spec.schema}
        ),
        "messages": [
            {
                "role": message.role,
                "text": message.text,
                "images": [image.sha256 for image in message.images],
                # Only when set, so the keys of requests with the images after the text stay.
                **({"images_first": True} if message.images_first else {}),
            }
            for message in request.messages
        ],
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0


class ResponseCache:
    """Model replies by request key, in one SQLite file that threads and processes share."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._rows = SqliteStore(self.path, table="responses", schema=_SCHEMA)
        self.stats = CacheStats()

    def get(self, key: str) -> ModelResponse | None:
        row = self._rows.get(key)
        if row is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return ModelResponse(
            text=row["text"],
            model=row["model"],
            usage=TokenUsage(row["prompt_tokens"], row["completion_tokens"]),
            latency_s=0.0,
            cached=True,
            finish_reason=row["finish_reason"],
            json_mode=row["json_mode"] or "prompt",
        )

    def put(self, key: str, request: ModelRequest, response: ModelResponse) -> None:
        row = {
            "created": time.time(),
            "role": request.role,
            "prompt_name": request.prompt_name,
            "model": response.model,
            "text": response.text,
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
            "finish_reason": response.finish_reason,
            "json_mode": response.json_mode,
        }
        self._rows.put(key, row)
        self.stats.writes += 1

    def __len__(self) -> int:
        return len(self._rows)

    def close(self) -> None:
        self._rows.close()
