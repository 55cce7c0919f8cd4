"""Token counts for memory text, as an estimate.

Exact counts need the serving model's tokenizer, which is unknown for an arbitrary
OpenAI-compatible endpoint and cannot be downloaded here. The common four-characters-per-token
rule is close for English prose and is what memory budgets and reports use; exact prompt
tokens, when the server reports them, are in the usage records instead.
"""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4) if text else 0
