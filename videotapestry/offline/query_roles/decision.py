"""The offline model's decisions: which memories to descend into, and the single agent's
next step.

Decisions select the entries whose text bears most on the question, options and observed
facts, and stop at the Super level only for a question about the whole video (the offline
model's own reading of the question, which the method checks like any model's). The
controller of the single-agent ablation follows a fixed, budget-aware script.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.offline.matching import lexical_support, word_overlap
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    Entry,
    Fact,
    PromptView,
    field_value,
    number_after,
    overlaps,
    read_entries,
    read_facts,
    read_question,
    section,
)
from videotapestry.offline.query_roles.planning import (
    choose_window,
    listen_instruction,
    look_instruction,
    padded_ranges,
    rounded,
)
from videotapestry.offline.query_roles.question_reading import (
    Topic,
    asks_about_whole_video,
    topic_of,
)
from videotapestry.offline.query_roles.ranking import (
    OBSERVED_MARK,
    best_entries,
    entry_relevance,
    entry_texts,
    look_first_hint,
    ranked,
    toward_look_first_hint,
)

#: What an entry that already holds observed facts gains in a decision.
OBSERVED_GAIN = 0.3
#: The instruction templates of the Super-to-Macro hand-down, each with the words that
#: call for it (the first that matches wins; a question about the whole video is
#: ``main_idea``).
_TEMPLATES = (
    ("temporal_order", r"\b(?:before|after|first|last|order|sequence|then|earlier|later|when)\b"),
    ("causal_result", r"\b(?:why|cause[sd]?|because|result|lead(?:s)? to|effect|reason)\b"),
    ("spatial_relation", r"\b(?:where|left|right|above|below|next to|behind|beside|near)\b"),
    ("identity", r"\b(?:who|whose|name[ds]?|which person|identity|called)\b"),
    ("action_verification", r"\b(?:did|does|do|doing|happen(?:s|ed)?|perform(?:s|ed)?)\b"),
)


def instruction_type(question: str, *, is_global: bool) -> str:
    """The template of the instruction handed down for ``question``."""
    if is_global:
        return "main_idea"
    for name, pattern in _TEMPLATES:
        if re.search(pattern, question, re.I):
            return name
    return "identity"


def _holds_observations(entry: Entry) -> bool:
    return any(OBSERVED_MARK.search(line.strip()) for line in entry.body) or (
        "Observed:" in entry.text
    )


def _best_observed_facts(entries: Sequence[Entry], topic: Topic) -> list[Fact]:
    """The three observed facts of ``entries`` weighing most on the question, in order."""
    facts: dict[str, Fact] = {}
    for entry in entries:
        for line in entry.body:
            for mark in ("Observed:", "[Visual]"):
                if line.startswith(mark):
                    for fact in read_facts(line[len(mark) :].strip()):
                        facts.setdefault(fact.text, fact)
    found = list(facts.values())
    bodies = topic.question.bodies

    def weight(text: str) -> float:
        spelled = max(
            (lexical_support(b, w, text) for b, w in zip(bodies, topic.option_words, strict=True)),
            default=0.0,
        )
        return spelled + word_overlap(topic.words, text)

    order = sorted(range(len(found)), key=lambda i: (-weight(found[i].text), i))[:3]
    return [found[i] for i in sorted(order)]


def _found_so_far(entries: Sequence[Entry], topic: Topic) -> str:
    """The observed facts of ``entries`` that bear most on the question (three at most),
    else the entries' labels: the "Found: [...]" of the Macro-to-Subgraph instruction."""
    facts = _best_observed_facts(entries, topic)
    if not facts:
        return "; ".join(e.head.split(":")[0] for e in entries) or "nothing specific"
    return "; ".join(f.text for f in facts)


def decision(view: PromptView, perception: Perception) -> dict:
    """The one or two entries nearest the question, options and observed facts."""
    user = view.user
    question = read_question(user)
    topic = topic_of(question)
    level = view.level or ("super" if "Super level to the Macro" in view.system else "macro")
    if level == "subgraph" or "Subgraph level is the last one" in view.system:
        return {
            "selected_child_memory_ids": [],
            "stop_descending": True,
            "next_instruct": None,
            "reason": "The Subgraph level is the last one.",
            "template_type": None,
        }
    entries = read_entries(section(user, "updated_dynamic_memories:", "Trajectory of this level"))
    vectors = perception.embed([topic.query, *entry_texts(entries)])
    scores = entry_relevance(entries, topic, vectors)
    upstream = field_value(user, "Instruction from the level above")
    scores = toward_look_first_hint(entries, scores, upstream)
    scores = [
        s + (OBSERVED_GAIN if _holds_observations(e) else 0.0)
        for e, s in zip(entries, scores, strict=True)
    ]
    chosen = best_entries(entries, scores)
    why = ", ".join(f"{e.id} ({s:.2f})" for e, s in ranked(entries, scores)[:3])
    if level == "super" and asks_about_whole_video(question):
        return {
            "selected_child_memory_ids": [],
            "stop_descending": True,
            "next_instruct": None,
            "reason": "A question about the whole video: the stage summaries are the evidence.",
            "template_type": "main_idea",
        }
    if level == "super":
        facts = _best_observed_facts(chosen, topic)
        instruct = (
            f"In the selected stages, find the MacroEvents whose on-screen text, speech or "
            f"events concern {topic.display}."
            f"{look_first_hint([(f.start, f.end) for f in facts])}"
        )
        template = instruction_type(question.question, is_global=False)
    else:
        instruct = (
            f"Found: [{_found_so_far(chosen, topic)}]; still need to verify: [{topic.display}]"
        )
        template = None
    return {
        "selected_child_memory_ids": [e.id for e in chosen],
        "stop_descending": False,
        "next_instruct": instruct,
        "reason": f"Highest relevance to the question, options and observations: {why}.",
        "template_type": template,
    }


# --------------------------------------------------------------------------- single agent


@dataclass
class _Progress:
    """What the single agent's trajectory says it has done so far."""

    visual_observations: int = 0
    asr_tried: bool = False
    visual_unavailable: bool = False
    updated_levels: tuple[str, ...] = ()
    expanded_ids: tuple[str, ...] = ()  # "" for an expand that named no id


def _progress_of(trajectory: str) -> _Progress:
    progress = _Progress()
    for line in trajectory.split("\n"):
        line = line.strip()
        if re.match(r"^V\d+ visual observation", line):
            progress.visual_observations += 1
        elif re.match(r"^A\d+ asr observation|^observe_asr:", line):
            progress.asr_tried = True
        elif line.startswith("observe_visual:") and "not available" in line:
            progress.visual_unavailable = True
        elif match := re.match(r"^update \((\w+)\)", line):
            progress.updated_levels = (*progress.updated_levels, match.group(1))
        elif match := re.match(r"^expand \[(.*)\]", line):
            opened = re.findall(r"'([^']+)'", match.group(1))
            progress.expanded_ids = (*progress.expanded_ids, *opened)
        elif line.startswith("expand:"):
            progress.expanded_ids = (*progress.expanded_ids, "")
    return progress


def _budget_left(text: str) -> dict[str, int]:
    """The ``Left:`` line's counts: steps, observations, updates, (tool) calls."""
    counts = re.findall(r"(\d+) (?:steps|observations|updates|tool calls)", text)
    return dict(
        zip(("steps", "observations", "updates", "calls"), (int(x) for x in counts), strict=False)
    )


def controller(view: PromptView, perception: Perception) -> dict:
    """One step of a fixed, budget-aware script: look (grids) → listen → rewrite the stages
    → open the best MacroEvents → look closer (frames) → rewrite their evidence → finish."""
    user = view.user
    topic = topic_of(read_question(user))
    left = _budget_left(field_value(user, "Left"))
    done = _progress_of(section(user, "What you have done so far:", "Left:"))
    hierarchy = read_entries(
        section(user, "Hierarchy (current texts):", "Locator results:", "What you have done"),
        top_level=False,
    )
    supers = [e for e in hierarchy if e.indent == 0 and not e.bullet]
    macros = [e for e in hierarchy if e.indent == 2 and not e.bullet]
    evidence = [e for e in hierarchy if e.bullet]
    duration = number_after(user, r"Video duration: ([\d.]+) s", 0.0)
    length = number_after(view.system, r"at least (\d+(?:\.\d+)?) seconds", 600.0)
    vectors = perception.embed(
        [topic.query, *entry_texts(supers), *entry_texts(macros), *entry_texts(evidence)]
    )
    window = choose_window(
        supers,
        section(user, "Locator results:", "Hierarchy (current texts):", "What you have done"),
        topic,
        vectors,
        bounds=(0.0, duration),
        length=length,
    )
    can_look = left.get("observations", 0) > 0 and left.get("calls", 0) > 0
    can_write = left.get("updates", 0) > 0 and left.get("calls", 0) > 0
    step: dict[str, object] = {
        "thought": "",
        "action": "finish",
        "mode": None,
        "level": None,
        "memory_ids": [],
        "time_ranges": [],
        "instruction": "",
    }
    opened = [m for m in done.expanded_ids if m]
    observed = done.visual_observations or done.asr_tried
    if left.get("steps", 1) <= 1:
        step["thought"] = "The last step: finish."
    elif done.visual_observations == 0 and not done.visual_unavailable and can_look:
        step |= {
            "thought": f"Look at one window, {window.why}.",
            "action": "observe_visual",
            "mode": "grids",
            "time_ranges": [list(window.span)],
            "instruction": look_instruction(topic),
        }
    elif not done.asr_tried and can_look:
        step |= {
            "thought": "Read the transcript around the same window.",
            "action": "observe_asr",
            "time_ranges": [list(window.span)],
            "instruction": listen_instruction(topic),
        }
    elif "super" not in done.updated_levels and observed and can_write:
        ids = [e.id for e in supers if overlaps(e.span, window.span)] or [e.id for e in supers[:1]]
        step |= {
            "thought": "Write what was observed into the stages it happened in.",
            "action": "update",
            "level": "super",
            "memory_ids": ids,
            "instruction": "Add the observed on-screen text and speech, with their times.",
        }
    elif not done.expanded_ids and macros:
        ids = [e.id for e in best_entries(macros, entry_relevance(macros, topic, vectors))]
        step |= {
            "thought": f"Open the MacroEvents nearest the question: {', '.join(ids)}.",
            "action": "expand",
            "memory_ids": ids,
            "instruction": f"Evidence about {topic.display}.",
        }
    elif opened and done.visual_observations < 2 and not done.visual_unavailable and can_look:
        spans = [m.span for m in macros if m.id in opened]
        inside = [e for e in evidence if any(a - 1 <= e.start <= b + 1 for a, b in spans)]
        best = [e for e, _s in ranked(inside, entry_relevance(inside, topic, vectors))[:3]]
        step |= {
            "thought": "Look closer at the opened MacroEvents.",
            "action": "observe_visual",
            "mode": "frames",
            "level": "subgraph",
            "memory_ids": opened,
            "time_ranges": rounded(padded_ranges(best, spans)) or rounded(spans),
            "instruction": look_instruction(topic),
        }
    elif opened and "subgraph" not in done.updated_levels and can_write:
        step |= {
            "thought": "Write the close look into the opened evidence.",
            "action": "update",
            "level": "subgraph",
            "memory_ids": opened,
            "instruction": "Add the observed on-screen text with its times.",
        }
    else:
        step["thought"] = "Everything in the plan is done: finish."
    return step
