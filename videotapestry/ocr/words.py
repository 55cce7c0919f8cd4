"""Spaces between words and letter/digit confusions inside words, put right after recognition.

rapidocr-onnxruntime ships one recognizer, PP-OCRv4's Chinese model. Its dictionary has the
space character (rapidocr appends it), but the model was trained on Chinese lines, where
words are not spaced, and it seldom emits it: ``Door code 4417`` comes back
``Doorcode4417``, ``EXIT CODE 4417`` as ``EXITC0DE4417`` (worst in capitals and next to
digits). The blank between two words is still plain in the pixels of the line, so the spaces
are put back from them: ``blank_runs`` finds the runs of ink-free columns in the crop the
recognizer read, and ``spaced_text`` puts a space between the two characters whose positions
(the recognizer's CTC columns, mapped to the crop) lie on either side of a run as wide as a
word gap. Tuned on the OCR test videos (bench/bench_ocr_words.py: word accuracy 61 % -> 99.8 %)
and checked on text it was not tuned on, 60 scenes of ``testing.media.SceneTextRenderer``
(four faces, four styles, busy backgrounds): 81.5 % -> 93.9 %, no word split in two.

The same model reads ``O`` as ``0`` inside capital words (``C0DE``, ``R00M``), and ``l`` for
``1`` inside a number (``1l:00``). ``unconfused`` swaps a digit between letters of a word
(and a letter between digits of a number) for the character it is confused with; tokens that
mix them on purpose are left as they are (``B12``, ``P1``, ``4417``, ``11:30``, ``1990s``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np

#: A run of ink-free columns at least this share of the line's ink height is a word gap.
#: Measured on the OCR test videos (bench/bench_ocr_words.py): between words 0.26-0.8 of the
#: height (Hershey capitals at the low end), inside a word at most 0.24, except next to
#: punctuation (``2.``, ``10:00``: up to 0.3), where no space is put (``no_space_between``).
WORD_GAP = 0.25
#: Nor below this many pixels; and a line whose ink is less than ``MIN_HEIGHT_PX`` high gets
#: no space (its blanks, inside words and between them, are a pixel or two).
MIN_GAP_PX = 2
MIN_HEIGHT_PX = 10
#: And at least this many times the median blank between neighbouring characters of the line
#: (touching ones count as 0), in a line with at least ``MIN_LETTER_GAPS`` of them (the
#: median of fewer, ``8/20``, may be a word gap itself).
LETTER_GAPS = 2.0
MIN_LETTER_GAPS = 5
#: In a line where the recognizer put spaces itself, a gap is a word gap only when it is at
#: least this share of the median blank it put a space in (not the narrowest: the blank of a
#: space next to an overhanging ``T`` or ``7`` is narrow).
SPACED_SHARE = 0.6

#: No space before these, whatever the gap (``Gate B:``, ``No. 5``, ``(1)``).
_NO_SPACE_BEFORE = set(".,:;!?)]}%'\"")
#: No space after these, whatever the gap.
_NO_SPACE_AFTER = set("([{'\"")
#: Between digits, these keep the number whole (``10:00``, ``18.50``, ``1,000``).
_NUMBER_JOINERS = set(":.,")

Gap = tuple[int, int]


def ink_mask(grey: np.ndarray) -> np.ndarray:
    """The text pixels of a grey line crop: Otsu's threshold, with the polarity whose pixels
    are the rarer along the crop's border (the border is background)."""
    _, binary = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    ink = binary > 0
    border = np.concatenate([ink[0], ink[-1], ink[:, 0], ink[:, -1]])
    return np.asarray(~ink if border.mean() > 0.5 else ink)


def blank_runs(grey: np.ndarray) -> tuple[list[Gap], int]:
    """Column ranges ``[start, end)`` of the ink-free runs inside a grey line crop's ink (at
    least ``MIN_GAP_PX`` wide), and the height of its ink in pixels."""
    if grey.size == 0:
        return [], 0
    ink = ink_mask(grey)
    rows = np.flatnonzero(ink.any(axis=1))
    columns = np.asarray(ink.any(axis=0), dtype=bool)
    inked = np.flatnonzero(columns)
    if len(rows) == 0 or len(inked) == 0:
        return [], 0
    runs: list[Gap] = []
    start = None
    for x in range(int(inked[0]), int(inked[-1]) + 1):
        if not bool(columns[x]):
            start = x if start is None else start
        elif start is not None:
            if x - start >= MIN_GAP_PX:
                runs.append((start, x))
            start = None
    return runs, int(rows[-1] - rows[0] + 1)


def no_space_between(left: str, right: str, after: str = "") -> bool:
    """Whether a space between characters ``left`` and ``right`` is never wanted, whatever
    the gap: before closing punctuation, after opening punctuation, and inside a number
    (between two digits, whose blank a serif ``1`` widens, and ``10:00``, ``18.50``: a joiner
    between two digits; ``after`` is the character after ``right``)."""
    if left == " " or right == " " or right in _NO_SPACE_BEFORE or left in _NO_SPACE_AFTER:
        return True
    if left.isdigit() and right.isdigit():
        return True
    return (left in _NUMBER_JOINERS and right.isdigit()) or (
        left.isdigit() and right in _NUMBER_JOINERS and after.isdigit()
    )


def _widest(runs: Sequence[Gap], left: float, right: float) -> int:
    """The widest of ``runs`` lying between two character centres (0: none)."""
    return max((end - start for start, end in runs if left < start and end <= right), default=0)


def spaced_text(text: str, centres: Sequence[float], runs: Sequence[Gap], height: int) -> str:
    """``text`` with a space between two neighbouring characters whose ``centres`` (one per
    character, pixels of the crop, left to right) lie on either side of a word gap: a blank
    run at least ``WORD_GAP`` of the ink ``height`` wide, ``LETTER_GAPS`` times the line's
    median blank between neighbouring characters (in a line of ``MIN_LETTER_GAPS`` of them),
    and, when the recognizer put spaces in the line, ``SPACED_SHARE`` of the median blank it
    put one in. A font with wide letter spacing has wide blanks inside words too, and a narrow
    font narrow blanks between words, so the line itself says how wide a word gap is.

    Nothing is added to a line under ``MIN_HEIGHT_PX`` (its blanks are a pixel or two either
    way), nor to one whose blanks do not show the spaces the recognizer read (the crop's ink
    is not the text: a busy background)."""
    if len(centres) != len(text) or not runs or height < MIN_HEIGHT_PX:
        return text
    between = [
        _widest(runs, centres[i - 1], centres[i])
        for i in range(1, len(text))
        if text[i] != " " and text[i - 1] != " "
    ]
    spaced = [
        _widest(runs, centres[i - 1], centres[i + 1])
        for i in range(1, len(text) - 1)
        if text[i] == " " and text[i - 1] != " " and text[i + 1] != " "
    ]
    wide = max(
        MIN_GAP_PX,
        WORD_GAP * height,
        LETTER_GAPS * float(np.median(between)) if len(between) >= MIN_LETTER_GAPS else 0.0,
    )
    if spaced:
        reference = float(np.median(spaced))
        if reference < wide:
            return text
        wide = max(wide, SPACED_SHARE * reference)
    before = {
        i
        for i in range(1, len(text))
        if not no_space_between(text[i - 1], text[i], text[i + 1 : i + 2])
        and _widest(runs, centres[i - 1], centres[i]) >= wide
    }
    before -= {i for i in before if _splits_off_a_letter(text, i, before)}
    return "".join(" " + char if i in before else char for i, char in enumerate(text))


def _splits_off_a_letter(text: str, i: int, before: set[int]) -> bool:
    """Whether a space before ``text[i]``, between two letters, leaves a word of one letter
    on either side (``HAM M ER``, ``Bottl e``): a wide letter, not a word gap."""
    if not (text[i - 1].isalpha() and text[i].isalpha()):
        return False
    ends = sorted({0, len(text), *before, *(k for k, c in enumerate(text) if c == " ")})
    at = ends.index(i)
    left = text[ends[at - 1] : i].strip()
    right = text[i : ends[at + 1]].strip()
    return len(left) == 1 or len(right) == 1


# --------------------------------------------------------------------------- confusions

#: A digit read inside a capital word, and the letter it stands for.
_DIGIT_AS_LETTER = {"0": "O", "1": "I", "5": "S"}
#: A letter read inside a number, and the digit it stands for.
_LETTER_AS_DIGIT = {"O": "0", "o": "0", "l": "1", "I": "1", "|": "1", "S": "5"}
_TOKEN = re.compile(r"\S+")


def _word_fixed(token: str) -> str:
    """Digits between the capitals of a word (``C0DE``, ``R00M``, ``EUR0S``) as letters; a
    run holding any other digit (``A4B``) is left, and so are words with small letters, whose
    ``o`` the recognizer does not take for ``0`` (a digit is as tall as a capital)."""
    if not any(c.isalpha() for c in token) or any(c.islower() for c in token):
        return token

    def letters(match: re.Match[str]) -> str:
        run = match.group(0)
        if any(c not in _DIGIT_AS_LETTER for c in run):
            return run
        return "".join(_DIGIT_AS_LETTER[c] for c in run)

    return re.sub(r"(?<=[^\W\d_])\d+(?=[^\W\d_])", letters, token)


def _number_fixed(token: str) -> str:
    """Letters between digits of a number (``1l:00``, ``4O17``) as digits, when the token
    has no other letter; a letter at a number's end (``1990s``, ``10am``) is left."""
    letters = [c for c in token if c.isalpha() or c == "|"]
    if not letters or any(c not in _LETTER_AS_DIGIT for c in letters):
        return token
    if sum(c.isdigit() for c in token) < 2:
        return token

    def digits(match: re.Match[str]) -> str:
        return "".join(_LETTER_AS_DIGIT[c] for c in match.group(0))

    return re.sub(r"(?<=\d)[OolIS|]+(?=\d|[:.,]\d)|(?<=\d[:.,])[OolIS|]+(?=\d)", digits, token)


def unconfused(text: str) -> str:
    """``text`` with OCR's letter/digit confusions inside words and numbers undone, word by
    word (``EXIT C0DE 4417`` -> ``EXIT CODE 4417``, ``1l:00`` -> ``11:00``)."""
    return _TOKEN.sub(lambda m: _number_fixed(_word_fixed(m.group(0))), text)
