"""Bridges to other tools' evaluators and runtimes.

Each bridge keeps the foreign import in one module that only the foreign tool loads (through
its own plugin entry point), so ``import videotapestry`` never needs the other tool
installed. ``lmms_docs`` and ``lmms_session`` hold the parts that need no lmms-eval and are
tested without it; ``lmms_eval`` is the model class lmms-eval instantiates.
"""
