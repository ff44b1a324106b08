"""Calibration per kind of text: a factor for each kind, learned from the API's real counts.

The estimate is right on average but biased by kind (``estimate.py``): low on tables and
numbers, a little high on plain text. Each ``usage`` the API reports is one equation::

    real = fixed + sum(factor[kind] * estimate[kind] for kind in KINDS)

where ``estimate[kind]`` is the raw estimate of the observed messages of that kind and
``fixed`` what no factor scales (per-message framing, images by pixels, the system prompt
and tools). ``Calibration.observe`` solves it a step at a time: the observed ratio (real over the
calibrated estimate, less ``fixed``) is applied to each kind in proportion to that kind's
evidence, ``w = min(raw tokens of the kind, CAP)``: a factor moves by ``w / (PRIOR + w)`` of
the way to ``factor * ratio``. An observation of one kind alone moves that kind's factor
towards its true ratio; a mix moves every kind present by the same ratio, and observations
of different mixes separate them (the engine observes what was appended since the last
usage, usually one reply and one tool result, so mixes differ from call to call).

Invariants:

* no observation, no change: every factor starts at 1.0, so an uncalibrated counter counts
  exactly as the estimate does;
* bounded: every factor stays in [``LOW``, ``HIGH``] = [0.5, 2.0] whatever the usage
  says, and an observation whose ratio is outside [0.5, 2] is ignored: no tokenizer is that
  far from the estimate on a whole reply and its results, so such a count is about
  something else (a refusal's number, a system prompt that changed, an image);
* smoothed: one observation moves a factor at most ``CAP / (PRIOR + CAP)`` (80%) of the
  way, and one of a few tokens hardly at all;
* the state is the factors alone, a pure function of the observations in order: journaled
  with the session (``calibrate`` records), a resumed session counts as the live one did.
"""

from __future__ import annotations

from collections.abc import Mapping

from .estimate import KINDS

LOW, HIGH = 0.5, 2.0
# The band of a plausible observation: tokenizers differ from the estimate by less than 2x
# (bench --tokens: p5 .. p95 of a message is -15% .. +13% against o200k).
STEP_LOW, STEP_HIGH = 0.5, 2.0
# Raw tokens of evidence the current factor stands for (about one tool result), and the
# most one observation counts as.
PRIOR = 1_000
CAP = 4_000


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


class Calibration:
    """Factors per kind, updated from observations of ``(real tokens, raw estimate by kind,
    fixed tokens)``."""

    def __init__(self, factors: Mapping[str, float] | None = None) -> None:
        self.factors: dict[str, float] = dict.fromkeys(KINDS, 1.0)
        if factors:
            self.set(factors)

    @property
    def neutral(self) -> bool:
        """True while every factor is 1.0 (nothing observed, or nothing learned)."""
        return all(value == 1.0 for value in self.factors.values())

    def set(self, factors: Mapping[str, float]) -> None:
        """These factors (a journaled state), each clipped to its bounds; others unchanged."""
        for kind in KINDS:
            value = factors.get(kind)
            if isinstance(value, int | float) and value == value:  # a number, not NaN
                self.factors[kind] = _clip(float(value), LOW, HIGH)

    def predict(self, raw: Mapping[str, int], fixed: int = 0) -> float:
        return fixed + sum(self.factors[kind] * raw.get(kind, 0) for kind in KINDS)

    def observe(self, real: int, raw: Mapping[str, int], fixed: int = 0) -> None:
        """One observation: the API counted ``real`` tokens where the estimate saw ``raw``
        by kind plus ``fixed``. Ignored when nothing is left to attribute, or when the ratio
        is implausible (outside ``STEP_LOW`` .. ``STEP_HIGH``)."""
        amounts = {kind: max(0, raw.get(kind, 0)) for kind in KINDS}
        calibrated = self.predict(amounts)
        if calibrated <= 0 or real - fixed <= 0:
            return
        ratio = (real - fixed) / calibrated
        if not STEP_LOW <= ratio <= STEP_HIGH:
            return
        for kind, amount in amounts.items():
            if amount > 0:
                weight = min(amount, CAP)
                step = (PRIOR + weight * ratio) / (PRIOR + weight)
                self.factors[kind] = _clip(self.factors[kind] * step, LOW, HIGH)
