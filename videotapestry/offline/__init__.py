"""The ``offline`` model provider: rule-based answers for every prompt, with no network.

**This is not a vision-language model.** It reads the text in the frames it is sent (OCR
with rapidocr), the transcript lines it is sent, and compares texts with a small packaged
embedding model (all-MiniLM-L6-v2). It sees nothing else: no people, objects, actions,
colours or scenes, only written and spoken words. It exists so that the demo, CI and smoke
tests run a whole memory build and a whole question (every prompt, every role) on a laptop
without a network, an API key or a GPU, with answers that really come from the video when
the video carries its facts as on-screen text or speech.

Every reply is computed from the request by a rule a reader can follow (the modules below
say which), is valid against the prompt's schema, and is deterministic: the same request
gets byte-identical JSON.

Modules: ``client`` (the ``ModelClient`` and its factory), ``rule_table`` (which rule
answers which prompt), ``prompt_reading`` (parsing the rendered prompt), ``perception`` (OCR
of images and grid cells, embeddings), ``screen_text`` (texts read over runs of frames),
``matching`` (lexical and embedding scores), ``temporal`` (the rule for questions about
*when*), ``timestamps`` (times as replies write them), ``query_roles/`` (the rules for the
method's prompts, one module per prompt family, with the model's own reading of the
question), ``builder_roles`` (the rules for the memory builder's prompts) and ``judge``
(eval's judge of free-form answers: an approximate rule of key terms and embedding
agreement, named ``offline`` in reports so its verdicts are never taken for a model's).

The package reads everything from the prompt: it imports none of the method (agents,
graph, retrieval, ...) nor the memory builder, so the method is never checked against its
own code (an import-linter contract in ``pyproject.toml`` keeps it so).

Use it with ``--profile offline`` (``configs/profiles/offline.yaml``): provider ``offline``,
model ``offline-rules``.
"""

from videotapestry.offline.client import (
    MODEL_NAME,
    OfflineClientFactory,
    OfflineModelClient,
)

__all__ = ["MODEL_NAME", "OfflineClientFactory", "OfflineModelClient"]
