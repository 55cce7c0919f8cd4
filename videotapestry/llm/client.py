"""The model-client protocol and its factory registry.

Everything that calls a model (agents, tools, the memory builder, baselines) goes through
``ModelClient.complete``: one request in, one response out, typed errors on failure. A new
backend is one class plus one registry entry, the way lmms-eval adds model backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from videotapestry.config import ModelSettings
from videotapestry.errors import ConfigError
from videotapestry.llm.types import ModelRequest, ModelResponse


@runtime_checkable
class ModelClient(Protocol):
    """One endpoint. ``endpoint`` names it in errors, cache keys and the concurrency limit."""

    endpoint: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


#: Builds a client for the endpoint described by a role's settings.
ClientFactory = Callable[[ModelSettings], ModelClient]


def default_client_factories() -> dict[str, ClientFactory]:
    """The built-in providers; pass an extended copy to ``ModelService`` to add one.

    ``offline`` is the in-process rule-based model (``videotapestry.llm.offline``, not a VLM);
    its factory is made per call, so each ``ModelService`` shares one OCR engine and one
    embedding model among its offline clients.
    """
    from videotapestry.llm.offline import OfflineClientFactory
    from videotapestry.llm.openai_client import OpenAICompatibleClient

    return {"openai": OpenAICompatibleClient.from_settings, "offline": OfflineClientFactory()}


def endpoint_identity(settings: ModelSettings) -> tuple[str, str | None, str]:
    """Settings that share one client (and one concurrency limit)."""
    return (settings.provider, settings.base_url, settings.api_key_env)


def lookup_factory(factories: dict[str, ClientFactory], provider: str) -> ClientFactory:
    try:
        return factories[provider]
    except KeyError:
        raise ConfigError(
            f"model provider {provider!r} is not available; known providers: "
            f"{', '.join(sorted(factories))}"
        ) from None
