"""The offline model's judge of free-form answers: an approximate rule, not a model.

It agrees with an answer when the reference's key terms are in it, or when the two say the
same in other words by their embeddings:

- *Key terms* are the reference's numbers and codes (any word with a digit: ``4417``,
  ``10K``), its names (capitalized words that are not function words: ``Maria``, ``Gate``)
  and its other content words, less the words the question already holds (an answer that
  repeats the question has not said anything). Number words up to twenty count as their
  digits (``three`` is ``3``).
- The answer is **correct** when every number and every name of the reference is in it
  (a code one digit off is a wrong code, whatever else matches) and either at least half
  of all key terms are, or its embedding's cosine with the reference's is at least
  ``AGREE_COSINE`` (a paraphrase). An empty answer is wrong.
- The **score** is the share of key terms found (the cosine when the reference has none,
  or when the answer is taken as a paraphrase and the cosine is higher).

The reasoning names the terms found and missing and the cosine, and says the judge is
approximate: it matches words, it does not understand them, so it can be fooled by an
answer that names the right things in a wrong statement, and it misses paraphrases that
share neither words nor much of an embedding. Reports name it as ``offline``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from videotapestry.offline.matching import (
    STOPWORDS,
    contains_phrase,
    content_words,
    cosine,
    fold,
    word_overlap,
    words,
)
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import PromptView, section

#: Embedding cosine (all-MiniLM-L6-v2) from which two short texts are taken to say the same.
AGREE_COSINE = 0.8
#: Share of the key terms an answer must hold when the embeddings do not settle it.
AGREE_SHARE = 0.5

_NUMBER_WORDS = re.findall(
    r"\w+",
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty""",
)
_NUMBER_WORD = re.compile(rf"\b({'|'.join(_NUMBER_WORDS)})\b", re.IGNORECASE)
_WITH_DIGIT = re.compile(r"[\w.:/-]*\d[\w.:/-]*")
_CAPITALIZED = re.compile(r"\b[A-Z][A-Za-z'-]*")
#: What separates the pieces of an answer a code is looked for in: spaces, brackets, quotes
#: and list punctuation (never the letters or digits a code is run together with).
_PIECES = re.compile(r"[\s()\[\]{}\"',;/|]+")


def digits_for_number_words(text: str) -> str:
    """``text`` with the number words zero to twenty written as digits."""
    return _NUMBER_WORD.sub(lambda m: str(_NUMBER_WORDS.index(m.group(1).lower())), text)


@dataclass(frozen=True)
class KeyTerms:
    """What an answer must say to say what the reference says."""

    numbers: tuple[str, ...]
    names: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.numbers, *self.names, *self.words)


def key_terms(reference: str, question: str = "") -> KeyTerms:
    """The reference's numbers, names and content words, less the question's words."""
    text = digits_for_number_words(reference)
    numbers = tuple(dict.fromkeys(n.strip(".:/-") for n in _WITH_DIGIT.findall(text)))
    numbers = tuple(n for n in numbers if n)
    asked = set(content_words(digits_for_number_words(question)))
    names = tuple(
        dict.fromkeys(
            name
            for name in _CAPITALIZED.findall(text)
            if fold(name) not in STOPWORDS and fold(name) not in asked
        )
    )
    taken = {w for term in (*numbers, *names) for w in words(term)}
    # As written (lower case), so the reasoning quotes them; compared folded, as everywhere.
    plain = dict.fromkeys(re.findall(r"[0-9a-z]+", text.casefold()))
    rest = [w for w in plain if fold(w) not in STOPWORDS and fold(w) not in taken]
    kept = [w for w in rest if fold(w) not in asked] or ([] if numbers or names else rest)
    return KeyTerms(numbers=numbers, names=names, words=tuple(kept))


def found_in(term: str, answer: str) -> bool:
    """``term`` in ``answer``: its words in a row; a code run into other text
    (``4417`` in ``CODE4417``); or each of its words by a crude stem (``deliveries`` for
    ``delivery``; never for words with digits, where one character is another code)."""
    wanted, said = words(term), words(answer)
    if not wanted:
        return False
    n = len(wanted)
    if any(said[i : i + n] == wanted for i in range(len(said) - n + 1)):
        return True
    if any(ch.isdigit() for ch in term):
        # Piece by piece: run together, a code and the time after it ("1686" (19:16) would
        # read as one longer number.
        return any(contains_phrase(term, piece) for piece in _PIECES.split(answer) if piece)
    return word_overlap(wanted, answer) == 1.0


@dataclass(frozen=True)
class Verdict:
    correct: bool
    score: float
    found: tuple[str, ...]
    missing: tuple[str, ...]
    cosine: float
    why: str


def verdict(terms: KeyTerms, answer: str, similarity: float) -> Verdict:
    """The rule's verdict on ``answer`` (the embedding cosine with the reference given)."""
    answer = digits_for_number_words(answer)
    if not answer.strip():
        return Verdict(False, 0.0, (), terms.all, similarity, "the answer is empty")
    found = tuple(t for t in terms.all if found_in(t, answer))
    missing = tuple(t for t in terms.all if t not in found)
    required = [t for t in (*terms.numbers, *terms.names) if t in missing]
    share = len(found) / len(terms.all) if terms.all else None
    paraphrase = similarity >= AGREE_COSINE
    if required:
        correct, why = False, f"the answer lacks the reference's {_listed(required)}"
    elif share is not None and share >= AGREE_SHARE:
        correct, why = True, f"it holds {len(found)} of the {len(terms.all)} key terms"
    elif paraphrase:
        correct, why = True, f"the embeddings agree (cosine {similarity:.2f} >= {AGREE_COSINE})"
    elif share is None:
        correct, why = False, f"no key term to match and cosine {similarity:.2f} < {AGREE_COSINE}"
    else:
        correct = False
        why = (
            f"it holds only {len(found)} of the {len(terms.all)} key terms and the "
            f"embeddings differ (cosine {similarity:.2f} < {AGREE_COSINE})"
        )
    score = share if share is not None else max(0.0, similarity)
    if correct and paraphrase:  # said in other words: as much as the embeddings agree
        score = max(score, similarity)
    return Verdict(correct, round(score, 3), found, missing, similarity, why)


def _listed(terms: Sequence[str]) -> str:
    return ", ".join(f'"{t}"' for t in terms)


def judge(view: PromptView, perception: Perception) -> dict:
    """The reply to the ``judge`` prompt: its question, reference and answer read back."""
    question = section(view.user, "Question:", "Reference answer:").strip()
    reference = section(view.user, "Reference answer:", "Answer to judge:").strip()
    answer = section(view.user, "Answer to judge:").strip()
    if not reference:
        raise ValueError("the judge prompt holds no reference answer")
    vectors = perception.embed([reference, answer]) if answer else {}
    similarity = round(cosine(vectors.get(reference), vectors.get(answer)), 3)
    result = verdict(key_terms(reference, question), answer, similarity)
    found = _listed(result.found) or "none"
    missing = _listed(result.missing) or "none"
    return {
        "reasoning": (
            "Approximate offline judge (key terms and embedding agreement, not a language "
            f"model): {'agrees' if result.correct else 'disagrees'}: {result.why}. Key terms "
            f"found: {found}; missing: {missing}; cosine {result.cosine:.2f}."
        ),
        "correct": result.correct,
        "score": result.score,
    }
