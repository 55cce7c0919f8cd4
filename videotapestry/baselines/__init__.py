"""Baselines that answer without refining the memory (Direct)."""
