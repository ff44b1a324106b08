"""Tell the API's refusal of a thinking block whose prefix changed from every other error,
and read the thinking blocks a response says the API dropped.

On models that bind each thinking block to its prefix (Claude Fable 5.1 and later), a
request that sends a block back after what came before it changed is refused with a 400
whose message reads (platform.claude.com, "Fix a thinking block bound to a different
conversation"):

    messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a
    different conversation. Remove the block, or set
    `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".

The path at the front may be missing. With ``prefix_mismatch_behavior: "drop_block"`` (or on
a model that drops rather than refuses) the request goes through and the response's
``input_transformations`` lists each dropped block: ``{"type": "thinking_dropped", "path":
"messages.N.content.M", "reason": "prefix_binding_mismatch"}`` (the SDK's
``BetaThinkingDroppedInputTransformation``). Both are read duck-typed, like
``is_context_overflow``, so neither SDK is imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ThinkingRefused
from ..messages import block_path

__all__ = ["dropped_paths", "recoverable", "thinking_refused"]

# Lower-case fragments of the refusal quoted above: the first is the one that names it.
_PHRASES = ("bound to a different conversation", "prefix_mismatch_behavior")


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _messages(error: BaseException) -> Iterator[str]:
    yield str(getattr(error, "message", "") or "")
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            yield str(inner.get("message", ""))
        yield str(body.get("message", ""))
    yield str(error)


def thinking_refused(error: BaseException) -> ThinkingRefused | None:
    """``error`` as a ``ThinkingRefused`` when it is the API's refusal of a thinking block
    whose prefix changed (any SDK's, or one already mapped: returned as it is), else None."""
    if isinstance(error, ThinkingRefused):
        return error
    status = _status(error)
    if status is not None and status != 400:
        return None
    for text in _messages(error):
        if _PHRASES[0] in text.lower():
            at = block_path(text)
            return ThinkingRefused(
                text.strip().splitlines()[0][:500],
                message_index=at[0] if at else None,
                block_index=at[1] if at else None,
                status_code=status,
                body=getattr(error, "body", None),
            )
    return None


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def dropped_paths(response: Any) -> list[tuple[int, int]]:
    """The (message, block) of each thinking block a response says the API dropped from the
    request (``input_transformations`` entries of type ``thinking_dropped``), in order."""
    found = _field(response, "input_transformations")
    if not isinstance(found, list):
        return []
    paths = []
    for item in found:
        if _field(item, "type") != "thinking_dropped":
            continue
        at = block_path(str(_field(item, "path") or ""))
        if at is not None:
            paths.append(at)
    return paths


def recoverable(error: BaseException) -> BaseException | None:
    """``error``, or the cause a framework wrapped it around, when ``Compactor.recover`` can
    make a request to send instead (a refusal for length, a refused thinking block)."""
    from .errors import is_context_overflow

    for candidate in (error, error.__cause__):
        if candidate is not None and (
            thinking_refused(candidate) is not None or is_context_overflow(candidate)
        ):
            return candidate
    return None
