"""The seed's system (SPEC.md), exact: four stages, one file each, and the engine that runs
them in the seed's order (``engine.py``)."""

from .engine import SeedEngine

__all__ = ["SeedEngine"]
