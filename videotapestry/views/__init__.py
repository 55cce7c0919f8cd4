"""HTML views of memories and runs (see ``page`` for what every page promises)."""
