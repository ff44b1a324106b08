"""The real-model tier: a llama-cpp-python server with SmolLM2-135M-Instruct at 2,048 tokens.

Runs when ``CC_REAL_MODEL_URL`` names a running server (``scripts/real_model_server.py``
starts one), or when this Python (or ``CC_REAL_MODEL_PYTHON``) can import ``llama_cpp``: the
script then starts the server for the session and stops it after. Skipped otherwise, with
that reason. ``CC_REAL_MODEL_TURNS`` sets the loops' length (40).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _python_with_llama() -> str | None:
    named = os.environ.get("CC_REAL_MODEL_PYTHON")
    if named:
        return named
    return sys.executable if importlib.util.find_spec("llama_cpp") is not None else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def real_url() -> Iterator[str]:
    url = os.environ.get("CC_REAL_MODEL_URL")
    if url:
        yield url.rstrip("/")
        return
    python = _python_with_llama()
    if python is None:
        pytest.skip(
            "real-model tier: set CC_REAL_MODEL_URL to a llama-cpp-python server "
            "(scripts/real_model_server.py), or install llama-cpp-python (CC_REAL_MODEL_PYTHON)"
        )
    sys.path.insert(0, str(SCRIPTS))
    import real_model_server as script

    gguf = script.find_gguf(
        os.environ.get("CC_REAL_MODEL_GGUF"), os.environ.get("CC_REAL_MODEL_WHEEL")
    )
    process, started = script.start(gguf, _free_port(), 2048, None, python)
    try:
        yield started
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def turns() -> int:
    return int(os.environ.get("CC_REAL_MODEL_TURNS", "40"))
