"""What a finished question leaves to the cyclic garbage collector.

With 16 questions in flight, each of the collector's full passes stops every thread (the
event loop's too) for as long as it walks the objects alive, and objects in reference cycles
wait for such a pass before they are freed. So a question's own objects must go by reference
counting: its run context (decoders, trace, images) at once when the question ends, and no
per-call copy of the SDK client, per-call JSON schema generator or per-question compiled graph
left in cycles.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from method_support import OPTIONS, QUESTION, SAMPLE, make_vt

from videotapestry.agents.context import RunContext
from videotapestry.testing.scripted import ScriptedModel


async def released(ref: weakref.ref[RunContext], within_s: float = 2.0) -> bool:
    """Whether ``ref``'s object is freed within ``within_s``, polled while the collector is
    off, so that only reference counting can have freed it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while ref() is not None and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return ref() is None


def test_a_finished_question_leaves_its_context_and_its_calls_to_reference_counting(
    server, embedder, video: Path
) -> None:
    server.on(None, ScriptedModel())
    vt = make_vt(server, embedder)
    contexts: list[weakref.ref[RunContext]] = []
    open_context = vt._context

    def watched(*args, **kwargs) -> RunContext:
        ctx = open_context(*args, **kwargs)
        contexts.append(weakref.ref(ctx))
        return ctx

    vt._context = watched  # type: ignore[method-assign]

    async def two_questions() -> tuple[Counter[str], int, bool]:
        try:
            first = await vt.aanswer(video, SAMPLE, QUESTION, OPTIONS)
            assert first.answer == "B"
            del first
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)  # what a pass would free lands in gc.garbage
            try:
                second = await vt.aanswer(video, SAMPLE, QUESTION, OPTIONS)
                calls = second.usage.calls
                # No collection has run: the context is gone by reference counting alone,
                # once the pool thread that built the result has let go of its arguments (it
                # drops its work item only after the loop has the result: a moment later).
                context_freed = await released(contexts[-1])
                del second
                gc.collect()
                left = Counter(type(o).__name__ for o in gc.garbage)
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
            return left, calls, context_freed
        finally:
            await vt.aclose()

    left, calls, context_freed = asyncio.run(two_questions())
    assert len(contexts) == 2
    assert calls >= 10  # the whole method ran: Overview, Skim, Focus and the answer
    assert context_freed
    for name in ("RunContext", "ModelSession", "Trace", "PyAVReader"):
        assert left[name] == 0, (name, left.most_common(12))
    # Per call or per question before: a copy of the SDK client (with_options), pydantic's
    # schema generator, the compiled graph's channel writers.
    for name in ("AsyncOpenAI", "GenerateJsonSchema", "ChannelWrite", "CompiledStateGraph"):
        assert left[name] == 0, (name, left.most_common(12))


def test_the_graph_is_compiled_once_per_variant_and_afresh_with_a_checkpointer(
    server, embedder
) -> None:
    vt = make_vt(server, embedder)
    first = vt._question_graph(None)
    assert vt._question_graph(None) is first
    single = vt.for_variant("single_agent")
    assert single._question_graph(None) is not first
    saver = InMemorySaver()  # a checkpointer is bound at compile
    assert vt._question_graph(saver) is not first
    assert vt._question_graph(saver) is not vt._question_graph(None)


def test_a_frozen_memory_is_still_freed_when_it_is_released(embedder) -> None:
    """``eval`` freezes each memory it loads (``gc.freeze``), which is only safe while a
    loaded memory holds no reference cycle: then its release frees it at once, frozen or
    not, where a cycle in it would keep it until the process ends."""
    from videotapestry.api import VideoTapestry

    vt = VideoTapestry(overrides=["cache.enabled=false"], embedder=embedder)
    loaded = vt.load_memory(SAMPLE)
    memory, locator = weakref.ref(loaded.memory), weakref.ref(loaded.locator)
    gc.freeze()
    try:
        del loaded
        vt.release_memory(SAMPLE)
        assert memory() is None and locator() is None
    finally:
        gc.unfreeze()
