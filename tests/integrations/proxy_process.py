"""A LiteLLM proxy process (``litellm --config config.yaml``) on 127.0.0.1, for the proxy tests.

``launch`` writes a ``config.yaml`` routing ``gpt-test`` (OpenAI), ``claude-test`` (Anthropic
Messages) and ``local-test`` (a chat completions server: vLLM) to a stub, and, when asked, a
module ``compaction_hooks.py`` beside it that builds ``CompactionHook(SqliteStore(...),
policy=...)`` and is named in ``litellm_settings.callbacks``, as a user writes them. The module
also appends each usage the hook's compactors observe to ``observed.jsonl`` (session id, prompt
tokens): the compactors live in the proxy's process, so that is how a test sees calibration.

The proxy runs from ``CC_LITELLM_PROXY_PYTHON`` (``.ci/proxy-venv`` builds it, as CI does),
else ``.ci/venv-proxy`` when present, else this interpreter; with our ``src`` first on its
path, so it runs the code under test. It is told to fetch nothing (LiteLLM's maps are read
from its package, and any HTTP(S) proxy setting points at a closed port). ``ProxyUnavailable``
says why one could not start.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import context_compact

REPO = Path(__file__).resolve().parents[2]
SRC = Path(context_compact.__file__).resolve().parents[1]
# Importing the proxy takes most of it: 10-15 s each on two busy cores.
STARTUP_SECONDS = 180.0

HOOKS = """\
import json
import threading

from context_compact import Compactor, Policy, SqliteStore
from context_compact.integrations.litellm import CompactionHook
from context_compact.sizing.request import prompt_tokens_of

_lock = threading.Lock()
_observe = Compactor.observe


def _observed(self, usage):
    with _lock, open({observed!r}, "a") as f:
        f.write(json.dumps([self.session_id, prompt_tokens_of(usage)]) + "\\n")
    _observe(self, usage)


Compactor.observe = _observed
hook = CompactionHook(
    SqliteStore({db!r}, root={root!r}), policy=Policy.default(context_limit={limit})
)
"""

CONFIG = """\
model_list:
  - model_name: gpt-test
    litellm_params:
      model: openai/gpt-test
      api_base: {openai_url}
      api_key: sk-stub
      max_retries: 0
  - model_name: claude-test
    litellm_params:
      model: anthropic/claude-test
      api_base: {anthropic_url}
      api_key: sk-stub
      max_retries: 0
  - model_name: local-test
    litellm_params:
      model: hosted_vllm/local-test
      api_base: {openai_url}
      api_key: sk-stub
      max_retries: 0
litellm_settings:
  num_retries: 0
{settings}{callbacks}general_settings:
  master_key: {key}
"""


class ProxyUnavailable(RuntimeError):
    """The proxy could not be started here (not installed, or it exited at startup)."""


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    url: str
    key: str
    folder: Path
    log: Path
    hooked: bool
    db: Path = field(init=False)
    observed: Path = field(init=False)

    def __post_init__(self) -> None:
        self.db = self.folder / "sessions.db"
        self.observed = self.folder / "observed.jsonl"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def proxy_python() -> str:
    named = os.environ.get("CC_LITELLM_PROXY_PYTHON")
    if named:
        return named
    built = REPO / ".ci" / "venv-proxy" / "bin" / "python"
    return str(built) if built.exists() else sys.executable


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(closed_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    for name in ("MODEL_COST_MAP", "ANTHROPIC_BETA_HEADERS", "AUTOROUTER_PRESETS"):
        env[f"LITELLM_LOCAL_{name}"] = "True"
    for name in ("BLOG_POSTS", "POLICY_TEMPLATES"):
        env[f"LITELLM_LOCAL_{name}"] = "True"
    closed = f"http://127.0.0.1:{closed_port}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = closed
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.pop("DATABASE_URL", None)
    return env


def launch(
    folder: Path,
    openai_url: str,
    anthropic_url: str,
    *,
    hooked: bool,
    limit: int,
    settings: dict[str, str] | None = None,
) -> Proxy:
    """Start a proxy (not waiting for it: ``ready`` does); ``settings`` are more
    ``litellm_settings`` (YAML values)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = f"sk-{secrets.token_hex(24)}"
    callbacks = ""
    if hooked:
        (folder / "compaction_hooks.py").write_text(
            HOOKS.format(
                observed=str(folder / "observed.jsonl"),
                db=str(folder / "sessions.db"),
                root=str(folder / "files"),
                limit=limit,
            )
        )
        callbacks = "  callbacks: compaction_hooks.hook\n"
    config = folder / "config.yaml"
    config.write_text(
        CONFIG.format(
            openai_url=openai_url,
            anthropic_url=anthropic_url,
            settings="".join(f"  {k}: {v}\n" for k, v in (settings or {}).items()),
            callbacks=callbacks,
            key=key,
        )
    )
    port = _free_port()
    log = folder / "proxy.log"
    command = [
        proxy_python(),
        "-c",
        "import sys; from litellm_cli.main import proxy_server; sys.argv[0] = 'litellm'; "
        "sys.exit(proxy_server())",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=folder, env=_environment(_free_port()), stdout=out, stderr=out
        )
    return Proxy(process, f"http://127.0.0.1:{port}", key, folder, log, hooked)


def ready(proxy: Proxy, deadline: float) -> None:
    """Wait until ``proxy`` accepts connections, or raise ``ProxyUnavailable`` with the last
    lines it wrote."""
    port = int(proxy.url.rsplit(":", 1)[1])
    while time.monotonic() < deadline:
        if proxy.process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    proxy.stop()
    tail = proxy.log.read_text(errors="replace").strip().splitlines()[-3:]
    raise ProxyUnavailable(f"the LiteLLM proxy did not start ({' / '.join(tail)})")
