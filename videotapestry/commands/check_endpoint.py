"""``videotapestry check-endpoint``: one real JSON call to a role's model, to check a key, a
base URL and a model name before a long run spends anything."""

from __future__ import annotations

import argparse
import asyncio
import json

from videotapestry.commands.common import AddConfigOptions, config_from, prompt_registry
from videotapestry.config import MODEL_ROLES
from videotapestry.contracts.method import FinalAnswer
from videotapestry.llm.service import ModelService


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "check-endpoint", help="send one small JSON request to a role's configured model"
    )
    parser.add_argument("--role", default="answer", choices=MODEL_ROLES)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_check(args))


async def _check(args: argparse.Namespace) -> int:
    config = config_from(args)
    prompt = prompt_registry(args).render(
        "final_answer",
        question="According to the memory, what colour is the car?",
        options=["A. Red", "B. Blue", "C. Green", "D. White"],
        earlier_turns=[],
        handoff_trace="",
        memory="super_01 [00:00-01:00] A blue car is parked outside a bakery.",
    )
    service = ModelService(config)
    session = service.session()
    settings = config.models.settings_for(args.role)
    try:
        reply = await session.complete_json(args.role, prompt, FinalAnswer)
        base_url = service.endpoint_for(args.role)  # what the client really used
    finally:
        await service.aclose()
        service.close()
    usage = session.usage.summary()
    event = session.trace.events[-1]
    report = {
        "role": args.role,
        "model": settings.model,
        "base_url": base_url,
        "json_mode": (event.usage or {}).get("json_mode"),
        "answer": reply.answer,
        "expected": "B",
        "cached": usage.cached_calls > 0,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "latency_s": round(usage.latency_s, 3),
    }
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>17}: {value}")
    return 0
