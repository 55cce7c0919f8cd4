"""Test utilities shipped with the package (fake OpenAI-compatible server)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from videotapestry.testing.fake_openai import FakeOpenAIServer, FakeReply, RecordedRequest

__all__ = ["FakeOpenAIServer", "FakeReply", "RecordedRequest"]


def __getattr__(name: str) -> Any:
    # Imported lazily so `python -m videotapestry.testing.fake_openai` does not load the module
    # twice (runpy warns when the package import already put it in sys.modules).
    if name in __all__:
        from videotapestry.testing import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
