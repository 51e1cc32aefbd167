"""The package's layout holds: no import cycle between packages, the runtime imports neither the optimizer
nor the estimator, the estimator neither the runtime nor the measuring, and kernel-kind names are spelled only where the kinds are declared.

Imports are read from the source (every import, function-level ones included; those under
``if TYPE_CHECKING:`` are for type checkers only and do not count).
"""
from __future__ import annotations

import ast
import io
import re
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
