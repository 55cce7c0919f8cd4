"""The offline model's observations: what it reads in the frames, what it hears said.

The visual observation lists the text read in the frames, ``mm:ss: TEXT`` (a run of frames
showing one text as ``mm:ss-mm:ss: TEXT``), the texts nearest the instruction first when
there are many; the ASR observation quotes the transcript lines nearest its request
verbatim, with their timestamps. Nothing here sees pictures beyond the text OCR reads in
them.
"""

from __future__ import annotations

from videotapestry.offline.matching import content_words, relevance, word_overlap
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    PromptView,
    field_value,
    grid_shape_hint,
    read_transcript,
    section,
)
from videotapestry.offline.screen_text import readings
from videotapestry.offline.timestamps import span_text

#: Most texts one visual observation reports (the ones nearest the instruction).
MAX_OBSERVED_TEXTS = 16
#: Below this OCR confidence a reading goes to ``uncertainty`` instead of the result.
SURE_CONFIDENCE = 0.8
#: Most transcript lines one ASR observation quotes.
MAX_QUOTED_LINES = 6
#: Below this relevance no transcript line bears on the request.
MIN_LINE_RELEVANCE = 0.2
#: Words of observation requests that say how to look or listen, not what for.
_HOW_TO_OBSERVE = frozenset(
    content_words(
        "read every piece on-screen give time which each appears matters most quote what "
        "said line lines report listen spoken speech describe visible look frames timestamps"
    )
)


def _what_to_find(instruction: str) -> list[str]:
    """The instruction's content words that say what to look or listen for."""
    return [w for w in content_words(instruction) if w not in _HOW_TO_OBSERVE]


def visual_observation(view: PromptView, perception: Perception) -> dict:
    """The texts read in the frames with their times; unsure readings as uncertainty."""
    instruction = field_value(view.user, "observation_instruction")
    seen = perception.read(view.images, grid_shape_hint(view.user))
    found = readings(seen)
    frames = sum(max(1, len(p.timestamps)) for p in view.images)
    if not found:
        return {
            "observation_result": f"No readable text in the {frames} frames seen.",
            "uncertainty": "Anything that is not text cannot be reported: the offline model "
            "reads only text.",
            "relevance_to_question": "No text bears on the instruction.",
        }
    sure = [r for r in found if r.confidence >= SURE_CONFIDENCE]
    unsure = [r for r in found if r.confidence < SURE_CONFIDENCE]
    if len(sure) > MAX_OBSERVED_TEXTS:
        vectors = perception.embed([instruction, *(r.text for r in sure)])
        words = _what_to_find(instruction)
        scored = [
            (relevance(r.text, instruction, vectors, query_words=words), i)
            for i, r in enumerate(sure)
        ]
        keep = {i for _s, i in sorted(scored, key=lambda x: (-x[0], x[1]))[:MAX_OBSERVED_TEXTS]}
        left_out = len(sure) - len(keep)
        sure = [r for i, r in enumerate(sure) if i in keep]
    else:
        left_out = 0
    result = "\n".join(r.fact for r in sure) or f"No text read with confidence in {frames} frames."
    uncertainty = "; ".join(f"{r.fact} (OCR confidence {r.confidence:.2f})" for r in unsure[:8])
    if left_out:
        uncertainty = (uncertainty + "; " if uncertainty else "") + (
            f"{left_out} further texts less related to the instruction are not listed"
        )
    related = [r.text for r in sure if word_overlap(_what_to_find(instruction), r.text) > 0]
    return {
        "observation_result": result,
        "uncertainty": uncertainty,
        "relevance_to_question": (
            f"Text read by OCR in {frames} frames; "
            + (
                f"{len(related)} of the texts share words with the instruction."
                if related
                else "none of it shares words with the instruction."
            )
        ),
    }


def asr_observation(view: PromptView, perception: Perception) -> dict:
    """The transcript lines nearest the request, quoted verbatim with their times."""
    instruction = field_value(view.user, "observation_instruction")
    lines = read_transcript(section(view.user, "asr:"))
    if not lines:
        return {"observation_result": "No speech in the selected windows.", "asr_evidence": ""}
    texts = [line.text for line in lines]
    vectors = perception.embed([instruction, *texts])
    words = _what_to_find(instruction)
    scores = [relevance(t, instruction, vectors, query_words=words) for t in texts]
    best = max(scores)
    if best < MIN_LINE_RELEVANCE:
        return {
            "observation_result": "Nothing in the transcript bears on the request.",
            "asr_evidence": "",
        }
    order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))
    picked = sorted(
        [i for i in order if scores[i] >= max(MIN_LINE_RELEVANCE, 0.6 * best)][:MAX_QUOTED_LINES],
        key=lambda i: (lines[i].start, i),
    )
    return {
        "observation_result": "\n".join(
            f"{span_text(lines[i].start, lines[i].end)}: said: {lines[i].text}" for i in picked
        ),
        "asr_evidence": "\n".join(lines[i].raw for i in picked),
    }
