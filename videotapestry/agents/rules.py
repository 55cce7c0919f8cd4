"""The rules of the method that code enforces, as pure functions.

The paper leaves several decisions to the program rather than the model: which questions may
stop early, how a level's decision is validated and repaired, which SuperEvents are
protected from compression, where verbatim transcript lines go, and which phrases may never
reach the memory. Keeping them here, free of I/O and models, makes each rule testable on its
own and keeps the agents thin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from videotapestry.asr.types import TranscriptLine
from videotapestry.schemas import INSTRUCTION_TYPES, Decision

Level = Literal["super", "macro", "subgraph"]
Span = tuple[float, float]

# --------------------------------------------------------------------------- global questions

_GLOBAL_PATTERNS = re.compile(
    r"""
    \bmain\s+(idea|topic|theme|point|purpose|subject|message|focus)\b
    | \btitle\b
    | \bsummar(y|ise|ize|ized|ised|izes|ises|izing|ising)\b
    | \boverall\b
    | \bgist\b
    | \bcentral\s+(theme|idea|topic|message)\b
    | \bprimary\s+(focus|purpose|goal|topic|theme)\b
    | \bwhat\s+is\s+(this|the)\s+video\s+(mainly\s+|mostly\s+|primarily\s+)?about\b
    | \bbest\s+describes?\s+the\s+(whole\s+|entire\s+)?(video|content)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)


def is_global_question(question: str, options: Sequence[str] = ()) -> bool:
    """Main-idea, title and summary questions may stop above the leaf level.

    Only the question is read: options of detail questions often contain words like
    "summary" without making the question itself global.
    """
    return bool(_GLOBAL_PATTERNS.search(question))


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class ValidatedDecision:
    selected_ids: tuple[str, ...]
    instruction: str | None
    stop: bool
    template_type: str | None
    reason: str
    used_fallback: bool = False
    notes: tuple[str, ...] = ()


def validate_decision(
    decision: Decision | None,
    *,
    level: Level,
    is_global: bool,
    current_ids: Sequence[str],
    ids_with_children: Iterable[str],
    fallback_ids: Sequence[str],
    default_instruction: str,
) -> ValidatedDecision:
    """Apply SPEC §5's decision rules; ``decision`` is None when the model call failed.

    Order: the stop flag is forced true at the Subgraph level and forced false at the Super
    and Macro levels for non-global questions; when continuing, selections are kept only if
    they are ids of the current level (duplicates dropped, order kept), an empty result
    falls back to ``fallback_ids`` with ``default_instruction``; ids without children are
    dropped and the search stops when none remain; stopping clears selection and
    instruction.
    """
    notes: list[str] = []
    raw = decision or Decision(stop_descending=False)
    if decision is None:
        notes.append("decision call failed; using the fallback selection")
    stop = bool(raw.stop_descending)
    if level == "subgraph":
        if not stop:
            notes.append("stop forced at the Subgraph level")
        stop = True
    elif not is_global and stop:
        notes.append(f"stop overridden at the {level} level: the question is not global")
        stop = False

    template_type = raw.template_type if raw.template_type in INSTRUCTION_TYPES else None
    if level == "super" and raw.template_type and template_type is None:
        notes.append(f"unknown instruction type {raw.template_type!r} dropped")
    instruction = (raw.next_instruct or "").strip() or None
    selected: tuple[str, ...] = ()
    used_fallback = False
    if not stop:
        valid = set(current_ids)
        seen: set[str] = set()
        kept = []
        for item in raw.selected_child_memory_ids:
            if item in valid and item not in seen:
                kept.append(item)
                seen.add(item)
            elif item not in valid:
                notes.append(f"selected id {item!r} is not a {level} id here; dropped")
        if not kept:
            kept = [i for i in dict.fromkeys(fallback_ids) if i in valid]
            used_fallback = True
            instruction = default_instruction
            notes.append(f"empty or invalid selection; fallback ids {kept}")
        with_children = set(ids_with_children)
        childless = [i for i in kept if i not in with_children]
        if childless:
            notes.append(f"ids without children dropped: {childless}")
        selected = tuple(i for i in kept if i in with_children)
        if not selected:
            notes.append("no valid descendants remain; stopping")
            stop = True
        elif instruction is None:
            instruction = default_instruction
    if stop:
        selected, instruction = (), None
    return ValidatedDecision(
        selected_ids=selected,
        instruction=instruction,
        stop=stop,
        template_type=template_type,
        reason=raw.reason,
        used_fallback=used_fallback,
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------- evidence linking


def overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def overlap_seconds(a: Span, b: Span) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def link_by_overlap(spans: Mapping[str, Span], windows: Iterable[Span]) -> list[str]:
    """Ids whose span overlaps any window, in the order of ``spans``."""
    windows = list(windows)
    return [node_id for node_id, span in spans.items() if any(overlaps(span, w) for w in windows)]


def rank_by_overlap(spans: Mapping[str, Span], windows: Iterable[Span]) -> list[str]:
    """Ids by total overlap with the windows, largest first (ties keep ``spans`` order)."""
    windows = list(windows)
    scored = [(sum(overlap_seconds(span, w) for w in windows), i) for i, span in spans.items()]
    order = {node_id: position for position, node_id in enumerate(spans)}
    return [i for score, i in sorted(scored, key=lambda t: (-t[0], order[t[1]])) if score > 0]


def protected_set(ordered_ids: Sequence[str], evidence_ids: Iterable[str]) -> list[str]:
    """Evidence-linked SuperEvents and their immediate temporal neighbours, in time order."""
    position = {node_id: index for index, node_id in enumerate(ordered_ids)}
    keep: set[int] = set()
    for node_id in evidence_ids:
        if node_id in position:
            index = position[node_id]
            keep.update(i for i in (index - 1, index, index + 1) if 0 <= i < len(ordered_ids))
    return [ordered_ids[i] for i in sorted(keep)]


def _normalize_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


_LINE_PREFIX = re.compile(r"^\s*\[[^\]]*\]\s*")


def match_evidence_lines(
    evidence: str, transcript: Sequence[TranscriptLine]
) -> list[TranscriptLine]:
    """Transcript lines the model quoted in ``evidence``, with their true timestamps.

    A quoted line counts only if its text (timestamp prefix aside) equals a transcript
    line's text; paraphrases and invented lines are dropped, so the memory only ever holds
    words that were actually said, at the time they were said.
    """
    by_text: dict[str, list[TranscriptLine]] = {}
    for line in transcript:
        by_text.setdefault(_normalize_line(line.text), []).append(line)
    found: list[TranscriptLine] = []
    for raw in evidence.splitlines():
        text = _normalize_line(_LINE_PREFIX.sub("", raw))
        for line in by_text.get(text, []):
            if line not in found:
                found.append(line)
    return sorted(found, key=lambda line: line.start_s)


def assign_lines_to_spans(
    lines: Iterable[TranscriptLine], spans: Mapping[str, Span]
) -> dict[str, list[TranscriptLine]]:
    """Each line goes to the span containing its start (the nearest span if none does)."""
    assigned: dict[str, list[TranscriptLine]] = {node_id: [] for node_id in spans}
    if not spans:
        return assigned
    ordered = list(spans.items())
    for line in lines:
        home = next(
            (i for i, (s, e) in ordered if s <= line.start_s < e),
            None,
        )
        if home is None:
            home = min(
                ordered,
                key=lambda item: min(
                    abs(line.start_s - item[1][0]), abs(line.start_s - item[1][1])
                ),
            )[0]
        assigned[home].append(line)
    return assigned


# --------------------------------------------------------------------------- option steering

# Words match in any case, option letters only in upper case: "supports a theory" is plain
# English, "supports A" is steering.
_LETTER = r"\(?[A-H]\)?(?![A-Za-z])"
_NAMED = rf"(?i:option|choice|answer)\s+{_LETTER}"
_MAYBE_NAMED = rf"(?:(?i:option|choice|answer)\s+)?{_LETTER}"
_STEERING_PHRASES = (
    rf"\b(?i:consistent|inconsistent|in\s+line|aligned)\s+(?i:with)\s+{_MAYBE_NAMED}",
    rf"\b(?i:supports?|supporting|favou?rs?|confirms?|indicates?|suggests?)\s+{_NAMED}",
    rf"\b(?i:points?\s+(?:to|towards?))\s+{_MAYBE_NAMED}",
    rf"\b(?i:supports?|favou?rs?)\s+{_LETTER}",
    rf"\b(?i:(?:more|most|less|least)\s+likely\s+(?:to\s+be\s+)?){_MAYBE_NAMED}",
    r"\b(?i:(?:correct|right|best|final)\s+(?:answer|option|choice)\s+(?:is|would|appears|must))",
    r"\b(?i:the\s+answer\s+(?:is|would\s+be|must\s+be))\b",
    rf"\b{_NAMED}\s+(?i:(?:is|seems|appears|looks)\s+(?:\w+\s+)?"
    r"(?:correct|right|wrong|incorrect|likely|unlikely|supported|best))",
    rf"\b(?i:rules?\s+out)\s+{_NAMED}",
)
_STEERING = re.compile("|".join(_STEERING_PHRASES))
_SENTENCE = re.compile(r"[^.!?;\n]+(?:[.!?;]+|\n|$)")


def contains_option_steering(text: str) -> bool:
    return bool(_STEERING.search(text))


def strip_option_steering(text: str) -> str:
    """Drop every sentence that leans toward an answer option; keep the rest verbatim."""
    if not text or not contains_option_steering(text):
        return text
    kept = [s for s in _SENTENCE.findall(text) if not contains_option_steering(s)]
    return re.sub(r"[ \t]{2,}", " ", "".join(kept)).strip()


# --------------------------------------------------------------------------- answers

_LETTER_PATTERNS = (
    re.compile(r"^\s*\(?([A-Ha-h])\)?\s*[.):]?\s*$"),  # "B", "(b)", "B."
    re.compile(r"^\s*\(?([A-H])(?:\)|\s*[.):,])"),  # "B. Blue", "(B) Blue", "B) Blue"
    re.compile(r"\b(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-H])\)?(?![A-Za-z])", re.I),
    re.compile(r"\(([A-H])\)"),
)
_REASONING_ANSWER = re.compile(r"\banswer\s*(?:is|:)\s*\(?([A-H])\)?(?![A-Za-z])", re.I)


@dataclass(frozen=True)
class AnswerChoice:
    letter: str
    source: Literal["answer", "option_text", "reasoning", "fallback"]
    notes: tuple[str, ...] = field(default=())


def option_letters(options: Sequence[str]) -> list[str]:
    letters = []
    for index, option in enumerate(options):
        match = re.match(r"^\s*\(?([A-Ha-h])[.):]", option)
        letters.append(match.group(1).upper() if match else "ABCDEFGH"[index])
    return letters


def _option_body(option: str) -> str:
    return _normalize_line(re.sub(r"^\s*\(?[A-Ha-h][.):]\s*", "", option)).lower()


def extract_answer_letter(
    answer: str | None, reasoning: str | None, options: Sequence[str]
) -> AnswerChoice:
    """One valid option letter, always; ``source`` says how sure we are.

    Tried in order: the answer is a letter or starts with one ("B", "(B)", "B. Blue"), a
    letter named in the answer ("the answer is B"), the answer equals an option's text, the
    last "answer is X" in the reasoning; otherwise the first option (``source="fallback"``),
    so every question gets exactly one answer and the fallback is countable in reports.
    """
    letters = option_letters(options) or ["A"]
    valid = set(letters)
    answer = answer or ""
    for pattern in _LETTER_PATTERNS:
        match = pattern.search(answer)
        if match and match.group(1).upper() in valid:
            return AnswerChoice(match.group(1).upper(), "answer")
    body = _normalize_line(answer).lower().rstrip(".")
    if body:
        for letter, option in zip(letters, options, strict=False):
            if body == _option_body(option).rstrip("."):
                return AnswerChoice(letter, "option_text")
    named = [m.group(1).upper() for m in _REASONING_ANSWER.finditer(reasoning or "")]
    named = [letter for letter in named if letter in valid]
    if named:
        return AnswerChoice(named[-1], "reasoning")
    return AnswerChoice(letters[0], "fallback", (f"no option letter in {answer!r}",))


# --------------------------------------------------------------------------- memory text


def compress_text(text: str, max_chars: int = 160) -> str:
    """A stand-in summary when the update tool gave none: the first sentence, bounded."""
    text = _normalize_line(text)
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    sentence = match.group(1) if match else text
    if len(sentence) <= max_chars:
        return sentence
    cut = sentence[:max_chars].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def compose_protected_text(
    original: str,
    *,
    visual: str = "",
    transcript: str = "",
    evidence: Sequence[str] = (),
) -> str:
    """Original text plus the [Visual], [Transcript] and [Evidence] parts that exist.

    The headings are added here, by the program, so the model never has to (and a model that
    did is not trusted to have kept visual and transcript facts apart).
    """
    parts = [original.strip()]
    if visual.strip():
        parts.append(f"[Visual] {visual.strip()}")
    if transcript.strip():
        parts.append(f"[Transcript] {transcript.strip()}")
    if evidence:
        parts.append("[Evidence]\n" + "\n".join(evidence))
    return "\n".join(parts)


_WH_LEAD = re.compile(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how(?:\s+many|\s+much)?)\b[^,]*?\b"
    r"(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would)\b\s*",
    re.IGNORECASE,
)
_PROPER = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)")
_QUOTED_PHRASE = re.compile(r"[\"“”']([^\"“”']{2,})[\"“”']")
_NUMBER = re.compile(r"\b\d+(?:[.:]\d+)*(?:\s*(?:°C|°F|%|kg|km|cm|m|s))?")


def question_anchors(question: str, *, max_anchors: int = 4) -> list[str]:
    """Atomic localization targets in a question, for the multi-anchor locator.

    Quoted phrases, capitalized names inside the sentence and numbers are anchors of their
    own; the rest of the question, without its wh-lead, is one semantic anchor. These are
    only search keys: whatever they find is a hint for where to look, never evidence.
    """
    anchors = [q.strip() for q in _QUOTED_PHRASE.findall(question)]
    anchors += [m.group(1) for m in _PROPER.finditer(question)]
    anchors += [m.group(0).strip() for m in _NUMBER.finditer(question)]
    core = _WH_LEAD.sub("", question).strip(" ?.!")
    if core:
        anchors.append(core)
    seen: dict[str, str] = {}
    for anchor in anchors:
        seen.setdefault(anchor.casefold(), anchor)
    return list(seen.values())[:max_anchors]
