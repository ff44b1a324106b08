"""The seed's system, exact: four stages, one file each, and the engine that runs them in the
seed's order (``engine.py``).

The seed is the compaction algorithm this project started from, kept bit for bit as the
``seed`` preset so it can be measured. Tags such as ``(S-4.1)`` in this package name the rule
of that algorithm a piece of code implements; ``tests/test_spec_seed.py`` holds one test per
rule, named after its tag (``test_s4_1_...``)."""

from .engine import SeedEngine

__all__ = ["SeedEngine"]
