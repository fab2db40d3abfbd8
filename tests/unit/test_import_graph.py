"""Data flows one way through the package, and no module imports one that imports it back.

Every import counts, at module level or inside a function (docs/ARCHITECTURE.md, "The one-way
flow"); only imports under ``if TYPE_CHECKING:`` (annotations, never run) are left out.
``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``. The graph
covers ``fabric/`` and the Python that roles and playbooks load (filter plugins, modules).

``LAYERS`` is the flow as a table: each layer names its modules (the longest prefix names a
module's layer; ``*`` stands for one name, so ``fabric.targets.*.rules`` is every target's
rules) and the layers it may import besides its own, each above it in the table, so no
arrow runs back up. A target's parts are found by name
through the registry (``fabric.targets.part(target, "<role>")``): each such call counts as an
import of every registered target's ``<role>`` module, so a part sits in its role's layer
(``rules`` and ``catalog`` in spec, ``model`` in model, ``hostkeys`` in inventory,
``handoff`` in handoff, ``checks`` in verify, the component and its helpers in targets) and the rule holds for it too. Data, not code, crosses the
steps: a target's implementation (``fabric/lab``, the Pulumi components) is imported by no
later step, and a fact two steps need lives in the lowest layer that needs it.
"""

from __future__ import annotations

import ast
import functools
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
            "fabric.gcpause",
            "fabric.redact",
            "fabric.targets",
        ),
        (),
    ),
    ("parsers", ("fabric.parsers",), ("base",)),
    ("clients", ("fabric.redfish", "fabric.kube_client"), ("base",)),
    (
        "spec",
        (
            "fabric.spec",
            "fabric.targets.*.rules",
            "fabric.targets.*.section",
            "fabric.targets.*.catalog",
        ),
        ("base",),
    ),
    (
        "model",
        ("fabric.topology", "fabric.model", "fabric.targets.*.model"),
        ("base", "parsers", "spec"),
    ),
    (
        "inventory",
        ("fabric.inventory", "fabric.hostkeys", "fabric.targets.*.hostkeys"),
        ("base", "spec", "model"),
    ),
    (
        "pulumi",
        ("fabric.components",),
        ("base", "clients", "spec", "model", "inventory"),
    ),
    (
        "targets",
        ("fabric.lab", "fabric.targets.*"),
        ("base", "parsers", "clients", "spec", "model", "inventory", "pulumi"),
    ),
    (
        "handoff",
        ("fabric.handoff", "fabric.targets.*.handoff"),
        ("base", "parsers", "spec", "model", "inventory", "pulumi"),
    ),
    ("roles", ("roles", "playbooks"), ("base", "parsers")),
    (
        "verify",
        ("fabric.verify", "fabric.targets.*.checks", "fabric.targets.*.placement"),
        ("base", "parsers", "spec", "model", "pulumi"),
    ),
    ("report", ("fabric.watch",), ("base", "parsers", "spec", "model", "verify")),
    (
        "entry",
        ("fabric.__main__", "fabric.cli", "fabric.program", "__main__"),
        (
            "base",
            "parsers",
            "clients",
            "spec",
            "model",
            "inventory",
            "pulumi",
            "targets",
            "handoff",
            "verify",
            "report",
        ),
    ),
    # Old module paths kept for stacks made before a dynamic provider moved (their pickled
    # provider names the old path); no layer may import them.
    ("aliases", ("fabric.components.handoff", "fabric.components.verify"), ("handoff", "verify")),
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


#: Prefixes that name one module only, the package's ``__init__`` (the registry of targets
#: imports nothing of the project; each target's parts are in their own layers).
EXACT = frozenset({"fabric", "fabric.targets"})


def _names(prefix: str, module: str) -> bool:
    """Whether ``prefix`` (``*`` = any one name) names ``module`` or a module under it."""
    want, have = prefix.split("."), module.split(".")
    if len(have) < len(want) or (prefix in EXACT and len(have) != len(want)):
        return False
    return all(w in ("*", h) for w, h in zip(want, have, strict=False))


def layer_of(module: str) -> str:
    """The layer of ``module``: the one with the longest prefix naming it (``fabric`` and
    ``fabric.targets`` name the package's ``__init__`` only)."""
    best, length = "", -1
    for name, prefixes, _ in LAYERS:
        for prefix in prefixes:
            if _names(prefix, module) and prefix.count(".") > length:
                best, length = name, prefix.count(".")
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


#: The registry's functions that find a target's part by role: ``part(target, "rules")``,
#: ``parts("rules")``; the role is the first string constant among the arguments.
PART_FINDERS = ("part", "parts", "hook", "hooks")


def part_lookups(tree: ast.Module) -> list[tuple[str, int]]:
    """(role, line) of every call of the registry's part finders imported from
    ``fabric.targets`` into this module, at module level or inside functions."""
    names = {
        alias.asname or alias.name
        for node in imports(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "fabric.targets"
        for alias in node.names
        if alias.name in PART_FINDERS
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            roles = [
                a.value for a in node.args if isinstance(a, ast.Constant) and type(a.value) is str
            ]
            if not roles:
                raise AssertionError(
                    f"line {node.lineno}: {node.func.id}() needs its role as a string constant,"
                    " so the import graph can see which parts it loads"
                )
            found.append((roles[0], node.lineno))
    return found


def registered_parts(role: str) -> list[str]:
    """The modules ``fabric.targets.<target>.<role>`` of every registered target with one."""
    from fabric.targets import TARGETS, has_part

    return [f"fabric.targets.{name}.{role}" for name in TARGETS if has_part(name, role)]


def import_graph() -> nx.DiGraph:
    """Module -> the project modules it imports; each edge keeps the line (``line``). A part
    found through the registry is an import of every target's part of that role. A fresh
    copy each call (tests plant edges in it); the sources are read once."""
    return _import_graph().copy()


@functools.cache
def _import_graph() -> nx.DiGraph:
    files = [p for pattern in SOURCES for p in REPO_ROOT.glob(pattern)]
    modules = {module_name(p): p for p in files if "molecule" not in p.parts}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for role, line in part_lookups(tree):
            for target in registered_parts(role):
                if target != name:
                    graph.add_edge(name, target, line=line)
        for node in imports(tree):
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


def test_a_part_found_through_the_registry_counts_as_an_import():
    graph = import_graph()
    # fabric.spec.targets runs every target's RULES, found by part(name, "rules")
    assert graph.has_edge("fabric.spec.targets", "fabric.targets.gcp.rules")
    assert graph.has_edge("fabric.spec.targets", "fabric.targets.lab.rules")
    # the program's cluster_component loads the spec's component
    assert graph.has_edge("fabric.program", "fabric.targets.aws.component")
    tree = ast.parse("from fabric.targets import part\ndef f(t, r):\n    return part(t, r)\n")
    with pytest.raises(AssertionError, match="string constant"):
        part_lookups(tree)


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("fabric.targets", "base"),
        ("fabric.targets.aws.rules", "spec"),
        ("fabric.targets.gcp.catalog", "spec"),
        ("fabric.targets.gcp.model", "model"),
        ("fabric.targets.gcp.hostkeys", "inventory"),
        ("fabric.targets.aws.checks", "verify"),
        ("fabric.targets.gcp.handoff", "handoff"),
        ("fabric.targets.lab.component", "targets"),
        ("fabric.targets.lab.dynamic_lab", "targets"),
        ("fabric.targets.lab", "targets"),
    ],
)
def test_a_target_part_sits_in_its_role_layer(module: str, layer: str):
    assert layer_of(module) == layer


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("fabric.components.target", "pulumi"),
        ("fabric.components.rerun", "pulumi"),
        ("fabric.handoff.resource", "handoff"),
        ("fabric.verify.resource", "verify"),
        ("fabric.program", "entry"),
        ("fabric.kube_client", "clients"),
        ("fabric.components.handoff", "aliases"),
        ("fabric.components.verify", "aliases"),
    ],
)
def test_a_step_s_pulumi_resource_sits_in_the_step_s_layer(module: str, layer: str):
    assert layer_of(module) == layer


def test_only_the_registry_imports_a_target_part_by_computed_name():
    """``importlib.import_module("fabric.targets...")`` elsewhere would hide an import from the
    graph; the registry's ``part`` is the one way (and the graph counts it)."""
    hidden = []
    for pattern in SOURCES:
        for path in REPO_ROOT.glob(pattern):
            if path == REPO_ROOT / "fabric" / "targets" / "__init__.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                func = getattr(node, "func", None)
                called = getattr(func, "attr", None) or getattr(func, "id", None)
                if isinstance(node, ast.Call) and called in ("import_module", "__import__"):
                    text = ast.unparse(node)
                    if "targets" in text:
                        hidden.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {text}")
    assert not hidden, hidden


def test_the_table_runs_one_way():
    """A layer imports only layers above it in ``LAYERS``, so no arrow runs back up; the
    aliases (old module paths a stored provider names) are imported by no layer."""
    seen: list[str] = []
    for name, _, may in LAYERS:
        assert set(may) <= set(seen), f"{name} may import a layer below it: {set(may) - set(seen)}"
        seen.append(name)
    assert not [name for name, _, may in LAYERS if "aliases" in may]


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
        ("fabric.handoff.vars", "fabric.targets.gcp.component"),
        ("roles.gcp_gpudirect.filter_plugins.gpu_nics", "fabric.targets.gcp.checks"),
        ("fabric.watch.collect", "fabric.targets.lab.component"),
        ("fabric.targets.gcp.rules", "fabric.targets.gcp.component"),
        ("fabric.targets.gcp.model", "fabric.verify.plan"),
        ("fabric.targets.aws.catalog", "fabric.targets.aws.hostkeys"),
        ("fabric.targets.aws.checks", "fabric.targets.aws.component"),
        ("fabric.components.target", "fabric.targets.lab.component"),
        ("fabric.components.rerun", "fabric.handoff.resource"),
        ("fabric.kube_client", "fabric.components.kubernetes"),
        ("fabric.verify.runner", "fabric.program"),
        ("fabric.cli.run", "fabric.components.handoff"),
    ],
)
def test_a_planted_import_against_the_flow_is_found(importer: str, imported: str):
    graph = import_graph()
    graph.add_edge(importer, imported, line=1)
    assert any(w.startswith(f"{importer}:1 imports {imported} ") for w in against_the_flow(graph))
