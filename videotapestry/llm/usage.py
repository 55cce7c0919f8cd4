"""Usage accounting: tokens, images, calls, latency and cost per call, question and run.

Papers in this field report cost per question next to accuracy, so every model call leaves a
``UsageRecord``. Cache hits are counted as calls (with their tokens, which the question did
consume) but cost nothing, since nobody was billed; a model missing from the price table
gets an unknown cost (``None``) instead of a guess.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from videotapestry.config import Price


@dataclass(frozen=True)
class UsageRecord:
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    images: int
    latency_s: float
    cached: bool
    cost_usd: float | None
    level: str | None = None
    error: str | None = None
    #: Of ``prompt_tokens``, those the provider served from its prefix cache.
    cached_prompt_tokens: int = 0
    #: Of ``completion_tokens``, those spent on hidden reasoning.
    reasoning_tokens: int = 0


@dataclass
class UsageSummary:
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    images: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0
    by_role: dict[str, UsageSummary] = field(default_factory=dict)

    def add(self, record: UsageRecord) -> None:
        self._add_flat(record)
        self.by_role.setdefault(record.role, UsageSummary())._add_flat(record)

    def _add_flat(self, record: UsageRecord) -> None:
        self.calls += 1
        self.cached_calls += int(record.cached)
        self.failed_calls += int(record.error is not None)
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cached_prompt_tokens += record.cached_prompt_tokens
        self.reasoning_tokens += record.reasoning_tokens
        self.images += record.images
        self.latency_s += record.latency_s
        if record.cost_usd is None:
            self.unpriced_calls += int(not record.cached and record.error is None)
        else:
            self.cost_usd += record.cost_usd

    def merge(self, other: UsageSummary) -> None:
        """Add ``other``'s totals (and its roles') to this one: a run's usage over its parts."""
        self._merge_flat(other)
        for role, summary in other.by_role.items():
            self.by_role.setdefault(role, UsageSummary())._merge_flat(summary)

    def scaled(self, factor: float) -> UsageSummary:
        """These totals times ``factor`` (counts rounded), e.g. a build's per video-hour; the
        roles are left out."""
        scaled = UsageSummary()
        for name in _SUMMED:
            value = getattr(self, name) * factor
            setattr(scaled, name, value if name in ("latency_s", "cost_usd") else round(value))
        return scaled

    def _merge_flat(self, other: UsageSummary) -> None:
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def cost_known(self) -> bool:
        """False when some call's model has no price: the total is then unknown."""
        return self.unpriced_calls == 0

    def cost_text(self, decimals: int = 4) -> str:
        """The dollars as a person reads them: an unpriced call is named, never shown as $0.

        "$0.0123"; "$0.0123 + 2 calls unpriced" when some calls' models have no price;
        "unpriced (16 calls)" when none has one.
        """
        if self.unpriced_calls == 0:
            return f"${self.cost_usd:.{decimals}f}"
        count = f"{self.unpriced_calls} call{'s' * (self.unpriced_calls != 1)}"
        priced = self.calls - self.cached_calls - self.failed_calls - self.unpriced_calls
        if priced <= 0:
            return f"unpriced ({count})"
        return f"${self.cost_usd:.{decimals}f} + {count} unpriced"

    def tokens_text(self) -> str:
        """Prompt and completion tokens with the provider-cached and reasoning parts named
        where there are any: "20,397 in (12,288 cached) / 3,687 out (1,024 reasoning)"."""
        prompt = f"{self.prompt_tokens:,} in"
        if self.cached_prompt_tokens:
            prompt += f" ({self.cached_prompt_tokens:,} cached)"
        completion = f"{self.completion_tokens:,} out"
        if self.reasoning_tokens:
            completion += f" ({self.reasoning_tokens:,} reasoning)"
        return f"{prompt} / {completion}"

    def describe(self) -> str:
        """One line of what the calls took: calls, images, tokens, model seconds, dollars."""
        calls = f"{self.calls} call{'s' * (self.calls != 1)}"
        extra = [
            f"{n} {what}"
            for n, what in (
                (self.cached_calls, "replayed"),
                (self.failed_calls, "failed"),
            )
            if n
        ]
        if extra:
            calls += f" ({', '.join(extra)})"
        return (
            f"{calls}, {self.images} images, tokens {self.tokens_text()}, "
            f"model {self.latency_s:.1f} s, {self.cost_text()}"
        )

    def to_dict(self) -> dict:
        data = asdict(self)
        data["latency_s"] = round(self.latency_s, 4)
        # An unpriced call makes the total unknown: report null, never a misleading 0.0.
        data["cost_usd"] = round(self.cost_usd, 6) if self.cost_known else None
        data["priced_cost_usd"] = round(self.cost_usd, 6)
        data["by_role"] = {role: summary.to_dict() for role, summary in self.by_role.items()}
        if not self.by_role:
            del data["by_role"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageSummary:
        """The summary ``to_dict`` wrote (a saved trace's); ``to_dict`` of it gives it back."""
        return cls(
            calls=data.get("calls", 0),
            cached_calls=data.get("cached_calls", 0),
            failed_calls=data.get("failed_calls", 0),
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            images=data.get("images", 0),
            latency_s=data.get("latency_s", 0.0),
            cost_usd=data.get("priced_cost_usd", data.get("cost_usd") or 0.0),
            unpriced_calls=data.get("unpriced_calls", 0),
            cached_prompt_tokens=data.get("cached_prompt_tokens", 0),
            reasoning_tokens=data.get("reasoning_tokens", 0),
            by_role={
                role: cls.from_dict(summary) for role, summary in data.get("by_role", {}).items()
            },
        )


#: The fields of a summary that add up across questions, stages and videos.
_SUMMED = (
    "calls",
    "cached_calls",
    "failed_calls",
    "prompt_tokens",
    "completion_tokens",
    "images",
    "latency_s",
    "cost_usd",
    "unpriced_calls",
    "cached_prompt_tokens",
    "reasoning_tokens",
)


class PriceTable:
    def __init__(self, prices: Mapping[str, Price]):
        self._prices = dict(prices)

    def cost(
        self,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cached_prompt_tokens: int = 0,
    ) -> float | None:
        """Dollars for one call, or None when ``model`` has no price (unknown, not free).

        Cached prompt tokens are billed at the cached-input price; without one, at the input
        price, which is what a provider without a cache discount charges.
        """
        price = self._prices.get(model)
        if price is None:
            return None
        cached = min(max(cached_prompt_tokens, 0), prompt_tokens)
        cached_rate = (
            price.input_per_mtok
            if price.cached_input_per_mtok is None
            else price.cached_input_per_mtok
        )
        return (
            (prompt_tokens - cached) * price.input_per_mtok
            + cached * cached_rate
            + completion_tokens * price.output_per_mtok
        ) / 1_000_000


class UsageLedger:
    """Records of one scope (a question or a whole run); safe to share between threads."""

    def __init__(self) -> None:
        self._records: list[UsageRecord] = []
        self._lock = threading.Lock()

    def record(self, record: UsageRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> list[UsageRecord]:
        with self._lock:
            return list(self._records)

    def summary(self) -> UsageSummary:
        summary = UsageSummary()
        for record in self.records:
            summary.add(record)
        return summary


#: The attribute of an exception that carries what its question spent before it was raised.
SPENT_ATTRIBUTE = "videotapestry_usage"


def attach_spent(exc: BaseException, summary: UsageSummary) -> None:
    """Mark ``exc`` with the usage of the calls its question made before it failed.

    A failed question has paid for its calls too; a record without them would make failing
    runs look cheap. The question's own session is gone once the exception leaves it, so
    the summary travels on the exception (it pickles with it to a Ray driver too).
    """
    # An exception type with __slots__ cannot be marked; its record then shows no usage.
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, SPENT_ATTRIBUTE, summary)


def spent_usage(exc: BaseException) -> UsageSummary | None:
    """What ``attach_spent`` marked on ``exc``, or None for an exception no question raised."""
    summary = getattr(exc, SPENT_ATTRIBUTE, None)
    return summary if isinstance(summary, UsageSummary) else None
