"""Requests and responses that cross the model-client boundary.

These are provider-neutral: the OpenAI-compatible client turns them into wire messages, the
cache hashes them, the trace summarizes them, and the offline model reads them directly.
Their images are ``videotapestry.images.ImagePart``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from videotapestry.config import ModelSettings
from videotapestry.images import ImagePart


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    text: str
    images: tuple[ImagePart, ...] = ()
    #: The images go before the text (else after it): where the same pictures recur across
    #: questions and the text changes, a provider's prefix cache serves them (SPEC §17).
    images_first: bool = False


@dataclass(frozen=True)
class JsonSpec:
    """Asks for JSON output; ``schema`` is the JSON schema of the expected object."""

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One chat call, complete enough to be cached and replayed."""

    role: str
    messages: tuple[Message, ...]
    settings: ModelSettings
    json_spec: JsonSpec | None = None
    prompt_name: str | None = None
    prompt_hash: str | None = None
    level: str | None = None
    #: OpenAI's ``prompt_cache_key``: one per video (``prefix_cache.video_cache_key``), sent
    #: when the role's ``prompt_cache_key`` setting is on; None sends none.
    cache_key: str | None = None

    @property
    def image_count(self) -> int:
        return sum(len(m.images) for m in self.messages)

    def with_messages(self, messages: tuple[Message, ...]) -> ModelRequest:
        return ModelRequest(
            role=self.role,
            messages=messages,
            settings=self.settings,
            json_spec=self.json_spec,
            prompt_name=self.prompt_name,
            prompt_hash=self.prompt_hash,
            level=self.level,
            cache_key=self.cache_key,
        )


@dataclass
class TokenUsage:
    """What the provider reported for one call.

    ``cached_prompt_tokens`` is the part of ``prompt_tokens`` the provider served from its
    prefix cache (billed at the cached-input price); ``reasoning_tokens`` is the part of
    ``completion_tokens`` spent on hidden reasoning (already inside ``completion_tokens``).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class ModelResponse:
    text: str
    model: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    json_mode: str = "prompt"
