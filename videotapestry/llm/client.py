"""The model-client protocol and its factory registry.

Everything that calls a model (agents, tools, the memory builder, baselines) goes through
``ModelClient.complete``: one request in, one response out, typed errors on failure. A new
backend is one class plus one entry point (``videotapestry.plugins``), the way lmms-eval
adds model backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from videotapestry.config import ModelSettings
from videotapestry.errors import ConfigError
from videotapestry.llm.types import ModelRequest, ModelResponse
from videotapestry.plugins import PROVIDERS, load, registered


@runtime_checkable
class ModelClient(Protocol):
    """One endpoint. ``endpoint`` names it in errors, cache keys and the concurrency limit."""

    endpoint: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


def waited_for(client: ModelClient) -> str:
    """What a slow call of ``client`` waits for, as progress lines say it: a model running in
    this process (its client sets ``in_process = True``, as the offline model's does) or the
    server at the client's endpoint."""
    if getattr(client, "in_process", False):
        return f"the in-process model {client.endpoint}"
    return f"the model server at {client.endpoint}"


#: Builds a client for the endpoint described by a role's settings.
ClientFactory = Callable[[ModelSettings], ModelClient]


def default_client_factories() -> dict[str, ClientFactory]:
    """The OpenAI-compatible client plus every provider registered in the
    ``videotapestry.providers`` entry-point group; pass an extended copy to ``ModelService``
    to add one.

    Each registered provider's factory is made per call: ``offline`` (the in-process
    rule-based model, ``videotapestry.offline``, not a VLM) then shares one OCR engine and
    one embedding model among the clients of one ``ModelService``.
    """
    from videotapestry.llm.openai_client import OpenAICompatibleClient  # the SDK loads slowly

    factories: dict[str, ClientFactory] = {"openai": OpenAICompatibleClient.from_settings}
    for name in registered(PROVIDERS):
        factories.setdefault(name, load(PROVIDERS, name)())
    return factories


def endpoint_identity(settings: ModelSettings) -> tuple[str, str | None, str]:
    """Settings that share one client (and one concurrency limit)."""
    return (settings.provider, settings.base_url, settings.api_key_env)


def lookup_factory(factories: dict[str, ClientFactory], provider: str) -> ClientFactory:
    try:
        return factories[provider]
    except KeyError:
        raise ConfigError(
            f"model provider {provider!r} is not available; known providers: "
            f"{', '.join(sorted(factories))} (a provider registers itself in the "
            f"{PROVIDERS!r} entry-point group of its installed package)"
        ) from None
