"""The package's layout holds: no import cycle between packages, no file-level import circle across two rooms, no
import running back up the floors, the runtime imports neither the optimizer nor the estimator, the estimator neither
the runtime nor the measuring, kernel-kind names are spelled only where the kinds are declared, and a serial run
loads no parallel executor.

Imports are read from the source (every import, function-level ones included; those under
``if TYPE_CHECKING:`` are for type checkers only and do not count).
"""
from __future__ import annotations

import ast
import functools
import io
import re
import subprocess
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

import networkx as nx

import pearl_py
from pearl_py.protocol.kernel import KernelKind

PACKAGE = Path(pearl_py.__file__).parent
DECLARATIONS = PACKAGE / "protocol" / "kernel.py"
MAX_QUOTED_KIND_NAMES = 20
"""Kernel-kind names that may still be spelled as string literals outside their declarations (docstring examples
included): the renovation's budget (issue 13)."""


def _runtime_imports(tree: ast.AST) -> list[str]:
    """``pearl_py.*`` modules imported by ``tree``, except under ``if TYPE_CHECKING:``."""
    typing_only = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
                   for statement in block.body for node in ast.walk(statement)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pearl_py":
            parts = node.module.split(".")[1:]
            found += [".".join(parts)] if parts else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name.split(".", 1)[1] for a in node.names if a.name.startswith("pearl_py.")]
    return found


def package_graph() -> tuple[nx.DiGraph, dict[tuple[str, str], set[str]]]:
    """Edges between top-level units of pearl_py (a package or a top-level module), with the files behind each."""
    graph, why = nx.DiGraph(), defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).with_suffix("").parts
        if relative == ("__init__",):
            continue  # the package's facade re-exports the public names
        source = relative[0]
        for module in _runtime_imports(ast.parse(path.read_text())):
            target = module.split(".")[0]
            if target != source:
                graph.add_edge(source, target)
                why[(source, target)].add("/".join(relative))
    return graph, why


FACADE = "pearl_py"
"""The room of ``pearl_py/__init__.py``, the public names: it loads them on first use (``pearl_py.lazy``), so it
imports every room without saying so; it stands on the top floor."""
FLOORS = (
    ("errors", "version", "lazy", "resources", "protocol"),
    ("config", "fileio", "envs", "replay"),
    ("algorithms", "platform"),
    ("kernels", "plan", "run_config"),
    ("estimate", "plan_file"),
    ("optimize",),
    ("runtime",),
    ("report", "saved_policy", "simulate", "profile"),
    ("pipeline",),
    ("cli",),
    (FACADE,),
)
"""The rooms of pearl_py (a top-level subpackage or module) from the ground up (docs/DESIGN.md §3): a file imports
its own floor's rooms and those below, never one above (the facade is on top: no file of the package imports it)."""


def _room(module: str) -> str:
    return module.split(".")[0] or FACADE


@functools.cache
def module_graph() -> nx.DiGraph:
    """Edges between the files of pearl_py (dotted module names; ``""`` is the facade), each import resolved to
    the module it loads (``from pearl_py.a import b`` is ``a.b`` where that is a module, else ``a``)."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = nx.DiGraph()
    for module, path in files.items():
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Import) and any(alias.name == "pearl_py" for alias in node.names)
               for node in ast.walk(tree)):
            graph.add_edge(module, "")                    # ``import pearl_py``: the facade
        for imported in _runtime_imports(tree):
            parts = imported.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if ".".join(parts) != module:
                graph.add_edge(module, ".".join(parts))   # a name the facade exports resolves to the facade ("")
    return graph


def files_of(module: str) -> str:
    """``a.b`` as its file, relative to the package (``a/b.py`` or ``a/b/__init__.py``)."""
    path = PACKAGE.joinpath(*module.split("."))
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(PACKAGE))


def test_no_file_level_import_circle_crosses_rooms():
    circles = [sorted(c) for c in nx.strongly_connected_components(module_graph()) if len({_room(m) for m in c}) > 1]
    assert not circles, "import circles across rooms:\n" + "\n".join("  " + ", ".join(c) for c in circles)


def test_no_import_runs_back_up_the_floors():
    floor = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
    graph = module_graph()
    unplaced = {_room(m) for m in graph} - set(floor)
    assert not unplaced, f"rooms without a floor in FLOORS: {sorted(unplaced)}"
    up = {(files_of(a), _room(b)) for a, b in graph.edges if floor[_room(b)] > floor[_room(a)]}
    assert not up, f"imports running back up: {sorted(up)}"


def test_no_import_cycle_between_packages():
    graph, why = package_graph()
    cycles = list(nx.simple_cycles(graph))
    described = ["  " + " -> ".join(c) + "  (" + "; ".join(
        f"{a}->{b}: {sorted(why[(a, b)])[0]}" for a, b in zip(c, c[1:] + c[:1])) + ")" for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_the_runtime_imports_neither_the_optimizer_nor_the_estimator():
    graph, why = package_graph()
    for stage in ("optimize", "estimate"):
        assert not graph.has_edge("runtime", stage), sorted(why[("runtime", stage)])


def test_the_estimator_imports_neither_the_runtime_nor_the_measuring():
    """The cost model reads a calibration; measuring one (``pearl_py.profile``) runs the runtime's pieces."""
    graph, why = package_graph()
    for stage in ("runtime", "profile"):
        assert not graph.has_edge("estimate", stage), sorted(why[("estimate", stage)])


def quoted_kind_names() -> list[str]:
    """Every string literal equal to a declared kernel kind's name outside the declarations, as ``file:line``."""
    names = {str(kind) for kind in KernelKind}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == DECLARATIONS:
            continue
        text = path.read_text()
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                found += [f"{path.relative_to(PACKAGE)}:{token.start[0]}"
                          for quoted in re.findall(r"""["']([a-z_]+)["']""", token.string) if quoted in names]
    return found


def test_kernel_kind_names_are_not_spelled_outside_their_declarations():
    found = quoted_kind_names()
    assert len(found) <= MAX_QUOTED_KIND_NAMES, f"{len(found)} quoted kernel-kind names:\n" + "\n".join(found)


def test_a_serial_run_loads_no_parallel_executor():
    """The pipeline and both serial executors import the parallel runtime's checkpoint and interrupt pieces only, not
    its executor (with its actors, rings and servers: 25 modules a serial run never uses)."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, pearl_py.pipeline.train, pearl_py.runtime.serial, "
                             "pearl_py.runtime.on_policy_serial; print(sorted(m for m in sys.modules "
                             "if m.startswith('pearl_py.runtime.parallel.')))"],
                            capture_output=True, text=True, check=True)
    assert "pearl_py.runtime.parallel.executor" not in loaded.stdout, loaded.stdout
