"""On-screen text with exact times, from an OCR engine over the kept frames (rapidocr).

A VLM reads text too, but it sees a few frames per clip and reports a time no better than
the frame it saw; the OCR engine reads every kept frame (one a second by default), so an
OCRText node starts within one sample interval of the text's real appearance.

Reading is the costly part (~0.1–0.4 s per frame on a CPU: the text detector over the whole
picture, then the recognizer once per text box), and most of it is spent on text that was
already read. So a gate (``builder.ocr.gate``) decides, against the picture the current
texts were read from, what to read again:

- ``regions`` (the default): the frame and that picture are compared as grey thumbnails
  (cells of 1/64 of the width). A frame with no cell changed by more than
  ``region_threshold`` grey levels, and no text box already read whose own pixels changed
  (each box is compared with itself in cells an eighth of its height, since small print
  changing in a still picture, a slide counter, is lost in the thumbnail's cells), is not
  read at all; a changed box is a region of its own. A change lying wholly inside a text
  box already read (a ticking clock) is recognized again in that box, without the detector.
  Any other group of changed cells becomes a region, grown to cover every text box it
  touches (a line of text is read whole), that goes through the detector; a box found there
  whose pixels did not change keeps its text, and only the others go through the
  recognizer, one box per call. Boxes outside the regions keep their texts.
- ``frame``: a frame whose 64-pixel thumbnail differs from the last frame read by less than
  ``change_threshold`` grey levels on average is not read; any other frame is read whole.
  Its limit is small text changing inside an otherwise still picture (a ticking clock): it
  is re-read only when something larger changes.
- ``none``: every kept frame is read whole (the reference the gates are measured against).

Texts are followed from frame to frame by a normalized key: letters and digits only, case
folded, and the characters OCR confuses most folded together (``0``/``o``, ``1``/``l``/``i``),
so ``STATI0N`` continues ``STATION`` while ``00:02`` and ``00:03`` stay two texts. They become
spans ``[first seen, last seen + one interval]``.

The recognizer (rapidocr's PP-OCRv4 Chinese model) seldom emits a space and reads ``O`` as
``0`` in capital words; the engine puts the spaces back from the blanks in each line's pixels
and undoes those confusions inside words (``words``), so ``Door code 4417`` is read as drawn,
not ``Doorcode4417``.

The parts: ``engine`` (the engines behind their protocols), ``gate`` (what of a frame is read
again), ``words`` (spaces between words and letter/digit confusions, after recognition),
``spans`` (texts followed over time into spans).
"""

from videotapestry.ocr.engine import (
    OcrBox,
    OcrEngine,
    OcrHit,
    RapidOcrEngine,
    RegionOcrEngine,
    TextBox,
    make_ocr_engine,
    missing_ocr,
)
from videotapestry.ocr.gate import OcrStats, thumbnail
from videotapestry.ocr.spans import TextSpan, frames_to_read, read_texts, same_text, text_key

__all__ = [
    "OcrBox",
    "OcrEngine",
    "OcrHit",
    "OcrStats",
    "RapidOcrEngine",
    "RegionOcrEngine",
    "TextBox",
    "TextSpan",
    "frames_to_read",
    "make_ocr_engine",
    "missing_ocr",
    "read_texts",
    "same_text",
    "text_key",
    "thumbnail",
]
