"""Integrations: drop-in SDK clients and framework adapters (each framework an optional extra).

``langchain.CompactionMiddleware``, ``pydantic_ai.history_processor`` and
``openai_agents.CompactingSession`` each import their framework lazily, when first used.
"""
