"""The offline model's rules for the memory builder's prompts, one function per prompt.

- Clip perception: the caption, entities, events and on-screen text of a clip are the text
  seen in it and the speech heard in it. The prompt's own OCR lines (the builder read every
  kept frame at full size) are used when it has them; otherwise the clip's grid is read
  here. Every distinct on-screen text becomes a ``text`` entity and an event; each spoken
  line an event; names spoken with a capital letter inside a sentence become entities.
- MacroEvent boundaries: where consecutive captions' embeddings change most (a local
  minimum of similarity, well below the stretch's usual level), at least a minute apart.
- A MacroEvent's label and summary are its longest-shown on-screen text and its speech;
  its relations link consecutive events in time and a text entity to the OCR node that
  spells it.
- Entity merges are confirmed by name: the same normalized name, or one name's words inside
  the other's sharing a word that is not a generic role ("chef", "man").
- Stages (SuperEvents) cut the MacroEvents into runs of about the target length; the root
  summary is written from the stage labels and descriptions.

All of it is text in, text out: the only perception is OCR, speech lines and MiniLM.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from videotapestry.offline.matching import STOPWORDS, compact, content_words, fold
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import (
    CLOCK,
    Entry,
    Line,
    PromptView,
    grid_shape_hint,
    number_after,
    read_entries,
    read_transcript,
    seconds,
    section,
)
from videotapestry.offline.screen_text import readings
from videotapestry.offline.timestamps import clock

MAX_TEXTS_PER_CLIP = 8
MAX_SPEECH_EVENTS = 6
MIN_EVENT_S = 60.0
_GENERIC = """man woman person people guy girl boy child kid lady gentleman chef cook host
    speaker presenter guest narrator player team sign text screen room place thing object
    the a an mr mrs ms dr"""
GENERIC_NAMES = frozenset(fold(w) for w in re.findall(r"\w+", _GENERIC))
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")


@dataclass(frozen=True)
class ClipText:
    text: str
    start: float
    end: float


def _one_per_text(items: Sequence[ClipText]) -> list[ClipText]:
    """One entry per text (same letters and digits, OCR confusions folded), first seen
    first, spanning every sighting."""
    merged: dict[str, ClipText] = {}
    for item in items:
        key = compact(item.text)
        if not key:
            continue
        seen = merged.get(key)
        if seen is None:
            merged[key] = item
        else:
            merged[key] = ClipText(seen.text, min(seen.start, item.start), max(seen.end, item.end))
    return sorted(merged.values(), key=lambda t: (t.start, t.text))


# --------------------------------------------------------------------------- perception


def builder_clip(view: PromptView, perception: Perception) -> dict:
    user = view.user
    match = re.search(rf"^Clip (\S+): ({CLOCK}) to ({CLOCK})", user, re.M)
    clip_start = seconds(match.group(2)) if match else 0.0
    clip_end = seconds(match.group(3)) if match else clip_start
    speech = read_transcript(
        section(user, "Speech during the clip:", "Text read on screen by OCR:")
    )
    ocr = [
        ClipText(line.text, line.start, line.end)
        for line in read_transcript(section(user, "Text read on screen by OCR:"))
    ]
    if not ocr and view.images:
        ocr = [
            ClipText(r.text, r.start, r.end)
            for r in readings(perception.read(view.images, grid_shape_hint(user)))
        ]
    texts = _one_per_text(ocr)
    texts = sorted(texts, key=lambda t: (-(t.end - t.start), t.start))[:MAX_TEXTS_PER_CLIP]
    texts = sorted(texts, key=lambda t: (t.start, t.text))
    entities: list[dict[str, object]] = []
    events: list[dict[str, object]] = []
    on_screen: list[dict[str, object]] = []
    by_name: dict[str, str] = {}  # entity name -> id
    for number, item in enumerate(texts, start=1):
        by_name[item.text] = f"e{number}"
        entities.append(
            {
                "id": f"e{number}",
                "name": item.text,
                "type": "text",
                "description": f"text shown on screen from {clock(item.start)}",
                "attributes": {"shown": f"{clock(item.start)}-{clock(item.end)}"},
                "seen_at": clock(item.start),
            }
        )
        events.append(
            {
                "action": "shows text",
                "description": f'The screen shows "{item.text}".',
                "type": "change",
                "subject_ids": [],
                "object_ids": [f"e{number}"],
                "time_range": [clock(item.start), clock(max(item.start, min(item.end, clip_end)))],
            }
        )
        on_screen.append(
            {
                "text": item.text,
                "type": "other",
                "description": "read by OCR",
                "seen_at": clock(item.start),
            }
        )
    names: dict[str, str] = {}
    shown = {compact(t.text) for t in texts}
    for line in speech:
        for name in _NAME.findall(line.text):
            if fold(name) not in STOPWORDS and compact(name) not in shown:
                names.setdefault(name, clock(line.start))
    for name, when in names.items():
        by_name[name] = f"e{len(entities) + 1}"
        entities.append(
            {
                "id": f"e{len(entities) + 1}",
                "name": name,
                "type": "other",
                "description": f"named in speech at {when}",
                "attributes": {},
                "seen_at": when,
            }
        )
    # A line across the clip's edge is in both clips' speech: it is an event of the clip it
    # starts in.
    starting = [line for line in speech if clip_start <= line.start < clip_end]
    for line in starting[:MAX_SPEECH_EVENTS]:
        mentioned = [i for n, i in by_name.items() if n in line.text]
        events.append(
            {
                "action": "speaks",
                "description": line.text,
                "type": "speech",
                "subject_ids": [],
                "object_ids": mentioned,
                "time_range": [clock(line.start), clock(line.end)],
            }
        )
    return {
        "caption": _caption(texts, speech),
        "entities": entities,
        "events": events,
        "on_screen_text": on_screen,
    }


def _caption(texts: Sequence[ClipText], speech: Sequence[Line]) -> str:
    parts = []
    if texts:
        shown = ", ".join(f'"{t.text}"' for t in texts[:5])
        parts.append(f"On screen: {shown}.")
    if speech:
        said = " ".join(line.text for line in speech)
        said = said if len(said) <= 240 else said[:239].rsplit(" ", 1)[0] + "…"
        parts.append(f'Speech: "{said}"')
    return " ".join(parts) or "No readable text on screen and no speech in this clip."


# --------------------------------------------------------------------------- MacroEvents


def boundary_cuts(
    starts: Sequence[float], similarity: np.ndarray, *, min_gap_s: float = MIN_EVENT_S
) -> list[int]:
    """Indices of clips that begin a new event: similarity to the previous caption below
    both the stretch's mean and 0.8, a local minimum, at least ``min_gap_s`` after the
    stretch's start and the previous cut (lowest similarity chosen first)."""
    n = len(starts)
    if n < 2:
        return []
    values = similarity[1:]
    threshold = min(0.8, float(values.mean()))
    candidates = []
    for i in range(1, n):
        left = similarity[i - 1] if i > 1 else np.inf
        right = similarity[i + 1] if i + 1 < n else np.inf
        if similarity[i] < threshold and similarity[i] <= left and similarity[i] <= right:
            candidates.append(i)
    cuts: list[int] = []
    for i in sorted(candidates, key=lambda k: (similarity[k], k)):
        if starts[i] - starts[0] < min_gap_s:
            continue
        if all(abs(starts[i] - starts[c]) >= min_gap_s for c in cuts):
            cuts.append(i)
    return sorted(cuts)


def builder_macro_boundaries(view: PromptView, perception: Perception) -> dict:
    clips = [e for e in read_entries(section(view.user, "Clips from")) if e.id.startswith("clip")]
    if len(clips) < 2:
        return {"boundaries": []}
    captions = [c.head or "-" for c in clips]
    vectors = perception.embed(captions)
    similarity = np.ones(len(clips))
    for i in range(1, len(clips)):
        similarity[i] = float(np.dot(vectors[captions[i]], vectors[captions[i - 1]]))
    cuts = boundary_cuts([c.start for c in clips], np.round(similarity, 4))
    return {"boundaries": [clips[i].id for i in cuts]}


def _entity_name(entry: Entry) -> tuple[str, str]:
    match = re.match(r"^(.*?) \((\w[\w ]*)\)", entry.head)
    if match:
        return match.group(1).strip(), match.group(2)
    return entry.head.split(":")[0].strip(), ""


def _said(entry: Entry) -> str:
    """What a speech event's line says (its description, without the subject/object ids)."""
    text = entry.head.split(": ", 1)[-1]
    return re.sub(r" \| (?:subject|object): .*$", "", text).strip()


def _ocr_text(entry: Entry) -> str:
    match = re.match(r'^"(.*)"', entry.head)
    return match.group(1) if match else entry.head.split(":")[0]


#: Texts a MacroEvent's summary names: enough for a slide's title and lines, so the Skim
#: level can tell one slide from its near-twin by the summary alone.
MACRO_TEXTS = 10


def builder_macro(view: PromptView, perception: Perception) -> dict:
    user = view.user
    match = re.search(rf"^Event (\S+): ({CLOCK}) to ({CLOCK})", user, re.M)
    start, end = (match.group(2), match.group(3)) if match else ("", "")
    items = read_entries(section(user, "Items:"), top_level=False)
    entities = [e for e in items if re.search(r"_e\d+$", e.id)]
    events = sorted((e for e in items if re.search(r"_v\d+$", e.id)), key=lambda e: (e.start, e.id))
    texts = [e for e in items if re.search(r"_o\d+$", e.id)]
    longest = sorted(texts, key=lambda e: (-(e.end - e.start), e.start))
    speech = [e for e in events if "(speech)" in e.head]
    label = _macro_label(longest, speech, section(user, "Clip captions:", "Items:"))
    sentences = []
    if longest:
        shown = ", ".join(
            f'"{_ocr_text(e)}" ({clock(e.start)}-{clock(e.end)})'
            for e in sorted(longest[:MACRO_TEXTS], key=lambda e: e.start)
        )
        sentences.append(f"From {start} to {end} the screen shows {shown}.")
    if speech:
        said = " ".join(_said(e) for e in speech[:3])
        said = said if len(said) <= 300 else said[:299].rsplit(" ", 1)[0] + "…"
        sentences.append(f'Someone says: "{said}"')
    if not sentences:
        sentences.append(f"From {start} to {end} nothing readable is shown or said.")
    names = [_entity_name(e)[0] for e in entities]
    relations: list[dict[str, str]] = []
    for a, b in itertools.pairwise(events):
        if a.start < b.start and len(relations) < 10:
            relations.append(
                {
                    "source": a.id,
                    "target": b.id,
                    "type": "TEMPORAL",
                    "label": "BEFORE",
                    "reason": f"starts at {clock(a.start)}, before {clock(b.start)}",
                }
            )
    ocr_keys = {compact(_ocr_text(t)): t.id for t in texts}
    for entity in entities:
        name, kind = _entity_name(entity)
        target = ocr_keys.get(compact(name))
        if kind == "text" and target:
            relations.append(
                {
                    "source": entity.id,
                    "target": target,
                    "type": "ATTRIBUTIVE",
                    "label": "SHOWS_TEXT",
                    "reason": "the entity is this on-screen text",
                }
            )
    return {
        "label": label,
        "summary": " ".join(sentences),
        "key_entities": list(dict.fromkeys(names))[:5],
        "relations": relations,
    }


def _macro_label(texts: Sequence[Entry], speech: Sequence[Entry], captions: str) -> str:
    """A MacroEvent's label: the first words of its longest-shown text, else of its speech,
    else of its clips' captions."""
    if texts:
        words = _ocr_text(texts[0]).split()[:5]
    elif speech:
        words = _said(speech[0]).split()[:5]
    else:
        words = [w for w in re.findall(r"[\w'-]+", captions)][:5]
    words = [w.strip(".,;:\"'") for w in words if w.strip(".,;:\"'")]
    if len(words) < 3:
        words = ["Showing", *words] if texts else ["Stretch", "with", *words] if words else []
    return " ".join(words[:6]) or "Quiet stretch"


# --------------------------------------------------------------------------- entities


#: One candidate pair of the entity-merge prompt: ``p1: "name" (type) ... | "name" (type)``.
_MERGE_PAIR = re.compile(
    r'^(p\d+): "([^"]+)"(?: \(([^)]*)\))?[^|]*\| "([^"]+)"(?: \(([^)]*)\))?', re.M
)


def same_entity(a: str, a_type: str, b: str, b_type: str) -> bool:
    """One entity under two names: same type (when both say), and the same normalized name,
    or one name's words inside the other's with a shared word that is not a generic role."""
    if a_type and b_type and a_type.casefold() != b_type.casefold():
        return False
    if compact(a) == compact(b):
        return True
    words_a, words_b = set(content_words(a)), set(content_words(b))
    if not words_a or not words_b or not (words_a <= words_b or words_b <= words_a):
        return False
    return any(w not in GENERIC_NAMES for w in words_a & words_b)


def builder_entity_merge(view: PromptView, perception: Perception) -> dict:
    decisions = {}
    for pair_id, a, a_type, b, b_type in _MERGE_PAIR.findall(view.user):
        decisions[pair_id] = same_entity(a, a_type or "", b, b_type or "")
    return {"decisions": decisions}


# --------------------------------------------------------------------------- stages, root


def _label_and_summary(entry: Entry) -> tuple[str, str, list[str]]:
    head = entry.text
    head, _, entities = head.partition(" | key entities: ")
    label, _, summary = head.partition(": ")
    names = [n.strip() for n in entities.split(",") if n.strip()]
    return label.strip(), summary.strip(), names


def stage_cuts(
    starts: Sequence[float], ends: Sequence[float], *, target_s: float, max_stages: int
) -> list[int]:
    """Indices of the MacroEvents that begin a stage: ``k`` stages of about ``target_s``
    (at most ``max_stages``), each cut at the MacroEvent start nearest an even split."""
    n = len(starts)
    if n == 0:
        return []
    total = ends[-1] - starts[0]
    k = max(1, min(max_stages, n, round(total / target_s) if target_s > 0 else 1))
    cuts = [0]
    for j in range(1, k):
        goal = starts[0] + j * total / k
        best = min(range(cuts[-1] + 1, n), key=lambda i: (abs(starts[i] - goal), i), default=None)
        if best is not None and best not in cuts:
            cuts.append(best)
    return cuts


def builder_super(view: PromptView, perception: Perception) -> dict:
    events = [
        e for e in read_entries(section(view.user, "Events of a")) if e.id.startswith("macro")
    ]
    if not events:
        raise ValueError("the prompt lists no MacroEvents")
    target = number_after(view.system, r"about ([\d.]+) minutes", 15.0) * 60
    max_stages = int(number_after(view.system, r"at most (\d+) stages", 12))
    cuts = stage_cuts(
        [e.start for e in events], [e.end for e in events], target_s=target, max_stages=max_stages
    )
    bounds = [*cuts, len(events)]
    stages = []
    parts = [events[a:b] for a, b in itertools.pairwise(bounds)]
    for number, group in enumerate(parts):
        described = [_label_and_summary(e) for e in group]
        longest = max(range(len(group)), key=lambda i: (group[i].end - group[i].start, -i))
        names = list(dict.fromkeys(n for _l, _s, ns in described for n in ns))[:5]
        summary = " ".join(_first_sentence(s) for _l, s, _n in described[:3] if s)
        following = _label_and_summary(parts[number + 1][0])[0] if number + 1 < len(parts) else ""
        stages.append(
            {
                "first_macro_id": group[0].id,
                "label": described[longest][0] or f"Stage {number + 1}",
                "description": summary or f"MacroEvents {group[0].id} to {group[-1].id}.",
                "key_entities": names,
                "transition": f"It is followed by {following}." if following else "",
            }
        )
    return {"stages": stages}


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(?:\s|$)", text.strip())
    return match.group(1) if match else text.strip()


def builder_root(view: PromptView, perception: Perception) -> dict:
    stages = [
        e for e in read_entries(section(view.user, "Stages of a")) if e.id.startswith("super")
    ]
    duration = re.search(rf"Stages of a ({CLOCK}) video", view.user)
    described = [_label_and_summary(e) for e in stages]
    labels = [label for label, _s, _n in described if label]
    title = (
        labels[0]
        if len(labels) == 1
        else (f"{labels[0]}, then {labels[-1]}" if labels else "A video")
    )
    sentences = [
        f"The video runs {duration.group(1) if duration else 'its length'} in {len(stages)} "
        f"stage{'s' if len(stages) != 1 else ''}."
    ]
    for k, ((label, summary, _n), entry) in enumerate(zip(described, stages, strict=True)):
        if k >= 3 and k != len(stages) - 1:
            continue
        lead = "It begins with" if k == 0 else ("It ends with" if k == len(stages) - 1 else "Then")
        when = f"{clock(entry.start)}-{clock(entry.end)}"
        sentences.append(f"{lead} {label} ({when}): {_first_sentence(summary)}".rstrip(": "))
    counts: dict[str, int] = {}
    for label, summary, _n in described:
        for word in content_words(f"{label} {summary}"):
            if len(word) > 3 and word not in _NOT_THEMES:
                counts[word] = counts.get(word, 0) + 1
    spelled = {
        fold(w): w
        for label, summary, _n in described
        for w in re.findall(r"[\w'-]+", f"{label} {summary}")
    }
    themes = [
        spelled.get(w, w).lower()
        for w, _c in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:4]
    ]
    names = list(dict.fromkeys(n for _l, _s, ns in described for n in ns))[:8]
    return {
        "title": " ".join(title.split()[:10]),
        "description": " ".join(sentences[:6]),
        "themes": themes[:5] or ["on-screen text"],
        "key_entities": names,
        "emotional_tone": "not judged (the offline model reads only text and speech)",
    }


#: Words of the offline rules' own phrasing ("Someone says", "Showing ..."), never a theme.
_NOT_THEMES = frozenset(
    fold(w) for w in ("showing", "screen", "shows", "someone", "says", "speech", "stretch", "from")
)
