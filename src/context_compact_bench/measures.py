"""What a suite run measures besides time: the workload's chunks, garbage-collector pauses,
memory, bytes written and the store's footprint.

``Chunks`` generates the synthetic session once per suite and hands a run one chunk at a
time; the other helpers read the process's own counters (Linux ``/proc``), so a
figure is the run's own only because each run is a process of its own (``suite.child``).
"""

from __future__ import annotations

import math
import os
import pickle
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from context_compact.messages import blocks
from context_compact.testing.workload import Turn, synthetic_session


class Chunks:
    """The synthetic session in chunks, generated once and cached (zlib'd pickles)."""

    def __init__(self, directory: str, chunk_turns: int) -> None:
        self.directory = Path(directory or tempfile.gettempdir())
        self.chunk_turns = max(1, chunk_turns)

    def _path(self, k: int) -> Path:
        # Pickles name their classes' module: a chunk cached before ``Turn`` moved to
        # ``testing.workload`` (another checkout may still read it) keeps its own name.
        return self.directory / f"chunk-{self.chunk_turns}-{k}.testing.pickle.z"

    def chunk(self, k: int) -> tuple[Turn, ...]:
        try:
            turns: tuple[Turn, ...] = pickle.loads(zlib.decompress(self._path(k).read_bytes()))
            return turns
        except (OSError, zlib.error, pickle.UnpicklingError, EOFError, ImportError, AttributeError):
            return self._generate(k)  # absent, damaged, or of classes this version lacks

    def _generate(self, k: int) -> tuple[Turn, ...]:
        path = self._path(k)
        turns = synthetic_session(self.chunk_turns, seed=k).turns
        # Written aside and renamed: runs in parallel may make the same chunk at once.
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(zlib.compress(pickle.dumps(turns, pickle.HIGHEST_PROTOCOL), 1))
        os.replace(partial, path)
        return turns

    def ensure(self, count: int, step: Callable[[int, int], None] | None = None) -> None:
        """Generate the chunks ``count`` turns need that are not cached yet."""
        needed = math.ceil(count / self.chunk_turns)
        for k in range(needed):
            if not self._path(k).exists():
                self._generate(k)
            if step:
                step(k + 1, needed)

    def turns(self, count: int) -> Iterator[Turn]:
        for k in range(math.ceil(count / self.chunk_turns)):
            chunk = self.chunk(k)
            yield from chunk[: count - k * self.chunk_turns]
            del chunk


class GcWatch:
    """Garbage-collection pauses that land inside ``prepare`` (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.inside = False
        self.full = 0
        self.max_s = 0.0
        self.total_s = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.inside:
            pause = time.perf_counter() - self._started
            self.total_s += pause
            self.max_s = max(self.max_s, pause)
            self.full += info.get("generation") == 2

    def take(self) -> dict[str, Any]:
        out = {"gc_full": self.full, "gc_max_ms": _ms(self.max_s), "gc_ms": _ms(self.total_s)}
        self.full, self.max_s, self.total_s = 0, 0.0, 0.0
        return out


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile: a value that was observed."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0


def memory() -> dict[str, float | None]:
    """Resident memory now and at its peak, MB (Linux ``/proc``; None elsewhere)."""
    out: dict[str, float | None] = {"rss_mb": None, "hwm_mb": None}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out["rss_mb" if key == "VmRSS" else "hwm_mb"] = round(
                        int(value.split()[0]) / 1024, 1
                    )
    except OSError:
        pass
    return out


def written_bytes() -> int | None:
    """Bytes this process has handed to ``write`` (``wchar`` of ``/proc/self/io``)."""
    try:
        with open("/proc/self/io", encoding="ascii") as io:
            for line in io:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def store_footprint(store: Any, root: Path) -> dict[str, Any]:
    """Files and bytes the store keeps: under its root on disk, or in a MemoryStore's dict."""
    files = getattr(store, "files", None)
    if isinstance(files, dict):
        return {"files": len(files), "disk_bytes": sum(map(len, files.values()))}
    count, size = 0, 0
    for directory, _, names in os.walk(root):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(directory, name))
            except OSError:
                continue
            count += 1
    return {"files": count, "disk_bytes": size}


def _result_bytes(turn: Turn) -> int:
    return sum(len(str(block.get("content", ""))) for block in blocks(turn.results))
