"""Prompt registry: every role renders, strictness, overrides, hashes, and the paper's rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from videotapestry.contracts.judge import EVAL_SCHEMAS
from videotapestry.contracts.method import INSTRUCTION_TYPES, OUTPUT_SCHEMAS, answer_model
from videotapestry.errors import PromptError
from videotapestry.prompts import PromptRegistry
from videotapestry.resources import prompts_dir

LIMITS = {"max_observations": 2, "max_updates": 2, "max_calls": 4}
QUESTION = {
    "question": "What is set on the oven?",
    "options": ["A. 180°C", "B. 220°C"],
    "earlier_turns": [],
}

#: The variables each shipped role is rendered with by the agents.
VARIABLES: dict[str, dict] = {
    "locator_anchors": {**QUESTION, "max_anchors": 4},
    "controller": {
        **QUESTION,
        "video_duration": 1200,
        "global_summary": "A cooking show.",
        "locator_results": "",
        "hierarchy": "super_01 [00:00-10:00] Intro\n  macro_0000 [00:00-02:00] Hello",
        "trajectory": "",
        "limits": {**LIMITS, "max_steps": 8},
        "left": {"steps": 8, "observations": 6, "updates": 6, "calls": 12},
        "min_window_s": 600,
        "max_frames": 50,
        "max_asr_windows": 3,
        "asr_min_s": 600,
        "asr_max_s": 1200,
    },
    "overview_planning": {
        **QUESTION,
        "video_duration": 3600,
        "observation_time_bounds": [0, 3600],
        "global_summary": "A cooking show.",
        "memories": "super_01 [00:00-10:00] Intro",
        "locator_results": "",
        "trajectory": "",
        "limits": LIMITS,
        "min_window_s": 600,
    },
    "level_planning": {
        **QUESTION,
        "agent_name": "Skim Agent",
        "memory_level": "macro",
        "global_summary": "A cooking show.",
        "upstream_instruction": "Find the oven setting.",
        "memories": "macro_0001 [10:00-12:00] Oven",
        "trajectory": "",
        "limits": LIMITS,
        "max_frames": 50,
    },
    "asr_planning": {
        **QUESTION,
        "video_duration": 3600,
        "visual_window": [600, 1200],
        "visual_observation": "A dial is visible.",
        "memories": "super_02 [10:00-20:00] Baking",
        "max_windows": 3,
        "min_window_s": 600,
        "max_window_s": 1200,
    },
    "visual_observation": {
        "agent_name": "Overview Agent",
        "memory_level": "super",
        "observation_instruction": "Read the oven display.",
        "image_notes": ["Image 1: grid of 6 frames at 10:00, 10:05, 10:10, 10:15, 10:20, 10:25"],
    },
    "asr_observation": {
        "observation_instruction": "What temperature is mentioned?",
        "asr": "[10:15] Set it to two hundred and twenty.",
    },
    "super_update": {
        **QUESTION,
        "previous_instruction": "",
        "update_instruction": "Add the oven facts.",
        "observation_sources": "V1 (visual): the display shows 220",
        "update_requests": (
            '[{"memory_id": "super_02", "old_memory_text": "Baking", "source_refs": ["V1"]}]'
        ),
    },
    "level_update": {
        **QUESTION,
        "agent_name": "Focus Agent",
        "memory_level": "subgraph",
        "upstream_instruction": "Found: oven; still need to verify: temperature",
        "update_instruction": "",
        "memories": "slot3_e1 Oven",
        "observations": "The display shows 220°C at 10:15.",
    },
    "decision": {
        **QUESTION,
        "agent_name": "Overview Agent",
        "memory_level": "super",
        "upstream_instruction": "",
        "memories": "super_02 ...",
        "trajectory": "",
    },
    "final_answer": {**QUESTION, "handoff_trace": "Overview: ...", "memory": "super_02 ..."},
    "direct_answer": {**QUESTION, "video_duration": 3600, "image_notes": ["Frame 1 at 00:36"]},
}


@pytest.fixture()
def registry() -> PromptRegistry:
    return PromptRegistry()


def test_every_role_has_a_template_and_a_schema(registry: PromptRegistry) -> None:
    # builder_* prompts belong to the memory builder (tests/test_builder_prompts.py), the
    # judge to eval (below).
    query_time = {
        n for n in registry.names() if not n.startswith("builder_") and n not in EVAL_SCHEMAS
    }
    assert query_time == set(VARIABLES) == set(OUTPUT_SCHEMAS)
    assert set(EVAL_SCHEMAS) <= set(registry.names())


def test_the_judge_prompt_shows_the_three_texts_and_names_its_keys(
    registry: PromptRegistry,
) -> None:
    prompt = registry.render(
        "judge", question="What is the code?", reference="4417", answer="It is 4417."
    )
    assert "Question: What is the code?" in prompt.user
    assert "Reference answer: 4417" in prompt.user
    assert "Answer to judge: It is 4417." in prompt.user
    for key in EVAL_SCHEMAS["judge"].model_fields:
        assert f'"{key}"' in prompt.system, f"judge does not ask for key {key}"
    with pytest.raises(PromptError, match="reference"):
        registry.render("judge", question="q", answer="a")


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_every_role_renders_and_names_its_json_keys(registry: PromptRegistry, name: str) -> None:
    prompt = registry.render(name, **VARIABLES[name])
    assert prompt.system and prompt.user
    assert "{{" not in prompt.system + prompt.user and "{%" not in prompt.system + prompt.user
    for key in OUTPUT_SCHEMAS[name].model_fields:
        assert f'"{key}"' in prompt.system, f"{name} does not ask for key {key}"


@pytest.mark.parametrize("name", ["final_answer", "direct_answer"])
def test_an_answer_prompt_without_citations_asks_for_the_two_keys_only(
    registry: PromptRegistry, name: str
) -> None:
    shipped = registry.render(name, **VARIABLES[name])
    assert shipped == registry.render(name, **VARIABLES[name], citations=True)
    assert '"citations"' in shipped.system
    uncited = registry.render(name, **VARIABLES[name], citations=False)
    assert '{"reasoning": string, "answer": string}\n' in uncited.system
    assert "citation" not in uncited.system and "cite" not in uncited.system.casefold()
    assert "refs" not in uncited.system
    assert set(answer_model(False).model_fields) == {"reasoning", "answer"}
    assert uncited.user == shipped.user and uncited.hash != shipped.hash


def test_missing_variable_raises_and_names_it(registry: PromptRegistry) -> None:
    variables = dict(VARIABLES["final_answer"])
    del variables["memory"]
    with pytest.raises(PromptError, match="memory"):
        registry.render("final_answer", **variables)


def test_missing_nested_key_raises(registry: PromptRegistry) -> None:
    variables = dict(VARIABLES["level_planning"], limits={"max_observations": 2})
    with pytest.raises(PromptError, match="max_updates"):
        registry.render("level_planning", **variables)


def test_unknown_prompt_lists_the_available_ones(registry: PromptRegistry) -> None:
    with pytest.raises(PromptError, match="final_answer"):
        registry.render("finale")


def test_hash_is_stable_and_follows_the_text(registry: PromptRegistry) -> None:
    first = registry.render("final_answer", **VARIABLES["final_answer"])
    again = PromptRegistry().render("final_answer", **VARIABLES["final_answer"])
    assert first.hash == again.hash and len(first.hash) == 16
    other = registry.render("final_answer", **{**VARIABLES["final_answer"], "memory": "x"})
    assert other.hash != first.hash
    assert other.template_hash == first.template_hash


def test_override_directory_wins_by_file_name(tmp_path: Path) -> None:
    (tmp_path / "final_answer.jinja").write_text(
        "{% block system %}CUSTOM {{ question }}{% endblock %}{% block user %}u{% endblock %}"
    )
    (tmp_path / "_no_steering.jinja").write_text("NO STEERING, CUSTOM PARTIAL")
    registry = PromptRegistry(tmp_path)
    prompt = registry.render("final_answer", **VARIABLES["final_answer"])
    assert prompt.system == "CUSTOM What is set on the oven?"
    assert prompt.overridden and registry.resolve("final_answer").overridden
    assert not registry.resolve("decision").overridden
    update = registry.render("level_update", **VARIABLES["level_update"])
    assert "NO STEERING, CUSTOM PARTIAL" in update.system
    assert registry.variables("final_answer") == {"question"}


def test_override_without_blocks_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "decision.jinja").write_text("just text {{ question }}")
    with pytest.raises(PromptError, match="block system"):
        PromptRegistry(tmp_path).render("decision", **VARIABLES["decision"])


def test_missing_override_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="does not exist"):
        PromptRegistry(tmp_path / "nope")


def test_asr_observation_never_sees_the_question(registry: PromptRegistry) -> None:
    assert registry.variables("asr_observation") == {"asr", "observation_instruction"}
    assert registry.variables("visual_observation").isdisjoint({"question", "options"})


def test_update_prompts_forbid_option_steering(registry: PromptRegistry) -> None:
    for name in ("super_update", "level_update"):
        system = registry.render(name, **VARIABLES[name]).system
        assert "supports option A" in system and "consistent with B" in system


def test_paper_rules_are_carried(registry: PromptRegistry) -> None:
    overview = registry.render("overview_planning", **VARIABLES["overview_planning"]).system
    assert "do not count as having seen the video" in overview
    assert "no more than 2 observations, 2 updates and 4 tool calls" in overview
    level = registry.render("level_update", **VARIABLES["level_update"]).system
    assert "at most 10 characters" in level
    super_decision = registry.render("decision", **VARIABLES["decision"]).system
    for kind in INSTRUCTION_TYPES:
        assert kind in super_decision
    macro = registry.render("decision", **{**VARIABLES["decision"], "memory_level": "macro"})
    assert "Found: [...]; still need to verify: [...]" in macro.system
    leaf = registry.render("decision", **{**VARIABLES["decision"], "memory_level": "subgraph"})
    assert re.search(r"stop_descending to true", leaf.system)
    assert "main_idea" not in leaf.system


PAPER = Path(__file__).resolve().parents[2] / "shared" / "papers" / "videotapestry-paper.txt"
SHARED_RUN = 8


def _words(text: str) -> list[str]:
    # JSON keys (observation_needed, selected_child_memory_ids ...) count as one word each:
    # they are the paper's facts we must keep, not its sentences.
    return re.findall(r"[a-z0-9_]+", text.lower())


def shared_runs(text: str, reference: str, n: int = SHARED_RUN) -> list[str]:
    ref = _words(reference)
    grams = {tuple(ref[i : i + n]) for i in range(len(ref) - n + 1)}
    words = _words(text)
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)
            if tuple(words[i : i + n]) in grams]  # fmt: skip


def test_shared_run_detector_finds_a_copied_sentence() -> None:
    paper = "Old memory text is only a static prebuilt summary. It is not visual verification."
    copied = "Note: old memory text is only a static prebuilt summary, remember."
    assert shared_runs(copied, paper)
    assert not shared_runs("The stored text is a summary prepared in advance.", paper)


@pytest.mark.skipif(not PAPER.is_file(), reason="the paper is not next to this checkout")
def test_no_prompt_repeats_eight_words_of_the_paper() -> None:
    paper = PAPER.read_text(encoding="utf-8")
    copied = {
        path.name: runs
        for path in sorted(Path(prompts_dir()).glob("*.jinja"))
        if (runs := shared_runs(path.read_text(encoding="utf-8"), paper))
    }
    assert copied == {}


def test_every_prompt_with_the_question_shows_the_earlier_turns_of_a_conversation(
    registry: PromptRegistry,
) -> None:
    from videotapestry.agents.state import EarlierTurn, QuestionInput
    from videotapestry.offline.prompt_reading import read_question

    question = QuestionInput(
        question="What was on screen right after the moment at 03:55-04:12?",
        history=[EarlierTurn(question="What is the code?", answer="4417", spans=[(235, 252)])],
    )
    shown = 0
    for name, variables in VARIABLES.items():
        if "earlier_turns" not in registry.variables(name):
            continue
        user = registry.render(name, **{**variables, **question.prompt_variables()}).user
        assert "1. Asked: What is the code? | Answered: 4417 | Cited: 03:55-04:12" in user, name
        # The question itself still reads as the question, free-form.
        assert read_question(user).question == question.question, name
        assert read_question(user).options == (), name
        shown += 1
        alone = registry.render(name, **variables).user
        assert "Earlier in this conversation" not in alone, name
    assert shown >= 10


def test_a_registry_reads_each_template_once(tmp_path: Path) -> None:
    """Every prompt of one run comes from one version of its file; the next registry (the
    next run) reads the edited file."""
    template = tmp_path / "final_answer.jinja"
    template.write_text(
        "{% block system %}FIRST {{ question }}{% endblock %}{% block user %}u{% endblock %}"
    )
    registry = PromptRegistry(tmp_path)
    first = registry.render("final_answer", **VARIABLES["final_answer"])
    template.write_text(
        "{% block system %}SECOND {{ question }}{% endblock %}{% block user %}u{% endblock %}"
    )
    again = registry.render("final_answer", **VARIABLES["final_answer"])
    assert again.system == first.system and again.template_hash == first.template_hash
    assert registry.source("final_answer").startswith("{% block system %}FIRST")
    fresh = PromptRegistry(tmp_path).render("final_answer", **VARIABLES["final_answer"])
    assert fresh.system.startswith("SECOND") and fresh.template_hash != first.template_hash


def test_prepare_reads_every_role_template_before_the_first_render(tmp_path: Path) -> None:
    """An eval prepares its prompts before the first question (off its event loop): every
    template is then read and compiled, and a broken one is named before anything runs."""
    template = tmp_path / "decision.jinja"
    template.write_text(
        "{% block system %}FIRST {{ question }}{% endblock %}{% block user %}u{% endblock %}"
    )
    registry = PromptRegistry(tmp_path)
    registry.prepare()
    template.write_text("{% block system %}SECOND{% endblock %}{% block user %}u{% endblock %}")
    assert registry.render("decision", question="q").system == "FIRST q"

    template.write_text("{% block system %}{{ question {% endblock %}")
    with pytest.raises(PromptError, match=r"decision\.jinja"):
        PromptRegistry(tmp_path).prepare()
