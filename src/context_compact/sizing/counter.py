"""``TokenCounter``: the size of texts and messages in tokens, exact or estimated, calibrated.

``TokenCounter(exact=True, model=M)`` counts with the exact tokenizer of ``M``'s family when
one is available offline (``exact.py``) and estimates otherwise; ``exact`` says which
happened and ``backend`` names it (``"bpe-openai"``, ``"tiktoken"`` or ``"estimate"``).
``use_tiktoken`` is the former name of ``exact``, kept for existing callers; ``counter=``
is the caller's own ``text -> tokens`` (backend ``"custom"``).

``count(message)`` counts a message: its content's JSON text, plus 4 for the framing, plus
its images and PDFs as the API charges them (``media.py``: by pixels and pages, never their
base64 as text). ``message(message)`` caches that by identity, so sizing a growing history
costs only the new messages; that cache keeps only the ``cache_size`` most recently used
(a 200,000-token view holds 650-1,250 messages), so memory stays bounded.

Calibration (estimate backend only: an exact or custom count is not corrected): each
message's estimate is scaled by its kind's factor (``calibrate.py``), and
``observe(real, messages, fixed)`` learns the factors from what the API counted for
``messages`` (the engine passes what was appended since the last usage: one reply and its
results, not the view). The raw estimates of the ``RECENT`` messages counted last are kept
(by identity, holding them), so those are not estimated twice. While nothing is observed
every factor is 1.0 and counts are the plain estimate's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..media import without_media
from ..messages import model_visible
from .calibrate import Calibration
from .estimate import KINDS, profile
from .exact import encoding_for_model, exact_counter

ESTIMATE = "estimate"
FRAMING = 4  # per-message framing (role, separators) costs a few tokens on every API
RECENT = 64  # more than the messages one agent step appends


_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)  # built once: dumps builds one a call


def to_json(value: Any) -> str:
    """``json.dumps(value, default=str, ensure_ascii=False)``."""
    return _ENCODER.encode(value)


class TokenCounter:
    """Counts tokens of texts and messages: a real tokenizer when asked and available."""

    def __init__(
        self,
        exact: bool = False,
        *,
        encoding: str | None = None,
        model: str | None = None,
        cache_size: int = 4_096,
        use_tiktoken: bool | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> None:
        if use_tiktoken is not None:
            exact = use_tiktoken
        # An explicit encoding wins; else the model's family (None: no exact tokenizer).
        chosen = encoding if encoding is not None else encoding_for_model(model)
        found = exact_counter(chosen) if exact and chosen is not None else None
        if counter is not None:  # the caller's own tokenizer (``Compactor(token_counter=)``)
            found = ("custom", counter)
        self.backend = found[0] if found else ESTIMATE
        self.exact = found is not None
        self.encoding = chosen if found and counter is None else None
        self._count: Callable[[str], int] = found[1] if found else _estimate
        self.calibration = Calibration()
        # Whether ``observe`` learns factors: only an estimate is calibrated (False keeps the
        # engine's overall ratio alone).
        self.calibrates = not self.exact
        self._cache: dict[int, tuple[Any, int]] = {}
        self._cache_size = max(1, cache_size)
        self._recent: dict[int, tuple[Any, int, str, int]] = {}

    def text(self, text: str) -> int:
        return self._count(text)

    def count(self, message: Any) -> int:
        """Tokens of one message, uncached (for callers that keep the count themselves)."""
        return self.sized(message)[0]

    def sized(self, message: Any) -> tuple[int, str | None]:
        """``count(message)`` and the text it was counted on when that is ``to_json`` of the
        message's own content (no media or converter metadata taken out), else None: the
        caller that keeps it need not encode the message again (``store.disk.jsonl``)."""
        content, media = _parts(message)
        visible = model_visible(content)
        text = to_json(visible)
        own = text if isinstance(message, dict) and visible is message.get("content") else None
        if self.exact:
            return self._count(text) + media + FRAMING, own
        raw, kind = profile(text)
        key = id(message)
        self._recent.pop(key, None)
        _remember(self._recent, key, (message, raw, kind, media + FRAMING), RECENT)
        if self.calibration.neutral:
            return raw + media + FRAMING, own
        return round(raw * self.calibration.factors[kind]) + media + FRAMING, own

    def message(self, message: Any) -> int:
        """Tokens of one message, cached by identity (until the factors change)."""
        key = id(message)
        hit = self._cache.pop(key, None)
        if hit is not None and hit[0] is message:
            self._cache[key] = hit  # most recently used goes last
            return hit[1]
        count = self.count(message)
        _remember(self._cache, key, (message, count), self._cache_size)
        return count

    def messages(self, messages: list[Any]) -> int:
        return sum(self.message(m) for m in messages)

    def raw(self, messages: Iterable[Any]) -> tuple[dict[str, int], int]:
        """The uncalibrated estimate of ``messages`` by kind, and their fixed tokens
        (framing, media)."""
        by_kind = dict.fromkeys(KINDS, 0)
        fixed = 0
        for message in messages:
            raw, kind, extra = self._profile(message)
            by_kind[kind] += raw
            fixed += extra
        return by_kind, fixed

    def observe(self, real: int, messages: Iterable[Any], fixed: int = 0) -> None:
        """The API counted ``real`` tokens for ``messages`` plus ``fixed`` counted tokens
        (a system prompt, tools): learn the factors per kind from it."""
        if not self.calibrates:
            return
        by_kind, extra = self.raw(messages)
        before = dict(self.calibration.factors)
        self.calibration.observe(real, by_kind, fixed + extra)
        if self.calibration.factors != before:
            self._cache.clear()

    def set_factors(self, factors: Mapping[str, float]) -> None:
        """Factors as journaled (a resumed session counts as the live one did)."""
        if self.calibrates and factors != self.calibration.factors:
            self.calibration.set(factors)
            self._cache.clear()

    def _profile(self, message: Any) -> tuple[int, str, int]:
        """A message's raw estimate, kind and fixed tokens, as counted last if it was among
        the recent ones (``observe`` only: ``count`` always estimates afresh)."""
        hit = self._recent.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1], hit[2], hit[3]
        return self._measure(message)

    def _measure(self, message: Any) -> tuple[int, str, int]:
        content, media = _parts(message)
        raw, kind = profile(to_json(model_visible(content)))
        key = id(message)
        self._recent.pop(key, None)
        _remember(self._recent, key, (message, raw, kind, media + FRAMING), RECENT)
        return raw, kind, media + FRAMING


def _estimate(text: str) -> int:
    return profile(text)[0]


def _parts(message: Any) -> tuple[Any, int]:
    content = message.get("content", "") if isinstance(message, dict) else message
    # Images and PDFs by what the API charges for them, never their base64 as text.
    return without_media(content)


def _remember(cache: dict[int, Any], key: int, entry: Any, size: int) -> None:
    if len(cache) >= size:
        del cache[next(iter(cache))]  # least recently inserted
    cache[key] = entry
