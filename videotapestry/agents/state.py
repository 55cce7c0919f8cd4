"""What flows between the level agents: the question, each level's outcome, the handoff trace.

These are the graph's state values, so they are plain pydantic models that serialize to JSON
(a SQLite checkpoint can hold them, a notebook can print them). Everything that cannot be
serialized — the memory, the video reader, the model session — lives in ``RunContext``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, Field

from videotapestry.timecode import format_timestamp

Level = Literal["super", "macro", "subgraph"]
LEVELS: tuple[Level, ...] = ("super", "macro", "subgraph")
AGENT_NAMES: dict[Level, str] = {
    "super": "Overview Agent",
    "macro": "Skim Agent",
    "subgraph": "Focus Agent",
}
SINGLE_AGENT_NAME = "Controller Agent"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EarlierTurn(_Model):
    """A question asked before in the same conversation, its answer and the moments that
    answer cited: what a follow-up's "that" points at, shown to every agent."""

    question: str
    answer: str
    spans: list[tuple[float, float]] = Field(default_factory=list)


class MomentHint(_Model):
    """A moment something outside the method found for the question in this video (a
    library search hit), shown to the Overview agent beside its own locator's windows."""

    start_s: float
    end_s: float
    text: str
    level: str = ""


class QuestionInput(_Model):
    """One question about one video: multiple-choice, or free-form when it has no options."""

    question: str
    options: list[str] = Field(default_factory=list)
    question_id: str = "q"
    subtitle_path: str | None = None
    subtitle_offset_s: float = 0.0
    #: Earlier turns of a conversation, oldest first (empty for a question on its own).
    history: list[EarlierTurn] = Field(default_factory=list)
    #: The user's own words when a follow-up's reference ("right after that") was resolved
    #: to the previous answer's cited moment; ``question`` is then the resolved text.
    asked: str = ""
    #: Moments a library search found for this question in this video (none for a question
    #: about one video: the method's own locator is all it has).
    hints: list[MomentHint] = Field(default_factory=list)

    def prompt_variables(self) -> dict[str, Any]:
        """What every prompt that shows the question (``_question.jinja``) is given."""
        return {
            "question": self.question,
            "options": list(self.options),
            "earlier_turns": earlier_turn_lines(self.history),
        }


#: Earlier turns a prompt shows (the latest ones): enough for a follow-up to refer back,
#: without a long chat growing every prompt.
MAX_EARLIER_TURNS = 4


def earlier_turn_lines(history: list[EarlierTurn]) -> list[str]:
    """Earlier turns as the prompts show them, one per line, with the times they cited."""
    lines = []
    shown = history[-MAX_EARLIER_TURNS:]
    first = len(history) - len(shown) + 1
    for number, turn in enumerate(shown, start=first):
        cited = ", ".join(
            f"{format_timestamp(start)}-{format_timestamp(end)}" for start, end in turn.spans
        )
        lines.append(
            f"{number}. Asked: {turn.question} | Answered: {turn.answer or '(no answer)'} | "
            f"Cited: {cited or 'nothing'}"
        )
    return lines


class ImageRef(_Model):
    """An image the model saw, without its bytes (the trace and notebooks show these)."""

    label: str
    timestamps: list[float]
    sha256: str
    bytes: int


class Observation(_Model):
    """One observation tool call and what it returned."""

    kind: Literal["visual", "asr"]
    level: Level
    source_id: str  # "V1", "A1": how the update prompt refers to it
    instruction: str
    windows: list[tuple[float, float]]
    frame_times: list[float] = Field(default_factory=list)
    images: list[ImageRef] = Field(default_factory=list)
    result: str = ""
    uncertainty: str = ""
    evidence_lines: list[tuple[float, float, str]] = Field(default_factory=list)
    #: Quoted lines that matched no transcript line at their stated time (dropped).
    unmatched_evidence: list[str] = Field(default_factory=list)
    transcript_lines: int = 0
    error: str | None = None
    #: False when the tool ran but found nothing to report: an ASR call over windows with no
    #: speech, or whose reply quoted no line (the paper's tool returns an empty evidence
    #: field "when there is no reliable evidence"). Its result is kept for the trace.
    found: bool = True

    @property
    def succeeded(self) -> bool:
        return self.error is None and bool(self.result.strip())

    @property
    def bears_evidence(self) -> bool:
        """Whether this observation may link memories, protect them and be cited."""
        return self.succeeded and self.found


DegradationKind = Literal[
    "visual_lost",  # frames could not be decoded, or the visual observation call failed
    "asr_lost",  # no transcript (Whisper failed, subtitles missing) or the ASR call failed
    "asr_substituted",  # another transcript than asr.source names (stored, for subtitles)
    "frames_not_upright",  # the display matrix asks for more than a quarter turn (a mirror)
    "memory_past_video_end",  # memory nodes start past the video's end: nothing to observe
    "call_fallback",  # a planning, update or decision call failed and took its fallback
    "update_rejected",  # some entries of an update reply were unusable; originals kept
    "answer_fallback",  # the Answer agent gave no usable letter: the letter is a guess
    "follow_up_unresolved",  # "that" in a follow-up had no cited moment to point at
    "budget_reached",  # a budget (calls, tokens, dollars, seconds) stopped refining early
]


class Degradation(_Model):
    """Something that made this question's run differ from the method (SPEC §7a).

    A run with degradations still has an answer, but a researcher comparing it with the
    paper must know what was lost, where and why; ``ask`` prints each one and exits with a
    distinct status, reports count them.
    """

    kind: DegradationKind
    level: str  # super | macro | subgraph | answer | setup
    what: str
    why: str

    def render(self) -> str:
        return f"{self.level}: {self.what} ({self.kind}): {self.why}"


WarningKind = Literal[
    "citation_invalid",  # the answer cited ids that name no evidence (they were dropped)
    "memory_vectors_replaced",  # search and PACE-Mem used recomputed vectors, not the memory's
    "transcript_from_subtitles",  # asr.source is whisper; the memory's transcript is subtitles
    "question_past_covered",  # the question names a moment the memory does not cover
    "moved_to_question_window",  # a level's look or selection lay outside the question's window
]


class ResultWarning(_Model):
    """Something about an answer a reader should know that is not a loss of the method.

    A citation that names nothing says the answer's proof is weaker, not that the method
    ran differently: the answer and how it was reached are unchanged, so it is reported
    beside the answer (``ask`` prints it, reports count it) without making the run
    degraded or changing an exit status.
    """

    kind: WarningKind
    level: str  # setup | answer | super | macro | subgraph
    what: str
    why: str

    def render(self) -> str:
        return f"{self.level}: {self.what} ({self.kind}): {self.why}"


#: Degradations recorded before they were warnings: traces and records that list one of
#: these under ``degraded`` move it to ``warnings`` when they are read.
FORMER_DEGRADATIONS: frozenset[str] = frozenset(get_args(WarningKind))


class LevelCalls(_Model):
    """Tool calls spent at one level, against ``agents.level_limits``."""

    observations: int = 0
    updates: int = 0
    locators: int = 0

    @property
    def tool_calls(self) -> int:
        return self.observations + self.updates + self.locators


EvidenceKind = Literal["frame", "transcript_line", "stored_node"]


class EvidenceRef(_Model):
    """One piece of evidence a rewritten node or a cited claim rests on, with its times.

    Kept as structure from the moment a tool returns it (a frame's timestamp, a transcript
    line as said, a stored node's time range), never parsed back from model text, so a
    citation resolves to the moments of the video that support it.
    """

    #: How the composite memory and the Answer agent name it: ``F3`` a frame, ``T2`` a
    #: transcript line, or a stored node's own id (``macro_0003``).
    id: str
    kind: EvidenceKind
    #: The level whose agent saw it; ``direct`` for the frames of the Direct baseline.
    level: Level | Literal["direct"]
    start_s: float
    end_s: float
    #: A transcript line verbatim, which observation showed a frame, a node's label.
    text: str = ""
    #: A frame's own timestamp (its span is the stretch of video it stands for).
    at_s: float | None = None
    #: A stored node's kind (``OCRText``, ``MacroEvent`` …), so it is shown as what it is.
    node_kind: str | None = None


class Citation(_Model):
    """One claim of an answer and the evidence it cites: spans to look at, sources to read."""

    claim: str
    sources: list[EvidenceRef]

    @property
    def spans(self) -> list[tuple[float, float]]:
        return [(source.start_s, source.end_s) for source in self.sources]

    @property
    def levels(self) -> list[str]:
        return list(dict.fromkeys(source.level for source in self.sources))


class LevelOutcome(_Model):
    """Everything one visited level produced; the composite memory is assembled from these."""

    level: Level
    agent: str
    candidate_ids: list[str]
    instruction_in: str | None = None
    plan: dict[str, Any] = Field(default_factory=dict)
    observations: list[Observation] = Field(default_factory=list)
    refined: dict[str, str] = Field(default_factory=dict)
    static: dict[str, str] = Field(default_factory=dict)
    evidence_ids: list[str] = Field(default_factory=list)
    protected_ids: list[str] = Field(default_factory=list)
    selected_ids: list[str] = Field(default_factory=list)
    instruction_out: str | None = None
    template_type: str | None = None
    stop: bool = False
    reason: str = ""
    evidence_selection: dict[str, Any] | None = None
    calls: LevelCalls = Field(default_factory=LevelCalls)
    notes: list[str] = Field(default_factory=list)
    degraded: list[Degradation] = Field(default_factory=list)
    #: What a reader should know of this level that is no loss of the method: a look or a
    #: selection moved onto the window the question names (``relative_time``).
    warnings: list[ResultWarning] = Field(default_factory=list)
    #: What each rewritten node rests on: its stored node, then the frames and transcript
    #: lines of the observations linked to it (a compressed node: its stored node only).
    sources: dict[str, list[EvidenceRef]] = Field(default_factory=dict)


class HandoffEntry(_Model):
    """One line of the compact trace the Answer agent sees: who handed what down, or STOP."""

    agent: str
    level: Level
    instruction: str | None
    stop: bool

    def render(self) -> str:
        if self.stop:
            return f"{self.agent}: STOP"
        return f"{self.agent} -> next level: {self.instruction or '(no instruction)'}"


class AnswerOutcome(_Model):
    """The Answer agent's answer: a letter for a multiple-choice question ("" for a
    free-form one), the answer in words, and the evidence it cites."""

    letter: str
    reasoning: str
    raw_answer: str
    source: str  # answer | option_text | reasoning | fallback
    prompt_hash: str
    error: str | None = None
    text: str = ""
    citations: list[Citation] = Field(default_factory=list)
    #: Cited ids that name no evidence (dropped from ``citations``).
    invalid_citations: list[str] = Field(default_factory=list)
    #: Whether the reply was asked to cite (``answer.citations``): no citations then means
    #: none were asked for, not that the answer rests on nothing.
    citations_asked: bool = True


def merge_levels(left: list[LevelOutcome], right: list[LevelOutcome]) -> list[LevelOutcome]:
    """The ``levels`` reducer: a level's outcome is added once and may later be replaced by
    its completed self (the Focus decision, which runs alongside the Answer agent), in place."""
    merged = list(left)
    for outcome in right:
        at = next((k for k, o in enumerate(merged) if o.level == outcome.level), None)
        if at is None:
            merged.append(outcome)
        else:
            merged[at] = outcome
    return merged


class QAState(TypedDict, total=False):
    """The LangGraph state of one question."""

    question: QuestionInput
    is_global: bool
    candidates: list[str]
    instruction: str | None
    levels: Annotated[list[LevelOutcome], merge_levels]
    handoff: Annotated[list[HandoffEntry], operator.add]
    stopped: bool
    memory_text: str
    memory_tokens: int
    handoff_text: str
    answer: AnswerOutcome
