"""Names of a package loaded the first time one is asked for (PEP 562's module ``__getattr__``).

``loader(package, table)`` gives the package's ``__getattr__``: ``table`` maps each lazy name to
the module of the package that defines it. The first lookup imports that module and keeps the
value in the package's namespace, so later lookups never come back here; a name not in the
table is an ``AttributeError`` as for any module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def loader(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` for the names of ``table``."""

    def __getattr__(name: str) -> Any:
        try:
            module = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        vars(sys.modules[package])[name] = value  # the next lookup finds it without coming here
        return value

    return __getattr__


__all__ = ["loader"]
