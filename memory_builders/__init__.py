"""Offline construction of hierarchical video memories (raw video to memory); see SPEC §4."""
