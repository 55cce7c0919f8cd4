"""The ``lmms_eval.models`` entry point: lmms-eval's registry reads this manifest at start-up
(``ModelRegistryV2.load_entrypoint_manifests``) and imports the class only when a run asks
for ``--model videotapestry``, so listing lmms-eval's models costs no videotapestry import.

``MANIFEST`` is built on first access, not at import: importing ``lmms_eval.models`` builds
lmms-eval's registry, which loads this entry point. Had this module imported lmms-eval at its
top, a process that loads the entry point first (``importlib.metadata`` users, tools listing
plugins) would be asked for ``MANIFEST`` while this module was still half imported, and
lmms-eval would drop the model with a "circular import" warning. Built lazily, the module is
complete before lmms-eval is touched, in either import order.
"""

from __future__ import annotations

from typing import Any

MODEL_ID = "videotapestry"
CLASS_PATH = "videotapestry.integrations.lmms_eval.VideoTapestryLMMS"


def __getattr__(name: str) -> Any:
    if name != "MANIFEST":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # lmms_eval.models imports registry_v2 before it builds its registry, so by the time
    # the registry asks for MANIFEST this import finds the module complete.
    from lmms_eval.models.registry_v2 import ModelManifest

    return ModelManifest(model_id=MODEL_ID, simple_class_path=CLASS_PATH)
