"""The exceptions a caller can meet, in one place.

ValueError
 └── InvalidHistory        the input violates check(); names the message and the rule
RuntimeError
 ├── CompactionFailed      compaction could not bring the context back: the summarizer
 │    │                    failed too often, or the view stayed over the limit
 │    └── StoreUnavailable the store refused a write (disk full, read-only, permissions):
 │                         nothing left the view without its copy; the message names the
 │                         store's own error, which is also the exception's __cause__
 └── ContextOverflow       the API refused the request as too long for the window; raised
                           by our providers, mapped from any SDK's refusal by
                           ``providers.errors.context_overflow`` (the SDK's exception is
                           ``__cause__``); catch it to compact and resend
"""

from __future__ import annotations

from .invariants import InvalidHistory


class CompactionFailed(RuntimeError):
    """Compaction cannot make progress; the message says why and what to do."""


class StoreUnavailable(CompactionFailed):
    """The store refused a write that compaction or the session journal needed."""


class ContextOverflow(RuntimeError):
    """The API refused the request as too long for the context window.

    ``prompt_tokens`` (the refused input as the API counted it), ``max_tokens`` (the output
    budget asked for) and ``window`` are the refusal's own numbers, None when it does not say;
    ``status_code``, ``body`` and ``message`` are the SDK error's, so code that reads those
    duck-typed (``is_context_overflow``, ``overflow_figures``) reads this the same way.
    """

    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int | None = None,
        max_tokens: int | None = None,
        window: int | None = None,
        status_code: int | None = None,
        body: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.window = window
        self.status_code = status_code
        self.body = body


__all__ = ["CompactionFailed", "ContextOverflow", "InvalidHistory", "StoreUnavailable"]
