"""The prefix-cache measure (videotapestry.llm.prefix_cache) on hand-made prompts, and the
per-video ``prompt_cache_key`` the OpenAI-compatible client sends (the fake server's bodies)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import fake_config

from videotapestry.config import ModelSettings
from videotapestry.images import ImagePart
from videotapestry.llm import ModelService
from videotapestry.llm.prefix_cache import (
    IMAGE_TOKENS,
    OPENAI,
    VLLM,
    prefix_share,
    prompt_tokens,
    text_tokens,
    video_cache_key,
)
from videotapestry.llm.types import Message, ModelRequest
from videotapestry.prompts import PromptRegistry, RenderedPrompt
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.tokens import estimate_tokens


def seq(*runs: tuple[str, int]) -> list[tuple[str, int]]:
    """A token list of runs: ("a", 3) is three distinct tokens a0, a1, a2."""
    return [(name, k) for name, n in runs for k in range(n)]


@pytest.mark.parametrize(
    ("shared", "length", "openai", "vllm"),
    [
        (0, 5000, 0, 0),
        (1023, 5000, 0, 1008),  # under OpenAI's 1,024; 63 full vLLM blocks
        (1024, 5000, 1024, 1024),
        (1300, 5000, 1280, 1296),  # 1300 // 128 = 10 steps; 1300 // 16 = 81 blocks
        (1023, 1023, 0, 1008),  # a prompt under 1,024 tokens is never cached by OpenAI
        (2000, 2000, 1920, 1984),  # sent twice: vLLM computes the last token (1999 // 16)
        (2048, 2048, 2048, 2032),
    ],
)
def test_rules(shared: int, length: int, openai: int, vllm: int) -> None:
    assert OPENAI.cached(shared, length) == openai
    assert VLLM.cached(shared, length) == vllm


def test_text_tokens_count_as_the_estimate() -> None:
    for text in ("", "a", "abcd", "abcde", "x" * 4099):
        assert len(text_tokens(text)) == estimate_tokens(text)
    assert text_tokens("abcdefghij") == ["abcd", "efgh", "ij"]


def test_first_call_caches_nothing_and_later_calls_take_the_longest_prefix() -> None:
    first = seq(("sys", 1500), ("q1", 700))
    second = seq(("sys", 1500), ("q2", 800))  # shares 1,500 with the first
    third = seq(("sys", 1500), ("q2", 800), ("more", 200))  # shares 2,300 with the second
    measured = prefix_share([first, second, third])
    assert [c.shared for c in measured.calls] == [0, 1500, 2300]
    assert [c.cached["openai"] for c in measured.calls] == [0, 1408, 2176]
    assert [c.cached["vllm"] for c in measured.calls] == [0, 1488, 2288]
    assert measured.tokens == 2200 + 2300 + 2500
    assert measured.share("openai") == pytest.approx((1408 + 2176) / 7000)
    later = measured.part(1)
    assert later.tokens == 4800
    assert later.share("vllm") == pytest.approx((1488 + 2288) / 4800)


def test_a_change_early_in_the_prompt_loses_everything_after_it() -> None:
    first = seq(("sys", 100), ("question", 20), ("memory", 3000))
    second = seq(("sys", 100), ("other question", 20), ("memory", 3000))
    measured = prefix_share([first, second])
    assert measured.calls[1].shared == 100
    assert measured.calls[1].cached == {"openai": 0, "vllm": 96}
    swapped_first = seq(("sys", 100), ("memory", 3000), ("question", 20))
    swapped_second = seq(("sys", 100), ("memory", 3000), ("other question", 20))
    swapped = prefix_share([swapped_first, swapped_second])
    assert swapped.calls[1].cached == {"openai": 3072, "vllm": 3088}
    assert prefix_share([]).share("openai") == 0.0


def test_requests_render_roles_text_and_images_in_place() -> None:
    settings = ModelSettings()
    frame = ImagePart(b"\xff\xd8 one frame")
    other = ImagePart(b"\xff\xd8 another frame")

    def request(text: str, *images: ImagePart) -> ModelRequest:
        return ModelRequest(
            role="observation",
            messages=(Message("system", "s" * 4096), Message("user", text, images)),
            settings=settings,
        )

    tokens = prompt_tokens(request("abcdefgh", frame))
    # system marker + 1,024 text tokens, user marker + 2 text tokens, then the image.
    assert len(tokens) == 1 + 1024 + 1 + 2 + IMAGE_TOKENS
    assert tokens[-IMAGE_TOKENS] == ("image", frame.sha256, 0)
    measured = prefix_share(
        [request("abcdefgh", frame), request("abcdefgh", frame), request("abcdefgh", other)]
    )
    length = 1028 + IMAGE_TOKENS
    assert [c.tokens for c in measured.calls] == [length] * 3
    # The same frame again: all of it; another frame: up to its first token.
    assert [c.shared for c in measured.calls] == [0, length, 1028]
    assert measured.calls[1].cached == {"openai": 1024 + 0, "vllm": (length - 1) // 16 * 16}
    assert measured.calls[2].cached == {"openai": 1024, "vllm": 1024}


def test_images_first_puts_the_pictures_before_a_changing_text() -> None:
    """The same frames asked about with two instructions: after the text, the frames are lost
    at the first changed character; before it, the second prompt reuses them all."""
    frames = (ImagePart(b"\xff\xd8 one frame"), ImagePart(b"\xff\xd8 another frame"))

    def request(text: str, first: bool) -> ModelRequest:
        return ModelRequest(
            role="observation",
            messages=(Message("system", "s" * 64), Message("user", text, frames, first)),
            settings=ModelSettings(),
        )

    tokens = prompt_tokens(request("abcd", True))
    assert tokens[18] == ("image", frames[0].sha256, 0) and tokens[-1] == "abcd"
    after = prefix_share([request("look at A", False), request("look at B", False)])
    before = prefix_share([request("look at A", True), request("look at B", True)])
    assert after.calls[1].shared == 1 + 16 + 1 + 2
    assert before.calls[1].shared == 1 + 16 + 1 + 2 * IMAGE_TOKENS + 2


def test_the_client_sends_images_first_when_asked(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    fake_server.script(None, FakeReply.text("ok"), FakeReply.text("ok"))
    service = ModelService(fake_config(fake_server, tmp_path, "cache.enabled=false"))
    frame = ImagePart(b"\xff\xd8 one frame")
    prompt = RenderedPrompt("visual_observation", "system", "look", "", "", "h")

    async def go() -> None:
        try:
            session = service.session()
            await session.complete("observation", prompt, [frame])
            await session.complete("observation", prompt, [frame], images_first=True)
        finally:
            await service.aclose()

    asyncio.run(go())
    kinds = [
        [part["type"] for part in (r.body or {})["messages"][-1]["content"]]
        for r in fake_server.requests
    ]
    assert kinds == [["text", "image_url"], ["image_url", "text"]]


# --------------------------------------------------------------------------- prompt_cache_key


def ask_in_scopes(server: FakeOpenAIServer, tmp_path: Path, *overrides: str) -> list[dict]:
    """Three calls: a question about video one, one about video two, one with no video
    known (no key set); their request bodies."""
    server.script(None, FakeReply.text("ok"), FakeReply.text("ok"), FakeReply.text("ok"))
    config = fake_config(server, tmp_path, "cache.enabled=false", *overrides)
    service = ModelService(config)

    async def go() -> None:
        try:
            for identity, text in (("fp-one", "first"), ("fp-two", "second"), (None, "third")):
                session = service.session()
                session.cache_key = video_cache_key(identity) if identity else None
                prompt = RenderedPrompt("final_answer", "system", text, "", "", text)
                await session.complete("answer", prompt)
        finally:
            await service.aclose()

    asyncio.run(go())
    return [request.body or {} for request in server.requests]


def test_prompt_cache_key_is_sent_per_video_when_on(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    bodies = ask_in_scopes(fake_server, tmp_path, "models.default.prompt_cache_key=true")
    keys = [body.get("prompt_cache_key") for body in bodies]
    assert keys == [video_cache_key("fp-one"), video_cache_key("fp-two"), None]
    assert keys[0] != keys[1] and keys[0].startswith("videotapestry-")
    assert "fp-one" not in keys[0]  # a digest, naming nothing of the video
    assert "prompt_cache_key" not in bodies[2]


def test_prompt_cache_key_is_not_sent_when_off(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    assert ModelSettings().prompt_cache_key is False  # the default: servers may refuse it
    bodies = ask_in_scopes(fake_server, tmp_path)
    assert all("prompt_cache_key" not in body for body in bodies)


def test_a_key_in_extra_body_wins(
    fake_server: FakeOpenAIServer, api_key: str, tmp_path: Path
) -> None:
    bodies = ask_in_scopes(
        fake_server,
        tmp_path,
        "models.default.prompt_cache_key=true",
        "models.default.extra_body={prompt_cache_key: mine}",
    )
    assert [body.get("prompt_cache_key") for body in bodies] == ["mine"] * 3


# --------------------------------------------------------------------------- prompt order


def test_overview_planning_puts_the_videos_memory_before_the_question() -> None:
    """Two questions on one video: the Overview plan of the second repeats the first's whole
    prefix up to the locator results (system text, duration, summary, SuperEvents), and the
    offline model still reads the question, options and SuperEvents from it (SPEC §17)."""
    from videotapestry.offline.prompt_reading import read_entries, read_question, section

    registry = PromptRegistry()
    supers = "\n".join(f"super_{k:02d} [{k:02d}:00-{k + 1:02d}:00] " + "x" * 400 for k in range(8))
    shared = {
        "video_duration": 3600,
        "observation_time_bounds": [0, 3600],
        "global_summary": "A cooking show.",
        "memories": supers,
        "trajectory": "",
        "limits": {"max_observations": 1, "max_updates": 1, "max_calls": 2},
        "min_window_s": 600,
    }
    prompts = [
        registry.render(
            "overview_planning",
            question=question,
            options=["A. oven", "B. pan"],
            locator_results=locator,
            **shared,
        )
        for question, locator in (("What is hot?", "one"), ("Who cooks?", "two"))
    ]
    requests = [
        ModelRequest(
            role="overview",
            messages=(Message("system", p.system), Message("user", p.user)),
            settings=ModelSettings(),
        )
        for p in prompts
    ]
    second = prefix_share(requests).calls[1]
    stable = prompts[1].user.index("Locator results:")
    assert second.shared >= 1 + len(prompts[1].system) // 4 + 1 + stable // 4
    assert second.cached["openai"] >= 1024
    user = prompts[1].user
    assert read_question(user).question == "Who cooks?"
    assert read_question(user).options == ("A. oven", "B. pan")
    assert len(read_entries(section(user, "Super-level memories:", "Locator results:"))) == 8


def test_every_call_of_a_question_carries_its_videos_key(
    server: FakeOpenAIServer, embedder, video: Path
) -> None:
    """A whole question of the method over real HTTP: one key, the same on every call, and
    derived from the memory's identity, not the question's."""
    from method_support import ask, make_vt

    from videotapestry.testing.scripted import ScriptedModel

    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder, "models.default.prompt_cache_key=true")
    result = ask(vt, video)
    assert result.answer
    keys = {(request.body or {}).get("prompt_cache_key") for request in server.requests}
    assert len(server.requests) > 5 and len(keys) == 1
    [key] = keys
    assert key is not None and key.startswith("videotapestry-")
    server.reset()
    server.on(None, ScriptedModel())
    ask(
        make_vt(server, embedder, "models.default.prompt_cache_key=true"),
        video,
        question="Who cooks?",
    )
    assert {(r.body or {}).get("prompt_cache_key") for r in server.requests} == {key}


#: Each reordered prompt and the header of its first part that changes from question to
#: question: everything before it (system text, the video's stored memory text) repeats.
FIRST_CHANGE = {
    "level_planning": "Instruction from the level above",
    "level_update": "Instruction from the level above",
    "decision": "Instruction from the level above",
    "asr_planning": "Visual observation window",
    "controller": "Locator results:",
    "direct_answer": "Question:",
}


@pytest.mark.parametrize("name", sorted(FIRST_CHANGE))
def test_prompts_put_the_question_and_what_changes_after_what_repeats(name: str) -> None:
    registry = PromptRegistry()
    memories = "\n".join(f"macro_{k} [{k:02d}:00-{k + 1:02d}:00] " + "x" * 200 for k in range(8))
    stable = {
        "agent_name": "Skim Agent",
        "memory_level": "macro",
        "global_summary": "A cooking show.",
        "memories": memories,
        "old_memories": memories,
        "hierarchy": memories,
        "limits": {"max_observations": 1, "max_updates": 1, "max_calls": 2, "max_steps": 4},
        "left": {"steps": 4, "observations": 1, "updates": 1, "calls": 2},
        "max_frames": 8,
        "video_duration": 3600,
        "max_windows": 2,
        "min_window_s": 30,
        "max_window_s": 90,
        "max_asr_windows": 2,
        "asr_min_s": 30,
        "asr_max_s": 90,
        "image_notes": [f"D{k}: frame at {k}:00" for k in range(1, 9)],
        "options": ["A. oven", "B. pan"],
    }
    needed = registry.variables(name)

    def render(k: int) -> RenderedPrompt:
        changing = {
            "question": f"Question number {k}?",
            "upstream_instruction": f"look for thing {k}",
            "trajectory": f"step {k}",
            "observations": f"seen {k}",
            "update_instruction": f"add {k}",
            "visual_observation": f"saw {k}",
            "visual_window": [k, k + 60],
            "locator_results": f"hit {k}",
        }
        values = {key: v for key, v in {**stable, **changing}.items() if key in needed}
        return registry.render(name, **values)

    first, second = render(1), render(2)
    user = second.user
    assert user.index("Question:") >= user.index(FIRST_CHANGE[name])  # the question last
    requests = [
        ModelRequest(
            role="r",
            messages=(Message("system", p.system), Message("user", p.user)),
            settings=ModelSettings(),
        )
        for p in (first, second)
    ]
    shared = prefix_share(requests).calls[1].shared
    repeated = 1 + -(-len(second.system) // 4) + 1 + user.index(FIRST_CHANGE[name]) // 4
    assert shared >= repeated
