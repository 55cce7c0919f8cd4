"""Spaces between words and letter/digit confusions, put right after recognition
(``videotapestry.ocr.words``): the pure rules on made-up lines and crops."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from videotapestry.ocr.words import (
    Gap,
    blank_runs,
    no_space_between,
    spaced_text,
    unconfused,
)


def _centres(text: str, pitch: float = 10.0) -> list[float]:
    return [5.0 + pitch * k for k in range(len(text))]


def _line(text: str, blank: int, wide: dict[int, int]) -> tuple[list[float], list[Gap]]:
    """Character centres and blank runs of a made-up line: each character 10 px of ink, then
    ``blank`` px of background (``wide[k]`` after character ``k``); a space has no ink, its
    centre is in the middle of the blank before the next character."""
    centres: list[float] = []
    runs: list[Gap] = []
    x = 0
    for k, char in enumerate(text):
        if char == " ":
            centres.append(x - wide.get(k - 1, blank) / 2)
            continue
        centres.append(x + 5)
        x += 10
        if k < len(text) - 1:
            gap = wide.get(k, blank)
            runs.append((x, x + gap))
            x += gap
    return centres, runs


def test_blank_runs_are_the_ink_free_columns_inside_the_line() -> None:
    grey = np.full((30, 120), 200, np.uint8)  # light background, dark ink
    grey[5:25, 10:30] = 20
    grey[5:25, 33:50] = 20  # 3 px between letters
    grey[5:25, 62:100] = 20  # 12 px between words
    runs, height = blank_runs(grey)
    assert runs == [(30, 33), (50, 62)]
    assert height == 20
    # Light ink on a dark background: the polarity follows the border.
    assert blank_runs(255 - grey) == (runs, height)
    assert blank_runs(np.full((30, 120), 90, np.uint8)) == ([], 0)


def test_a_space_goes_where_a_wide_blank_lies_between_two_characters() -> None:
    # Blanks of 3 px between neighbours, 12 px after "Door" and 11 px after "code".
    centres, runs = _line("Doorcode4417", 3, {3: 12, 7: 11})
    assert spaced_text("Doorcode4417", centres, runs, height=20) == "Door code 4417"


def test_a_line_the_recognizer_spaced_sets_how_wide_a_word_gap_is() -> None:
    # Wide letter spacing (6 px) and word gaps of 14 px: the recognizer put one space, so a
    # blank of 6 px is not a word gap even though it is over a quarter of the height.
    text = "Channel 2:stewards"
    centres, runs = _line(text, 6, {6: 14, 9: 14})
    assert spaced_text(text, centres, runs, height=21) == "Channel 2: stewards"
    # Without the recognizer's space, the line's own letter spacing says the same.
    glued = text.replace(" ", "")
    centres, runs = _line(glued, 6, {6: 14, 8: 14})
    assert spaced_text(glued, centres, runs, height=21) == "Channel 2: stewards"


def test_no_space_is_put_where_the_pixels_cannot_tell() -> None:
    text = "CODE4417"
    centres = _centres(text)
    runs = [(int(centres[3]) + 1, int(centres[3]) + 9)]
    assert spaced_text(text, centres, runs, height=20) == "CODE 4417"
    assert spaced_text(text, centres, runs, height=6) == text  # too small to measure
    assert spaced_text(text, centres[:-1], runs, height=20) == text  # positions missing
    # The recognizer spaced "A B", but the pixels show no blank there: a busy background.
    spaced = "A BCODE4417"
    assert spaced_text(spaced, _centres(spaced), runs, height=20) == spaced


def test_a_space_never_splits_a_number_or_leaves_a_single_letter() -> None:
    assert no_space_between("1", "9")
    assert no_space_between("0", ":", "0") and no_space_between(":", "3")
    assert no_space_between("e", ":") and no_space_between("(", "a")
    assert not no_space_between("e", "4") and not no_space_between(":", "s")
    text = "HAMMER"
    centres = _centres(text)
    runs = [(int(centres[2]) + 1, int(centres[2]) + 9), (int(centres[3]) + 1, int(centres[3]) + 9)]
    assert spaced_text(text, centres, runs, height=20) == "HAMMER"


@pytest.mark.parametrize(
    ("read", "meant"),
    [
        ("EXIT C0DE 4417", "EXIT CODE 4417"),
        ("PLATF0RM 3", "PLATFORM 3"),
        ("TICKET PRICE 18 EUR0S", "TICKET PRICE 18 EUROS"),
        ("R00M 19", "ROOM 19"),
        ("W1F1", "WIF1"),  # the last digit is at the word's end: left
        ("Stalls open at 1l:00", "Stalls open at 11:00"),
        ("Door 4O17", "Door 4017"),
    ],
)
def test_confusions_inside_words_and_numbers_are_undone(read: str, meant: str) -> None:
    assert unconfused(read) == meant


@pytest.mark.parametrize(
    "text",
    [
        "Door code 4417",
        "11:30 Puppet show",
        "TICKET PRICE 18 EUROS",
        "B12",
        "Car park P1: staff",
        "A4B",
        "1990s",
        "10am",
        "MP3",
        "7b Bottle Forest",
        "Riverafter15bb",  # small letters: their o is not read as 0
        "RIVERSIDE-CREW",
        "18.50",
    ],
)
def test_tokens_that_mix_letters_and_digits_on_purpose_are_kept(text: str) -> None:
    assert unconfused(text) == text


def test_spaces_come_back_on_a_drawn_line() -> None:
    """The pixels of a line drawn as the test videos draw it (OpenCV's Hershey face), with
    the character positions spread over it as the recognizer's columns are."""
    image = np.zeros((40, 300), np.uint8)
    cv2.putText(image, "EXIT CODE 4417", (5, 32), cv2.FONT_HERSHEY_DUPLEX, 1.0, 255, 2)
    runs, height = blank_runs(image)
    # Where each character is: the middle of its own advance (getTextSize of the prefix).
    centres = []
    for k, char in enumerate("EXIT CODE 4417"):
        before = cv2.getTextSize("EXIT CODE 4417"[:k], cv2.FONT_HERSHEY_DUPLEX, 1.0, 2)[0][0]
        width = cv2.getTextSize(char, cv2.FONT_HERSHEY_DUPLEX, 1.0, 2)[0][0]
        centres.append(5 + before + width / 2)
    glued = [c for c, char in zip(centres, "EXIT CODE 4417", strict=True) if char != " "]
    assert spaced_text("EXITCODE4417", glued, runs, height) == "EXIT CODE 4417"


def test_a_new_way_of_reading_is_a_new_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts read before a change to the reading are not reused: the engine's version (in the
    builder's OCR checkpoint key) and the offline model's revision (in its reply cache's key)
    both carry ``READING``."""
    pytest.importorskip("rapidocr_onnxruntime")
    from videotapestry.config import BuilderOcrSettings
    from videotapestry.ocr import RapidOcrEngine, engine
    from videotapestry.offline import client

    assert RapidOcrEngine(BuilderOcrSettings(engine="rapidocr")).version.endswith(engine.READING)
    original = client.rules_revision()
    monkeypatch.setattr(client, "READING", engine.READING + "-older")
    assert client.rules_revision() != original
