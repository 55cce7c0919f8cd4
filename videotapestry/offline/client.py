"""The ``offline`` provider: a ``ModelClient`` that answers in process, by rules.

``OfflineClientFactory`` is the registry entry (``default_client_factories()["offline"]``);
one factory belongs to one ``ModelService`` and shares one ``Perception`` (OCR engine,
embedding model, OCR cache) among the clients the service makes for its event loops, so the
models load once per service however many questions or builds run. No network, no API key.

Each request is answered by the rule for its prompt name (``rule_table``) on a worker
thread, validated against the prompt's own output schema before it is returned (a rule that
produced an unusable reply is a bug, reported as a failed call, never sent on), and
serialized deterministically. Usage is estimated at four characters per token so usage
accounting works; the offline profile prices the model at zero.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from pathlib import Path

from pydantic import ValidationError

from videotapestry.config import ModelSettings
from videotapestry.errors import ConfigError, ModelRequestError, ModelResponseError
from videotapestry.llm.types import ModelRequest, ModelResponse, TokenUsage
from videotapestry.ocr.engine import READING
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import PromptView
from videotapestry.offline.rule_table import RULES
from videotapestry.tokens import estimate_tokens

MODEL_NAME = "offline-rules"


def rules_revision() -> str:
    """A hash of the rules' source: the model's version. It is part of the endpoint name, so
    the response cache and the builder's checkpoints never replay replies of older rules.

    Every ``*.py`` file of the package counts, subpackages included, in the order of their
    paths relative to the package (the same on every machine), and so does how the OCR engine
    reads (``videotapestry.ocr.engine.READING``): the replies quote what it read.
    """
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(READING.encode())
    for relative in sorted(path.relative_to(package).as_posix() for path in package.rglob("*.py")):
        digest.update(relative.encode())
        digest.update((package / relative).read_bytes())
    return digest.hexdigest()[:12]


def output_schemas() -> dict:
    from videotapestry.contracts.builder import BUILDER_SCHEMAS
    from videotapestry.contracts.judge import EVAL_SCHEMAS
    from videotapestry.contracts.method import OUTPUT_SCHEMAS

    return {**OUTPUT_SCHEMAS, **BUILDER_SCHEMAS, **EVAL_SCHEMAS}


def answer(request: ModelRequest, perception: Perception) -> dict:
    """The rule's reply to ``request`` (a JSON-ready dict); raises for unknown prompts."""
    view = PromptView.of(request)
    rule = RULES.get(view.name)
    if rule is None:
        raise ModelRequestError(
            f"the offline model has no rule for prompt {view.name!r} (role {request.role}); "
            f"it answers the shipped prompts: {', '.join(sorted(RULES))}",
            role=request.role,
            endpoint=f"offline:{MODEL_NAME}",
        )
    return rule(view, perception)


class OfflineModelClient:
    """Rule-based answers from OCR, transcripts and MiniLM similarity (not a VLM)."""

    #: Runs in this process: a slow call waits for its rules, not for a server.
    in_process = True

    def __init__(self, settings: ModelSettings, perception: Perception) -> None:
        self.settings = settings
        self.perception = perception
        self.revision = rules_revision()
        self.endpoint = f"offline:{settings.model}@{self.revision}"
        self._schemas = output_schemas()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        reply = await asyncio.to_thread(self._reply, request)
        text = json.dumps(reply, ensure_ascii=False)
        prompt_chars = sum(len(m.text) for m in request.messages)
        return ModelResponse(
            text=text,
            model=self.settings.model,
            usage=TokenUsage(
                prompt_tokens=-(-prompt_chars // 4),
                completion_tokens=estimate_tokens(text),
            ),
            latency_s=time.perf_counter() - started,
            finish_reason="stop",
            json_mode="json_schema" if request.json_spec is not None else "prompt",
        )

    def _reply(self, request: ModelRequest) -> dict:
        name = request.prompt_name or ""
        try:
            reply = answer(request, self.perception)
        except ModelRequestError:
            raise
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelResponseError(
                f"the offline model could not read the {name} prompt: {exc}",
                role=request.role,
                endpoint=self.endpoint,
            ) from None
        schema = self._schemas.get(name)
        if schema is not None:
            try:
                schema.model_validate(reply)
            except ValidationError as exc:
                raise ModelResponseError(
                    f"the offline model's {name} rule produced an invalid reply: {exc}",
                    role=request.role,
                    endpoint=self.endpoint,
                ) from None
        return reply

    async def aclose(self) -> None:
        return None


class OfflineClientFactory:
    """Makes offline clients that share one ``Perception`` (made on first use)."""

    def __init__(self, perception: Perception | None = None) -> None:
        self._perception = perception
        self._lock = threading.Lock()

    @property
    def perception(self) -> Perception:
        with self._lock:
            if self._perception is None:
                self._perception = Perception()
            return self._perception

    def __call__(self, settings: ModelSettings) -> OfflineModelClient:
        if settings.model != MODEL_NAME:
            raise ConfigError(
                f"provider 'offline' has one model, {MODEL_NAME!r}, not {settings.model!r}; "
                f"set models.default.model={MODEL_NAME} (the offline profile does)"
            )
        return OfflineModelClient(settings, self.perception)
