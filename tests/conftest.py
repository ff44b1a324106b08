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
# Google ADK's LiteLLM model sets this for the whole process when first imported (so LiteLLM
# reads no .env file); set from the start, no test changes the environment of the next.
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")


@pytest.fixture
def stub_api() -> Iterator[StubAPI]:
    """A running ``StubAPI`` (see ``tests/stub_api.py``), stopped after the test."""
    with StubAPI() as api:
        yield api


@pytest.fixture(autouse=True)
def _environment_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test leaves ``os.environ`` as it found it (``monkeypatch`` restores its own
    changes before this runs). What a library set behind the test's back is put back and
    the test fails naming it: the environment decides things for every later test in the
    process (LiteLLM, when it first counts tokens, points ``TIKTOKEN_CACHE_DIR`` at its
    own tables, and every later compactor then counted with tiktoken instead of the
    estimate a fresh process uses)."""
    before = dict(os.environ)
    yield
    after = dict(os.environ)
    changed = sorted(
        k
        for k in before.keys() | after.keys()
        if before.get(k) != after.get(k) and k != "PYTEST_CURRENT_TEST"  # pytest's own
    )
    if not changed:
        return
    for key in changed:
        if key in before:
            os.environ[key] = before[key]
        else:
            del os.environ[key]
    pytest.fail(f"{request.node.nodeid} left the environment changed: {', '.join(changed)}")


@pytest.fixture
def tiktoken_dir_kept() -> Iterator[None]:
    """For tests that drive LiteLLM: it points ``TIKTOKEN_CACHE_DIR`` at its own tables the
    first time it counts tokens, for the whole process (every compactor made after would
    count with tiktoken, not as in a fresh process). Put back after the test."""
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    yield
    if before is None:
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
    else:
        os.environ["TIKTOKEN_CACHE_DIR"] = before
