"""The framework extras and which of them are installed, read from package metadata.

``EXTRAS`` names each framework adapter's extra, the distribution it installs and the module
that adapter imports from it; ``installed()`` says which are present and at which version,
without importing any of them (importing a framework costs seconds; ``doctor`` only asks).
"""

from __future__ import annotations

from importlib import metadata
from typing import NamedTuple


class Extra(NamedTuple):
    extra: str
    package: str
    adapter: str


EXTRAS = (
    Extra("langchain", "langchain", "context_compact.integrations.langchain"),
    Extra("pydantic-ai", "pydantic-ai-slim", "context_compact.integrations.pydantic_ai"),
    Extra("openai-agents", "openai-agents", "context_compact.integrations.openai_agents"),
    Extra("litellm", "litellm", "context_compact.integrations.litellm"),
    Extra("smolagents", "smolagents", "context_compact.integrations.smolagents"),
    Extra("llamaindex", "llama-index-core", "context_compact.integrations.llamaindex"),
    Extra("adk", "google-adk", "context_compact.integrations.adk"),
    Extra("crewai", "crewai", "context_compact.integrations.crewai"),
)


def installed() -> dict[str, dict[str, str]]:
    """``{extra: {"package": ..., "version": ..., "adapter": ...}}`` for each framework whose
    distribution is installed, in ``EXTRAS`` order."""
    found: dict[str, dict[str, str]] = {}
    for extra in EXTRAS:
        try:
            version = metadata.version(extra.package)
        except metadata.PackageNotFoundError:
            continue
        found[extra.extra] = {
            "package": extra.package,
            "version": version,
            "adapter": extra.adapter,
        }
    return found


__all__ = ["EXTRAS", "Extra", "installed"]
