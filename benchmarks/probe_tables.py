"""The README's probe tables from a ``context-compact bench --probes --json FILE`` report.

python benchmarks/probe_tables.py benchmarks/results/probes.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from context_compact_bench.probe_report import markdown_from_json


def main(path: str) -> None:
    print(markdown_from_json(json.loads(Path(path).read_text(encoding="utf-8"))))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/probes.json")
