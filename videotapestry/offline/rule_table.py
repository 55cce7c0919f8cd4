"""Which rule answers which prompt: the offline model's whole repertoire, in one table.

A prompt the table does not name is refused (``client.answer``); a new prompt gets its rule
in the module of its family and a line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from videotapestry.offline import builder_roles, judge
from videotapestry.offline.perception import Perception
from videotapestry.offline.prompt_reading import PromptView
from videotapestry.offline.query_roles import answer, decision, observation, planning, update

#: A rule: the prompt as read, and the perception to look with → the JSON-ready reply.
Rule = Callable[[PromptView, Perception], dict]

RULES: Mapping[str, Rule] = {
    # The method's prompts (VideoTapestry's agents).
    "locator_anchors": planning.locator_anchors,
    "overview_planning": planning.overview_planning,
    "level_planning": planning.level_planning,
    "asr_planning": planning.asr_planning,
    "visual_observation": observation.visual_observation,
    "asr_observation": observation.asr_observation,
    "super_update": update.super_update,
    "level_update": update.level_update,
    "decision": decision.decision,
    "controller": decision.controller,
    "final_answer": answer.final_answer,
    "direct_answer": answer.direct_answer,
    # The memory builder's prompts.
    "builder_clip": builder_roles.builder_clip,
    "builder_macro_boundaries": builder_roles.builder_macro_boundaries,
    "builder_macro": builder_roles.builder_macro,
    "builder_entity_merge": builder_roles.builder_entity_merge,
    "builder_super": builder_roles.builder_super,
    "builder_root": builder_roles.builder_root,
    # Eval's judge of free-form answers (approximate: key terms and embeddings).
    "judge": judge.judge,
}
