"""How much of a video's prompts a provider's prefix cache could serve: a pure measure.

A provider caches the prefix of a prompt it computed and serves it again to a later prompt
that starts the same way, so the share of prompt tokens that repeat a prefix an earlier call
already sent is what prompt order can win (SPEC §17: what repeats across the calls and the
questions of one video goes first). Two rules are measured:

- OpenAI's: only a prompt of at least 1,024 tokens is cached; the cached part is the longest
  prefix it shares with an earlier prompt, in steps of 128 tokens, and at least 1,024 tokens.
- vLLM's automatic prefix caching: 16-token blocks; every full block of the longest shared
  prefix is reused, but the prompt's last token is always computed (a prompt sent twice
  reuses all its blocks but the one holding its last token).

Prompts are token sequences: text is cut into the four-character tokens of the project's
estimate (``videotapestry.tokens``), and an image is ``IMAGE_TOKENS`` tokens at the place it
has in the message, the same tokens for the same picture (its SHA-256). A message is its
role's marker, its text, then its images (its images, then its text, when the message puts
them first), as the OpenAI-compatible client sends them.

OpenAI also routes by ``prompt_cache_key``: the calls of one video sent with one key
(``ModelSession.cache_key``, ``models.<role>.prompt_cache_key: true``) reach the machines that
hold their prefixes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from videotapestry.llm.types import Message, ModelRequest

#: Tokens one image counts as (OpenAI's price of a low-detail image; the fake server's too).
IMAGE_TOKENS = 85
#: Characters per token of the project's estimate (``videotapestry.tokens.estimate_tokens``).
CHARS_PER_TOKEN = 4

Token = Hashable


@dataclass(frozen=True)
class CacheRule:
    """A provider's prefix cache: reuse in ``block``-token steps, from ``minimum`` tokens
    (of the prompt and of the shared prefix), and whether the last token is always computed."""

    name: str
    block: int
    minimum: int = 0
    last_token_computed: bool = False

    def cached(self, shared: int, length: int) -> int:
        """Tokens of a ``length``-token prompt served from a ``shared``-token common prefix."""
        if length < self.minimum:
            return 0
        if self.last_token_computed:
            shared = min(shared, length - 1)
        reused = shared // self.block * self.block
        return reused if reused >= self.minimum else 0


OPENAI = CacheRule("openai", block=128, minimum=1024)
VLLM = CacheRule("vllm", block=16, last_token_computed=True)
RULES: tuple[CacheRule, ...] = (OPENAI, VLLM)


def text_tokens(text: str) -> list[Token]:
    """``text`` as the estimate's tokens: consecutive four-character pieces (the last shorter),
    as many as ``estimate_tokens(text)`` counts."""
    return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


def image_tokens(digest: str, count: int = IMAGE_TOKENS) -> list[Token]:
    """An image as ``count`` tokens that only the same picture has."""
    return [("image", digest, k) for k in range(count)]


def message_tokens(message: Message) -> list[Token]:
    """One message as the client sends it: the role, the text, then its images (the images
    before the text when ``message.images_first``)."""
    pictures: list[Token] = [t for image in message.images for t in image_tokens(image.sha256)]
    text = text_tokens(message.text)
    return [("role", message.role), *(pictures + text if message.images_first else text + pictures)]


def prompt_tokens(messages: Iterable[Message] | ModelRequest) -> list[Token]:
    """A request's (or a message list's) prompt as one token sequence."""
    if isinstance(messages, ModelRequest):
        messages = messages.messages
    return [token for message in messages for token in message_tokens(message)]


def shared_prefix(a: Sequence[Token], b: Sequence[Token]) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass(frozen=True)
class CallShare:
    """One prompt: its tokens, the longest prefix an earlier prompt shares, what each rule
    serves from the cache."""

    tokens: int
    shared: int
    cached: dict[str, int]


@dataclass(frozen=True)
class PrefixShare:
    """The prompts of one sequence of calls, in call order."""

    calls: tuple[CallShare, ...]

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.calls)

    def cached(self, rule: str) -> int:
        return sum(c.cached[rule] for c in self.calls)

    def share(self, rule: str) -> float:
        """The share of prompt tokens ``rule``'s cache serves (0 for no tokens)."""
        return self.cached(rule) / self.tokens if self.tokens else 0.0

    def part(self, start: int, stop: int | None = None) -> PrefixShare:
        """The calls ``start:stop`` (still measured against every prompt before them)."""
        return PrefixShare(self.calls[start:stop])


def prefix_share(
    prompts: Sequence[Sequence[Token] | ModelRequest], rules: Sequence[CacheRule] = RULES
) -> PrefixShare:
    """Measure ``prompts`` (token sequences or requests, in call order): for each, the longest
    prefix it shares with any earlier one, and the tokens each of ``rules`` serves from it.

    A cache never evicts here: this is what order can win at most, not a provider's hit rate.
    """
    seen: list[Sequence[Token]] = []
    calls = []
    for prompt in prompts:
        tokens = prompt_tokens(prompt) if isinstance(prompt, ModelRequest) else prompt
        shared = max((shared_prefix(tokens, earlier) for earlier in seen), default=0)
        calls.append(
            CallShare(
                tokens=len(tokens),
                shared=shared,
                cached={rule.name: rule.cached(shared, len(tokens)) for rule in rules},
            )
        )
        seen.append(tokens)
    return PrefixShare(tuple(calls))


# -- OpenAI's prompt_cache_key: one per video ------------------------------------------------


def video_cache_key(identity: str) -> str:
    """The ``prompt_cache_key`` of a video: a short digest of ``identity`` (its fingerprint,
    or its memory's id), the same in every run and process, and naming nothing of the video."""
    return "videotapestry-" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
