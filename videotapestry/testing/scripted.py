"""A scripted stand-in for a VLM: plausible JSON for every VideoTapestry role.

Tests and benchmarks serve it from the fake OpenAI-compatible server, so the agents' real
code paths (prompts, HTTP, parsing, validation, fallbacks) run without a model. Replies are
computed from the request itself (ids are read from the prompt text) and any prompt's reply
can be overridden with a fixed reply or a function of the request. It knows nothing about
video content: it is a harness, not a model. Its observations report ``display`` (what the
"oven display" shows), and its Answer agent picks the option whose text the composite
memory it is sent mentions most, so a test can show that what was observed, stored and
assembled is what decides the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from videotapestry.testing.fake_openai import FakeReply, RecordedRequest

Reply = dict | FakeReply | str
Override = Reply | Callable[[RecordedRequest], Reply]

STEERING = "This supports option B."


def section(text: str, start: str, end: str | None = None) -> str:
    tail = text.split(start, 1)[1] if start in text else ""
    return tail.split(end, 1)[0] if end and end in tail else tail


def ids_in(text: str, prefix: str = "macro_") -> list[str]:
    """Memory ids at the start of prompt lines (``id [mm:ss-mm:ss] text``)."""
    return list(dict.fromkeys(re.findall(rf"^\s*({prefix}\w+) \[", text, re.M)))


class ScriptedModel:
    """``server.on(None, ScriptedModel(...))``: defaults per prompt, overrides by prompt name."""

    def __init__(self, display: str = "220°C", **overrides: Override) -> None:
        self.display = display
        self.overrides = overrides
        #: Ids the decisions select when the request lists them (else the first listed id).
        self.super_choice = ["super_02"]
        self.macro_choice = ["macro_0002"]

    def __call__(self, request: RecordedRequest) -> Reply:
        if request.prompt is None:
            # Replies are chosen by prompt, which only the harness headers carry.
            raise LookupError("no x-videotapestry-prompt header: set harness_headers=true")
        name = request.prompt
        override = self.overrides.get(name)
        if override is not None:
            return override(request) if callable(override) else override
        return getattr(self, f"_{name}")(request)

    def _locator_anchors(self, request: RecordedRequest) -> dict:
        return {"thought": "The oven and its setting.", "anchors": ["oven", "temperature"]}

    def _overview_planning(self, request: RecordedRequest) -> dict:
        return {
            "thought": "The oven scene is in the roasting stage.",
            "observation_needed": True,
            "observation_instruction": "Read the oven display.",
            "candidate_memory_ids": self.super_choice,
            "time_ranges": [[600, 640]],
            "locator_time_hints_used": [],
        }

    def _asr_planning(self, request: RecordedRequest) -> dict:
        return {
            "thought": "Speech near the oven.",
            "observation_instruction": "What temperature is mentioned?",
            "time_ranges": [[600, 700]],
            "candidate_memory_ids": [],
        }

    def _visual_observation(self, request: RecordedRequest) -> dict:
        return {
            "observation_result": f"The oven display shows {self.display} at 10:15. {STEERING}",
            "uncertainty": "",
            "relevance_to_question": "It shows the temperature.",
        }

    def _asr_observation(self, request: RecordedRequest) -> dict:
        transcript = section(request.text, "asr:")
        quoted = [line for line in transcript.splitlines() if "oven" in line.lower()]
        return {
            "observation_result": "The speaker sets the oven temperature.",
            "asr_evidence": "\n".join(quoted),
        }

    def _super_update(self, request: RecordedRequest) -> dict:
        requests = json.loads(section(request.text, "update_requests:"))
        updates = {}
        for item in requests:
            refs = item["source_refs"]
            updates[item["memory_id"]] = {
                "is_relevant": bool(refs),
                "visual_observation": f"Display reads {self.display}. {STEERING}"
                if "V1" in refs
                else "",
                "asr_observation": "The chef mentions the oven." if "A1" in refs else "",
                "irrelevant_summary": "" if refs else f"Summary of {item['memory_id']}.",
            }
        return {"updated_memories": updates}

    def _level_planning(self, request: RecordedRequest) -> dict:
        ids = ids_in(section(request.text, "-level memories:", "Trajectory"))
        return {
            "thought": "Check the oven.",
            "observation_needed": True,
            "observation_instruction": "Look at the oven display.",
            "candidate_memory_ids": ids[:1],
            "time_ranges": [[610, 640]],
            "update_memory_ids": ids,
        }

    def _level_update(self, request: RecordedRequest) -> dict:
        ids = ids_in(
            section(request.text, "Memories to rewrite:", "Observations at this level:"), ""
        )
        return {
            "updated_memories": {
                i: {"updated_text": f"Refined {i}: the display shows {self.display}. {STEERING}"}
                for i in ids
            }
        }

    def _decision(self, request: RecordedRequest) -> dict:
        level = request.headers.get("x-videotapestry-level")
        listed = ids_in(section(request.text, "updated_dynamic_memories:", "Trajectory"), "")
        wanted = self.super_choice if level == "super" else self.macro_choice
        chosen = [i for i in wanted if i in listed] or listed[:1]
        return {
            "selected_child_memory_ids": chosen,
            "stop_descending": False,
            "next_instruct": "Find the oven setting."
            if level == "super"
            else "Found: oven; still need to verify: temperature",
            "reason": "The oven is here.",
            "template_type": "identity" if level == "super" else None,
        }

    def _controller(self, request: RecordedRequest) -> dict:
        """The single-agent controller: look, listen, rewrite, open, look closer, rewrite."""
        done = section(request.text, "What you have done so far:", "Left:").strip()
        count = 0 if done.startswith("(nothing yet)") else len(done.splitlines())
        script: list[dict[str, Any]] = [
            {"action": "observe_visual", "mode": "grids", "time_ranges": [[600, 640]],
             "instruction": "Read the oven display."},
            {"action": "observe_asr", "time_ranges": [[600, 700]],
             "instruction": "What temperature is mentioned?"},
            {"action": "update", "level": "super", "memory_ids": self.super_choice,
             "instruction": "Add the oven setting."},
            {"action": "expand", "memory_ids": self.macro_choice,
             "instruction": "Find the oven display."},
            {"action": "observe_visual", "mode": "frames", "memory_ids": self.macro_choice,
             "time_ranges": [[610, 640]], "instruction": "Read the oven display."},
            {"action": "update", "level": "subgraph", "memory_ids": self.macro_choice,
             "instruction": "Add the reading."},
            {"action": "finish"},
        ]  # fmt: skip
        step = script[min(count, len(script) - 1)]
        return {"thought": f"step {count + 1}", "memory_ids": [], "time_ranges": [], **step}

    def _final_answer(self, request: RecordedRequest) -> dict:
        """The option the memory mentions most; no mention at all gives no usable letter."""
        memory = section(request.text, "Video memory:").casefold()
        options = re.findall(
            r"^\(?([A-Z])[.)]\s*(.+)$", section(request.text, "Options:", "Search trace:"), re.M
        )
        counts = {letter: memory.count(body.strip().casefold()) for letter, body in options}
        if not counts or max(counts.values()) == 0:
            return {"reasoning": "The memory names none of the options.", "answer": "unknown"}
        letter = max(counts, key=lambda key: counts[key])  # ties: the earlier option
        return {"reasoning": f"The memory mentions option {letter}'s value.", "answer": letter}

    def _direct_answer(self, request: RecordedRequest) -> dict:
        return {"reasoning": "Frames show an oven.", "answer": "B"}


def calls_by(requests: list[RecordedRequest], *, level: str | None = None) -> list[str]:
    return [
        r.prompt or ""
        for r in requests
        if level is None or r.headers.get("x-videotapestry-level") == level
    ]


def answer_request(requests: list[RecordedRequest]) -> RecordedRequest:
    [request] = [r for r in requests if r.prompt == "final_answer"]
    return request


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
