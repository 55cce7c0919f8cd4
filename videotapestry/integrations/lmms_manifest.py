"""The ``lmms_eval.models`` entry point: lmms-eval's registry reads this manifest at start-up
(``ModelRegistryV2.load_entrypoint_manifests``) and imports the class only when a run asks
for ``--model videotapestry``, so listing lmms-eval's models costs no videotapestry import.
"""

from __future__ import annotations

from lmms_eval.models.registry_v2 import ModelManifest

MODEL_ID = "videotapestry"

MANIFEST = ModelManifest(
    model_id=MODEL_ID,
    simple_class_path="videotapestry.integrations.lmms_eval.VideoTapestryLMMS",
)
