"""Where a store backend's driver errors become ours: once, at the methods its callers call.

``maps_errors(translate)`` decorates a backend's class: each of its public methods (every
name not starting with ``_``, inherited ones included) and ``__init__`` is wrapped so that an
exception ``translate(store, error)`` recognizes as its driver's (``sqlite3.Error``,
``psycopg.Error``) leaves the call as the one ``translate`` returns (``StoreRefused``,
``ServerUnavailable``, ``CorruptStore``), chained to it (``__cause__``); anything else
(our own errors, ``OSError`` of the files under root, ``KeyboardInterrupt``, a bug) leaves
as it is. Inside the backend the driver's exceptions stay what they are: it may catch and
handle them (a lock to wait on, a damaged index to rebuild) before they reach the boundary.

A method that calls another of the store's public methods goes through two wrappers; the
inner one has translated already, and the outer one passes ours through. The wrapper is a
plain ``try``/``except`` around the call: a few hundred nanoseconds of a turn's append.
What a method returns is passed as it is: the stores' ``records`` and ``search`` read
everything before they return, so no driver call is left to happen in an iterator.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=type)
Translate = Callable[[Any, BaseException], BaseException | None]
"""``translate(store, error)``: ours for a driver's ``error`` (None: not the driver's)."""


def maps_errors(translate: Translate) -> Callable[[T], T]:
    """The class decorator (see the module docstring)."""

    def decorate(cls: T) -> T:
        for name in ["__init__", *dir(cls)]:
            if name.startswith("_") and name != "__init__":
                continue
            method = inspect.getattr_static(cls, name)
            if inspect.isfunction(method):
                setattr(cls, name, _guarded(method, translate))
        return cls

    return decorate


def _guarded(method: Callable[..., Any], translate: Translate) -> Callable[..., Any]:
    if getattr(method, "__translates__", None) is translate:
        return method  # wrapped already (a base class decorated with the same translation)

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as error:
            ours = translate(self, error)
            if ours is None:
                raise
            raise ours from error

    guarded.__translates__ = translate  # type: ignore[attr-defined]
    return guarded


__all__ = ["Translate", "maps_errors"]
