"""Client for any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, DashScope).

Built on the ``openai`` SDK, which already does what a hand-written client would get wrong:
retries with exponential backoff that honour ``Retry-After``, timeouts, connection pooling,
and the ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` environment conventions. This class adds
what the SDK does not: negotiating the JSON output mode with servers that lack
``json_schema`` (or ``json_object``) support, role/prompt/level headers for proxies and the
test server (only when ``harness_headers`` is set), and translation of SDK exceptions into
our typed errors. A server's error body may echo the key ("Incorrect API key provided:
sk-…"), so every message of those errors is scrubbed of the key and of anything shaped like
one, and the SDK exception (which holds the body) is not chained onto them, so no traceback
can print it either.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any, TypedDict

import openai

from videotapestry.config import ModelSettings
from videotapestry.errors import (
    NO_KEY_CHOICE,
    ModelAuthError,
    ModelCallError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from videotapestry.llm.loop_thread import LoopThread
from videotapestry.llm.monitor import monitored_http_client
from videotapestry.llm.types import Message, ModelRequest, ModelResponse, TokenUsage
from videotapestry.trace import display_url, scrub, url_credentials

#: The order in which ``json_mode: auto`` tries output modes; the last always works.
JSON_MODES = ("json_schema", "json_object", "prompt")
ROLE_HEADER = "x-videotapestry-role"
PROMPT_HEADER = "x-videotapestry-prompt"
LEVEL_HEADER = "x-videotapestry-level"


class _ErrorSource(TypedDict):
    """Which call failed: every typed error carries it, so a level can log and fall back."""

    role: str
    endpoint: str


class OpenAICompatibleClient:
    """One endpoint (base URL + key). Remembers which JSON modes the server rejected.

    Its requests are built, sent and read on a loop of its own (``LoopThread``), whichever
    loop awaits them, so that encoding a request full of images never stalls the caller's.
    """

    def __init__(self, *, base_url: str | None, api_key: str) -> None:
        self._io = LoopThread(f"videotapestry-sdk {base_url or 'default'}")
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            http_client=monitored_http_client(openai.DefaultAsyncHttpxClient),
        )
        # The key and any credentials in the URL are what ``_scrubbed`` takes out of errors;
        # the endpoint names this client in messages, logs and reports, so it carries none.
        self._secrets = [api_key, *url_credentials([base_url, str(self._client.base_url)])]
        self.endpoint = display_url(str(self._client.base_url)).rstrip("/")
        self._rejected_modes: set[str] = set()
        # The client with each (timeout, retries) of the requests, made once: ``with_options``
        # copies the SDK client, and each copy is a reference cycle left for the collector.
        self._with_options: dict[tuple[float, int], openai.AsyncOpenAI] = {}

    def warm_up(self) -> None:
        """Do the one-off work of a process's first request now, in this thread.

        The first request imports modules and builds the SDK's pydantic validators for its
        request and reply types (40 ms in a quiet process, several times that under load).
        Run on the event loop while 16 questions waited on it, that stalled all of them; so
        an eval does it once before its first question, against a responder on 127.0.0.1
        started for it (no server of the run is asked).
        """
        asyncio.run(_offline_first_request())
        self._io.start()

    @classmethod
    def from_settings(cls, settings: ModelSettings) -> OpenAICompatibleClient:
        api_key = os.environ.get(settings.api_key_env)
        if not api_key:
            where = display_url(
                settings.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
            )
            raise ModelAuthError(
                f"environment variable {settings.api_key_env} is not set; export the API key "
                f"for {where} there (local servers usually accept any value, e.g. EMPTY), "
                f"{NO_KEY_CHOICE}",
                endpoint=where,
            )
        return cls(base_url=settings.base_url, api_key=api_key)

    async def aclose(self) -> None:
        if not self._io.started:  # never sent anything: nothing is bound to a loop yet
            await self._client.close()
            return
        await self._io.run(self._client.close())
        await asyncio.to_thread(self._io.stop)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._io.run(self._complete(request))

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        settings = request.settings
        options = (settings.timeout_s, settings.max_retries)
        client = self._with_options.get(options)
        if client is None:
            client = self._with_options[options] = self._client.with_options(
                timeout=settings.timeout_s, max_retries=settings.max_retries
            )
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": [_wire_message(m, settings.image_detail) for m in request.messages],
        }
        if settings.harness_headers:
            # Which agent, prompt and memory level asked is ours to know; a real endpoint
            # is not told unless the config says it wants to route on it.
            kwargs["extra_headers"] = {
                ROLE_HEADER: request.role,
                PROMPT_HEADER: request.prompt_name or "",
                LEVEL_HEADER: request.level or "",
            }
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.reasoning_effort is not None:
            kwargs["reasoning_effort"] = settings.reasoning_effort
        if settings.max_tokens is not None:
            kwargs["max_completion_tokens"] = settings.max_tokens
        if settings.extra_body:
            kwargs["extra_body"] = dict(settings.extra_body)
        cache_key = request.cache_key if settings.prompt_cache_key else None
        if cache_key and "prompt_cache_key" not in settings.extra_body:
            kwargs["prompt_cache_key"] = cache_key  # one per video (``prefix_cache``)

        modes = self._modes_to_try(request)
        for index, mode in enumerate(modes):
            response_format = _response_format(mode, request)
            if response_format is not None:
                kwargs["response_format"] = response_format
            else:
                kwargs.pop("response_format", None)
            try:
                completion = await client.chat.completions.create(**kwargs)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if index + 1 < len(modes) and _rejects_response_format(exc):
                    self._rejected_modes.add(mode)
                    continue
                raise self._scrubbed(self._typed_error(exc, request)) from None
            except openai.OpenAIError as exc:
                raise self._scrubbed(self._typed_error(exc, request)) from None
            return self._response(completion, request, mode)
        raise AssertionError("unreachable: the prompt-only mode is always tried last")

    def _modes_to_try(self, request: ModelRequest) -> tuple[str, ...]:
        if request.json_spec is None:
            return ("prompt",)
        wanted = request.settings.json_mode
        if wanted != "auto":
            return (wanted,)
        return tuple(m for m in JSON_MODES if m not in self._rejected_modes) or ("prompt",)

    def _response(self, completion: Any, request: ModelRequest, mode: str) -> ModelResponse:
        choices = getattr(completion, "choices", None) or []
        if not choices or choices[0].message is None:
            raise ModelResponseError(
                f"{self.endpoint} returned no choices for the {request.role} call",
                role=request.role,
                endpoint=self.endpoint,
            )
        usage = getattr(completion, "usage", None)
        return ModelResponse(
            text=choices[0].message.content or "",
            model=getattr(completion, "model", None) or request.settings.model,
            usage=reported_usage(usage),
            finish_reason=choices[0].finish_reason,
            json_mode=mode,
        )

    def _scrubbed(self, error: ModelCallError) -> ModelCallError:
        """``error`` with its message cleared of this endpoint's key, its URL's credentials
        and key-shaped text."""
        error.args = (scrub(str(error), self._secrets),)
        return error

    def _typed_error(self, exc: openai.OpenAIError, request: ModelRequest) -> ModelCallError:
        settings = request.settings
        where = f"{request.role} call to {self.endpoint} (model {settings.model})"
        retries = f"after {settings.max_retries} retries"
        kwargs = _ErrorSource(role=request.role, endpoint=self.endpoint)
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeoutError(
                f"{where} timed out after {settings.timeout_s:g} s, {retries}; raise "
                "models.<role>.timeout_s if the server is slow",
                **kwargs,
            )
        if isinstance(exc, openai.APIConnectionError):
            return ModelConnectionError(
                f"{where} could not connect ({exc}); check base_url and that the server runs",
                **kwargs,
            )
        if isinstance(exc, openai.RateLimitError):
            return ModelRateLimitError(f"{where} was rate-limited (429) {retries}", **kwargs)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return ModelAuthError(
                f"{where} was refused ({exc.status_code}); check the key in "
                f"${settings.api_key_env}",
                **kwargs,
            )
        if isinstance(exc, openai.APIStatusError):
            detail = _error_message(exc)
            if exc.status_code >= 500:
                return ModelServerError(
                    f"{where} failed with HTTP {exc.status_code} {retries}: {detail}", **kwargs
                )
            if _request_specific(exc.status_code, detail):
                return ModelRequestError(
                    f"{where} was rejected with HTTP {exc.status_code}: {detail}",
                    recoverable=True,
                    **kwargs,
                )
            return ModelRequestError(
                f"{where} was rejected with HTTP {exc.status_code}: {detail}. This comes from "
                "the configuration (model name, base_url or a request parameter) and every "
                f"call would fail the same way; check models.roles.{request.role} / "
                "models.default",
                **kwargs,
            )
        return ModelCallError(f"{where} failed: {exc}", **kwargs)


async def _offline_first_request() -> None:
    """One chat completion with an image and a JSON schema, to a responder on 127.0.0.1
    started here for it, so the whole path (SDK, HTTP client, sockets) runs once."""
    reply = json.dumps(
        {
            "id": "warm-up",
            "object": "chat.completion",
            "created": 0,
            "model": "warm-up",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "{}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()

    async def respond(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + b"Content-Length: %d\r\n\r\n" % len(reply)
            + reply
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(respond, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AA=="}}
    request: dict[str, Any] = {
        "model": "warm-up",
        "messages": [
            {"role": "system", "content": "."},
            {"role": "user", "content": [{"type": "text", "text": "."}, image]},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "warm_up", "schema": {"type": "object"}},
        },
        "max_completion_tokens": 1,
        "extra_headers": {ROLE_HEADER: "warm-up"},
    }
    async with (
        server,
        openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="warm-up", max_retries=0, timeout=10
        ) as client,
    ):
        await client.chat.completions.create(**request)


def _wire_message(message: Message, image_detail: str | None) -> dict[str, Any]:
    if not message.images:
        return {"role": message.role, "content": message.text}
    text: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    images: list[dict[str, Any]] = []
    for image in message.images:
        image_url: dict[str, Any] = {"url": image.data_url()}
        if image_detail:
            image_url["detail"] = image_detail
        images.append({"type": "image_url", "image_url": image_url})
    parts = images + text if message.images_first else text + images
    return {"role": message.role, "content": parts}


def _response_format(mode: str, request: ModelRequest) -> dict[str, Any] | None:
    spec = request.json_spec
    if spec is None or mode == "prompt":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": spec.name, "schema": spec.schema, "strict": False},
    }


#: Rejections caused by one request's content, not by the configuration (HTTP 400 only).
_REQUEST_SPECIFIC = re.compile(
    r"context.?length|context.?window|maximum context|too many tokens|too long|"
    r"token limit|content.?(?:policy|filter|management)|safety|flagged|"
    r"invalid image|image.*(?:too large|could not|cannot be)|unsupported image",
    re.IGNORECASE,
)


def _request_specific(status: int, detail: str) -> bool:
    return status == 400 and bool(_REQUEST_SPECIFIC.search(detail))


def _rejects_response_format(exc: openai.APIStatusError) -> bool:
    text = f"{getattr(exc, 'param', '') or ''} {_error_message(exc)}".lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object"))


def _error_message(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", exc))


def reported_usage(usage: Any) -> TokenUsage:
    """The token counts of a completion's ``usage``; absent or null fields count 0.

    Cached prompt tokens come from ``prompt_tokens_details.cached_tokens`` (OpenAI's prefix
    cache, vLLM and SGLang with prefix caching) and reasoning tokens from
    ``completion_tokens_details.reasoning_tokens``; servers that report neither give 0.
    """

    def count(source: Any, name: str) -> int:
        value = getattr(source, name, None)
        if value is None and isinstance(source, dict):
            value = source.get(name)
        try:
            return max(0, int(value or 0))
        except (TypeError, ValueError):
            return 0

    def details(name: str) -> Any:
        value = getattr(usage, name, None)
        if value is None and isinstance(usage, dict):
            value = usage.get(name)
        return value

    prompt = count(usage, "prompt_tokens")
    completion = count(usage, "completion_tokens")
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_prompt_tokens=min(prompt, count(details("prompt_tokens_details"), "cached_tokens")),
        reasoning_tokens=min(
            completion, count(details("completion_tokens_details"), "reasoning_tokens")
        ),
    )
