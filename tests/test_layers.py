"""The package's layers, read from the source: every import goes down, and none goes round.

Every import in src/ is read with ``ast``: module-level, inside functions, under
``TYPE_CHECKING``, and the strings given to ``importlib.import_module``. A module belongs to its
group (its folder under the package, or its file), a group to one layer; a group may import
only groups of lower layers (and itself). docs/architecture.md draws the same list.
A new top-level module or folder needs its place in ``LAYERS`` (and in docs/architecture.md).

The bench (``context_compact_bench``, a distribution of its own) is one group on top: it may
import the library, and nothing imports it: not the library, and no test but the bench's own
(``tests/bench``).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = "context_compact"
BENCH = "context_compact_bench"
SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent

# Lowest first. A layer's groups may import any group below it, never one beside or above it.
LAYERS: list[tuple[str, ...]] = [
    ("quoting", "version", "messages"),
    ("markers", "media", "events", "errors", "overrides"),
    ("telemetry",),
    ("keys", "invariants", "sizing", "providers", "loaders", "config"),
    ("store", "formats", "summary"),
    ("engine", "testing"),
    ("seed", "session"),
    ("registry", "history"),
    ("policy",),
    ("compactor",),
    ("agent", "integrations", "tools"),
    ("demo",),
    ("inspector",),
    ("cli",),
    ("__init__",),
    (BENCH,),
]
LAYER = {group: n for n, groups in enumerate(LAYERS) for group in groups}
# The one way up: the ``bench`` command of the CLI is the bench's, imported when it is run
# (with one line saying what to install when the bench is not there).
DOORS = {(f"{PACKAGE}.cli.policies", f"{BENCH}.command")}


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in [*(SRC / PACKAGE).rglob("*.py"), *(SRC / BENCH).rglob("*.py")]:
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, package)
    return found


MODULES = modules()


def group(module: str) -> str:
    parts = module.split(".")
    if parts[0] == BENCH:
        return BENCH
    return parts[1] if len(parts) > 1 else "__init__"


def absolute(module: str, package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def literal_head(node: ast.expr) -> str:
    """The module a name expression names, as far as it is literal: the whole string, or an
    f-string's leading text up to its last dot (``f".bench.strategies.{name}"``: the package
    ``.bench.strategies``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        head = ""
        for part in node.values:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                return head.rpartition(".")[0]  # the name goes on past here: its package
            head += part.value
        return head
    return ""


def imported(module: str, package: bool, path: Path) -> set[str]:
    """Every module name the file at ``path`` (the module ``module``) imports, as written."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = absolute(module, package, node.level, node.module)
            else:
                base = node.module or ""
            for alias in node.names:
                # ``from pkg import name``: the submodule ``pkg.name`` if there is one.
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in MODULES else base)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
        ):
            name = literal_head(node.args[0])
            if name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                name = absolute(module, package, level, name.lstrip(".") or None)
            targets.add(name)
    return targets


def imports(module: str) -> set[str]:
    """The package's modules ``module`` imports, wherever and however it imports them."""
    path, package = MODULES[module]
    found = set()
    for target in imported(module, package, path):
        # ``import a.b.c`` names a.b.c; the closest module of ours it names.
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target.startswith(PACKAGE) and target != module:
            found.add(target)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def test_every_group_has_a_layer() -> None:
    unplaced = sorted({group(m) for m in MODULES} - set(LAYER))
    assert not unplaced, f"place these in LAYERS (and in docs/architecture.md): {unplaced}"


def test_imports_only_go_down() -> None:
    wrong = [
        f"{module} ({group(module)}, layer {LAYER[group(module)]}) imports {target} "
        f"({group(target)}, layer {LAYER[group(target)]})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if group(target) != group(module)
        and group(module) in LAYER  # an unplaced group: test_every_group_has_a_layer says so
        and group(target) in LAYER
        and LAYER[group(target)] >= LAYER[group(module)]
        and (module, target) not in DOORS
    ]
    assert not wrong, "\n".join(wrong)


def cycle_from(start: str) -> list[str] | None:
    """A cycle of module imports through ``start``, if there is one (depth-first)."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for target in GRAPH[module]:
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_no_module_imports_itself_round_a_cycle() -> None:
    cycles = [c for c in map(cycle_from, sorted(MODULES)) if c is not None]
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_library_never_imports_the_bench() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items())
        if group(module) != BENCH
        for target in sorted(targets)
        if group(target) == BENCH and (module, target) not in DOORS
    ]
    assert not wrong, "\n".join(wrong)


def test_the_cli_reaches_the_bench_only_through_its_command() -> None:
    assert GRAPH[f"{PACKAGE}.cli.policies"] & {m for m in MODULES if group(m) == BENCH} == {
        f"{BENCH}.command"
    }


def test_no_test_but_the_benchs_own_imports_the_bench() -> None:
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        if (TESTS / "bench") in path.parents:
            continue
        # Read as a module of the tests: relative imports there never reach the bench.
        names = imported(f"tests.{path.stem}", False, path)
        wrong += [
            f"{path.relative_to(TESTS)} imports {n}"
            for n in sorted(names)
            if n.split(".")[0] == BENCH
        ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from . import markers", {"context_compact.markers"}),
        ("from .store.base import Store", {"context_compact.store.base"}),
        ("import context_compact.keys", {"context_compact.keys"}),
        ("def f():\n    from .registry import NAMES", {"context_compact.registry"}),
        ("importlib.import_module('.seed.engine', __package__)", {"context_compact.seed.engine"}),
        ("importlib.import_module('context_compact_bench.run')", {"context_compact_bench.run"}),
        (
            "importlib.import_module(f'context_compact_bench.strategies.{name}')",
            {"context_compact_bench.strategies"},
        ),
    ],
)
def test_the_reader_sees_every_kind_of_import(
    tmp_path: Path, source: str, expected: set[str]
) -> None:
    # Read as if it were the top-level module ``context_compact.probe``.
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    MODULES["context_compact.probe"] = (path, False)
    try:
        assert imports("context_compact.probe") == expected
    finally:
        del MODULES["context_compact.probe"]


def test_the_layers_name_each_group_once() -> None:
    groups = list(itertools.chain.from_iterable(LAYERS))
    assert len(groups) == len(set(groups))
