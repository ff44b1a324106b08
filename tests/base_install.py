"""A Python with nothing but the base install: the standard library, this tree's package and
its two dependencies (click and rich, with rich's own), none of the extras.

Built offline in a fraction of a second: a venv without pip whose site-packages holds a
``.pth`` naming ``src`` and a folder of links to the packages the base install needs, taken
from the interpreter running the tests. What a user gets from ``pip install context-compact``
without brackets, so an SDK, psycopg or a framework is absent the way it is for them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
# click and rich, and what rich imports: markdown-it-py (with mdurl) and pygments.
BASE_PACKAGES = ("click", "rich", "markdown_it", "mdurl", "pygments")


def make_base_install(root: Path, package: Path | None = SRC) -> Path:
    """A venv at ``root`` holding only the base install, the package taken from the folder
    ``package`` (this tree's ``src``; None: none, a wheel is to be installed); its python's
    path."""
    subprocess.run(
        [sys._base_executable, "-m", "venv", "--without-pip", str(root)],  # type: ignore[attr-defined]
        check=True,
        capture_output=True,
    )
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    links = root / "base-packages"
    links.mkdir()
    for name in BASE_PACKAGES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, f"{name} is not installed"
        os.symlink(Path(spec.origin).parent, links / name)
    Path(purelib, "context_compact_base.pth").write_text(
        "".join(f"{path}\n" for path in (package, links) if path)
    )
    return python
