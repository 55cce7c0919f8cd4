"""Prompt swapping: change one prompt in an override directory, run the same question twice.

Prompts are files; a directory given as ``prompts.override_dir`` replaces shipped templates by
file name, and every result records the hash of each prompt it used. Here the override
``final_answer.jinja`` shows the Answer agent only the Super scaffold (the unindented lines),
hiding the refined MacroEvent paths and the Focus agent's evidence under them. Question 2's
answer was spoken, and only those paths hold the spoken line, so the two runs answer
differently. Both runs use the offline model and
share the response cache: the second run's exploration repeats the first's requests and is
replayed; only the changed prompt's call is new.

    python examples/prompt_swap.py [--cache-dir DIR] [--question N] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from videotapestry.api import VideoTapestry
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_cache_dir, demo_memory_dir
from videotapestry.prompts import PromptRegistry

PROMPT = "final_answer"
SHIPPED_MEMORY = "Video memory:\n{{ memory }}\n"
# Keeps the "Video memory:" header (the model reads the memory under it) and the Super
# scaffold (unindented lines), and drops every indented line: the refined MacroEvent paths
# and the Focus agent's evidence under them.
WITHOUT_FOCUS_EVIDENCE = """Video memory:
{% for line in memory.splitlines() %}
{% if not line.startswith(" ") %}
{{ line }}
{% endif %}
{% endfor %}
"""


def write_override(directory: Path) -> Path:
    """Copy the shipped prompt into ``directory``, showing only the Super scaffold."""
    shipped = PromptRegistry().source(PROMPT)
    if SHIPPED_MEMORY not in shipped:
        raise SystemExit(f"the shipped {PROMPT}.jinja changed; update this example's edit")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{PROMPT}.jinja"
    path.write_text(shipped.replace(SHIPPED_MEMORY, WITHOUT_FOCUS_EVIDENCE), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", help=f"memory and replies (default {demo_cache_dir()})")
    parser.add_argument("--question", type=int, default=2, help="which shipped question (1-4)")
    parser.add_argument("--out", default="prompt_swap", help="override prompts and traces")
    args = parser.parse_args()

    cache = Path(args.cache_dir) if args.cache_dir else demo_cache_dir()
    out = Path(args.out)
    video = sample_video_path()
    memory = demo_memory_dir(video, cache)
    question = sample_questions()["questions"][args.question - 1]
    override = write_override(out / "prompts")
    common = ["cache.enabled=true", f"cache.path={cache / 'responses.sqlite'}"]

    runs = {}
    for name, extra in (("shipped", []), ("override", [f"prompts.override_dir={override.parent}"])):
        vt = VideoTapestry(profile="offline", overrides=common + extra)
        if name == "shipped":
            vt.build_memory(video, memory)  # reused when already built (its checkpoints)
        result = vt.answer(video, memory, question["question"], question["options"])
        runs[name] = (result, result.save_trace(out / f"{name}.trace.json"))

    print(question["question"], f"(expected {question['answer']})")
    print(f"override: {override}")
    print(f"{'':22}{'shipped':>18}{'override':>18}")
    (shipped, shipped_trace), (swapped, swapped_trace) = runs["shipped"], runs["override"]
    print(f"{'answer':22}{shipped.answer:>18}{swapped.answer:>18}")
    for prompt in sorted(set(shipped.prompt_hashes) | set(swapped.prompt_hashes)):
        left = shipped.prompt_hashes.get(prompt, "-")
        right = swapped.prompt_hashes.get(prompt, "-")
        mark = "  <- changed" if left != right else ""
        print(f"{prompt:22}{left:>18}{right:>18}{mark}")
    calls = [f"{r.usage.calls - r.usage.cached_calls}/{r.usage.calls}" for r in (shipped, swapped)]
    print(f"{'new calls / calls':22}{calls[0]:>18}{calls[1]:>18}")
    print(f"shipped reasoning: {shipped.reasoning}")
    print(f"override reasoning: {swapped.reasoning}")
    print(f"shipped trace: {shipped_trace}")
    print(f"override trace: {swapped_trace}")


if __name__ == "__main__":
    main()
