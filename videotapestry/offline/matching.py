"""How the offline model weighs text against text: word overlap and embedding similarity.

Two signals, both transparent. Lexical: an option's text (or its distinctive words, the ones
not shared by every option) found in a piece of evidence, with OCR's usual confusions
folded (``0``/``o``, ``1``/``l``/``i``) and spaces ignored, so ``CODE4417`` read off a sign
still contains ``4417``. Semantic: cosine similarity of all-MiniLM-L6-v2 vectors, for
evidence that says the same thing in other words. An exact-ish text match outweighs any
similarity, as it should when the evidence was read off the screen. Pure functions over
precomputed vectors; the caller embeds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})
_STOP = re.findall(
    r"\w+",
    """a an the of in on at to for from by with and or but is are was were be been being do
    does did has have had this that these those it its as into onto over under about than
    then there here what which who whom whose when where why how many much does video clip
    shown show shows seen see appear appears appeared screen frame frames text says said
    according following option options answer question during after before while one any
    some all each can could would should will may might must not no yes i you he she they
    we his her their our your me him them us""",
)


def fold(text: str) -> str:
    return text.casefold().translate(_CONFUSABLE)


#: Words that carry no topic, folded like the words they are compared with.
STOPWORDS = frozenset(fold(w) for w in _STOP)


def words(text: str) -> list[str]:
    """Lower-case letter/digit runs, OCR confusions folded."""
    return re.findall(r"[0-9a-z]+", fold(text))


def content_words(text: str) -> list[str]:
    return [w for w in dict.fromkeys(words(text)) if w not in STOPWORDS]


def compact(text: str) -> str:
    return "".join(words(text))


def contains_phrase(needle: str, haystack: str) -> bool:
    """``needle``'s words in ``haystack`` in order, as words or run together (``CODE4417``),
    never inside a longer number or word of the same kind (``4417`` is not in ``14417``)."""
    key = compact(needle)
    if not key:
        return False
    if len(key) < 3:
        spaced = " ".join(words(haystack))
        return bool(re.search(rf"(?<![0-9a-z]){re.escape(key)}(?![0-9a-z])", spaced))
    text = compact(haystack)
    # Folding is one character for one, so the unfolded text tells digits from letters.
    raw = "".join(re.findall(r"[0-9a-z]+", haystack.casefold()))
    raw_key = "".join(re.findall(r"[0-9a-z]+", needle.casefold()))
    if len(raw) != len(text) or len(raw_key) != len(key):
        raw, raw_key = text, key
    start = text.find(key)
    while start != -1:
        end = start + len(key)
        before = raw[start - 1] if start > 0 else ""
        after = raw[end] if end < len(raw) else ""
        ok_before = not before or before.isdigit() != raw_key[0].isdigit()
        ok_after = not after or after.isdigit() != raw_key[-1].isdigit()
        if ok_before and ok_after:
            return True
        start = text.find(key, start + 1)
    return False


def distinctive_words(bodies: Sequence[str]) -> list[list[str]]:
    """Per option, its content words that not every option shares (all of them if none)."""
    sets = [content_words(b) or words(b) for b in bodies]
    shared = set.intersection(*(set(s) for s in sets)) if len(sets) > 1 else set()
    return [[w for w in s if w not in shared] or s for s in sets]


def word_overlap(wanted: Sequence[str], text: str) -> float:
    """Share of ``wanted`` words found in ``text`` (as words, or run together in it)."""
    if not wanted:
        return 0.0
    present = set(words(text))
    squashed = compact(text)
    hits = sum(
        1
        for w in wanted
        if w in present or (len(w) >= 4 and w in squashed) or _same_stem(w, present)
    )
    return hits / len(wanted)


def _same_stem(word: str, present: set[str]) -> bool:
    """``word`` and a word of ``present`` share a crude stem (``delivery``/``deliveries``,
    ``cards``/``card``): the first len-3 letters, at least 4. Words with digits never do,
    where one character is another code."""
    if len(word) < 5 or not word.isalpha():
        return False
    prefix = word[: max(4, len(word) - 3)]
    return any(p.startswith(prefix) and p.isalpha() for p in present)


def lexical_support(body: str, distinct: Sequence[str], text: str) -> float:
    """1.0 when the option's whole text is in ``text``; else the share of its distinctive
    words that are (0.0 when fewer than half are: one shared word is not support)."""
    if contains_phrase(body, text):
        return 1.0
    share = word_overlap(distinct, text)
    return share if share >= 0.5 else 0.0


#: A name with a number (``Pier 88``, ``room 4B``): it names one thing among look-alikes.
_NUMBERED_NAME = re.compile(r"\b[A-Za-z]{2,} [0-9][0-9A-Za-z]*\b")


def names_share(question: str, text: str) -> float:
    """Share of the question's numbered names (``Pier 88``) that ``text`` spells out, run
    together or not (``PIER88C0DE1584``); 0.0 when the question has none."""
    names = list(dict.fromkeys(_NUMBERED_NAME.findall(question)))
    if not names:
        return 0.0
    return sum(contains_phrase(n, text) for n in names) / len(names)


def cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None:
        return 0.0
    return float(np.dot(a, b))


@dataclass(frozen=True)
class OptionScore:
    letter: str
    body: str
    score: float
    lexical: float
    semantic: float
    line: str
    line_relevance: float


def score_options(
    letters: Sequence[str],
    bodies: Sequence[str],
    units: Sequence[str],
    vectors: Mapping[str, np.ndarray],
    question: str,
    *,
    observed: Sequence[bool] | None = None,
    question_words: Sequence[str] = (),
) -> list[OptionScore]:
    """Each option's support in the evidence ``units`` (memory lines, readings).

    score = max over units of lexical x (1 + relevance of the unit to the question)
    [x 1.2 for units that are observations] + 0.3 x the best cosine between the option and
    a unit, where relevance = cosine with the question + the share of the question's
    numbered names the unit spells out + 0.3 x the share of ``question_words`` (the
    question's content words, option words removed) it holds. An option found as text in
    evidence about the question wins (a line naming the asked-for ``Pier 88`` beats one about
    ``Bay 87`` when both spell out an option); similarity decides only among options no
    evidence spells out.
    """
    distinct = distinctive_words(bodies)
    q = vectors.get(question)
    observed = observed or [False] * len(units)
    relevance = [
        max(0.0, cosine(q, vectors.get(u)))
        + names_share(question, u)
        + 0.3 * word_overlap(question_words, u)
        for u in units
    ]
    scores = []
    for letter, body, wanted in zip(letters, bodies, distinct, strict=True):
        o = vectors.get(body)
        best_lex, best_line, best_rel = 0.0, "", 0.0
        best_sem, sem_line = 0.0, ""
        for unit, rel, seen in zip(units, relevance, observed, strict=True):
            lex = lexical_support(body, wanted, unit)
            if lex:
                value = lex * (1 + rel) * (1.2 if seen else 1.0)
                if value > best_lex + 1e-9:
                    best_lex, best_line, best_rel = value, unit, rel
            sem = cosine(o, vectors.get(unit))
            if sem > best_sem + 1e-9:
                best_sem, sem_line = sem, unit
        total = best_lex + 0.3 * max(0.0, best_sem)
        scores.append(
            OptionScore(
                letter,
                body,
                round(total, 4),
                round(best_lex, 4),
                round(best_sem, 4),
                best_line or sem_line,
                round(best_rel, 4),
            )
        )
    return scores


def best_option(scores: Sequence[OptionScore]) -> OptionScore:
    """Highest score; ties go to the higher semantic similarity, then the earlier option."""
    return max(scores, key=lambda s: (s.score, s.semantic, -scores.index(s)))


def relevance(
    text: str,
    query: str,
    vectors: Mapping[str, np.ndarray],
    *,
    query_words: Sequence[str] = (),
    option_bodies: Sequence[str] = (),
    option_words: Sequence[Sequence[str]] = (),
) -> float:
    """How much ``text`` bears on a question: its cosine with ``query``, plus word overlap
    with the question's content words, plus the best lexical support of any option."""
    value = max(0.0, cosine(vectors.get(query), vectors.get(text)))
    value += 0.3 * word_overlap(query_words, text)
    if option_bodies:
        value += 0.5 * max(
            lexical_support(b, w, text) for b, w in zip(option_bodies, option_words, strict=True)
        )
    return round(value, 4)


_HEADING = re.compile(r"^(?:\[(?:Visual|Transcript|Evidence)\]|[\w -]{0,40}:)$")
_OBSERVED = re.compile(
    r"^\[(?:Visual|Transcript)\]|^\[\d{1,2}:\d{2}|^Observed:|read by OCR|\(scene_text\)"
)


def split_units(text: str) -> list[tuple[str, bool]]:
    """Evidence units of a memory text and whether each is an observation (a ``[Visual]`` /
    ``[Transcript]`` part, a quoted transcript line, an ``Observed:`` fact, an OCR node):
    its lines, split further at ``;`` before a timestamp and, in long lines, after every
    ``;`` and sentence end. Headings are skipped."""
    units: dict[str, bool] = {}
    for line in text.split("\n"):
        line = line.strip().removeprefix("- ")
        if not line or _HEADING.match(line):
            continue
        observed = bool(_OBSERVED.search(line))
        splitter = r"(?<=[.;!?]) (?=\S)" if len(line) > 160 else r"; (?=\d{1,2}:\d{2})"
        for part in re.split(splitter, line):
            part = part.strip().rstrip(";").strip()
            if len(compact(part)) >= 2:
                units[part] = units.get(part, False) or observed
    return list(units.items())
