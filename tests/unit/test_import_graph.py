"""Data flows one way through the package, and no module imports one that imports it back.

Every import counts, at module level or inside a function (docs/ARCHITECTURE.md, "The one-way
flow"); only imports under ``if TYPE_CHECKING:`` (annotations, never run) are left out.
``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``. The graph
covers ``fabric/`` and the Python that roles and playbooks load (filter plugins, modules).

``LAYERS`` is the flow as a table: each layer names its modules (the longest prefix names a
module's layer) and the layers it may import besides its own. Data, not code, crosses the
steps: a target's implementation (``fabric/lab``, the Pulumi components) is imported by no
later step, and a fact two steps need lives in the lowest layer that needs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

from fabric.state import REPO_ROOT

#: (layer, module prefixes, the other layers it may import), in the order data flows.
LAYERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "base",
        (
            "fabric",
            "fabric.hostlist",
            "fabric.state",
            "fabric.catalog",
            "fabric.graph",
            "fabric.redact",
        ),
        (),
    ),
    ("parsers", ("fabric.parsers",), ("base",)),
    ("spec", ("fabric.spec",), ("base",)),
    ("model", ("fabric.topology", "fabric.model"), ("base", "parsers", "spec")),
    ("pulumi", ("fabric.components.rerun",), ("base",)),
    (
        "targets",
        ("fabric.lab", "fabric.redfish", "fabric.components"),
        ("base", "parsers", "spec", "model", "pulumi", "inventory"),
    ),
    ("inventory", ("fabric.inventory", "fabric.hostkeys"), ("base", "spec", "model")),
    (
        "handoff",
        ("fabric.handoff", "fabric.components.handoff"),
        ("base", "parsers", "spec", "model", "pulumi", "inventory"),
    ),
    ("roles", ("roles", "playbooks"), ("base", "parsers")),
    (
        "verify",
        ("fabric.verify", "fabric.components.verify"),
        ("base", "parsers", "spec", "model", "pulumi"),
    ),
    ("report", ("fabric.watch",), ("base", "parsers", "spec", "model", "verify")),
    (
        "entry",
        ("fabric.__main__", "fabric.cli", "fabric.components.cluster", "__main__"),
        (
            "base",
            "parsers",
            "spec",
            "model",
            "pulumi",
            "targets",
            "inventory",
            "handoff",
            "verify",
            "report",
        ),
    ),
)

#: The Python files the graph covers.
SOURCES = (
    "fabric/**/*.py",
    "roles/*/filter_plugins/*.py",
    "roles/*/library/*.py",
    "roles/*/files/*.py",
    "playbooks/filter_plugins/*.py",
    "__main__.py",
)


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def layer_of(module: str) -> str:
    """The layer of ``module``: the one with the longest prefix naming it (``fabric`` names
    the package's ``__init__`` only)."""
    best, length = "", -1
    for name, prefixes, _ in LAYERS:
        for prefix in prefixes:
            under = prefix != "fabric" and module.startswith(prefix + ".")
            if (module == prefix or under) and len(prefix) > length:
                best, length = name, len(prefix)
    if not best:
        raise AssertionError(f"{module} is in no layer of LAYERS")
    return best


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, in functions and classes too, outside ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            pending += node.orelse
        else:
            pending += [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr)]
    return found


def import_graph() -> nx.DiGraph:
    """Module -> the project modules it imports; each edge keeps the line (``line``)."""
    files = [p for pattern in SOURCES for p in REPO_ROOT.glob(pattern)]
    modules = {module_name(p): p for p in files if "molecule" not in p.parts}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in imports(ast.parse(path.read_text(), str(path))):
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
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target, line=node.lineno)
    return graph


def against_the_flow(graph: nx.DiGraph) -> list[str]:
    """Every import from a layer into one it may not import."""
    allowed = {name: {name, *may} for name, _, may in LAYERS}
    return [
        f"{a}:{data['line']} imports {b} ({layer_of(a)} -> {layer_of(b)})"
        for a, b, data in graph.edges(data=True)
        if layer_of(b) not in allowed[layer_of(a)]
    ]


def test_the_graph_sees_the_package_and_function_level_imports():
    graph = import_graph()
    assert graph.number_of_nodes() > 80
    assert graph.has_edge("fabric.spec.load", "fabric.spec.models")
    # inside a function: ClusterSpec's validator runs the rules
    assert graph.has_edge("fabric.spec.models", "fabric.spec.rules")
    assert graph.has_edge("roles.hca.filter_plugins.mlxconfig", "fabric.parsers.mlxconfig")


def test_every_module_is_in_a_layer():
    graph = import_graph()
    assert {layer_of(m) for m in graph} <= {name for name, _, _ in LAYERS}


def test_no_module_imports_one_that_imports_it_back():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_no_import_runs_against_the_flow():
    wrong = against_the_flow(import_graph())
    assert not wrong, "imports against the flow (docs/ARCHITECTURE.md):\n" + "\n".join(wrong)


def test_a_planted_cycle_is_found():
    graph = import_graph()
    graph.add_edge("fabric.spec.models", "fabric.spec.load", line=1)
    assert list(nx.simple_cycles(graph))


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("fabric.verify.facts", "fabric.lab.hardware"),
        ("fabric.spec.networks", "fabric.lab.plan"),
        ("fabric.parsers.ibnetdiscover.lines", "fabric.topology.slurm"),
        ("fabric.handoff.vars", "fabric.verify.plan"),
        ("fabric.handoff.vars", "fabric.components.gcp"),
        ("roles.gcp_gpudirect.filter_plugins.gpu_nics", "fabric.verify.cloud"),
        ("fabric.watch.collect", "fabric.components.lab"),
    ],
)
def test_a_planted_import_against_the_flow_is_found(importer: str, imported: str):
    graph = import_graph()
    graph.add_edge(importer, imported, line=1)
    assert any(w.startswith(f"{importer}:1 imports {imported} ") for w in against_the_flow(graph))
