"""One structured model call through videotapestry's model layer.

Renders the shipped ``final_answer`` prompt, asks the configured model for JSON, and prints
the validated reply, the usage and the trace. Without ``--endpoint`` it starts the bundled
fake OpenAI-compatible server, so it runs anywhere:

    python examples/structured_call.py                       # fake server, no key needed
    OPENAI_API_KEY=... python examples/structured_call.py --endpoint https://api.openai.com/v1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile

from videotapestry.config import load_config
from videotapestry.contracts.method import FinalAnswer
from videotapestry.llm import ModelService
from videotapestry.prompts import PromptRegistry
from videotapestry.testing import FakeOpenAIServer, FakeReply


async def ask(base_url: str, model: str, cache_dir: str) -> None:
    config = load_config(
        overrides=[
            f"models.default.base_url={base_url}",
            "models.default.harness_headers=true",
            f"models.default.model={model}",
            f"cache.path={cache_dir}/responses.sqlite",
        ]
    )
    service = ModelService(config)
    session = service.session()
    prompt = PromptRegistry().render(
        "final_answer",
        question="Which tool does the chef use to check the oven?",
        options=["A. A thermometer", "B. A timer", "C. Her hand", "D. A phone"],
        handoff_trace="Overview Agent -> Skim Agent: find the oven check.",
        memory="super_02 [10:00-20:00] The chef checks the oven with a probe thermometer.",
    )
    reply = await session.complete_json("answer", prompt, FinalAnswer)
    await service.aclose()
    print(f"answer: {reply.answer}\nreasoning: {reply.reasoning}")
    print("usage:", session.usage.summary().to_dict())
    print(session.trace.to_markdown())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", help="OpenAI-compatible base URL (default: fake server)")
    parser.add_argument("--model", default="gpt-5.5")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir:
        if args.endpoint:
            asyncio.run(ask(args.endpoint, args.model, cache_dir))
            return
        with FakeOpenAIServer() as server:
            server.on(
                None,
                lambda _: FakeReply.json(
                    {"reasoning": "The memory names a probe thermometer.", "answer": "A"}
                ),
            )
            os.environ.setdefault("OPENAI_API_KEY", "fake-key")
            asyncio.run(ask(server.base_url, args.model, cache_dir))


if __name__ == "__main__":
    main()
