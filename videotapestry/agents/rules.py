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
from dataclasses import dataclass
from typing import Literal

from videotapestry.agents.options import strip_option_steering
from videotapestry.asr.types import TranscriptLine
from videotapestry.contracts.method import INSTRUCTION_TYPES, Decision
from videotapestry.question import option_body

Level = Literal["super", "macro", "subgraph"]
Span = tuple[float, float]

# --------------------------------------------------------------------------- global questions

#: What "the video as a whole" is called in questions.
_WHOLE = (
    r"(?:(?:this|the|entire|whole|full)\s+)+(?:video|clip|film|documentary|episode|vlog|"
    r"programme|program|show|lecture|talk|presentation|footage|recording)"
)
_GIST_NOUNS = (
    r"(?:idea|ideas|topic|topics|theme|themes|point|purpose|subject|message|focus|goal|aim|"
    r"thesis|argument|narrative|storyline|plot|content|structure|takeaway|lesson|moral|gist|"
    r"summary|overview|intent|intention|objective)"
)
_QUALIFIER = r"(?:main|central|primary|principal|key|overarching|core|general|overall|underlying)"
_GLOBAL_QUESTION = re.compile(
    rf"""
    \b{_QUALIFIER}\s+{_GIST_NOUNS}(?:\s*[?.!]?\s*$|\s+(?:of|in|behind|for|conveyed\s+by|
      presented\s+in|expressed\s+in|discussed\s+in)\s+{_WHOLE}\b)
    | \b{_GIST_NOUNS}\s+(?:of|in|behind|for)\s+{_WHOLE}\b
    | \b{_WHOLE}(?:'s|’s)\s+(?:{_QUALIFIER}\s+)?{_GIST_NOUNS}\b
    | \bwhat\s+(?:is|was|are)\s+{_WHOLE}\s+
      (?:mainly\s+|mostly\s+|primarily\s+|really\s+|all\s+)?about\b
    | \b{_WHOLE}\s+(?:is\s+|was\s+)?(?:mainly|mostly|primarily|largely|chiefly|generally)\s+
      (?:about|shows?|showing|discuss(?:es|ing)?|focus(?:es|ing)?|covers?|covering|depicts?|
      explains?|describes?|presents?|demonstrates?|concerns?)\b
    | \bsummar(?:y|ise|ize|ized|ised|izes|ises|izing|ising)\b
    | \bgist\b
    | \b(?:best|suitable|appropriate|fitting|good|possible|likely)\s+(?:title|headline|caption)\b
    | \btitle\s+(?:of|for)\s+{_WHOLE}\b
    | \b(?:title|headline)\s+(?:best\s+)?(?:fits|suits|describes|summari[sz]es)\b
    | \bbest\s+(?:describes?|captures?|characteri[sz]es?|represents?)\s+(?:what\s+)?{_WHOLE}\b
    | \b(?:describe|characteri[sz]e)s?\s+{_WHOLE}\s+as\s+a\s+whole\b
    | \b{_WHOLE}\s+as\s+a\s+whole\b
    """,
    re.IGNORECASE | re.VERBOSE,
)
#: A question that points at a moment or a detail is never global, whatever else it says.
_LOCAL_CUE = re.compile(
    r"\b\d{1,2}:\d{2}\b|\bat\s+the\s+(?:beginning|start|end)\b|\bafter\b|\bbefore\b|"
    r"\bwhen\b|\bhow\s+many\b|\bwhat\s+(?:colou?r|number|time)\b",
    re.IGNORECASE,
)
_GENERIC_QUESTION = re.compile(
    r"^\s*(?:which|what)\s+(?:of\s+the\s+following\s+)?(?:option|statement|sentence|"
    r"description|choice|one)?s?\s*(?:of\s+the\s+following\s+)?(?:is|are|best|most)\b",
    re.IGNORECASE,
)
_SUMMARY_OPTION = re.compile(
    rf"^(?:\(?[A-Z][.):]?\)?\s*)?(?:{_WHOLE}|it)\s+(?:is\s+|was\s+)?(?:mainly\s+|mostly\s+|"
    r"primarily\s+|largely\s+)?(?:about|shows|discusses|focuses|covers|depicts|explains|"
    r"describes|presents|demonstrates|documents|follows|introduces|teaches|reviews)\b",
    re.IGNORECASE,
)


def is_global_question(question: str, options: Sequence[str] = ()) -> bool:
    """Main-idea, title and summary questions about the whole video may stop above the leaf.

    The question decides when it names the video's gist ("the purpose of the video", "the
    theme of this video", "a suitable title"); a gist word about something else ("the
    overall score", "the title of the book") does not count. A question that points at a
    moment ("at 12:30", "after ...", "how many") is local. A generic question ("Which of
    the following is true?") is global when most options describe the whole video ("The
    video mainly discusses ...").
    """
    if _GLOBAL_QUESTION.search(question) and not _LOCAL_CUE.search(question):
        return True
    if options and _GENERIC_QUESTION.search(question) and not _LOCAL_CUE.search(question):
        summaries = sum(bool(_SUMMARY_OPTION.search(option.strip())) for option in options)
        return summaries * 2 > len(options)
    return False


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
    # The instruction reaches the next agent and the Answer agent's trace: no steering.
    instruction = strip_option_steering(raw.next_instruct or "").strip() or None
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


# --------------------------------------------------------------------------- the Super level


def transcript_follows_look(*, looked: bool, look_succeeded: bool, after_failed_look: bool) -> bool:
    """Whether the Overview agent goes on to plan and read the transcript after its look.

    The paper's ASR planner reads the visual observation and its transcript follows each
    successful look, so after a failed one (``after_failed_look`` false) there is nothing to
    plan from and the level goes on without speech. Ours listens anyway by default: a
    transcript still links evidence when the frames could not be read. With no look at all
    (the visual tool off: the w/o-visual ablation) the transcript is the level's only
    observation and is always read.
    """
    return after_failed_look or not looked or look_succeeded


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


_CLOCK = r"\d{1,2}(?::\d{2}){1,2}(?:[.,]\d+)?"
_QUOTED_TIME = re.compile(
    rf"^\s*[\[(]?\s*({_CLOCK})\s*(?:(?:-|–|—|~|to|-->)\s*({_CLOCK}))?\s*[\])]?\s*[:\-–—]?\s*"
)


def _clock_seconds(text: str) -> float:
    parts = [float(p.replace(",", ".")) for p in text.split(":")]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return seconds


def _comparable(text: str) -> str:
    """Text as compared for "verbatim": case, punctuation and spacing do not count."""
    return " ".join(re.findall(r"\w+", text.casefold()))


@dataclass(frozen=True)
class QuotedEvidence:
    """Transcript lines a model quoted, placed at their true times; what could not be placed."""

    lines: tuple[TranscriptLine, ...]
    unmatched: tuple[str, ...] = ()


#: A quoted fragment shorter than this names no particular line ("the", "it is"), so only a
#: whole line may be shorter.
MIN_FRAGMENT_WORDS = 3


def match_evidence_lines(
    evidence: str,
    transcript: Sequence[TranscriptLine],
    *,
    windows: Sequence[Span] | None = None,
    tolerance_s: float = 2.0,
    fragments: bool = True,
) -> QuotedEvidence:
    """Transcript lines the model quoted in ``evidence``, with their true timestamps.

    A quote counts only if its words (case, punctuation, brackets and spacing aside) are a
    transcript line's words or, with ``fragments``, a run of at least
    ``MIN_FRAGMENT_WORDS`` consecutive words of one line or of two adjacent lines: models
    quote the telling part of a long line, or join a sentence Whisper split in two. The
    quote stands for the whole line(s) it came from, so the memory holds what was said as
    transcribed. A whole-line match wins over a fragment one. When the quote carries a
    timestamp, the line(s) must lie within ``tolerance_s`` of it: a line said several times
    ("Yeah.") is placed where the quote says, not everywhere it occurs. A quote without a
    timestamp counts only when its words occur once. Lines outside ``windows`` (the
    stretches that were actually transcribed) never count. Paraphrases, invented lines and
    wrong times are returned in ``unmatched``, so the memory only ever holds words that
    were said, when they were said.
    """
    pool = sorted(
        (
            line
            for line in transcript
            if windows is None or any(line.start_s <= e and s <= line.end_s for s, e in windows)
        ),
        key=lambda line: line.start_s,
    )
    words = [_comparable(line.text).split() for line in pool]
    found: list[TranscriptLine] = []
    unmatched: list[str] = []
    for raw in evidence.splitlines():
        if not raw.strip():
            continue
        match = _QUOTED_TIME.match(raw)
        quoted_start = _clock_seconds(match.group(1)) if match else None
        quote = _comparable(raw[match.end() :] if match else raw).split()
        placed = _place_quote(quote, pool, words, quoted_start, tolerance_s, fragments)
        if placed is None:
            unmatched.append(raw.strip())
            continue
        found.extend(line for line in placed if line not in found)
    return QuotedEvidence(
        lines=tuple(sorted(found, key=lambda line: line.start_s)), unmatched=tuple(unmatched)
    )


def _place_quote(
    quote: list[str],
    pool: Sequence[TranscriptLine],
    words: Sequence[list[str]],
    quoted_start: float | None,
    tolerance_s: float,
    fragments: bool,
) -> tuple[TranscriptLine, ...] | None:
    """The line(s) ``quote`` came from: whole lines first, then fragments; None when it
    fits nowhere, or fits several places and no timestamp says which."""
    if not quote:
        return None

    def whole_lines() -> list[tuple[TranscriptLine, ...]]:
        return [(line,) for line, said in zip(pool, words, strict=True) if said == quote]

    def fragments_of_lines() -> list[tuple[TranscriptLine, ...]]:
        inside = [(line,) for line, said in zip(pool, words, strict=True) if _inside(quote, said)]
        # A quote across two lines holds the first's last word and the second's first.
        held = set(quote)
        return inside + [
            (pool[i], pool[i + 1])
            for i in range(len(pool) - 1)
            if words[i]
            and words[i + 1]
            and words[i][-1] in held
            and words[i + 1][0] in held
            and _across(quote, words[i], words[i + 1])
        ]

    # A tier is searched only when the one before it did not decide: a model that quotes
    # whole lines (the usual case) costs one pass over the pool per quote, not three.
    tiers = [whole_lines]
    if fragments and len(quote) >= MIN_FRAGMENT_WORDS:
        tiers.append(fragments_of_lines)
    for search in tiers:
        tier = search()
        if quoted_start is not None:
            near = [c for c in tier if _distance(quoted_start, c) <= tolerance_s]
            if near:
                return min(near, key=lambda c: _distance(quoted_start, c))
        elif tier:
            # The first tier that fits decides; several fits and no time say nothing.
            return tier[0] if len(tier) == 1 else None
    return None


def _distance(t: float, lines: tuple[TranscriptLine, ...]) -> float:
    """Seconds from ``t`` to where the lines were said (0 inside them)."""
    return max(lines[0].start_s - t, t - lines[-1].end_s, 0.0)


def _inside(quote: list[str], said: list[str]) -> bool:
    """Whether ``quote`` is a run of consecutive words of ``said``."""
    n, head = len(quote), quote[0]
    return any(said[i] == head and said[i : i + n] == quote for i in range(len(said) - n + 1))


def _across(quote: list[str], first: list[str], second: list[str]) -> bool:
    """Whether ``quote`` ends ``first`` and goes on into ``second`` (a word of each)."""
    if not second:
        return False
    # Each word compared first is the start of a slice compared after, so most pairs are
    # ruled out without building a slice.
    return any(
        first[len(first) - taken] == quote[0]
        and second[0] == quote[taken]
        and first[len(first) - taken :] == quote[:taken]
        and second[: len(quote) - taken] == quote[taken:]
        for taken in range(1, min(len(quote), len(first) + 1))
    )


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


IRRELEVANT_SUMMARY_CHARS = 10


def tiny_summary(text: str, max_chars: int = IRRELEVANT_SUMMARY_CHARS) -> str:
    """The very short summary an irrelevant Macro/Subgraph node becomes (Appendix B.3: at
    most 10 characters), enforced whatever length the update tool returned."""
    text = _normalize_line(text).strip(" .,;:")
    if len(text) <= max_chars:
        return text
    kept = ""
    for word in text.split(" "):
        candidate = f"{kept} {word}".strip()
        if len(candidate) > max_chars:
            break
        kept = candidate
    return kept.rstrip(",;:") if kept else text[: max_chars - 1] + "…"


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


def clean_anchors(
    anchors: Sequence[str], options: Sequence[str] = (), *, max_anchors: int = 4
) -> list[str]:
    """The Overview agent's atomic anchors, made safe to search with.

    Empty, duplicate (case-insensitive) and over-long anchors are dropped, and so is any
    anchor that is an option's own text: localization follows the question, and searching
    for an option would make the locator confirm whatever that option claims.
    """
    bodies = {option_body(o).casefold() for o in options}
    kept: dict[str, str] = {}
    for anchor in anchors:
        text = _normalize_line(str(anchor)).strip(" \"'.?!")
        if not text or len(text) > 120 or text.casefold() in bodies:
            continue
        kept.setdefault(text.casefold(), text)
    return list(kept.values())[:max_anchors]
