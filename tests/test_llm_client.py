"""The model client against the fake server over real HTTP, through the real openai SDK."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import SECRET_KEY, fake_config, jpeg_bytes

from videotapestry.config import Price
from videotapestry.contracts.method import FinalAnswer, VisualObservation
from videotapestry.errors import (
    ImageLimitError,
    ModelAuthError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    StructuredOutputError,
)
from videotapestry.images import ImagePart
from videotapestry.llm import ModelService, UsageSummary
from videotapestry.llm.openai_client import OpenAICompatibleClient
from videotapestry.llm.usage import PriceTable
from videotapestry.prompts import PromptRegistry
from videotapestry.testing import FakeOpenAIServer, FakeReply, RecordedRequest

ANSWER = {"reasoning": "The memory says the car is blue.", "answer": "B"}


def answer_prompt(memory: str = "super_01 [00:00-01:00] A blue car.") -> object:
    return PromptRegistry().render(
        "final_answer",
        question="What colour is the car?",
        options=["A. Red", "B. Blue"],
        handoff_trace="",
        memory=memory,
    )


def observation_prompt() -> object:
    return PromptRegistry().render(
        "visual_observation",
        agent_name="Overview Agent",
        memory_level="super",
        observation_instruction="What colour is the car?",
        image_notes=["Image 1 at 00:10", "Image 2 at 00:20"],
    )


def run(coro):
    return asyncio.run(coro)


async def ask(service: ModelService, role: str = "answer", prompt=None, images=()):
    session = service.session()
    try:
        reply = await session.complete_json(role, prompt or answer_prompt(), FinalAnswer, images)
    finally:
        await service.aclose()
    return reply, session


def test_text_request_reaches_the_server_in_openai_wire_format(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("answer", FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path))
    reply, _ = run(ask(service))
    assert reply.answer == "B"
    [request] = fake_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {api_key}"
    assert request.role == "answer" and request.prompt == "final_answer"
    body = request.body
    assert body["model"] == "fake-vlm"
    assert body["temperature"] == 0.1
    assert body["reasoning_effort"] == "high"  # the Answer agent only
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "What colour is the car?" in body["messages"][1]["content"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "final_answer"
    assert "answer" in body["response_format"]["json_schema"]["schema"]["properties"]


def test_warm_up_makes_the_clients_without_a_request_and_the_first_call_uses_them(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    """An eval warms its clients before the first question (SSL context, the SDK's first
    request answered in process): the server sees nothing until the real call, which goes
    through the very client the warm-up made, and a role without a key is left for its own
    first call to report."""
    fake_server.script("answer", FakeReply.json(ANSWER))
    config = fake_config(
        fake_server, tmp_path, "models.roles.judge.api_key_env=VT_TEST_NO_SUCH_KEY"
    )
    service = ModelService(config)

    async def warm_then_ask():
        await service.warm_up()
        made = dict(service._state().clients)
        asked_before = len(fake_server.requests)
        session = service.session()
        try:
            reply = await session.complete_json("answer", answer_prompt(), FinalAnswer)
            return made, asked_before, reply, dict(service._state().clients)
        finally:
            await service.aclose()

    made, asked_before, reply, after = run(warm_then_ask())
    assert asked_before == 0
    assert reply.answer == "B" and len(fake_server.requests) == 1
    assert len(made) == 1 and after == made  # every role with a key shares the one endpoint
    # The SDK's first request, made for real against a responder of its own (it raises when
    # that request fails; the service logs that and goes on), never reaches the run's server.
    OpenAICompatibleClient(base_url=fake_server.base_url, api_key=api_key).warm_up()
    assert len(fake_server.requests) == 1


def test_a_role_its_provider_refuses_fails_though_another_role_made_the_endpoints_client(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    """After the warm-up, a judge set to a model its provider refuses fails at its call (the
    error its own first call would raise), whichever role made the shared client first."""
    from videotapestry.errors import ConfigError

    def factory(settings):
        if settings.model == "refused-model":
            raise ConfigError("this provider has no model 'refused-model'")
        return OpenAICompatibleClient.from_settings(settings)

    fake_server.script("answer", FakeReply.json(ANSWER))
    config = fake_config(fake_server, tmp_path, "models.roles.judge.model=refused-model")
    service = ModelService(config, client_factories={"openai": factory})

    async def warm_then_ask():
        await service.warm_up()
        session = service.session()
        try:
            reply = await session.complete_json("answer", answer_prompt(), FinalAnswer)
            with pytest.raises(ConfigError, match="refused-model"):
                await session.complete_json("judge", answer_prompt(), FinalAnswer)
            return reply
        finally:
            await service.aclose()

    assert run(warm_then_ask()).answer == "B"
    assert len(fake_server.requests) == 1  # the judge's call never left


HARNESS_HEADERS = ("x-videotapestry-role", "x-videotapestry-prompt", "x-videotapestry-level")


@pytest.mark.parametrize("send", [False, True])
def test_harness_headers_go_only_to_an_endpoint_configured_for_them(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path, send: bool
) -> None:
    # A real endpoint is not told which agent, prompt or memory level is calling.
    fake_server.script(None, FakeReply.json(ANSWER))
    config = fake_config(fake_server, tmp_path, f"models.roles.answer.harness_headers={send}")
    reply, _ = run(ask(ModelService(config)))
    assert reply.answer == "B"
    [request] = fake_server.requests
    sent = {name: request.headers.get(name) for name in HARNESS_HEADERS}
    if send:
        assert sent == dict(zip(HARNESS_HEADERS, ("answer", "final_answer", ""), strict=True))
    else:
        assert sent == dict.fromkeys(HARNESS_HEADERS) and request.role is None


def test_an_unrouted_request_tells_the_fake_server_user_what_to_set(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("answer", FakeReply.json(ANSWER))
    config = fake_config(fake_server, tmp_path, "models.default.harness_headers=false")
    with pytest.raises(ModelRequestError, match="harness_headers=true"):
        run(ask(ModelService(config)))


def test_image_request_sends_jpeg_data_urls(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("observation", {"observation_result": "A blue car at 00:10."})
    images = [
        ImagePart(jpeg_bytes((0, 0, 255)), "Image 1", (10.0,)),
        ImagePart(jpeg_bytes((255, 0, 0)), "Image 2", (20.0,)),
    ]
    service = ModelService(fake_config(fake_server, tmp_path))

    async def go() -> VisualObservation:
        session = service.session()
        result = await session.complete_json(
            "observation", observation_prompt(), VisualObservation, images, level="super"
        )
        await service.aclose()
        assert session.usage.summary().images == 2
        event = session.trace.events[-1]
        refs = event.inputs["messages"][1]["images"]
        assert [r["timestamps"] for r in refs] == [[10.0], [20.0]]
        assert "reasoning_effort" not in fake_server.requests[0].body  # default effort
        return result

    result = run(go())
    assert result.observation_result == "A blue car at 00:10."
    [request] = fake_server.requests
    content = request.body["messages"][1]["content"]
    assert content[0]["type"] == "text" and "What colour is the car?" in content[0]["text"]
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert all(url.startswith("data:image/jpeg;base64,") for url in urls)
    assert request.images == [image.jpeg for image in images]


def test_rate_limit_then_success_honours_retry_after(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("answer", FakeReply.rate_limited(retry_after=1.5), FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path))
    started = time.perf_counter()
    reply, session = run(ask(service))
    elapsed = time.perf_counter() - started
    assert reply.answer == "B"
    assert len(fake_server.requests) == 2
    assert elapsed >= 1.4  # waited as long as the server asked, not the SDK's ~0.5 s default
    assert session.usage.summary().failed_calls == 0


def test_server_error_then_success(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("answer", FakeReply.server_error(500), FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path))
    reply, _ = run(ask(service))
    assert reply.answer == "B" and len(fake_server.requests) == 2


def test_persistent_errors_become_typed_errors(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.on("answer", lambda _: FakeReply.server_error(503))
    service = ModelService(fake_config(fake_server, tmp_path, "models.default.max_retries=1"))
    with pytest.raises(ModelServerError, match="503") as info:
        run(ask(service))
    assert info.value.role == "answer"
    assert len(fake_server.requests) == 2  # one try + one retry

    fake_server.reset()
    fake_server.on("answer", lambda _: FakeReply.rate_limited(retry_after=0.1))
    with pytest.raises(ModelRateLimitError, match="429"):
        run(ask(ModelService(fake_config(fake_server, tmp_path, "models.default.max_retries=1"))))

    fake_server.reset()
    fake_server.on("answer", lambda _: FakeReply(content="", status=401))
    with pytest.raises(ModelAuthError, match="OPENAI_API_KEY"):
        run(ask(ModelService(fake_config(fake_server, tmp_path))))


def test_stall_hits_the_timeout_and_raises_a_typed_error(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.on("answer", lambda _: FakeReply.stall(30))
    config = fake_config(
        fake_server, tmp_path, "models.default.timeout_s=0.5", "models.default.max_retries=1"
    )
    service = ModelService(config)
    started = time.perf_counter()
    with pytest.raises(ModelTimeoutError, match=r"timed out after 0\.5 s") as info:
        run(ask(service))
    assert time.perf_counter() - started < 10
    assert len(fake_server.requests) == 2
    assert info.value.endpoint == fake_server.base_url


def test_unreachable_endpoint_is_a_connection_error(api_key: str, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = fake_config(server, tmp_path, "models.default.max_retries=0")
    with pytest.raises(ModelConnectionError, match="could not connect"):
        run(ask(ModelService(config)))


def test_missing_api_key_names_the_variable(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_VLM_KEY", raising=False)
    config = fake_config(fake_server, tmp_path, "models.default.api_key_env=MY_VLM_KEY")
    with pytest.raises(ModelAuthError, match="MY_VLM_KEY is not set"):
        run(ask(ModelService(config)))
    assert fake_server.requests == []


@pytest.mark.parametrize(
    "reply",
    [FakeReply.fenced(ANSWER), FakeReply.with_trailing_text(ANSWER)],
    ids=["fenced", "trailing-text"],
)
def test_fenced_and_trailing_text_json_parse_without_retry(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path, reply: FakeReply
) -> None:
    fake_server.script("answer", reply)
    reply_obj, _ = run(ask(ModelService(fake_config(fake_server, tmp_path))))
    assert reply_obj.answer == "B"
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize(
    "bad", [FakeReply.malformed(), FakeReply.empty()], ids=["malformed", "empty"]
)
def test_bad_json_triggers_exactly_one_repair_retry(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path, bad: FakeReply
) -> None:
    fake_server.script("answer", bad, FakeReply.json(ANSWER))
    reply, session = run(ask(ModelService(fake_config(fake_server, tmp_path))))
    assert reply.answer == "B"
    first, second = fake_server.requests
    assert len(second.messages) == len(first.messages) + 2
    assert second.messages[-2] == {"role": "assistant", "content": bad.content}
    assert "could not be used" in second.messages[-1]["content"]
    assert [e.name for e in session.trace.events].count("repair_retry") == 1
    assert session.usage.summary().calls == 2


def test_bad_json_twice_raises_structured_output_error(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.on("answer", lambda _: FakeReply.text('{"reasoning": "no answer key"}'))
    with pytest.raises(StructuredOutputError) as info:
        run(ask(ModelService(fake_config(fake_server, tmp_path))))
    assert len(fake_server.requests) == 2
    assert "answer" in info.value.validation_error
    assert info.value.raw_text == '{"reasoning": "no answer key"}'


def test_json_mode_falls_back_and_is_remembered_per_endpoint(api_key: str, tmp_path: Path) -> None:
    with FakeOpenAIServer(supports_json_schema=False) as server:
        server.on("answer", lambda _: FakeReply.json(ANSWER))
        service = ModelService(fake_config(server, tmp_path, "cache.enabled=false"))

        async def twice() -> None:
            for memory in ("first", "second"):
                session = service.session()
                await session.complete_json("answer", answer_prompt(memory), FinalAnswer)
                assert session.trace.events[-1].usage["json_mode"] == "json_object"
            await service.aclose()

        run(twice())
        kinds = [(r.response_format or {}).get("type") for r in server.requests]
        assert kinds == ["json_schema", "json_object", "json_object"]

    with FakeOpenAIServer(supports_json_schema=False, supports_json_object=False) as server:
        server.on("answer", lambda _: FakeReply.json(ANSWER))
        reply, _ = run(ask(ModelService(fake_config(server, tmp_path, "cache.enabled=false"))))
        assert reply.answer == "B"
        assert [r.response_format for r in server.requests][-1] is None


def test_second_identical_request_is_served_from_cache(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.on("answer", lambda _: FakeReply.json(ANSWER))
    config = fake_config(fake_server, tmp_path)
    blue = [ImagePart(jpeg_bytes((0, 0, 255)), "frame")]
    red = [ImagePart(jpeg_bytes((255, 0, 0)), "frame")]

    first, _ = run(ask(ModelService(config), images=blue))
    assert len(fake_server.requests) == 1
    second, session = run(ask(ModelService(config), images=blue))  # new service, same file
    assert second == first
    assert len(fake_server.requests) == 1  # no HTTP call
    summary = session.usage.summary()
    assert (summary.calls, summary.cached_calls, summary.cost_usd) == (1, 1, 0.0)
    assert session.trace.events[-1].usage["cached"] is True

    run(ask(ModelService(config), images=red))  # same text, other image bytes
    assert len(fake_server.requests) == 2
    run(
        ask(
            ModelService(fake_config(fake_server, tmp_path, "models.default.temperature=0.7")),
            images=blue,
        )
    )
    assert len(fake_server.requests) == 3
    run(ask(ModelService(fake_config(fake_server, tmp_path, "cache.enabled=false")), images=blue))
    assert len(fake_server.requests) == 4


def test_a_reply_that_failed_is_not_cached_so_a_rerun_asks_again(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    """The cache rule: a JSON reply is stored once it validated, never the one that failed."""
    bad = FakeReply.text('{"reasoning": "no answer key"}')
    fake_server.on("answer", lambda _: bad)
    config = fake_config(fake_server, tmp_path)
    for attempt in (1, 2):  # the fallback case: both replies failed, nothing is stored
        with pytest.raises(StructuredOutputError):
            run(ask(ModelService(config)))
        assert len(fake_server.requests) == 2 * attempt

    fake_server.reset()
    fake_server.script("answer", bad, FakeReply.json(ANSWER))  # repaired on the retry
    assert run(ask(ModelService(config)))[0].answer == "B"
    fake_server.reset()
    fake_server.on("answer", lambda _: bad)  # the model fails the same way again
    reply, session = run(ask(ModelService(config)))
    assert reply.answer == "B"  # the first request is asked again; the repair was stored
    assert len(fake_server.requests) == 1
    assert [e.usage["cached"] for e in session.trace.events if e.kind == "model_call"] == [
        False,
        True,
    ]


def test_keep_failed_replies_stores_failures_and_an_old_failure_is_asked_afresh(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    bad = FakeReply.text('{"reasoning": "no answer key"}')
    fake_server.on("answer", lambda _: bad)
    keep = fake_config(fake_server, tmp_path, "cache.keep_failed_replies=true")
    with pytest.raises(StructuredOutputError):
        run(ask(ModelService(keep)))
    with pytest.raises(StructuredOutputError):  # the same failure, from the cache: free
        run(ask(ModelService(keep)))
    assert len(fake_server.requests) == 2

    fake_server.reset()
    fake_server.on("answer", lambda _: FakeReply.json(ANSWER))  # the server is fixed
    config = fake_config(fake_server, tmp_path)  # keep_failed_replies=false, the default
    assert run(ask(ModelService(config)))[0].answer == "B"
    assert len(fake_server.requests) == 1  # the stored failure was asked afresh, not repaired
    assert run(ask(ModelService(config)))[0].answer == "B"
    assert len(fake_server.requests) == 1  # and its good reply replaced it


def test_usage_sums_and_costs(fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path) -> None:
    fake_server.script(
        "answer",
        FakeReply(content=json.dumps(ANSWER), prompt_tokens=1000, completion_tokens=100),
        FakeReply(content="not json", prompt_tokens=2000, completion_tokens=10),
        FakeReply(content=json.dumps(ANSWER), prompt_tokens=3000, completion_tokens=200),
    )
    fake_server.script(
        "observation",
        FakeReply(content='{"observation_result": "x"}', prompt_tokens=500, completion_tokens=50),
    )
    config = fake_config(
        fake_server,
        tmp_path,
        "pricing={fake-vlm: {input_per_mtok: 2.0, output_per_mtok: 10.0}}",
    )
    service = ModelService(config)

    async def go():
        q1, q2 = service.session(), service.session()
        await q1.complete_json("answer", answer_prompt("one"), FinalAnswer)
        await q1.complete_json("answer", answer_prompt("two"), FinalAnswer)  # with a repair
        await q2.complete_json(
            "observation",
            observation_prompt(),
            VisualObservation,
            [ImagePart(jpeg_bytes((1, 2, 3)))],
        )
        await service.aclose()
        return q1.usage.summary(), q2.usage.summary()

    one, two = run(go())
    assert (one.calls, one.prompt_tokens, one.completion_tokens, one.images) == (3, 6000, 310, 0)
    assert one.cost_usd == pytest.approx((6000 * 2.0 + 310 * 10.0) / 1e6)
    assert (two.calls, two.prompt_tokens, two.images) == (1, 500, 1)
    run_total = service.usage.summary()
    assert run_total.calls == 4 and run_total.prompt_tokens == 6500
    assert run_total.by_role["answer"].completion_tokens == 310
    assert run_total.by_role["observation"].calls == 1
    assert run_total.unpriced_calls == 0


def test_provider_cached_tokens_are_billed_at_the_cached_price(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    # Two calls over real HTTP: the second's prompt was mostly a provider prefix-cache hit.
    fake_server.script(
        "answer",
        FakeReply(content=json.dumps(ANSWER), prompt_tokens=4000, completion_tokens=300),
        FakeReply(
            content=json.dumps(ANSWER),
            prompt_tokens=5000,
            completion_tokens=400,
            cached_tokens=3072,
            reasoning_tokens=250,
        ),
    )
    config = fake_config(
        fake_server,
        tmp_path,
        "pricing={fake-vlm: {input_per_mtok: 2.5, cached_input_per_mtok: 1.25, "
        "output_per_mtok: 10.0}}",
    )
    service = ModelService(config)

    async def go():
        session = service.session()
        await session.complete_json("answer", answer_prompt("one"), FinalAnswer)
        await session.complete_json("answer", answer_prompt("two"), FinalAnswer)
        await service.aclose()
        return session

    session = run(go())
    first, second = session.usage.records
    assert (first.cached_prompt_tokens, first.reasoning_tokens) == (0, 0)
    assert (second.cached_prompt_tokens, second.reasoning_tokens) == (3072, 250)
    by_hand_first = (4000 * 2.5 + 300 * 10.0) / 1e6
    by_hand_second = ((5000 - 3072) * 2.5 + 3072 * 1.25 + 400 * 10.0) / 1e6
    assert first.cost_usd == pytest.approx(by_hand_first)
    assert second.cost_usd == pytest.approx(by_hand_second)
    summary = session.usage.summary()
    assert (summary.cached_prompt_tokens, summary.reasoning_tokens) == (3072, 250)
    assert summary.cost_usd == pytest.approx(by_hand_first + by_hand_second)
    assert summary.cost_text() == f"${by_hand_first + by_hand_second:.4f}"
    assert "9,000 in (3,072 cached) / 700 out (250 reasoning)" in summary.describe()
    # The saved trace's summary reads back the same (a trace page or inspect shows it).
    assert UsageSummary.from_dict(summary.to_dict()).to_dict() == summary.to_dict()


def test_cached_tokens_without_a_cached_price_bill_at_the_input_price() -> None:
    table = PriceTable({"m": Price(input_per_mtok=2.0, output_per_mtok=8.0)})
    assert table.cost("m", 1000, 10, cached_prompt_tokens=800) == pytest.approx(
        (1000 * 2.0 + 10 * 8.0) / 1e6
    )
    assert table.cost("other", 1000, 10) is None


def test_unpriced_model_has_unknown_cost(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script("answer", FakeReply.json(ANSWER))
    _, session = run(ask(ModelService(fake_config(fake_server, tmp_path))))
    summary = session.usage.summary()
    assert summary.unpriced_calls == 1 and summary.cost_usd == 0.0
    assert session.usage.records[0].cost_usd is None
    assert summary.to_dict()["cost_usd"] is None  # unknown, not a misleading 0.0
    assert summary.cost_text() == "unpriced (1 call)"
    assert "unpriced" in summary.describe() and "$" not in summary.describe()


def test_image_cap_is_enforced_before_any_request(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    images = [ImagePart(jpeg_bytes((i, i, i))) for i in range(4)]
    service = ModelService(fake_config(fake_server, tmp_path, "images.max_per_call=3"))
    with pytest.raises(ImageLimitError, match="4 images"):
        run(ask(service, images=images))
    assert fake_server.requests == []


def test_a_roles_own_image_limit_replaces_the_per_call_cap(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    images = [ImagePart(jpeg_bytes((i, i, i))) for i in range(4)]
    fake_server.script("answer", FakeReply.json(ANSWER))
    roomy = fake_config(fake_server, tmp_path, "images.max_per_call=3",
                        "models.roles.answer.max_images=4")  # fmt: skip
    reply, _ = run(ask(ModelService(roomy), images=images))
    assert reply.answer == "B" and len(fake_server.requests[0].images) == 4
    tight = fake_config(fake_server, tmp_path, "models.roles.answer.max_images=2")
    with pytest.raises(ImageLimitError, match=r"models\.roles\.answer\.max_images=2"):
        run(ask(ModelService(tight), images=images))
    assert len(fake_server.requests) == 1


def test_concurrency_is_limited_per_endpoint(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    lock = threading.Lock()
    in_flight = {"now": 0, "max": 0}

    def slow(request: RecordedRequest) -> FakeReply:
        with lock:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
        time.sleep(0.2)
        with lock:
            in_flight["now"] -= 1
        return FakeReply.json(ANSWER)

    fake_server.on("answer", slow)
    config = fake_config(
        fake_server, tmp_path, "models.max_concurrency_per_endpoint=2", "cache.enabled=false"
    )
    service = ModelService(config)

    async def many() -> None:
        sessions = [service.session() for _ in range(6)]
        await asyncio.gather(
            *(
                s.complete_json("answer", answer_prompt(str(i)), FinalAnswer)
                for i, s in enumerate(sessions)
            )
        )
        await service.aclose()

    run(many())
    assert len(fake_server.requests) == 6
    assert in_flight["max"] == 2


def test_api_key_never_reaches_traces_cache_or_logs(
    fake_server: FakeOpenAIServer,
    api_key: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_server.script(
        "answer", FakeReply.json(ANSWER), FakeReply.server_error(500), FakeReply.server_error(500)
    )
    config = fake_config(fake_server, tmp_path, "models.default.max_retries=1")
    service = ModelService(config)
    caplog.set_level(logging.DEBUG)

    async def go():
        session = service.session()
        await session.complete_json("answer", answer_prompt(), FinalAnswer)
        with pytest.raises(ModelServerError):
            await session.complete_json("answer", answer_prompt("other"), FinalAnswer)
        await service.aclose()
        return session

    session = run(go())
    service.close()
    # The key was really sent, so its absence below means something.
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {SECRET_KEY}"
    trace_path = session.trace.save(tmp_path / "trace.json")
    assert SECRET_KEY not in trace_path.read_text()
    assert SECRET_KEY not in session.trace.to_markdown()
    for path in tmp_path.iterdir():
        assert SECRET_KEY.encode() not in path.read_bytes(), path
    assert SECRET_KEY not in caplog.text
    events = json.loads(trace_path.read_text())
    assert [e["kind"] for e in events] == ["model_call", "model_call"]
    assert events[1]["error"] and "500" in events[1]["error"]


def test_a_server_error_that_echoes_the_key_is_redacted_from_the_message(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is in a variable named like no secret and shaped like no token: only its
    configured value can find it."""
    import traceback

    key = "plain-credential-7f3a9c2e41b8d6"
    monkeypatch.setenv("MY_LLM_CREDS", key)
    fake_server.on(
        "answer",
        lambda _: FakeReply(content=f"Incorrect API key provided: {key}. Bearer {key}", status=400),
    )
    config = fake_config(fake_server, tmp_path, "models.default.api_key_env=MY_LLM_CREDS")
    with pytest.raises(ModelRequestError) as info:
        run(ask(ModelService(config)))
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {key}"  # really sent
    message = str(info.value)
    assert "Incorrect API key provided: [REDACTED]" in message and key not in message
    assert info.value.__cause__ is None  # the SDK's exception, which holds the body, is dropped
    printed = "".join(traceback.format_exception(info.value))
    assert key not in printed


@pytest.mark.parametrize(
    "pasted",
    [SECRET_KEY, "Ab3dE6gH9jK2mN5pQ8rS1tUv4w", "key with spaces"],
    ids=["sk", "alnum", "words"],
)
def test_a_key_pasted_where_a_variable_name_belongs_is_refused_unrepeated(pasted: str) -> None:
    from videotapestry.config import load_config
    from videotapestry.errors import ConfigError

    for key in ("models.default.api_key_env", "models.roles.answer.api_key_env"):
        with pytest.raises(ConfigError, match="names the environment variable") as info:
            load_config(overrides=[f"{key}={pasted}"])
        assert pasted not in str(info.value) and key in str(info.value)
    assert load_config(overrides=["models.default.api_key_env=DASHSCOPE_API_KEY"])


def test_openai_base_url_env_is_honoured_and_config_wins(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.on("answer", lambda _: FakeReply.json(ANSWER))
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    from_env = fake_config(fake_server, tmp_path, "models.default.base_url=null")
    assert from_env.models.default.base_url is None
    reply, _ = run(ask(ModelService(from_env)))
    assert reply.answer == "B" and len(fake_server.requests) == 1

    with FakeOpenAIServer() as other:
        other.on("answer", lambda _: FakeReply.json(ANSWER))
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        config = fake_config(fake_server, tmp_path, "cache.enabled=false")  # config names ours
        run(ask(ModelService(config)))
        assert other.requests == []
    assert len(fake_server.requests) == 2


def test_call_monitor_imports_without_httpx() -> None:
    # httpx is only a dev dependency (newer openai releases use httpx2), so the hooks the
    # client installs must not need it.
    code = "import sys; sys.modules['httpx'] = None; import videotapestry.llm.monitor"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def sdk_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("videotapestry-sdk")}


def test_a_request_is_encoded_off_the_event_loop_that_awaits_it(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK JSON-encodes a request in one piece (4 MB for an Overview observation). Here
    # the encoding waits until the awaiting loop has run another task: done on that loop, it
    # would wait for itself until the timeout.
    import openai._base_client as base_client

    encode = base_client.openapi_dumps
    loop_ran = threading.Event()
    waited: list[bool] = []

    def encode_when_the_loop_runs(obj: object) -> bytes:
        waited.append(loop_ran.wait(timeout=10))
        return encode(obj)

    monkeypatch.setattr(base_client, "openapi_dumps", encode_when_the_loop_runs)
    fake_server.script("answer", FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path, "cache.enabled=false"))

    async def both() -> FinalAnswer:
        async def other_task() -> None:
            await asyncio.sleep(0.05)
            loop_ran.set()

        try:
            reply, _ = await asyncio.gather(
                service.session().complete_json("answer", answer_prompt(), FinalAnswer),
                other_task(),
            )
        finally:
            await service.aclose()
        return reply

    assert run(both()).answer == "B"
    assert waited == [True]


def test_retries_are_reported_on_the_thread_of_the_loop_that_asked(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    # The SDK's hooks run on the client's own loop thread; a display is told on its own.
    fake_server.script("answer", FakeReply.rate_limited(retry_after=0.1), FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path, "cache.enabled=false"))
    told: list[tuple[str, int]] = []

    async def asked() -> int:
        session = service.session(
            progress=lambda e: told.append((e["step"], threading.get_ident()))
        )
        try:
            await session.complete_json("answer", answer_prompt(), FinalAnswer)
        finally:
            await service.aclose()
        return threading.get_ident()

    caller = run(asked())
    assert ("retry", caller) in told
    assert {thread for _, thread in told} == {caller}


def test_a_clients_loop_thread_ends_with_aclose_or_with_the_client(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    import gc

    before = sdk_threads()
    fake_server.on("answer", lambda _: FakeReply.json(ANSWER))
    service = ModelService(fake_config(fake_server, tmp_path, "cache.enabled=false"))
    run(ask(service))
    assert sdk_threads() == before

    client = OpenAICompatibleClient(base_url=fake_server.base_url, api_key=api_key)
    request = service.session().request("answer", answer_prompt(), output_model=FinalAnswer)
    reply = run(client.complete(request))
    assert "B" in reply.text
    started = sdk_threads() - before
    assert len(started) == 1
    del client
    gc.collect()
    (thread,) = started
    thread.join(timeout=10)
    assert not thread.is_alive()
