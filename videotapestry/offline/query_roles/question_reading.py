"""How the offline model reads the question it is asked: what it is about, whether it asks
about the video as a whole, and which names, numbers and quoted phrases it points at.

These are the offline model's own readings, the way a language model would read the
question off the prompt; they are deliberately not the method's rules. The method decides
for itself whether a question may stop early and cleans the anchors it is sent, and it must
be able to disagree with the model it checks (a model that stops early on a local question
is overruled, a bad anchor is dropped), so the model answering in tests does not borrow the
method's code for either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from videotapestry.offline.matching import compact, content_words, distinctive_words
from videotapestry.offline.prompt_reading import QuestionView

# --------------------------------------------------------------------------- the topic

#: A token of the question as it is spelled, for naming its topic in instructions.
_SPELLED_TOKEN = re.compile(r"[A-Za-z0-9°%.'’-]+")


@dataclass(frozen=True)
class Topic:
    """What a question is about, without its options: for instructions and relevance."""

    question: QuestionView
    words: tuple[str, ...]  # content words of the question, option words removed
    display: str  # the same, as the question spells them
    #: Per option, the words that tell it from the others (``distinctive_words``).
    option_words: tuple[tuple[str, ...], ...] = ()

    @property
    def query(self) -> str:
        """Question and option texts: what plans and decisions rank memories against."""
        return " ".join([self.question.question, *self.question.bodies]).strip()


def topic_of(question: QuestionView) -> Topic:
    """The question's content words that no option's distinctive words repeat, so an
    instruction built from them never hands the next call an option's claim."""
    per_option = distinctive_words(question.bodies) if question.bodies else []
    option_spelled = {w for words in per_option for w in words}
    kept = [w for w in content_words(question.question) if w not in option_spelled]
    shown: list[str] = []
    for token in _SPELLED_TOKEN.findall(question.question):
        folded = content_words(token)
        if folded and folded[0] in kept and token.casefold() not in {s.casefold() for s in shown}:
            shown.append(token.strip(".'’"))
    return Topic(
        question,
        tuple(kept),
        " ".join(shown) or "the subject of the question",
        tuple(tuple(words) for words in per_option),
    )


# --------------------------------------------------------------------------- the whole video

#: "the video", "this whole clip": the video as one thing.
_THE_VIDEO = (
    r"(?:this|the|entire|whole|full)(?: (?:this|the|entire|whole|full))* "
    r"(?:video|clip|film|documentary|episode|vlog|programme|program|show|lecture|talk|"
    r"presentation|footage|recording)"
)
#: What a question about the whole asks for: the video's idea, purpose, message, ...
_GIST = (
    r"(?:idea|topic|theme|point|purpose|subject|message|focus|goal|aim|thesis|argument|"
    r"narrative|storyline|plot|content|structure|takeaway|lesson|moral|gist|summary|overview|"
    r"intent|intention|objective)s?"
)
_MAIN = r"(?:main|central|primary|principal|key|overarching|core|general|overall|underlying)"
_ABOUT_VERBS = (
    r"(?:about|shows?|showing|discuss(?:es|ing)?|focus(?:es|ing)?|covers?|covering|depicts?|"
    r"explains?|describes?|presents?|demonstrates?|concerns?)"
)

#: Each way of asking about the video as a whole, in lower case with single spaces.
_WHOLE_VIDEO_ASKS = tuple(
    re.compile(pattern)
    for pattern in (
        # "summarize", "the gist"
        r"\bsummar(?:y|i[sz](?:e|ed|es|ing))\b|\bgist\b",
        # a title for the video: "a suitable title", "which title fits", "title of the video"
        r"\b(?:best|suitable|appropriate|fitting|good|possible|likely) "
        r"(?:title|headline|caption)\b",
        rf"\btitle (?:of|for) {_THE_VIDEO}\b",
        r"\b(?:title|headline) (?:best )?(?:fits|suits|describes|summari[sz]es)\b",
        # the video's gist: "the purpose of the video", "the video's main message"
        rf"\b{_GIST} (?:of|in|behind|for) {_THE_VIDEO}\b",
        rf"\b{_THE_VIDEO}'s (?:{_MAIN} )?{_GIST}\b",
        # a main gist, of the video or of nothing named: "the overall theme?"
        rf"\b{_MAIN} {_GIST}(?: ?[?.!]? ?$| (?:of|in|behind|for|conveyed by|presented in|"
        rf"expressed in|discussed in) {_THE_VIDEO}\b)",
        # what the video is about: "what is this video mainly about", "the video mostly shows"
        rf"\bwhat (?:is|was|are) {_THE_VIDEO} (?:(?:mainly|mostly|primarily|really|all) )?about\b",
        rf"\b{_THE_VIDEO} (?:(?:is|was) )?(?:mainly|mostly|primarily|largely|chiefly|generally) "
        rf"{_ABOUT_VERBS}\b",
        # the video described as one thing
        rf"\bbest (?:describes?|captures?|characteri[sz]es?|represents?) (?:what )?{_THE_VIDEO}\b",
        rf"\b{_THE_VIDEO} as a whole\b",
    )
)
#: A question that names a moment or asks for a detail is about that moment.
_NAMES_A_MOMENT = re.compile(
    r"\b\d{1,2}:\d{2}\b|\bat the (?:beginning|start|end)\b|\b(?:after|before|when)\b|"
    r"\bhow many\b|\bwhat (?:colou?r|number|time)\b"
)
#: "Which of the following is true?": the options say what it is about.
_OPEN_QUESTION = re.compile(
    r"^(?:which|what)(?: of the following)?(?: (?:option|statement|sentence|description|choice|"
    r"one)s?)?(?: of the following)? ?(?:is|are|best|most)\b"
)
#: An option that describes the whole video: "The video mainly discusses ...", "It shows ...".
_DESCRIBES_THE_VIDEO = re.compile(
    rf"^(?:{_THE_VIDEO}|it) (?:(?:is|was) )?(?:(?:mainly|mostly|primarily|largely) )?"
    r"(?:about|shows|discusses|focuses|covers|depicts|explains|describes|presents|"
    r"demonstrates|documents|follows|introduces|teaches|reviews)\b"
)


def _plain(text: str) -> str:
    """Lower case, one space between words, one kind of apostrophe."""
    return " ".join(text.casefold().replace("’", "'").split())


def asks_about_whole_video(question: QuestionView) -> bool:
    """Whether the question asks about the video as a whole (its main idea, purpose, theme,
    a title or a summary) rather than about a moment or a detail of it.

    A question that names no such thing but asks which statement is true counts when most
    of its options describe the whole video.
    """
    text = _plain(question.question)
    if _NAMES_A_MOMENT.search(text):
        return False
    if any(ask.search(text) for ask in _WHOLE_VIDEO_ASKS):
        return True
    bodies = [_plain(body) for body in question.bodies]
    if not bodies or not _OPEN_QUESTION.search(text):
        return False
    describing = sum(1 for body in bodies if _DESCRIBES_THE_VIDEO.search(body))
    return describing > len(bodies) / 2


# --------------------------------------------------------------------------- what it points at

_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,})[\"“”]|(?<!\w)'([^']{2,})'(?!\w)")
_WORD = re.compile(r"[\w'’-]+")
_NUMBER = re.compile(r"(?<![\w.:])\d+(?:[.:]\d+)*(?:\s*(?:°C|°F|%|kg|km|cm|m|s)(?![A-Za-z]))?")


def _names(question: str) -> list[str]:
    """Runs of capitalized words of two letters or more (the ``B`` of ``Gate B`` is no name),
    without the word that opens a sentence, which is capitalized whatever it is."""
    names: list[str] = []
    run: list[str] = []
    end = -1
    for word in _WORD.finditer(question):
        text = word.group()
        capital = len(text) > 1 and "A" <= text[0] <= "Z"
        before = question[: word.start()]
        opens_sentence = not before.strip() or re.search(r"[.?!]\s$", before) is not None
        joined = run and question[end : word.start()].isspace()
        if capital and joined:
            run.append(text)
        else:
            if run:
                names.append(" ".join(run))
            run = [text] if capital and not opens_sentence else []
        end = word.end()
    if run:
        names.append(" ".join(run))
    return names


def pointed_phrases(question: str) -> list[str]:
    """The phrases a question points at by their letters: quoted phrases, names, numbers,
    each once (case aside), in that order."""
    found = [a or b for a, b in _QUOTED.findall(question)]
    found += _names(question)
    found += _NUMBER.findall(question)
    unique: dict[str, str] = {}
    for phrase in found:
        phrase = phrase.strip()
        unique.setdefault(phrase.casefold(), phrase)
    return list(unique.values())


def names_an_option(text: str, question: QuestionView) -> bool:
    """``text`` is an option's own text, or holds it (letters and digits compared)."""
    folded = text.casefold()
    return any(
        folded == body.casefold() or (compact(body) and compact(body) in compact(text))
        for body in question.bodies
    )


def search_anchors(question: QuestionView, limit: int) -> list[str]:
    """What the locator should search for, at most ``limit`` phrases: the question's quoted
    phrases, names and numbers, then its topic (one phrase of one or two words, else its
    three longest words on their own); never an option (searching for one would find
    support for whatever it claims)."""
    topic = topic_of(question)
    phrases = pointed_phrases(question.question)
    words = topic.display.split()
    if len(words) <= 2:
        phrases += [topic.display] if topic.words else []
    else:
        longest = sorted(range(len(words)), key=lambda i: (-len(words[i]), i))[:3]
        phrases += [words[i] for i in sorted(longest)]
    chosen: dict[str, str] = {}
    for phrase in phrases:
        text = " ".join(phrase.split()).strip(" \"'.?!")
        if (
            text
            and len(text) <= 120
            and not any(text.casefold() == body.casefold() for body in question.bodies)
        ):
            chosen.setdefault(text.casefold(), text)
    # The first ``limit`` are chosen before options are left out: a phrase holding an
    # option's text is dropped, not replaced by a weaker one.
    return [a for a in list(chosen.values())[:limit] if not names_an_option(a, question)]
