"""videotapestry: question answering over long videos by query-adaptive refinement of a
hierarchical video memory (Overview, Skim, Focus and Answer agents)."""

__version__ = "0.1.0"
