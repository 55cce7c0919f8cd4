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
        self.images += record.images
        self.latency_s += record.latency_s
        if record.cost_usd is None:
            self.unpriced_calls += int(not record.cached and record.error is None)
        else:
            self.cost_usd += record.cost_usd

    @property
    def cost_known(self) -> bool:
        """False when some call's model has no price: the total is then unknown."""
        return self.unpriced_calls == 0

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
            by_role={
                role: cls.from_dict(summary) for role, summary in data.get("by_role", {}).items()
            },
        )


class PriceTable:
    def __init__(self, prices: Mapping[str, Price]):
        self._prices = dict(prices)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self._prices.get(model)
        if price is None:
            return None
        return (
            prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
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
