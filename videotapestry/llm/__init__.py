"""Model access: the client protocol, the OpenAI-compatible client, cache, usage, service."""

from videotapestry.llm.client import ModelClient, default_client_factories
from videotapestry.llm.service import ModelService, ModelSession
from videotapestry.llm.types import Message, ModelRequest, ModelResponse
from videotapestry.llm.usage import UsageSummary

__all__ = [
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelService",
    "ModelSession",
    "UsageSummary",
    "default_client_factories",
]
