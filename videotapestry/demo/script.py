"""What the sample video shows and says, when, and the questions that follow from it.

Everything here is pure: the slide deck and the spoken sentences are constants, ``layout``
turns them and the generator's parameters into a ``Timeline`` (absolute seconds), and
``make_questions`` derives every question, option list, answer letter and evidence span from
that timeline. Nothing about an answer is written down by hand, so a sample rendered with
another door code or with the key slide at another time ships answers that match it, which
is how a test can tell an answerer that reads the video from one that remembers the file.

The sample is a volunteer briefing for a fictional festival: about twenty slides of large
text, several of them near-twins (three gate slides with door codes, a Wi-Fi slide whose
password is the key code with two digits swapped, three programme slides), and a narrator
who speaks over four of the slides only. Facts the narrator states never appear on screen
and the other way round, so each question needs the evidence kind it declares.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from videotapestry.errors import SampleVideoError

EvidenceKind = Literal["screen", "speech", "both"]

#: Length of the committed sample and its default parameters (the committed questions.json).
DEFAULT_DURATION_S = 1080
DEFAULT_CODE = "4417"
DEFAULT_CODE_AT_S = 212
DEFAULT_SEED = 0

#: How long the key slide (Gate B and its door code) stays on screen.
KEY_SLIDE_S = 45
#: Shortest and longest slide the layout accepts; outside these a parameter is refused.
MIN_SLIDE_S = 20
MAX_SLIDE_S = 150
#: The narrator starts this long after the slide they speak over appears, pauses this long
#: between sentences, and stops at least this long before the slide changes.
SPEECH_LEAD_S = 6.0
SPEECH_GAP_S = 1.5
SPEECH_TAIL_S = 6.0


@dataclass(frozen=True)
class SlideSpec:
    """One slide of the deck; ``{code_a}``-style fields are filled in from the codes."""

    key: str
    title: str
    lines: tuple[str, ...]
    #: Relative length on screen (scaled so the deck fills the video).
    weight: float = 1.0
    #: The stretch of speech the narrator says over this slide, if any.
    stretch: str | None = None


@dataclass(frozen=True)
class Sentence:
    id: str
    text: str


@dataclass(frozen=True)
class Stretch:
    """A run of consecutive sentences spoken over one slide; ``topic`` names it in options and
    ``key_sentence`` is the sentence that says it."""

    id: str
    topic: str
    key_sentence: str
    sentences: tuple[Sentence, ...]


KEY_SLIDE = SlideSpec("gate_b", "Gate B: deliveries", ("Door code {code}", "Open 06:30 to 12:00"))

#: The deck without the key slide, in order; the key slide is inserted where its time falls.
DECK: tuple[SlideSpec, ...] = (
    SlideSpec("title", "Riverside Festival", ("Volunteer briefing", "Saturday programme"), 0.8),
    SlideSpec(
        "plan",
        "Today's plan",
        ("1. Site and gates", "2. Tents and services", "3. Programme", "4. Safety and closing"),
        1.3,
        stretch="welcome",
    ),
    SlideSpec(
        "site",
        "Site map",
        ("North field: main stage", "South field: food court", "East bank: boat house"),
    ),
    SlideSpec("gate_a", "Gate A: staff entrance", ("Door code {code_a}", "Open 07:00 to 23:00")),
    SlideSpec("gate_c", "Gate C: artists", ("Door code {code_c}", "Open 10:00 to 23:30")),
    SlideSpec(
        "radio",
        "Radio channels",
        ("Channel 2: stewards", "Channel 5: first aid", "Channel 7: stage crew"),
    ),
    SlideSpec(
        "tents",
        "Tents",
        ("Blue tent: first aid", "Red tent: lost property", "White tent: information"),
        1.3,
        stretch="lunch",
    ),
    SlideSpec("food", "Food court", ("Stalls open at 11:00", "Six water points", "No glass")),
    SlideSpec(
        "morning",
        "Programme: morning",
        ("10:00 Brass band", "11:30 Puppet show", "12:15 Dance school"),
    ),
    SlideSpec(
        "afternoon",
        "Programme: afternoon",
        ("14:00 Choir", "15:30 Boat race", "17:00 Jazz trio"),
        1.3,
        stretch="fireworks",
    ),
    SlideSpec(
        "evening",
        "Programme: evening",
        ("19:00 Folk night", "21:00 Headline act", "22:30 Fireworks"),
    ),
    SlideSpec(
        "stewards",
        "Steward teams",
        ("North field: Priya", "South field: Marek", "East bank: Tomas"),
    ),
    SlideSpec(
        "children",
        "Lost children",
        ("Bring them to the white tent", "Call channel 2", "Stay with the child"),
    ),
    SlideSpec(
        "weather",
        "Weather plan",
        ("Rain: choir moves to the barn", "Strong wind: rides stop", "Storm: clear the fields"),
    ),
    SlideSpec("wifi", "Volunteer Wi-Fi", ("Network RIVERSIDE-CREW", "Password {code_wifi}")),
    SlideSpec(
        "parking",
        "Parking",
        ("Car park P1: staff", "Car park P2: visitors", "Bikes at Gate A"),
    ),
    SlideSpec(
        "emergency",
        "Emergency",
        ("Assembly point: car park P2", "Security office at Gate A", "First aid: channel 5"),
    ),
    SlideSpec(
        "closing",
        "Closing time",
        ("Last entry 21:30", "Music stops 23:00", "Site clear by 00:30"),
        1.3,
        stretch="farewell",
    ),
    SlideSpec("end", "Thank you", ("Questions? Ask your team lead", "See you next year"), 0.8),
)

#: What the narrator says. Worded for Whisper tiny.en: every word that an answer rests on
#: (name card, green tent, bridge, lunch, yellow tent, fireworks, old mill, flashlight, main
#: office) was checked to come back verbatim from the packaged model.
STRETCHES: tuple[Stretch, ...] = (
    Stretch(
        "welcome",
        "Where to pick up name cards",
        "welcome_2",
        (
            Sentence("welcome_1", "Good morning everyone, and thank you for helping out today."),
            Sentence(
                "welcome_2", "Please pick up your name card at the green tent next to the bridge."
            ),
            Sentence("welcome_3", "Keep the card with you all day, so that visitors can find you."),
            Sentence("welcome_4", "Now let us look at the map and the gates."),
        ),
    ),
    Stretch(
        "lunch",
        "Where volunteers will have lunch",
        "lunch_2",
        (
            Sentence("lunch_1", "Here is one change to the printed plan."),
            Sentence("lunch_2", "Lunch for volunteers will be served in the yellow tent."),
            Sentence("lunch_3", "The food court is only for visitors."),
            Sentence("lunch_4", "Hot soup will be ready from midday."),
        ),
    ),
    Stretch(
        "fireworks",
        "Where the fireworks will be launched",
        "fireworks_2",
        (
            Sentence("fireworks_1", "Please tell visitors that the river is very high today."),
            Sentence("fireworks_2", "This year the fireworks will be launched from the old mill."),
            Sentence("fireworks_3", "Please keep children well away from the river."),
        ),
    ),
    Stretch(
        "farewell",
        "Where to return flashlights",
        "farewell_2",
        (
            Sentence("farewell_1", "One last thing before you go."),
            Sentence(
                "farewell_2",
                "Please return your flashlight to the main office at the end of your shift.",
            ),
            Sentence("farewell_3", "Thank you, and have a wonderful day."),
        ),
    ),
)


def all_sentences() -> list[Sentence]:
    return [sentence for stretch in STRETCHES for sentence in stretch.sentences]


def stretch_by_id(stretch_id: str) -> Stretch:
    for stretch in STRETCHES:
        if stretch.id == stretch_id:
            return stretch
    raise KeyError(stretch_id)


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class SampleParams:
    """What the generator may vary; the defaults are the committed sample."""

    code: str = DEFAULT_CODE
    code_at_s: int = DEFAULT_CODE_AT_S
    seed: int = DEFAULT_SEED
    duration_s: int = DEFAULT_DURATION_S

    def __post_init__(self) -> None:
        if not (isinstance(self.code, str) and len(self.code) == 4 and self.code.isdigit()):
            raise SampleVideoError(f"code must be four digits, got {self.code!r}")
        if len(set(self.code)) == 1:
            raise SampleVideoError(
                f"code {self.code} repeats one digit; the Wi-Fi distractor swaps two different "
                "digits of the code, so use at least two different digits"
            )
        for name in ("code_at_s", "seed", "duration_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise SampleVideoError(f"{name} must be a whole number, got {value!r}")
        if self.duration_s <= 0 or self.code_at_s <= 0:
            raise SampleVideoError("duration_s and code_at_s must be positive")

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "code_at_s": self.code_at_s,
            "seed": self.seed,
            "duration_s": self.duration_s,
        }


@dataclass(frozen=True)
class Codes:
    """The door codes and the Wi-Fi password on screen; ``key`` is the one asked about."""

    key: str
    gate_a: str
    gate_c: str
    wifi: str

    def fields(self) -> dict[str, str]:
        return {
            "code": self.key,
            "code_a": self.gate_a,
            "code_c": self.gate_c,
            "code_wifi": self.wifi,
        }


def swap_digits(code: str) -> str:
    """The code with its rightmost pair of differing neighbours swapped (4417 → 4471)."""
    digits = list(code)
    for i in range(len(digits) - 2, -1, -1):
        if digits[i] != digits[i + 1]:
            digits[i], digits[i + 1] = digits[i + 1], digits[i]
            return "".join(digits)
    raise SampleVideoError(f"code {code} has no two different neighbouring digits to swap")


def distractor_codes(code: str, seed: int) -> Codes:
    """The other codes on screen: a near-twin of the key code and two seeded unrelated ones.

    The gate codes depend on the seed only (unless they would collide with the key code or
    its twin), so changing the key code changes one slide's text and nothing else.
    """
    wifi = swap_digits(code)
    rng = random.Random(f"sample-codes-{seed}")
    others: list[str] = []
    while len(others) < 2:
        candidate = f"{rng.randrange(1000, 10000)}"
        differing = sum(a != b for a, b in zip(candidate, code, strict=True))
        if candidate not in (code, wifi, *others) and differing >= 2:
            others.append(candidate)
    return Codes(key=code, gate_a=others[0], gate_c=others[1], wifi=wifi)


# --------------------------------------------------------------------------- timeline


@dataclass(frozen=True)
class ClipTiming:
    """One synthesized sentence: clip length and where the voice starts and stops in it."""

    duration_s: float
    onset_s: float
    offset_s: float


@dataclass(frozen=True)
class PlacedSlide:
    key: str
    number: int
    title: str
    lines: tuple[str, ...]
    start_s: int
    end_s: int

    def text(self) -> str:
        return " / ".join((self.title, *self.lines))


@dataclass(frozen=True)
class PlacedSentence:
    """A sentence on the audio track: its clip begins at ``placed_s``; the voice itself is
    heard from ``start_s`` to ``end_s``."""

    id: str
    stretch: str
    text: str
    placed_s: float
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    params: SampleParams
    codes: Codes
    slides: tuple[PlacedSlide, ...]
    sentences: tuple[PlacedSentence, ...]

    @property
    def duration_s(self) -> int:
        return self.params.duration_s

    def slide(self, key: str) -> PlacedSlide:
        for slide in self.slides:
            if slide.key == key:
                return slide
        raise KeyError(key)

    def slide_at(self, t: float) -> PlacedSlide:
        for slide in self.slides:
            if slide.start_s <= t < slide.end_s:
                return slide
        raise SampleVideoError(f"no slide at {t} s (the video lasts {self.duration_s} s)")

    def sentence(self, sentence_id: str) -> PlacedSentence:
        for sentence in self.sentences:
            if sentence.id == sentence_id:
                return sentence
        raise KeyError(sentence_id)

    def stretch_span(self, stretch_id: str) -> tuple[float, float]:
        said = [s for s in self.sentences if s.stretch == stretch_id]
        return said[0].start_s, said[-1].end_s

    def to_json(self) -> dict[str, object]:
        return {
            "slides": [asdict(slide) for slide in self.slides],
            "speech": [asdict(sentence) for sentence in self.sentences],
        }


def slide_weights(seed: int) -> list[float]:
    """Each deck slide's weight with a seeded ±30 % jitter, so slides last 30–90 s, unevenly."""
    rng = random.Random(f"sample-durations-{seed}")
    return [spec.weight * rng.uniform(0.7, 1.3) for spec in DECK]


def _boundaries(weights: Sequence[float], start: int, end: int) -> list[int]:
    # Whole seconds (the sample has one frame a second), cumulative so rounding never drifts.
    total = sum(weights)
    running, edges = 0.0, [start]
    for weight in weights[:-1]:
        running += weight
        edges.append(start + round((end - start) * running / total))
    edges.append(end)
    return edges


def _split_point(weights: Sequence[float], before_s: int, after_s: int) -> int:
    """How many deck slides go before the key slide: the count that stretches both sides alike."""
    best, best_cost = 1, math.inf
    for count in range(1, len(weights)):
        scale_before = before_s / sum(weights[:count])
        scale_after = after_s / sum(weights[count:])
        cost = abs(math.log(scale_before / scale_after))
        if cost < best_cost:
            best, best_cost = count, cost
    return best


def stretch_length(stretch: Stretch, clips: Mapping[str, ClipTiming]) -> float:
    durations = [clips[s.id].duration_s for s in stretch.sentences]
    return sum(durations) + SPEECH_GAP_S * (len(durations) - 1)


def layout(params: SampleParams, clips: Mapping[str, ClipTiming]) -> Timeline:
    """Place every slide and sentence: the key slide at exactly ``code_at_s``, the rest of the
    deck stretched around it, each stretch of speech inside the slide it belongs to."""
    missing = [s.id for s in all_sentences() if s.id not in clips]
    if missing:
        raise SampleVideoError(f"no speech clip for sentence(s) {', '.join(missing)}")
    start, end = params.code_at_s, params.code_at_s + KEY_SLIDE_S
    if end >= params.duration_s:
        raise SampleVideoError(
            f"the key slide at {start} s would run past the end of a {params.duration_s} s video"
        )
    weights = slide_weights(params.seed)
    count = _split_point(weights, start, params.duration_s - end)
    edges = _boundaries(weights[:count], 0, start) + _boundaries(
        weights[count:], end, params.duration_s
    )
    specs = [*DECK[:count], KEY_SLIDE, *DECK[count:]]
    codes = distractor_codes(params.code, params.seed)
    slides = []
    for number, spec in enumerate(specs, start=1):
        first, last = edges[number - 1], edges[number]
        slides.append(
            PlacedSlide(
                key=spec.key,
                number=number,
                title=spec.title,
                lines=tuple(line.format(**codes.fields()) for line in spec.lines),
                start_s=first,
                end_s=last,
            )
        )
    sentences = []
    for spec, slide in zip(specs, slides, strict=True):
        length = slide.end_s - slide.start_s
        if not MIN_SLIDE_S <= length <= MAX_SLIDE_S:
            raise SampleVideoError(
                f"with code_at_s={params.code_at_s} and duration_s={params.duration_s} the slide "
                f"{spec.title!r} would last {length} s (allowed {MIN_SLIDE_S}-{MAX_SLIDE_S} s); "
                "move the key slide or change the duration"
            )
        if spec.stretch is None:
            continue
        stretch = stretch_by_id(spec.stretch)
        needed = SPEECH_LEAD_S + stretch_length(stretch, clips) + SPEECH_TAIL_S
        if length < needed:
            raise SampleVideoError(
                f"the slide {spec.title!r} would last {length} s, too short for the "
                f"{needed:.0f} s of speech over it; move the key slide or lengthen the video"
            )
        t = slide.start_s + SPEECH_LEAD_S
        for sentence in stretch.sentences:
            clip = clips[sentence.id]
            sentences.append(
                PlacedSentence(
                    id=sentence.id,
                    stretch=stretch.id,
                    text=sentence.text,
                    placed_s=round(t, 3),
                    start_s=round(t + clip.onset_s, 2),
                    end_s=round(t + clip.offset_s, 2),
                )
            )
            t += clip.duration_s + SPEECH_GAP_S
    return Timeline(params, codes, tuple(slides), tuple(sentences))


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class EvidenceSpan:
    """Where an answer can be seen or heard: ``kind`` is ``screen`` or ``speech``."""

    kind: Literal["screen", "speech"]
    start_s: float
    end_s: float
    text: str


@dataclass(frozen=True)
class SampleQuestion:
    id: str
    question: str
    options: tuple[str, ...]
    answer: str
    evidence: EvidenceKind
    evidence_spans: tuple[EvidenceSpan, ...] = field(default_factory=tuple)

    def answer_text(self) -> str:
        index = ord(self.answer) - ord("A")
        return self.options[index].split(". ", 1)[1]

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer,
            "evidence": self.evidence,
            "evidence_spans": [
                {"kind": e.kind, "start_s": e.start_s, "end_s": e.end_s, "text": e.text}
                for e in self.evidence_spans
            ],
        }


def _lettered(
    question_id: str, correct: str, distractors: Sequence[str], seed: int
) -> tuple[tuple[str, ...], str]:
    """Options "A. …" in a seeded order, and the letter of ``correct``."""
    texts = [correct, *distractors]
    if len(set(texts)) != len(texts):
        raise SampleVideoError(f"question {question_id} would have two identical options: {texts}")
    random.Random(f"sample-options-{seed}-{question_id}").shuffle(texts)
    options = tuple(f"{chr(ord('A') + i)}. {text}" for i, text in enumerate(texts))
    return options, chr(ord("A") + texts.index(correct))


def _screen(slide: PlacedSlide) -> EvidenceSpan:
    return EvidenceSpan("screen", float(slide.start_s), float(slide.end_s), slide.text())


def _speech(sentence: PlacedSentence) -> EvidenceSpan:
    return EvidenceSpan("speech", sentence.start_s, sentence.end_s, sentence.text)


def _key_code_question(timeline: Timeline) -> SampleQuestion:
    codes, seed = timeline.codes, timeline.params.seed
    distractors = (codes.gate_a, codes.gate_c, codes.wifi)
    options, answer = _lettered("gate_b_code", codes.key, distractors, seed)
    return SampleQuestion(
        "gate_b_code",
        "What is the door code for Gate B, the delivery gate?",
        options,
        answer,
        "screen",
        (_screen(timeline.slide(KEY_SLIDE.key)),),
    )


def _name_card_question(timeline: Timeline) -> SampleQuestion:
    # Distractors from elsewhere in the video: a tent the narrator names for lunch, a tent on
    # the "Tents" slide, and the place the narrator names for flashlights.
    options, answer = _lettered(
        "name_cards",
        "At the green tent next to the bridge",
        ("At the yellow tent", "At the white information tent", "At the main office"),
        timeline.params.seed,
    )
    return SampleQuestion(
        "name_cards",
        "Where did the speaker tell volunteers to pick up their name cards?",
        options,
        answer,
        "speech",
        (_speech(timeline.sentence("welcome_2")),),
    )


def _fireworks_slide_question(timeline: Timeline) -> SampleQuestion:
    said = timeline.sentence("fireworks_2")
    shown = timeline.slide_at(said.start_s)
    # The evening programme lists the fireworks, the trap for an answer that matches words
    # instead of finding the moment; the slides either side are the near misses in time.
    index = timeline.slides.index(shown)
    candidates = [timeline.slide("evening")]
    candidates += [
        timeline.slides[i] for i in (index - 1, index + 1) if 0 <= i < len(timeline.slides)
    ]
    candidates += [s for s in timeline.slides if s.key in ("morning", "weather", "food")]
    distractors: list[str] = []
    for slide in candidates:
        if slide.title != shown.title and slide.title not in distractors:
            distractors.append(slide.title)
    options, answer = _lettered(
        "fireworks_slide", shown.title, distractors[:3], timeline.params.seed
    )
    return SampleQuestion(
        "fireworks_slide",
        "Which slide was on screen when the speaker said where the fireworks will be launched?",
        options,
        answer,
        "both",
        (_speech(said), _screen(shown)),
    )


def _after_key_slide_question(timeline: Timeline) -> SampleQuestion:
    key = timeline.slide(KEY_SLIDE.key)
    spans = {s.id: timeline.stretch_span(s.id) for s in STRETCHES}
    after = [s for s in STRETCHES if spans[s.id][0] >= key.end_s]
    before = [s for s in STRETCHES if spans[s.id][1] <= key.start_s]
    if after:
        chosen = after[0]
        question = (
            "After the slide with the door code for Gate B, what did the speaker talk about first?"
        )
    else:
        chosen = before[-1]
        question = (
            "Before the slide with the door code for Gate B appeared, what did the speaker "
            "talk about last?"
        )
    others = [s.topic for s in STRETCHES if s.id != chosen.id]
    options, answer = _lettered("after_gate_b", chosen.topic, others, timeline.params.seed)
    return SampleQuestion(
        "after_gate_b",
        question,
        options,
        answer,
        "both",
        (_screen(key), _speech(timeline.sentence(chosen.key_sentence))),
    )


def make_questions(timeline: Timeline) -> list[SampleQuestion]:
    """The shipped questions: screen only, speech only, both, and an order of events."""
    return [
        _key_code_question(timeline),
        _name_card_question(timeline),
        _fireworks_slide_question(timeline),
        _after_key_slide_question(timeline),
    ]
