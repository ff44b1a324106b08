from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from stub_api import StubAPI

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# HYPOTHESIS_PROFILE=thorough for a long local hunt; CI uses "ci".
settings.register_profile(
    "thorough",
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# HYPOTHESIS_PROFILE=slow: the fuzzing run reported in RELIABILITY.md (tests/test_fuzz.py runs
# 10,000 histories of each kind; everything else 10,000 examples too, so select that file).
settings.register_profile(
    "slow",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# LiteLLM fetches its price map from the network when imported; tests never reach it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def stub_api() -> Iterator[StubAPI]:
    """A running ``StubAPI`` (see ``tests/stub_api.py``), stopped after the test."""
    with StubAPI() as api:
        yield api
