"""The one place model calls go through: cache, concurrency limit, usage, trace, JSON.

``ModelService`` is shared by a whole run (clients, limiter, cache, run-level usage).
``ModelSession`` is one question's view of it, with that question's trace and usage ledger,
so concurrent questions in ``abatch`` never mix their accounting.

Call order for every request: image cap → cache lookup (a hit makes no HTTP request) →
per-endpoint semaphore → client (with the SDK's retries and timeout) → cache store → usage
record → trace event. ``complete_json`` adds parsing, validation and one repair retry, then
raises ``StructuredOutputError`` for the caller's documented fallback.

Every reply, fresh or cached, leaves ``_send`` redacted of the configured keys and base URL
credentials (``secrets``): a model that echoes a key would otherwise carry it into
everything built from its reply (results, traces, memories, checkpoints, job rows, the
cache), and this is the one place all replies pass.

The cache rule: a cache holds good replies only. A text reply is good when it is not empty;
a JSON reply when it parsed and validated, so it is stored after validation, never on
arrival, and a reply that failed (the one a repair retry was needed for, or the one a
fallback replaced) is asked again by a rerun. A reply found in the cache that does not
validate (stored under another rule) is asked afresh. ``cache.keep_failed_replies: true``
stores every non-empty reply on arrival instead, so a model that fails the same way each
time costs nothing on a rerun.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pydantic import BaseModel

from videotapestry.config import MODEL_ROLES, Config, ModelSettings
from videotapestry.errors import (
    NO_KEY_CHOICE,
    ImageLimitError,
    ModelAuthError,
    ModelCallError,
    StructuredOutputError,
    VideoTapestryError,
)
from videotapestry.images import ImagePart
from videotapestry.llm.budget import ANSWERING_ROLES, BudgetReached, Spent, budget_reason
from videotapestry.llm.cache import ResponseCache, request_key
from videotapestry.llm.client import (
    ClientFactory,
    ModelClient,
    default_client_factories,
    endpoint_identity,
    lookup_factory,
    waited_for,
)
from videotapestry.llm.monitor import CURRENT_CALL, CallMonitor, Report
from videotapestry.llm.structured import (
    OutputParseError,
    json_schema_for,
    parse_output,
    repair_instruction,
)
from videotapestry.llm.types import JsonSpec, Message, ModelRequest, ModelResponse
from videotapestry.llm.usage import PriceTable, UsageLedger, UsageRecord
from videotapestry.prompts import RenderedPrompt
from videotapestry.trace import (
    Trace,
    TraceEvent,
    display_url,
    redact,
    scrub,
    secrets_from_env,
    url_credentials,
)

log = logging.getLogger("videotapestry.llm")

T = TypeVar("T", bound=BaseModel)

_PREVIEW_CHARS = 600


@dataclass
class _LoopState:
    """Clients and semaphores are bound to the event loop that created them."""

    clients: dict[tuple[str, str | None, str], ModelClient] = field(default_factory=dict)
    limits: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    #: Roles whose own settings their provider refused when ``warm_up`` checked them; their
    #: calls fail as a first call would, though another role made their endpoint's client.
    refused: set[str] = field(default_factory=set)


class ModelService:
    def __init__(
        self,
        config: Config,
        *,
        cache: ResponseCache | None = None,
        client_factories: dict[str, ClientFactory] | None = None,
    ) -> None:
        self.config = config
        self.prices = PriceTable(config.pricing)
        self.usage = UsageLedger()
        self._factories = client_factories or default_client_factories()
        if cache is None and config.cache.enabled:
            cache = ResponseCache(config.cache.resolved_path())
        self.cache = cache
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        # Each output model's JSON schema, made once: pydantic builds it afresh on every call,
        # with a schema generator that is a reference cycle of ~60 bound methods, which was
        # the largest share of the cyclic garbage of an eval (16 calls a question).
        self._schemas: dict[type[BaseModel], dict[str, Any]] = {}
        # Where each role's secret lives, resolved once (``secrets`` runs for every reply).
        every_role = [config.models.settings_for(role) for role in MODEL_ROLES]
        self._key_variables = {settings.api_key_env for settings in every_role}
        self._base_urls = {settings.base_url for settings in every_role}

    def json_schema(self, output_model: type[BaseModel]) -> dict[str, Any]:
        """``output_model``'s JSON schema (shared by every request: do not change it)."""
        schema = self._schemas.get(output_model)
        if schema is None:
            schema = self._schemas[output_model] = json_schema_for(output_model)
        return schema

    def session(
        self, trace: Trace | None = None, *, progress: Report | None = None
    ) -> ModelSession:
        """A per-question handle with its own trace and usage ledger.

        ``progress`` receives "waiting" events while a call is open longer than
        ``models.wait_report_s`` and "retry" events when the SDK retries it.
        """
        if trace is None:
            trace = Trace(secrets=self.secrets())
        return ModelSession(self, trace=trace, usage=UsageLedger(), progress=progress)

    def check_credentials(self, roles: Sequence[str] = MODEL_ROLES) -> None:
        """Fail fast, before any model or memory loads, when a role's API key is not set.

        Only providers that read a key from the environment are checked (the OpenAI-compatible
        client); the message says which variable to export.
        """
        for role in roles:
            settings = self.config.models.settings_for(role)
            if settings.provider == "openai" and not os.environ.get(settings.api_key_env):
                where = display_url(
                    settings.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
                )
                raise ModelAuthError(
                    f"environment variable {settings.api_key_env} is not set (needed by the "
                    f"{role} role, model {settings.model}); export the API key for {where} "
                    f"there (local servers usually accept any value, e.g. EMPTY), {NO_KEY_CHOICE}",
                    role=role,
                    endpoint=where,
                )

    def secrets(self) -> list[str]:
        """Every role's key (the judge's and the builder's too) and the credentials of every
        base URL, read from the environment now: a key exported after the service was made
        is the one its clients send."""
        urls = [*self._base_urls, os.environ.get("OPENAI_BASE_URL")]
        return [*secrets_from_env(self._key_variables), *url_credentials(urls)]

    def redacted(self, response: ModelResponse) -> ModelResponse:
        """``response`` with its text cleared of ``secrets`` (the same object when clean)."""
        text = redact(response.text, self.secrets())
        return response if text == response.text else replace(response, text=text)

    def endpoint_for(self, role: str) -> str:
        """The URL ``role``'s calls really go to (base_url, OPENAI_BASE_URL or the default).

        Needs a running event loop: clients belong to the loop that made them.
        """
        request = ModelRequest(
            role=role, messages=(), settings=self.config.models.settings_for(role)
        )
        client, _ = self._client(request)
        return client.endpoint

    def revision_for(self, role: str) -> str | None:
        """The version of ``role``'s model when its client knows it (the offline model's
        rules); a build's checkpoints record it so new rules redo the stages they answer."""
        request = ModelRequest(
            role=role, messages=(), settings=self.config.models.settings_for(role)
        )
        try:
            client, _ = self._client(request)
        except VideoTapestryError:
            return None  # no client yet (a missing key): the first call reports it
        return getattr(client, "revision", None)

    async def warm_up(self, roles: Sequence[str] = MODEL_ROLES) -> None:
        """Make the clients of ``roles`` on this event loop, and let each do the one-off
        work of its first request (``warm_up``, when it has one), both in a thread.

        Creating the OpenAI-compatible client loads the SSL certificates, and its first
        request imports and builds the SDK's validators: work that holds the interpreter
        lock, which an eval's first questions would otherwise all wait behind. Each role's
        own settings are put to its provider (roles with the same settings once): a role
        they are refused for (a missing key, a model the provider does not have) fails at
        each of its calls, even when another role made the client of its endpoint.
        """
        state = self._state()
        accepted: dict[str, bool] = {}  # a role's settings, as JSON -> its provider took them
        for role in roles:
            settings = self.config.models.settings_for(role)
            key = settings.model_dump_json()
            if key not in accepted:
                accepted[key] = await self._warm_client(state, settings)
            if not accepted[key]:
                state.refused.add(role)

    async def _warm_client(self, state: _LoopState, settings: ModelSettings) -> bool:
        try:
            factory = lookup_factory(self._factories, settings.provider)
            client = await asyncio.to_thread(factory, settings)
        except VideoTapestryError:
            return False
        identity = endpoint_identity(settings)
        if identity in state.clients:  # these settings are good; the endpoint has its client
            await client.aclose()
            return True
        state.clients[identity] = client
        warm = getattr(client, "warm_up", None)
        if callable(warm):
            try:
                await asyncio.to_thread(warm)
            except Exception as exc:  # only a head start: the first real call does the work
                log.warning(
                    "warming up the %s client failed: %s",
                    client.endpoint,
                    scrub(str(exc), self.secrets()),
                )
        return True

    async def aclose(self) -> None:
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            for client in state.clients.values():
                await client.aclose()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    # -- internals used by ModelSession ------------------------------------------------

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState()
        return state

    def _client(self, request: ModelRequest) -> tuple[ModelClient, asyncio.Semaphore]:
        state = self._state()
        identity = endpoint_identity(request.settings)
        client = state.clients.get(identity)
        if client is None or request.role in state.refused:
            factory = lookup_factory(self._factories, request.settings.provider)
            made = factory(request.settings)  # raises again for a refused role
            state.refused.discard(request.role)
            client = state.clients.setdefault(identity, made)
        limit = state.limits.get(client.endpoint)
        if limit is None:
            limit = state.limits[client.endpoint] = asyncio.Semaphore(
                self.config.models.max_concurrency_per_endpoint
            )
        return client, limit

    async def _send(
        self,
        request: ModelRequest,
        progress: Report | None = None,
        *,
        checked: bool = False,
        fresh: bool = False,
    ) -> ModelResponse:
        """The reply to ``request``. ``checked`` replies are stored by ``remember`` once the
        caller has validated them (unless ``cache.keep_failed_replies``); ``fresh`` skips the
        cache lookup."""
        cap = request.settings.max_images or self.config.images.max_per_call
        if request.image_count > cap:
            where = (
                f"models.roles.{request.role}.max_images"
                if request.settings.max_images
                else "images.max_per_call"
            )
            raise ImageLimitError(
                f"{request.role} call carries {request.image_count} images, more than "
                f"{where}={cap}",
                role=request.role,
            )
        client, limit = self._client(request)
        key = request_key(request, client.endpoint) if self.cache is not None else None
        if key is not None and self.cache is not None and not fresh:
            cached = await asyncio.to_thread(self.cache.get, key)
            if cached is not None:
                return self.redacted(cached)  # stored before a key was configured or redacted
        async with limit:
            started = time.perf_counter()
            response = self.redacted(await self._watched(client, request, progress))
            response.latency_s = time.perf_counter() - started
        if not checked or self.config.cache.keep_failed_replies:
            await self.remember(request, response)
        return response

    async def remember(self, request: ModelRequest, response: ModelResponse) -> None:
        """Store a good reply (non-empty, not itself from the cache) for the next run."""
        if self.cache is None or response.cached or not response.text.strip():
            return
        client, _ = self._client(request)
        await asyncio.to_thread(
            self.cache.put, request_key(request, client.endpoint), request, self.redacted(response)
        )

    async def _watched(
        self, client: ModelClient, request: ModelRequest, progress: Report | None
    ) -> ModelResponse:
        """The client call, with "waiting" reports every ``wait_report_s`` while it is open."""
        if progress is None:
            return await client.complete(request)
        monitor = CallMonitor(
            role=request.role, level=request.level, report=progress, target=waited_for(client)
        )
        token = CURRENT_CALL.set(monitor)
        try:
            call = asyncio.ensure_future(client.complete(request))  # copies the context
        finally:
            CURRENT_CALL.reset(token)
        interval = self.config.models.wait_report_s
        try:
            while not call.done():
                await asyncio.wait({call}, timeout=interval)
                if not call.done():
                    monitor.event("waiting")
            return call.result()
        finally:
            if not call.done():
                call.cancel()


class ModelSession:
    """One question's access to the models."""

    def __init__(
        self,
        service: ModelService,
        *,
        trace: Trace,
        usage: UsageLedger,
        progress: Report | None = None,
    ) -> None:
        self.service = service
        self.trace = trace
        self.usage = usage
        self.progress = progress
        #: The question's caps (``budget``); checked before each refining call.
        self.budget = service.config.budget
        #: The video's ``prompt_cache_key`` (``prefix_cache.video_cache_key``) its requests
        #: carry; None: none (set by whoever knows the video, ``run_setup``).
        self.cache_key: str | None = None
        self._in_flight = 0
        self._first_call_at: float | None = None

    def request(
        self,
        role: str,
        prompt: RenderedPrompt,
        images: Sequence[ImagePart] = (),
        *,
        level: str | None = None,
        output_model: type[BaseModel] | None = None,
        images_first: bool = False,
    ) -> ModelRequest:
        """Build the request for ``prompt``; images follow the user text in one message, or
        precede it with ``images_first`` (pictures that recur across questions, SPEC §17)."""
        messages: list[Message] = []
        if prompt.system:
            messages.append(Message("system", prompt.system))
        messages.append(Message("user", prompt.user, tuple(images), images_first=images_first))
        spec = (
            JsonSpec(name=prompt.name, schema=self.service.json_schema(output_model))
            if output_model is not None
            else None
        )
        return ModelRequest(
            role=role,
            messages=tuple(messages),
            settings=self.service.config.models.settings_for(role),
            json_spec=spec,
            prompt_name=prompt.name,
            prompt_hash=prompt.hash,
            level=level,
            cache_key=self.cache_key,
        )

    async def complete(
        self,
        role: str,
        prompt: RenderedPrompt,
        images: Sequence[ImagePart] = (),
        *,
        level: str | None = None,
        images_first: bool = False,
    ) -> ModelResponse:
        return await self.send(
            self.request(role, prompt, images, level=level, images_first=images_first)
        )

    async def complete_json(
        self,
        role: str,
        prompt: RenderedPrompt,
        output_model: type[T],
        images: Sequence[ImagePart] = (),
        *,
        level: str | None = None,
        images_first: bool = False,
    ) -> T:
        request = self.request(
            role, prompt, images, level=level, output_model=output_model, images_first=images_first
        )
        return await self.send_json(request, output_model)

    async def send_json(self, request: ModelRequest, output_model: type[T]) -> T:
        """Send, parse and validate; one repair retry; then ``StructuredOutputError``.
        A reply is cached only once it validated (the module's cache rule)."""
        response, event = await self._send_traced(request, checked=True)
        try:
            return await self._validated(request, response, event, output_model)
        except OutputParseError as first:
            problem = str(first)
        if response.cached and not self.service.config.cache.keep_failed_replies:
            # A failed reply stored under another rule: ask the model again before repairing.
            response, event = await self._send_traced(request, checked=True, fresh=True)
            try:
                return await self._validated(request, response, event, output_model)
            except OutputParseError as again:
                problem = str(again)
        repair = request.with_messages(
            (
                *request.messages,
                Message("assistant", response.text),
                Message("user", repair_instruction(problem, output_model)),
            )
        )
        self.trace.note("repair_retry", role=request.role, problem=problem)
        second, event = await self._send_traced(repair, checked=True)
        try:
            return await self._validated(repair, second, event, output_model)
        except OutputParseError as exc:
            raise StructuredOutputError(
                f"{request.role} reply is not valid {output_model.__name__} JSON after one "
                f"repair retry: {exc}",
                raw_text=second.text,
                validation_error=str(exc),
                role=request.role,
            ) from None

    async def _validated(
        self, request: ModelRequest, response: ModelResponse, event: TraceEvent, model: type[T]
    ) -> T:
        parsed = _parsed_into(event, response.text, model)
        await self.service.remember(request, response)
        return parsed

    def _report(self, event: dict[str, Any]) -> None:
        if self.progress is not None:
            try:
                self.progress(event)
            except Exception as exc:  # a display must never break a call
                log.warning("progress callback failed: %s", exc)

    async def send(self, request: ModelRequest) -> ModelResponse:
        response, _ = await self._send_traced(request)
        return response

    def _check_budget(self, request: ModelRequest) -> None:
        """Raise ``BudgetReached`` instead of a refining call the budget no longer allows."""
        if not self.budget.limited or request.role in ANSWERING_ROLES:
            return
        now = time.monotonic()
        elapsed = 0.0 if self._first_call_at is None else now - self._first_call_at
        reason = budget_reason(self.budget, Spent(self.usage.summary(), self._in_flight, elapsed))
        if reason is not None:
            self.trace.note("budget_reached", role=request.role, level=request.level, why=reason)
            raise BudgetReached(reason, role=request.role, level=request.level)

    async def _send_traced(
        self, request: ModelRequest, *, checked: bool = False, fresh: bool = False
    ) -> tuple[ModelResponse, TraceEvent]:
        self._check_budget(request)
        if self._first_call_at is None:
            self._first_call_at = time.monotonic()
        started = time.time()
        self._in_flight += 1
        try:
            response = await self.service._send(request, self._report, checked=checked, fresh=fresh)
        except ModelCallError as exc:
            self._account(request, None, started, error=exc)
            raise
        except asyncio.CancelledError as exc:
            # A call cancelled in flight (its question failed beside it) may still be billed:
            # it is counted as a failed call, not dropped.
            self._account(request, None, started, error=exc)
            raise
        finally:
            self._in_flight -= 1
        return response, self._account(request, response, started)

    def _account(
        self,
        request: ModelRequest,
        response: ModelResponse | None,
        started: float,
        *,
        error: BaseException | None = None,
    ) -> TraceEvent:
        settings = request.settings
        if response is None:
            cost = None
            usage = UsageRecord(
                role=request.role,
                model=settings.model,
                prompt_tokens=0,
                completion_tokens=0,
                images=request.image_count,
                latency_s=time.time() - started,
                cached=False,
                cost_usd=None,
                level=request.level,
                error=type(error).__name__,
            )
        else:
            cost = (
                0.0
                if response.cached
                else self.service.prices.cost(
                    settings.model,
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    response.usage.cached_prompt_tokens,
                )
            )
            usage = UsageRecord(
                role=request.role,
                model=response.model,
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                images=request.image_count,
                latency_s=response.latency_s,
                cached=response.cached,
                cost_usd=cost,
                level=request.level,
                cached_prompt_tokens=response.usage.cached_prompt_tokens,
                reasoning_tokens=response.usage.reasoning_tokens,
            )
        self.usage.record(usage)
        self.service.usage.record(usage)
        log.debug(
            "model call role=%s level=%s prompt=%s cached=%s error=%s",
            request.role,
            request.level,
            request.prompt_name,
            usage.cached,
            usage.error,
        )
        event = TraceEvent(
            kind="model_call",
            name=request.prompt_name or request.role,
            role=request.role,
            level=request.level,
            prompt_name=request.prompt_name,
            prompt_hash=request.prompt_hash,
            started_at=started,
            duration_s=usage.latency_s,
            inputs=_summarize_inputs(request),
            output=response.text if response is not None else None,
            usage={
                "model": usage.model,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cached_prompt_tokens": usage.cached_prompt_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "images": usage.images,
                "cached": usage.cached,
                "cost_usd": usage.cost_usd,
                "json_mode": response.json_mode if response else None,
            },
            error=str(error) if error else None,
        )
        self.trace.add(event)
        return event


def _summarize_inputs(request: ModelRequest) -> dict[str, Any]:
    return {
        "model": request.settings.model,
        "messages": [
            {
                "role": message.role,
                "chars": len(message.text),
                "preview": message.text[:_PREVIEW_CHARS],
                "images": [image.reference() for image in message.images],
                **({"images_first": True} if message.images_first else {}),
            }
            for message in request.messages
        ],
    }


def _parsed_into(event: TraceEvent, text: str, output_model: type[T]) -> T:
    """Parse the reply; the trace keeps the validated object, or the problem with the text."""
    try:
        parsed = parse_output(text, output_model)
    except OutputParseError as exc:
        event.output = {"unparsed": text[:_PREVIEW_CHARS], "problem": str(exc)}
        raise
    event.output = parsed.model_dump(mode="json")
    return parsed
