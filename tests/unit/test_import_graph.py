"""The package's module-level imports form no cycle: data flows one way (docs/ARCHITECTURE.md).

Only imports that run when a module loads count: statements at module level, outside
``if TYPE_CHECKING:``. Imports inside functions are deliberate (start-up time, optional
dependencies) and do not bind the modules together at load time. ``from a.b import c`` is an
edge to ``a.b.c`` when that is a module, else to ``a.b``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from fabric.state import REPO_ROOT

PACKAGE = REPO_ROOT / "fabric"


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                pending += handler.body
    return found


def import_graph() -> nx.DiGraph:
    """Module -> the fabric modules it imports when it loads."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _top_level_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            graph.add_edges_from((name, t) for t in targets if t in modules and t != name)
    return graph


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert graph.number_of_nodes() > 80
    assert graph.has_edge("fabric.spec.load", "fabric.spec.models")


def test_no_module_imports_one_that_imports_it_back():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_a_planted_cycle_is_found():
    graph = import_graph()
    graph.add_edge("fabric.spec.models", "fabric.spec.load")
    assert list(nx.simple_cycles(graph))
