"""The offline model's rules for the question-time prompts, one module per prompt family.

Each rule reads the rendered prompt (``prompt_reading``), looks at what it was sent (OCR of
the images, the transcript lines, ``perception``) and returns the JSON the prompt asks for,
computed by a rule a reader can check:

- ``planning``: the locator's anchors and the plans of where and what to observe;
- ``observation``: the visual and the ASR observation;
- ``update``: the SuperEvent and the level updates;
- ``decision``: the level decisions, and the single agent's controller;
- ``answer``: the final answer and the direct answer (the no-memory baseline).

``question_reading`` is the offline model's own reading of the question (its topic, whether
it is about the whole video, what it points at) and ``ranking`` how memory entries are
ranked against it; several families use both. The prompt-name table is
``videotapestry.offline.rule_table``.
"""
