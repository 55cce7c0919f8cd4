"""The paper's setting beside the default one, and why each key where they differ differs.

``configs/paper.yaml`` sets every setting the VideoTapestry paper fixes to the paper's value;
``configs/default.yaml`` is the mission's setting, the paper's method with PACE-Mem at the
leaf and our documented improvements. A researcher reproducing a table must be able to see
every difference and judge it, so each key where the two resolved configs differ needs a
reason here: ``paper_differences`` finds the keys from the configs themselves (nothing to keep
in step by hand), and ``unexplained`` names those without one, which the docs page and its
test refuse. A reason for a key that no longer differs is named too (``stale``), so the list
cannot outlive what it explains.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from videotapestry.config.run import Config

#: The shipped config name (``--config paper``, ``VideoTapestry(config="paper")``).
PAPER_CONFIG = "paper"

#: Why the default differs from the paper, by dotted key: the mission's choice, and what was
#: measured where something was.
DEFAULT_REASONS: dict[str, str] = {
    "agents.focus.evidence": (
        "the mission's setting: PACE-Mem picks the leaf evidence the Focus agent reads (SPEC "
        "§6) instead of every record of the local subgraphs, a complementary set whose size "
        "follows the question"
    ),
    "agents.composite_macros": (
        "the neighbours of the selected MacroEvent keep the context an 'after X' question "
        "needs: on the offline demo's 4 questions 'selected' uses 22% fewer composite tokens "
        "but loses the question whose answer sits in the next MacroEvent (3/4 against 4/4)"
    ),
    "agents.overview.update_instruction": (
        "the update tool is told its job, add the observed facts to the SuperEvents they "
        "concern; the plan's instruction says what the look should find, not what to write"
    ),
    "agents.overview.asr_after_failed_look": (
        "when the frames could not be read, the transcript is the only evidence left and "
        "still links and protects SuperEvents; the paper's rule leaves the level with none"
    ),
    "agents.frame_timestamps": (
        "a frame's time drawn in the picture helps a model order what it sees; the tab covers "
        "the top-left corner (about half the text there is lost: bench_frame_timestamps.py), "
        "'strip' adds a band above the frame instead and reads as the untouched frame does, "
        "but stays off by default until the offline model's answer rule handles the text "
        "the tab used to hide"
    ),
    "agents.decision_context": (
        "the refined memories already carry what the level found; the stored texts would "
        "show every candidate's text a second time (not measured)"
    ),
    "video.keyframe_snap": (
        "a uniform sample may take a keyframe within a quarter of its slot, which decoding "
        "reaches without decoding the frames before it (2x to 24x less decoding on the "
        "60-minute benchmark video, docs/how-to/performance.md); 0 takes exact centres"
    ),
    "asr.quote_fragments": (
        "models quote a run of words of a line more often than the whole line; counting such "
        "a run (3+ words, within 2 s of where it was said) keeps real quotes that the strict "
        "whole-line reading throws away"
    ),
    "builder.transcript.source": (
        "a build given a benchmark's subtitles stores them as the memory's transcript (exact "
        "words, no Whisper pass); without subtitles 'auto' is Whisper, as in the paper"
    ),
    "builder.perception.transcript": (
        "with each clip's speech in its description, the memory answers a question about "
        "what was said on its own; the paper's memories hold speech only behind the ASR tool, "
        "which its w/o-ASR and static-memory rows assume (build with false to compare them)"
    ),
    "answer.citations": (
        "answers you can check (SPEC §12): the reply cites the frames, transcript lines and "
        "memory nodes it rests on, for about 300 more tokens a question"
    ),
}


@dataclass(frozen=True)
class Difference:
    """One key where the default and the paper's configs differ, with both values."""

    key: str
    default: Any
    paper: Any
    reason: str | None


def leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every setting of a config tree by dotted key; a mapping is a section, anything else
    (a list, ``None``, a scalar) a value."""
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaves(value, f"{dotted}.")
        else:
            yield dotted, value


def paper_differences(
    default: Config, paper: Config, reasons: Mapping[str, str] = DEFAULT_REASONS
) -> list[Difference]:
    """The keys whose resolved values differ, in the config's own order. The model profile
    is left out: ``paper`` composes with any of them."""
    ours = dict(leaves(default.model_dump(mode="json")))
    theirs = dict(leaves(paper.model_dump(mode="json")))
    return [
        Difference(key, ours.get(key), theirs.get(key), reasons.get(key))
        for key in dict.fromkeys([*ours, *theirs])
        if key != "profile" and ours.get(key) != theirs.get(key)
    ]


def unexplained(differences: list[Difference]) -> list[str]:
    """The differing keys that have no reason."""
    return [d.key for d in differences if not d.reason]


def stale(differences: list[Difference], reasons: Mapping[str, str] = DEFAULT_REASONS) -> list[str]:
    """Reasons kept for keys that no longer differ."""
    differing = {d.key for d in differences}
    return [key for key in reasons if key not in differing]
